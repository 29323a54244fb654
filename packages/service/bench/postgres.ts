/**
 * A throwaway PostgreSQL database for a benchmark, on the server of `adminUrl` (trust auth on loopback here),
 * dropped by `drop()`; undefined (with the reason printed) when the server does not answer. The same helper as
 * the tests' (test/helpers/postgres.ts).
 */
import { createTestDatabase, type TestDatabase } from "../test/helpers/postgres.ts";

export const DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test";

export async function throwawayDatabase(adminUrl: string): Promise<TestDatabase | undefined> {
  try {
    return await createTestDatabase("paymaster_bench", adminUrl);
  } catch (error) {
    console.log(`\nPostgreSQL skipped: ${(error as Error).message}`);
    return undefined;
  }
}
