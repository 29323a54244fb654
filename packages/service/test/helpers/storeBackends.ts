// The two stores the store-level tests run against: a fresh SQLite file, and a throwaway PostgreSQL database
// (helpers/postgres.ts) dropped on close. A migration's test opens one upgraded from an older schema.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { POSTGRES_DIALECT, openPostgresDb } from "../../src/store/db/postgres.ts";
import { SQLITE_DIALECT, openSqliteDb } from "../../src/store/db/sqlite.ts";
import { migrationsFor } from "../../src/store/migrations.ts";
import { openPostgresStore } from "../../src/store/postgres.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import type { Store } from "../../src/store/types.ts";
import { createTestDatabase } from "./postgres.ts";

export interface OpenedStore {
  store: Store;
  /** PostgreSQL only: the database's URL (for a second store or process on it). */
  url?: string;
  close(): Promise<void>;
}

/** Runs one SQL statement on the database as it is before the upgrade (its rows are what the migration meets). */
export type SeedSql = (sql: string) => Promise<void>;

export interface StoreBackend {
  name: "SQLite" | "PostgreSQL";
  open(): Promise<OpenedStore>;
  /**
   * A database with the migrations up to `version` only, given rows by `seed`, then opened as the store (which
   * applies the rest): what a database in the field meets when the service is upgraded.
   */
  openUpgradedFrom(version: number, seed: (sql: SeedSql) => Promise<void>): Promise<OpenedStore>;
}

const NOW = 1_700_000_000;

/** SQLite and PostgreSQL, each opening a new empty store; `label` names the folder and the database. */
export function storeBackends(label: string): StoreBackend[] {
  const sqliteFile = () => path.join(mkdtempSync(path.join(tmpdir(), `paymaster-${label}-`)), "db.sqlite");
  const postgres = async (prepare: (url: string) => Promise<void>): Promise<OpenedStore> => {
    const database = await createTestDatabase(`paymaster_${label}`);
    await prepare(database.url);
    const store = await openPostgresStore(database.url);
    return {
      store,
      url: database.url,
      async close() {
        await store.close();
        await database.drop();
      },
    };
  };
  return [
    {
      name: "SQLite",
      async open() {
        const store = await openSqliteStore(sqliteFile());
        return { store, close: () => store.close() };
      },
      async openUpgradedFrom(version, seed) {
        const file = sqliteFile();
        const db = openSqliteDb(file, migrationsFor(SQLITE_DIALECT).filter((m) => m.version <= version), NOW);
        await seed(async (sql) => void (await db.run(sql)));
        await db.close();
        const store = await openSqliteStore(file);
        return { store, close: () => store.close() };
      },
    },
    {
      name: "PostgreSQL",
      open: () => postgres(async () => {}),
      openUpgradedFrom: (version, seed) =>
        postgres(async (url) => {
          const db = await openPostgresDb(url, migrationsFor(POSTGRES_DIALECT).filter((m) => m.version <= version), NOW);
          await seed(async (sql) => void (await db.run(sql)));
          await db.close();
        }),
    },
  ];
}
