/**
 * Errors a store raises for the caller's mistakes (as opposed to I/O or corruption, which surface as the
 * driver's own errors). `code` is stable so callers (admin CLI, sponsor pipeline) can branch on it.
 */
export type StoreErrorCode =
  /** No row with that id (project, API key, strategy, sponsorship). */
  | "NOT_FOUND"
  /** A value that must be unique already exists (strategy code). */
  | "DUPLICATE"
  /** A state transition that is not allowed from the current state (e.g. a debit beyond a tank's available balance). */
  | "INVALID_STATE"
  /**
   * A credit reference reused for a different network, sender or amount; or concurrent reservations of one op
   * that kept replacing each other through every retry (asking again is safe).
   */
  | "CONFLICT"
  /** A malformed argument (bad address, negative amount, unknown enum value). */
  | "INVALID_INPUT"
  /** The database was written by a newer version of the service. */
  | "SCHEMA_TOO_NEW"
  /** The database has migrations this build would apply, and its opener asked not to (MigrationPolicy "new-only"). */
  | "SCHEMA_TOO_OLD";

export class StoreError extends Error {
  override name = "StoreError";
  readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

export function isStoreError(err: unknown, code?: StoreErrorCode): err is StoreError {
  return err instanceof StoreError && (code === undefined || err.code === code);
}
