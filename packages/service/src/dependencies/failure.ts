/**
 * The one model of a dependency's failure, for every door and loop (docs/operations.md "When a dependency
 * fails"). Whatever failed — the chain RPC, the database, the signer, the bundler — the thrown value names it
 * (CHAIN_UNAVAILABLE, STORE_UNAVAILABLE, SIGNER_UNAVAILABLE, BUNDLER_UNAVAILABLE) with a `cause` from a bounded
 * set; the client gets that name, that cause and a sentence (503 / -32002), never the driver's text; so does every
 * role of the admin API (the driver's text names hosts, databases, users); the operator gets it as `detail` in
 * the log (the admin API logs it with the first 503 of an outage, then once a minute: repeatedWarnings.ts) and in the CLI's line. A failure is logged where its state
 * changes (the store's health, the RPC client, the signer, each background loop), once, never as a stack per
 * request.
 *
 *   JSON-RPC dialects   knownClientError below (the catalogue's reason, status and code)
 *   admin API, CLI      dependencyFailure below (503 UNAVAILABLE with reason and cause, the detail logged / one
 *                       line with the detail, exit 1)
 *   background loops    describeFailure below: a problem text that is the same for the same reason and cause,
 *                       so "log when it changes" logs once per outage
 */
import { RpcError, type Reason } from "../errors.ts";
import { isStoreUnavailable, StoreUnavailableError } from "../store/unavailable.ts";

export type DependencyReason = Extract<Reason, "CHAIN_UNAVAILABLE" | "STORE_UNAVAILABLE" | "SIGNER_UNAVAILABLE" | "BUNDLER_UNAVAILABLE">;

export const DEPENDENCY_REASONS: ReadonlySet<Reason> = new Set<DependencyReason>(["CHAIN_UNAVAILABLE", "STORE_UNAVAILABLE", "SIGNER_UNAVAILABLE", "BUNDLER_UNAVAILABLE"]);

export interface DependencyFailure {
  readonly reason: DependencyReason;
  /** Why, from the dependency's bounded set (refused, timeout, disk_full, pin, …). */
  readonly cause: string;
  /** What a client may read. */
  readonly message: string;
  /** The driver's own words (the log and the CLI only), when there are any. */
  readonly detail?: string;
}

/**
 * What a client may see of a thrown value that is a deliberate answer: RpcErrors as they are, a failure of the
 * database as STORE_UNAVAILABLE with its cause (never the driver's text); undefined for anything unexpected.
 */
export function knownClientError(error: unknown): RpcError | undefined {
  if (error instanceof RpcError) return error;
  if (error instanceof StoreUnavailableError) return new RpcError("STORE_UNAVAILABLE", error.message, { cause: error.cause });
  return undefined;
}

/** What a client may see of any thrown value: known answers as they are (knownClientError), everything else INTERNAL_ERROR. */
export function toClientError(error: unknown): RpcError {
  return knownClientError(error) ?? new RpcError("INTERNAL_ERROR");
}

/** The dependency failure a thrown value is, else undefined (a refusal of the request, or a bug). */
export function dependencyFailure(error: unknown): DependencyFailure | undefined {
  const known = knownClientError(error);
  if (!known || !DEPENDENCY_REASONS.has(known.reason)) return undefined;
  const cause = known.details["cause"];
  const detail = detailOf(error);
  return {
    reason: known.reason as DependencyReason,
    cause: typeof cause === "string" ? cause : "unavailable",
    message: known.message,
    ...(detail === undefined ? {} : { detail }),
  };
}

/** The driver's words: a StoreUnavailableError's detail, or the underlying error an RpcError wraps (a token's failure). */
function detailOf(error: unknown): string | undefined {
  if (isStoreUnavailable(error)) return error.detail;
  return error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
}

/**
 * A failure as a background loop's log line says it: "STORE_UNAVAILABLE: The paymaster's database refuses
 * connections (refused)", or "<name>: <message>" for anything else. The same outage reads the same each time.
 */
export function describeFailure(error: unknown): string {
  const known = knownClientError(error);
  if (known) return `${known.reason}: ${known.message}`;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** The fields a loop's state-change line carries: the stable problem, and the driver's words when there are any. */
export function failureFields(error: unknown): { problem: string; detail?: string } {
  const detail = dependencyFailure(error)?.detail;
  return { problem: describeFailure(error), ...(detail === undefined ? {} : { detail }) };
}
