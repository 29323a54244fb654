/**
 * Opens the configured store. Today: the embedded SQLite file. PostgreSQL (for several replicas) will be
 * chosen here later behind the same `Store` interface.
 */
import { openSqliteStore } from "./sqlite.ts";
import type { Store } from "./types.ts";

export type * from "./types.ts";
export { StoreError, isStoreError, type StoreErrorCode } from "./errors.ts";
export { openSqliteStore } from "./sqlite.ts";

export function openStore(config: { databasePath: string }): Store {
  return openSqliteStore(config.databasePath);
}
