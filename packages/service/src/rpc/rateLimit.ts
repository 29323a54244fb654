/**
 * Per-API-key rate limiting: a token bucket per key (refilled at `perSecond`, holding at most `burst`), in
 * this process's memory. With several replicas each holds its own buckets, so the effective limit is the
 * sum; a reverse proxy in front is the place for a global one.
 */

export interface RateLimit {
  perSecond: number;
  burst: number;
}

export const DEFAULT_RATE_LIMIT: RateLimit = Object.freeze({ perSecond: 50, burst: 100 });

/** Buckets idle this long are forgotten (they would be full again anyway). */
const IDLE_MS = 10 * 60_000;
const SWEEP_ABOVE = 10_000;

export interface RateLimiter {
  /** Takes one request from `key`'s bucket: 0 when allowed, else the seconds until one is available. */
  take(key: string): number;
}

export function createRateLimiter(limit: RateLimit = DEFAULT_RATE_LIMIT, now: () => number = () => performance.now()): RateLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key) {
      const t = now();
      if (buckets.size > SWEEP_ABOVE) {
        for (const [k, b] of buckets) if (t - b.at > IDLE_MS) buckets.delete(k);
      }
      const bucket = buckets.get(key) ?? { tokens: limit.burst, at: t };
      bucket.tokens = Math.min(limit.burst, bucket.tokens + ((t - bucket.at) / 1000) * limit.perSecond);
      bucket.at = t;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.ceil((1 - bucket.tokens) / limit.perSecond);
    },
  };
}
