/**
 * Opens the configured store: PostgreSQL when a database URL is given (DATABASE_URL; for several service
 * replicas sharing one database), else the embedded SQLite file at `databasePath`. Both implement `Store`
 * with the same semantics (test/store.test.ts runs one suite against both).
 */
import { openPostgresStore } from "./postgres.ts";
import { openSqliteStore } from "./sqlite.ts";
import type { MigrationPolicy } from "./migrations.ts";
import type { DatabaseSettings } from "./settings.ts";
import type { Store } from "./types.ts";

export type * from "./types.ts";
export { StoreError, isStoreError, type StoreErrorCode } from "./errors.ts";
export { openSqliteStore } from "./sqlite.ts";
export { openPostgresStore } from "./postgres.ts";

export async function openStore(
  config: { databasePath: string; databaseUrl?: string | undefined; database?: Partial<DatabaseSettings> | undefined },
  migrations: MigrationPolicy = "apply",
): Promise<Store> {
  if (config.databaseUrl !== undefined && config.databaseUrl !== "") return openPostgresStore(config.databaseUrl, config.database, migrations);
  return openSqliteStore(config.databasePath, migrations);
}
