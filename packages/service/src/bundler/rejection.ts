/**
 * What a client gets of the bundler's JSON-RPC error (second review, finding 5). The bundler is the operator's
 * (or its provider's) and its error text may carry what no client should see: the URLs of its own upstreams
 * with their keys, file paths, stack frames, tokens. A wallet needs less than that, and gets:
 *
 * - the bundler's code, as the answer's code (ERC-7769: -32500 rejected in validation, -32501 by the paymaster,
 *   -32502 opcode, -32503 time range, -32504 throttled or banned, -32505 stake too low, -32506 aggregator,
 *   -32507 signature, -32508 paymaster deposit, -32521 reverted in execution, -32602 invalid fields; others as
 *   they come: a code carries no text);
 * - the message as one line of plain text: stack frames dropped, URLs (with a scheme or not) replaced by "[url]",
 *   file paths by "[path]", credentials (user:password@, key=…, Bearer …) and long opaque tokens by "[redacted]"
 *   (text/loggedText.ts redactSecrets), control characters removed, at most MESSAGE_MAX_CHARS. The
 *   EntryPoint's reasons ("AA21 didn't pay prefund") and hex revert data are kept;
 * - of `data`, ERC-7769's fields (DATA_FIELDS) holding an address, hex or a number, or revert data (hex).
 *
 * Whatever was removed goes to the service's log, its URLs reduced to scheme, host and port and its tokens
 * redacted (forwardToBundler).
 */
import { redactSecrets } from "../text/loggedText.ts";
import { NodeError } from "../chain/rpc.ts";
import { RpcError } from "../errors.ts";

/** Longest message passed on to the client. */
export const MESSAGE_MAX_CHARS = 300;
/** Longest hex value passed on in `data` (characters: 8 KiB of revert data). */
const HEX_MAX_CHARS = 16_386;
/** ERC-7769's data fields: the entity at fault and the values it was judged by. */
const DATA_FIELDS = ["paymaster", "aggregator", "factory", "sender", "entryPoint", "validUntil", "validAfter", "minimumStake", "minimumUnstakeDelay"] as const;
const STACK_FRAME = /^\s*at\s+\S/;
// A path of at least two segments, starting a word: /srv/app/x.js:10:5, C:\app\x.js, /v1/<key>.
const PATH_PATTERN = /(?<=^|[\s("'=,[])(?:[A-Za-z]:\\|\/)(?:[\w.@~-]+[\\/])+[\w.@~-]*(?::\d+)*/g;
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]+/gu;

/** The bundler's message as the client gets it. Pure. */
export function clientMessage(message: string): string {
  const lines = message
    .split(/\r?\n/)
    .filter((line) => !STACK_FRAME.test(line))
    .join(" ")
    .replace(PATH_PATTERN, "[path]");
  const text = redactSecrets(lines, "placeholder")
    .replace(CONTROL, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (text === "") return "The bundler refused the call";
  return text.length > MESSAGE_MAX_CHARS ? `${text.slice(0, MESSAGE_MAX_CHARS - 1)}…` : text;
}

const isHex = (value: unknown): value is string => typeof value === "string" && value.length <= HEX_MAX_CHARS && /^0x[0-9a-fA-F]*$/.test(value);
const isPlainValue = (value: unknown): boolean => isHex(value) || Number.isSafeInteger(value) || (typeof value === "string" && /^\d{1,78}$/.test(value));

/** The bundler's `data` as the client gets it (undefined: nothing to pass on). Pure. */
export function clientData(data: unknown): unknown {
  if (isHex(data)) return data;
  if (typeof data !== "object" || data === null || Array.isArray(data)) return undefined;
  const kept = Object.fromEntries(DATA_FIELDS.flatMap((field) => (isPlainValue((data as Record<string, unknown>)[field]) ? [[field, (data as Record<string, unknown>)[field]]] : [])));
  return Object.keys(kept).length > 0 ? kept : undefined;
}

/**
 * The bundler's JSON-RPC error, passed on with its own code (so clients such as viem read it as they would
 * from the bundler directly) and what of its message and data a wallet needs. `trimmed` says whether
 * anything was left out (then the caller logs the original).
 */
export class BundlerRejection extends RpcError {
  readonly bundlerCode: number;
  readonly trimmed: boolean;
  constructor(error: NodeError) {
    const message = clientMessage(error.message || "");
    const data = clientData(error.data);
    super("BUNDLER_REJECTED", message, { bundlerCode: error.code, ...(data === undefined ? {} : { bundlerData: data }) });
    this.bundlerCode = error.code;
    this.trimmed = message !== (error.message || "").trim() || JSON.stringify(data) !== JSON.stringify(error.data);
  }

  override get jsonRpcCode(): number {
    return Number.isSafeInteger(this.bundlerCode) ? this.bundlerCode : super.jsonRpcCode;
  }
}
