/**
 * The store on PostgreSQL, for several service replicas sharing one database (DATABASE_URL): the one store
 * implementation (sqlStore.ts: the row locks and their order) over the PostgreSQL driver of the dialect layer
 * (db/postgres.ts: pool, type parsing, bounded retries, migrations under an advisory lock).
 */
import * as validation from "./validation.ts";
import { openPostgresDb, POSTGRES_DIALECT } from "./db/postgres.ts";
import { migrationsFor, type MigrationPolicy } from "./migrations.ts";
import type { DatabaseSettings } from "./settings.ts";
import { WRITE_PROBE } from "./sql/cursors.ts";
import { sqlStore } from "./sqlStore.ts";
import type { Store } from "./types.ts";

export { POSTGRES_MIGRATIONS } from "./migrations.ts";

/**
 * Opens the PostgreSQL store at `url` (postgres://user:password@host:port/database?…), applying any pending
 * migration (unless `migrations` is "new-only": ./migrations.ts); `settings`: how long it waits on the database
 * (the configuration's `database`, ./settings.ts).
 */
export async function openPostgresStore(url: string, settings: Partial<DatabaseSettings> = {}, migrations: MigrationPolicy = "apply"): Promise<Store> {
  return sqlStore(await openPostgresDb(url, migrationsFor(POSTGRES_DIALECT), validation.nowSeconds(), { settings, writeProbe: WRITE_PROBE, migrations }));
}
