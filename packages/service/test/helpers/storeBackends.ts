// The two stores the store-level tests run against: a fresh SQLite file, and a throwaway PostgreSQL database
// (helpers/postgres.ts) dropped on close.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
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

export interface StoreBackend {
  name: "SQLite" | "PostgreSQL";
  open(): Promise<OpenedStore>;
}

/** SQLite and PostgreSQL, each opening a new empty store; `label` names the folder and the database. */
export function storeBackends(label: string): StoreBackend[] {
  return [
    {
      name: "SQLite",
      async open() {
        const store = await openSqliteStore(path.join(mkdtempSync(path.join(tmpdir(), `paymaster-${label}-`)), "db.sqlite"));
        return { store, close: () => store.close() };
      },
    },
    {
      name: "PostgreSQL",
      async open() {
        const database = await createTestDatabase(`paymaster_${label}`);
        const store = await openPostgresStore(database.url);
        return {
          store,
          url: database.url,
          async close() {
            await store.close();
            await database.drop();
          },
        };
      },
    },
  ];
}
