/**
 * The embedded store: one SQLite file (node:sqlite), through the one store implementation (sqlStore.ts) and the
 * SQLite driver of the dialect layer (db/sqlite.ts: BEGIN IMMEDIATE transactions, pragmas, migrations).
 */
import * as validation from "./validation.ts";
import { openSqliteDb, SQLITE_DIALECT } from "./db/sqlite.ts";
import { migrationsFor, type MigrationPolicy } from "./migrations.ts";
import { WRITE_PROBE } from "./sql/cursors.ts";
import { sqlStore } from "./sqlStore.ts";
import type { Store } from "./types.ts";

/** Opens (creating and migrating as needed, unless `migrations` is "new-only") the SQLite store at `file`; ":memory:" keeps everything in memory. */
export function openSqliteStore(file: string, migrations: MigrationPolicy = "apply"): Store {
  return sqlStore(openSqliteDb(file, migrationsFor(SQLITE_DIALECT), validation.nowSeconds(), WRITE_PROBE, migrations));
}
