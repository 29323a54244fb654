/**
 * Requests and sponsorships over time (the console's overview charts, `paymaster activity`): requests per time
 * bucket, ok and refused, and the refusals by reason (from the per-minute counts every process writes:
 * src/metrics/requestCounts.ts), and sponsorships per bucket by their status now, with what they may cost and
 * what the settled ones cost (from the sponsorships table). Every bucket of the window is present (zeros where
 * nothing happened). The window defaults to the last 24 hours; the bucket width is the smallest of
 * BUCKET_SECONDS that keeps the window within MAX_BUCKETS buckets.
 */
import { formatUsdMicros } from "../policy/rules.ts";
import { guarded, invalid, knownNetwork, read, type AdminContext } from "./context.ts";
import { parseTime } from "./sponsorships.ts";

export const BUCKET_SECONDS = [60, 300, 900, 3600, 10_800, 21_600, 86_400] as const;
export const MAX_BUCKETS = 120;
/** As long as request counts are kept (REQUEST_COUNT_RETENTION_DAYS). */
export const MAX_WINDOW_SECONDS = 35 * 86_400;
const DEFAULT_WINDOW_SECONDS = 86_400;

export interface ActivityQuery {
  /** Unix seconds or ISO 8601 (default: 24 hours before `until`). */
  since?: string;
  /** Unix seconds or ISO 8601 (default: now). */
  until?: string;
  network?: string;
  /** Seconds per bucket, one of BUCKET_SECONDS (default: picked from the window). */
  bucket?: string;
}

/** The bucket width for a window: the one given (checked), else the smallest that fits MAX_BUCKETS. */
export function bucketFor(windowSeconds: number, given?: string): number {
  if (given !== undefined) {
    const b = Number(given);
    if (!(BUCKET_SECONDS as readonly number[]).includes(b)) invalid(`bucket: one of ${BUCKET_SECONDS.join(", ")} seconds`);
    if (windowSeconds / b > 1000) invalid(`bucket: ${b} s makes more than 1000 buckets of this window: use a wider one`);
    return b;
  }
  return BUCKET_SECONDS.find((b) => windowSeconds / b <= MAX_BUCKETS) ?? 86_400;
}

/** The window [since, until) of a query, checked. */
export function activityWindow(ctx: AdminContext, q: { since?: string; until?: string }): { since: number; until: number } {
  const now = (ctx.now ?? (() => Math.floor(Date.now() / 1000)))();
  const until = parseTime(q.until, "until") ?? now + 1;
  const since = parseTime(q.since, "since") ?? until - DEFAULT_WINDOW_SECONDS;
  if (since >= until) invalid("since: must be before until");
  if (until - since > MAX_WINDOW_SECONDS) invalid(`since: the window is at most ${MAX_WINDOW_SECONDS / 86_400} days (request counts are kept that long)`);
  return { since, until };
}

export const activity = read("viewer", async function activity(ctx: AdminContext, q: ActivityQuery) {
  const network = q.network === undefined ? undefined : knownNetwork(ctx, q.network);
  const window = activityWindow(ctx, q);
  const bucketSeconds = bucketFor(window.until - window.since, q.bucket);
  const first = window.since - (window.since % bucketSeconds);
  const buckets: number[] = [];
  for (let b = first; b < window.until; b += bucketSeconds) buckets.push(b);
  const index = new Map(buckets.map((b, i) => [b, i]));

  // Request counts are per minute: a window edge inside a minute counts that minute whole.
  const counts = await guarded(() =>
    ctx.store.requestCounts({ since: first - (first % 60), until: window.until, bucketSeconds, ...(network ? { network } : {}) }),
  );
  const perBucket = buckets.map((bucket) => ({ bucket, ok: 0, errors: 0 }));
  const reasons = new Map<string, number>();
  const methods = new Map<string, { method: string; ok: number; errors: number }>();
  for (const c of counts) {
    const row = perBucket[index.get(c.bucket) ?? -1];
    if (!row) continue;
    const ok = c.outcome === "ok";
    if (ok) row.ok += c.count;
    else {
      row.errors += c.count;
      reasons.set(c.outcome, (reasons.get(c.outcome) ?? 0) + c.count);
    }
    const m = methods.get(c.method) ?? { method: c.method, ok: 0, errors: 0 };
    if (ok) m.ok += c.count;
    else m.errors += c.count;
    methods.set(c.method, m);
  }

  const { buckets: activityRows, truncated } = await guarded(() =>
    ctx.store.sponsorshipActivity({ since: window.since, until: window.until, bucketSeconds, ...(network ? { network } : {}) }),
  );
  const sponsored = buckets.map((bucket) => ({ bucket, open: 0, settled: 0, released: 0, maxCostWei: 0n, spentWei: 0n, spentUsdMicros: 0n }));
  for (const a of activityRows) {
    const row = sponsored[index.get(a.bucket - (a.bucket % bucketSeconds)) ?? -1];
    if (!row) continue;
    if (a.status === "settled") row.settled += a.count;
    else if (a.status === "released") row.released += a.count;
    else row.open += a.count;
    row.maxCostWei += a.maxCostWei;
    row.spentWei += a.actualCostWei;
    row.spentUsdMicros += a.actualCostUsdMicros;
  }
  const total = (pick: (r: (typeof sponsored)[number]) => bigint) => sponsored.reduce((sum, r) => sum + pick(r), 0n);
  return {
    since: window.since,
    until: window.until,
    bucketSeconds,
    network: network ?? null,
    requests: {
      ok: perBucket.reduce((n, r) => n + r.ok, 0),
      errors: perBucket.reduce((n, r) => n + r.errors, 0),
      perBucket,
      byReason: [...reasons].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason)),
      byMethod: [...methods.values()].sort((a, b) => b.ok + b.errors - (a.ok + a.errors) || a.method.localeCompare(b.method)),
    },
    sponsorships: {
      count: sponsored.reduce((n, r) => n + r.open + r.settled + r.released, 0),
      settled: sponsored.reduce((n, r) => n + r.settled, 0),
      spentWei: total((r) => r.spentWei).toString(),
      spentUsd: formatUsdMicros(total((r) => r.spentUsdMicros)),
      perBucket: sponsored.map((r) => ({
        bucket: r.bucket,
        open: r.open,
        settled: r.settled,
        released: r.released,
        maxCostWei: r.maxCostWei.toString(),
        spentWei: r.spentWei.toString(),
        spentUsd: formatUsdMicros(r.spentUsdMicros),
      })),
      truncated,
    },
  };
});
