/**
 * Structured JSON logs (pino) to stdout. Secrets never reach a log line: known secret fields are redacted by
 * path, and any `apiKey=...` inside a logged string (a URL with its query, an error message) is masked.
 */
import { pino, type DestinationStream, type LevelWithSilent, type Logger } from "pino";

export const REDACTED = "[redacted]";

/**
 * Paths pino redacts wherever a logged object has them (one or two levels deep; pino wildcards match one
 * level each). Covers API keys, signer private keys, the configuration's secret fields and provider URLs
 * (which often carry a provider key in their path).
 */
export const REDACT_PATHS: readonly string[] = Object.freeze(
  [
    "apiKey",
    "apikey",
    "plaintext",
    "privateKey",
    "signerKey",
    "signerKeys",
    "mnemonic",
    "secret",
    "password",
    "pin",
    "rpcUrl",
    "rpcUrls",
    "fallbackRpcUrls",
    "databaseUrl",
    "DATABASE_URL",
    "authorization",
    "headers.authorization",
    "headers.cookie",
    "query.apiKey",
  ].flatMap((field) => [field, `*.${field}`, `*.*.${field}`]).concat([
    "networks[*].signerKeys",
    "networks[*].rpcUrl",
    "networks[*].fallbackRpcUrls",
    "*.networks[*].signerKeys",
    "*.networks[*].rpcUrl",
  ]),
);

const API_KEY_IN_TEXT = /(apiKey=)[^&\s"']*/gi;

/** `text` with every `apiKey=value` masked. */
export function scrubText(text: string): string {
  return text.replace(API_KEY_IN_TEXT, `$1${REDACTED}`);
}

/** A copy of `value` with every string scrubbed (errors included), to a bounded depth. */
function scrub(value: unknown, depth: number): unknown {
  if (typeof value === "string") return scrubText(value);
  if (typeof value !== "object" || value === null || depth > 6) return value;
  if (value instanceof Error) return scrubError(value, depth);
  if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) out[key] = scrub(field, depth + 1);
  return out;
}

/** A copy of an error (same prototype, so pino still names its type) with its own fields scrubbed. */
function scrubError(error: Error, depth: number): Error {
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error;
  for (const key of Object.getOwnPropertyNames(error)) {
    // V8's `stack` is an own accessor: read it through the original, store the scrubbed value.
    const descriptor = Object.getOwnPropertyDescriptor(error, key);
    const value = scrub((error as unknown as Record<string, unknown>)[key], depth + 1);
    Object.defineProperty(copy, key, { value, enumerable: descriptor?.enumerable ?? false, writable: true, configurable: true });
  }
  return copy;
}

/** The service's logger: JSON lines to stdout (or `destination`), level names, ISO times, secrets redacted. */
export function createLogger(level: LevelWithSilent, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: "paymaster" },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: [...REDACT_PATHS], censor: REDACTED },
    formatters: {
      level: (label: string) => ({ level: label }),
      log: (object: Record<string, unknown>) => scrub(object, 0) as Record<string, unknown>,
    },
    hooks: {
      logMethod(this: Logger, args: Parameters<Logger["info"]>, method: Logger["info"]) {
        const scrubbed = args.map((arg) => (typeof arg === "string" ? scrubText(arg) : arg)) as Parameters<Logger["info"]>;
        method.apply(this, scrubbed);
      },
    },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
