/**
 * Rate limits per API key and per project (docs/operations.md, "Rate limits"): requests per second (a token
 * bucket refilled at `perSecond`, holding at most `burst`) and sponsorships per minute (a bucket of
 * `sponsorshipsPerMinute`, refilled evenly over the minute; only signing calls take from it).
 *
 * Every request takes one token from its key's bucket and, when its project has a limit, from the project's.
 * The buckets live in this process (one replica), or in Redis when REDIS_URL is set, where one Lua script
 * refills and takes atomically on Redis's clock, so every replica shares one bucket per key. If Redis does not
 * answer, each process falls back to its own in-memory buckets with the same limits (a limiter must not take
 * the service down with it, nor stop limiting): one log line per state change, and the metric
 * paymaster_rate_limit_fallback (alert PaymasterRateLimitFallback) while it lasts.
 */
import type { Logger } from "pino";
import { Redis } from "ioredis";
import type { RateLimitConfig, RateLimitValues } from "./config/types.ts";

/**
 * The default per key: well above what one replica can sign (an ERC-7677 client makes two calls per op, so a
 * 50/s limit held one key at ~25 ops/s), so the service's own capacity is what limits a key unless the
 * operator configures less. No sponsorships-per-minute limit by default: strategy caps bound the spending.
 */
export const DEFAULT_RATE_LIMIT = Object.freeze({ perSecond: 500, burst: 1_000 });

/** The calls that sign (and take from the sponsorships-per-minute buckets). */
export const SIGNING_METHODS: ReadonlySet<string> = new Set(["pm_sponsorUserOperation", "pm_getPaymasterData"]);

/** A bucket: `rate` tokens per second, at most `capacity`. */
interface BucketSpec {
  rate: number;
  capacity: number;
}

/** Where buckets live: takes one token, answering 0 or the seconds until one is available. */
export interface BucketStore {
  take(key: string, spec: BucketSpec): Promise<number>;
  close(): Promise<void>;
}

/** Buckets idle this long are forgotten (they would be full again anyway). */
const IDLE_MS = 10 * 60_000;
const SWEEP_ABOVE = 10_000;

/** One bucket step: refill since `at`, then take one if there is one. Pure, shared by both stores' logic. */
export function refillAndTake(bucket: { tokens: number; at: number }, spec: BucketSpec, nowMs: number): number {
  bucket.tokens = Math.min(spec.capacity, bucket.tokens + ((nowMs - bucket.at) / 1000) * spec.rate);
  bucket.at = nowMs;
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return 0;
  }
  return (1 - bucket.tokens) / spec.rate;
}

export function memoryBuckets(now: () => number = () => performance.now()): BucketStore {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    async take(key, spec) {
      const t = now();
      if (buckets.size > SWEEP_ABOVE) {
        for (const [k, b] of buckets) if (t - b.at > IDLE_MS) buckets.delete(k);
      }
      const bucket = buckets.get(key) ?? { tokens: spec.capacity, at: t };
      buckets.set(key, bucket);
      return refillAndTake(bucket, spec, t);
    },
    async close() {},
  };
}

