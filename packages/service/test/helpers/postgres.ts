// A throwaway PostgreSQL database per test (on the tests' server: helpers/testServers.ts), dropped afterwards.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { testPostgresUrl } from "./testServers.ts";

export { testPostgresUrl };

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A new database on the server of `adminUrl` (by default the tests'); `drop()` removes it (and ends the admin connection). */
export async function createTestDatabase(prefix = "paymaster_ops", adminUrl?: string): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const url = new URL(adminUrl ?? (await testPostgresUrl()));
  const admin = new pg.Client({ connectionString: url.href });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
