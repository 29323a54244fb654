// PostgreSQL and Redis for the tests. PAYMASTER_TEST_POSTGRES_URL (an admin URL: the tests create and drop their own
// databases there) and REDIS_URL choose servers of yours; without them the first test that needs one starts a
// throwaway server (helpers/throwawayServers.ts), shared by the rest of the run and stopped at its end by the root
// hook in helpers/rootHooks.ts. So the suite needs nothing listening on the machine.
import type { Context } from "mocha";
import { findRedisServer, startThrowawayPostgres, startThrowawayRedis, type ThrowawayServer } from "./throwawayServers.ts";

const started: ThrowawayServer[] = [];
let postgres: Promise<string> | undefined;
let redis: Promise<string> | undefined;

function track(server: Promise<ThrowawayServer>): Promise<string> {
  return server.then((s) => {
    started.push(s);
    return s.url;
  });
}

/** The PostgreSQL admin URL the tests use (given, or a throwaway server's). */
export function testPostgresUrl(): Promise<string> {
  postgres ??= process.env.PAYMASTER_TEST_POSTGRES_URL ? Promise.resolve(process.env.PAYMASTER_TEST_POSTGRES_URL) : track(startThrowawayPostgres());
  return postgres;
}

/**
 * The Redis URL the tests use (given, or a throwaway server's). Without a Redis binary (scripts/ensure-redis.sh
 * installs Debian's as root) the calling test is skipped with the reason, or fails under CI.
 */
export async function testRedisUrl(context: Context): Promise<string> {
  if (process.env.REDIS_URL) return process.env.REDIS_URL;
  if (!redis) {
    const binary = findRedisServer();
    if (!binary) {
      const reason = "no Redis server binary (run `bash scripts/ensure-redis.sh` as root, or set REDIS_URL)";
      if (process.env.CI === "true") throw new Error(`the Redis tests must run under CI, but there is ${reason}`);
      console.log(`      skipped: ${reason}`);
      context.skip();
    }
    redis = track(startThrowawayRedis(binary!));
  }
  return redis;
}

/**
 * Starts both up front and hands their URLs to the environment: the parallel run's global setup
 * (helpers/sharedServers.ts) calls it in mocha's main process before the workers start, so each worker inherits
 * the URLs and uses these two servers instead of starting its own. Without a Redis binary REDIS_URL stays unset,
 * and the Redis tests skip or fail (under CI) as testRedisUrl says.
 */
export async function exportTestServers(): Promise<void> {
  process.env.PAYMASTER_TEST_POSTGRES_URL = await testPostgresUrl();
  if (process.env.REDIS_URL) return;
  const binary = findRedisServer();
  if (binary) process.env.REDIS_URL = await (redis ??= track(startThrowawayRedis(binary)));
}

/** Stops the throwaway servers (the root hook's afterAll). */
export async function stopTestServers(): Promise<void> {
  const servers = started.splice(0);
  postgres = redis = undefined;
  await Promise.all(servers.map((s) => s.stop()));
}

// A run that ends without the root hook (an uncaught error, Ctrl-C) still ends its servers.
process.once("exit", () => {
  for (const server of started) server.kill();
});