/**
 * The token bucket in Redis: a hash {tokens, at}; the script refills by the time since `at` (Redis's own
 * clock, so replicas' clocks do not matter), takes one if it can, and expires idle buckets.
 */
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then tokens = capacity; at = now end
tokens = math.min(capacity, tokens + (now - at) / 1000 * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
return tostring(wait)
`;

/** How long a request waits for a Redis that is (re)connecting before it is let through. */
const CONNECT_WAIT_MS = 250;

/** What redisBuckets reports its fallback to (ServiceMetrics has both). */
export interface FallbackMetrics {
  rateLimitFallback: { set(value: number): void };
  rateLimitFallbackTakes: { inc(): void };
}

export function redisBuckets(url: string, logger?: Logger, prefix = "paymaster:ratelimit:", metrics?: FallbackMetrics): BucketStore {
  const redis = new Redis(url, {
    // Fail fast: a request never waits on a Redis that is away (the limiter then lets it through).
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    commandTimeout: 250,
    connectTimeout: 1_000,
    lazyConnect: false,
  });
  redis.defineCommand("paymasterTake", { numberOfKeys: 1, lua: TAKE_SCRIPT });
  let healthy = true;
  /** The same limits per process while Redis is away (kept across outages: a bucket refills by itself). */
  const fallback = memoryBuckets();
  metrics?.rateLimitFallback.set(0);
  redis.on("error", () => {}); // state changes are logged below; ioredis reconnects by itself
  redis.on("ready", () => setHealthy(true));
  const setHealthy = (ok: boolean, error?: unknown) => {
    if (ok === healthy) return;
    healthy = ok;
    metrics?.rateLimitFallback.set(ok ? 0 : 1);
    if (ok) logger?.info({ component: "rate-limit" }, "Redis answers again: rate limits are shared again");
    else logger?.warn({ component: "rate-limit", detail: error instanceof Error ? error.message : String(error) }, "Redis does not answer: rate limits fall back to this process's own buckets until it does");
  };
  /** Still connecting (start-up, a reconnect): wait for it briefly rather than let everything through. */
  const connected = (): Promise<void> =>
    redis.status === "ready"
      ? Promise.resolve()
      : !healthy
        ? Promise.reject(new Error(`Redis is ${redis.status}`)) // known to be away: no wait per request
      : new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            redis.off("ready", onReady);
            reject(new Error(`Redis is ${redis.status}`));
          }, CONNECT_WAIT_MS);
          const onReady = () => {
            clearTimeout(timer);
            resolve();
          };
          redis.once("ready", onReady);
        });
  return {
    async take(key, spec) {
      try {
        await connected();
        const wait = await (redis as unknown as { paymasterTake(key: string, rate: number, capacity: number): Promise<string> }).paymasterTake(
          prefix + key,
          spec.rate,
          spec.capacity,
        );
        setHealthy(true);
        return Number(wait);
      } catch (error) {
        setHealthy(false, error);
        // A command that timed out stays queued for a reply that may never come (a hung or lossy link), and
        // later replies would be matched to it: start a fresh connection instead.
        if (error instanceof Error && /timed out/i.test(error.message) && redis.status === "ready") redis.disconnect(true);
        metrics?.rateLimitFallbackTakes.inc();
        return fallback.take(key, spec);
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}

export interface RateLimitSubject {
  /** API key id. */
  id: string;
  projectId: string;
}

export interface RateLimiter {
  /** One request of `subject`: 0 when allowed, else the whole seconds until it may try again. */
  takeRequest(subject: RateLimitSubject): Promise<number>;
  /** One signing call of `subject` (on top of takeRequest). */
  takeSponsorship(subject: RateLimitSubject): Promise<number>;
  /** The effective limits, for the start-up log. */
  describe(): Record<string, unknown>;
  close(): Promise<void>;
}

function requestSpec(values: RateLimitValues | undefined): BucketSpec | undefined {
  if (values?.perSecond === undefined) return undefined;
  return { rate: values.perSecond, capacity: values.burst ?? values.perSecond * 2 };
}

function sponsorshipSpec(values: RateLimitValues | undefined): BucketSpec | undefined {
  if (values?.sponsorshipsPerMinute === undefined) return undefined;
  return { rate: values.sponsorshipsPerMinute / 60, capacity: values.sponsorshipsPerMinute };
}

/** The limiter for `config` (defaults filled) on `buckets`. */
export function createRateLimiter(config: RateLimitConfig = {}, buckets: BucketStore = memoryBuckets(), where = "memory"): RateLimiter {
  const defaults: RateLimitValues = {
    perSecond: config.perSecond ?? DEFAULT_RATE_LIMIT.perSecond,
    burst: config.burst ?? (config.perSecond === undefined ? DEFAULT_RATE_LIMIT.burst : config.perSecond * 2),
    ...(config.sponsorshipsPerMinute === undefined ? {} : { sponsorshipsPerMinute: config.sponsorshipsPerMinute }),
  };
  const keyValues = (id: string): RateLimitValues => ({ ...defaults, ...config.keys?.[id] });
  const projectValues = (id: string): RateLimitValues | undefined => config.projects?.[id];

  async function take(pairs: [string, BucketSpec | undefined][]): Promise<number> {
    for (const [key, spec] of pairs) {
      if (spec === undefined) continue;
      const wait = await buckets.take(key, spec);
      if (wait > 0) return Math.max(1, Math.ceil(wait));
    }
    return 0;
  }

  return {
    takeRequest: (s) =>
      take([
        [`key:${s.id}:rps`, requestSpec(keyValues(s.id))],
        [`project:${s.projectId}:rps`, requestSpec(projectValues(s.projectId))],
      ]),
    takeSponsorship: (s) =>
      take([
        [`key:${s.id}:spm`, sponsorshipSpec(keyValues(s.id))],
        [`project:${s.projectId}:spm`, sponsorshipSpec(projectValues(s.projectId))],
      ]),
    describe: () => ({
      buckets: where,
      perKey: defaults,
      ...(config.keys ? { keys: config.keys } : {}),
      ...(config.projects ? { projects: config.projects } : {}),
    }),
    close: () => buckets.close(),
  };
}
