/**
 * The database could not do what was asked, for want of the database itself (as opposed to a refusal of the
 * request: StoreError): it refused or dropped the connection, answered nothing in time, ran out of disk, is read
 * only. Each driver (db/postgres.ts, db/sqlite.ts) turns its own errors into a StoreUnavailableError with one
 * `cause` of a bounded set (a metric label, and what the client is told), keeping the driver's text in `detail`
 * for the log only. The doors answer it as STORE_UNAVAILABLE (src/errors.ts, src/dependencies/failure.ts).
 */

/** Why the database could not be used. */
export type StoreCause =
  /** Nothing listens (stopped, restarting), or the server refuses new sessions now (starting up, shutting down, the database closed to connections for maintenance). */
  | "refused"
  /** No answer in time: connecting, a free pooled connection, or a query to a database that answers nothing. */
  | "timeout"
  /** An open connection broke (reset, terminated by the server, a failover, bytes that are not PostgreSQL's). */
  | "connection"
  /** The database host's name does not resolve. */
  | "dns"
  /** The database refused the service's role: its credentials, or its CONNECT privilege on the database. */
  | "auth"
  /** The server has no database of that name (dropped, renamed, a wrong name in the URL). */
  | "missing"
  /** TLS failed: the server does not offer it, answers the request for it with something else, the handshake fails, or its certificate is not trusted. */
  | "tls"
  /** Too busy now: every connection in use, the server's connection limit, a lock held by another process. */
  | "busy"
  /** The disk under the database is full: writes fail, reads may still work. */
  | "disk_full"
  /** The database accepts reads only (a replica not yet promoted, a read-only file or mount). */
  | "read_only"
  /** The disk failed to read or write. */
  | "io"
  /** The database file is damaged. */
  | "corrupt"
  /** A newer version of the service migrated the database (a rolling upgrade): this replica signs nothing until it is upgraded. */
  | "schema_too_new";

/** Causes under which reading still works: the store is up for reads, down for writes. */
export const WRITE_CAUSES: ReadonlySet<StoreCause> = new Set(["disk_full", "read_only"]);

/** Causes of load rather than of an outage: the request fails, the store is not marked down. */
export const LOAD_CAUSES: ReadonlySet<StoreCause> = new Set(["busy"]);

const WHAT: Record<StoreCause, string> = {
  refused: "refuses connections",
  timeout: "does not answer",
  connection: "dropped the connection",
  dns: "cannot be found (DNS)",
  auth: "refuses the service's role",
  missing: "does not exist on its server",
  tls: "cannot be reached over TLS",
  busy: "is too busy",
  disk_full: "cannot write: its disk is full",
  read_only: "accepts reads only",
  io: "has a disk error",
  corrupt: "is damaged",
  schema_too_new: "was migrated by a newer version of the service: upgrade this replica",
};

export class StoreUnavailableError extends Error {
  override name = "StoreUnavailableError";
  override readonly cause: StoreCause;
  /** The driver's own words, for the log (never sent to a client). */
  readonly detail: string;

  constructor(cause: StoreCause, detail: string) {
    super(`The paymaster's database ${WHAT[cause]} (${cause})`);
    this.cause = cause;
    this.detail = detail;
  }
}

export function isStoreUnavailable(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError;
}

/** A driver error's text in one line, without a connection URL's password. */
export function driverDetail(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const line = message.replace(/(postgres(?:ql)?:\/\/[^:@/\s]+):[^@/\s]+@/gi, "$1:***@").split("\n")[0]!;
  return typeof code === "string" && !line.includes(code) ? `${code}: ${line}` : line;
}
