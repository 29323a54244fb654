/**
 * A hosted RPC provider's rate limit, told apart from the node's answer to the call (docs/operations.md,
 * "Rate limits of an RPC provider"; /work/shared/research/failures.md). A provider refuses a request over its
 * quota in one of these shapes, none of which is the node's verdict on the call:
 * - HTTP 429, whatever the body;
 * - a JSON-RPC error with a code providers use for it: -32005 (EIP-1474 "limit exceeded"; Infura), -32016
 *   (OP-stack public endpoints), -32007 (QuickNode), -32029 (TheRPC), 429 (Alchemy);
 * - -32000 whose message says so: "429 Too Many Requests: {…}", "over rate limit", "request limit reached",
 *   "exceeded its … capacity".
 * A revert never is one, whatever its text: an error carrying revert data or whose message mentions a revert is
 * the node's verdict. A revert reason is the caller's own string; a contract reverting with "rate limit
 * exceeded" must not cool an upstream down (anyone could take the service's upstreams out with such ops).
 */
import { revertDataOf, type JsonRpcErrorBody } from "./nodeError.ts";
import { loggedText } from "../text/loggedText.ts";

/** JSON-RPC error codes that mean "over the provider's limit". */
const LIMIT_CODES: ReadonlySet<number> = new Set([-32005, -32016, -32007, -32029, 429]);
/** A -32000 message that names a rate limit. Narrow on purpose: a node's other -32000 errors must not match. */
const LIMIT_MESSAGE = /too many requests|rate[ -]?limit|request limit reached|exceeded\b.{0,60}\b(?:rate|capacity|quota)\b/i;
/** A wait stated in a limit's message: "please wait 23s", "try again in 2 seconds", "retry after 500ms". */
const STATED_WAIT = /\b(?:wait|retry|try again)\b\D{0,20}?(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b/i;

/** A rate limit: what the provider said (safe to log, no URL) and the wait it asked for, if it stated one. */
export interface ProviderLimit {
  detail: string;
  /** Milliseconds from now; undefined when the answer states no wait. */
  waitMs: number | undefined;
}

/**
 * Whether an answer is a rate limit: its HTTP status, its Retry-After header and its JSON-RPC error (if any).
 * `now` (ms since the epoch) reads a Retry-After given as an HTTP date.
 */
export function providerLimitOf(status: number, retryAfter: string | undefined, error: JsonRpcErrorBody | undefined, now = Date.now()): ProviderLimit | undefined {
  const limitedBody = error !== undefined && isLimitError(error);
  if (status !== 429 && !limitedBody) return undefined;
  const detail = error === undefined ? `HTTP ${status}` : `${status === 429 ? "HTTP 429, " : ""}JSON-RPC ${error.code}: ${safeMessage(error.message)}`;
  return { detail, waitMs: retryAfterMs(retryAfter, now) ?? (error === undefined ? undefined : statedWaitMs(error)) };
}

function isLimitError(error: JsonRpcErrorBody): boolean {
  if (revertDataOf(error.data) !== undefined) return false;
  const message = typeof error.message === "string" ? error.message : "";
  if (/revert/i.test(message)) return false;
  return LIMIT_CODES.has(error.code) || (error.code === -32000 && LIMIT_MESSAGE.test(message));
}

/** A Retry-After header in milliseconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** A wait the error itself states: Infura's data.backoff_seconds, or a message such as "please wait 23s". */
function statedWaitMs(error: JsonRpcErrorBody): number | undefined {
  const backoff = (error.data as { backoff_seconds?: unknown } | undefined)?.backoff_seconds;
  if (typeof backoff === "number" && Number.isFinite(backoff) && backoff >= 0) return backoff * 1000;
  const match = typeof error.message === "string" ? STATED_WAIT.exec(error.message) : null;
  if (!match) return undefined;
  return Number(match[1]) * (match[2]!.toLowerCase().startsWith("m") ? 1 : 1000);
}

/** A provider's message for a log line (providers link dashboards with keys in them): loggedText, 160 characters. */
function safeMessage(message: unknown): string {
  return loggedText(typeof message === "string" ? message : "", 160);
}
