/**
 * `paymaster sponsorship prune`: the retention pass on demand (src/retention.ts), with the
 * configuration's retention unless the operator gives other days; `dryRun` only counts what would go.
 */
import { DEFAULT_RETENTION, prunePass, retentionCutoffs } from "../retention.ts";
import { RETENTION_RANGES } from "../config/schema.ts";
import { audit, guarded, invalid, operation, type AdminContext, mutation } from "./context.ts";

export interface PruneQuery {
  releasedDays?: string | number;
  settledDays?: string | number;
  dryRun?: boolean;
}

function days(value: string | number | undefined, field: "releasedDays" | "settledDays", fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  const { min, max } = RETENTION_RANGES[field];
  if (!Number.isSafeInteger(n) || n < min || n > max) invalid(`${field}: an integer from ${min} to ${max} (0 keeps them forever)`);
  return n;
}

export const pruneSponsorships = operation("admin", async function pruneSponsorships(ctx: AdminContext, q: PruneQuery) {
  const configured = { ...DEFAULT_RETENTION, ...ctx.retention };
  const settings = {
    ...configured,
    releasedDays: days(q.releasedDays, "releasedDays", configured.releasedDays),
    settledDays: days(q.settledDays, "settledDays", configured.settledDays),
  };
  const now = (ctx.now ?? (() => Math.floor(Date.now() / 1000)))();
  const cutoffs = retentionCutoffs(settings, now);
  const policy = {
    releasedDays: settings.releasedDays,
    settledDays: settings.settledDays,
    releasedBefore: cutoffs.releasedBefore ?? null,
    settledBefore: cutoffs.settledBefore ?? null,
  };
  if (q.dryRun === true) {
    const would = await guarded(() => ctx.store.countPrunableSponsorships(cutoffs));
    return { dryRun: true, ...policy, released: would.released, settled: would.settled, oldestReleased: would.oldestReleased, oldestSettled: would.oldestSettled };
  }
  const done = await guarded(() => prunePass(ctx.store, settings, cutoffs));
  const result = { dryRun: false, ...policy, released: done.released, settled: done.settled, batches: done.batches };
  await recordPrune(ctx, result);
  return result;
});

/**
 * The pass's audit row, written after it: the pass is many short transactions by design (never one long
 * delete), so its record cannot share one with the change; it says what went.
 */
const recordPrune = mutation("admin", async function recordPrune(ctx: AdminContext, result: Record<string, unknown>): Promise<void> {
  await audit(ctx, "sponsorship.prune", null, null, result);
});
