/**
 * A throwaway PostgreSQL database for a benchmark, on the server of `adminUrl` (trust auth on loopback here),
 * dropped by `drop()`; undefined (with the reason printed) when the server does not answer.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test";

export async function throwawayDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  const admin = new pg.Client({ connectionString: adminUrl });
  try {
    await admin.connect();
  } catch (error) {
    console.log(`\nPostgreSQL skipped: ${(error as Error).message}`);
    return undefined;
  }
  const database = `paymaster_bench_${randomBytes(6).toString("hex")}`;
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return {
    url: url.href,
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    },
  };
}
