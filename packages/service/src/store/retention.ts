/**
 * Sponsorship retention in the store (migration 11), used by sqlStore.ts: deleting old sponsorships in small
 * batches, and keeping what the readers of old rows need. Only final rows go: released ones (never landed:
 * expired, replaced, refused after reservation) whose signature expired before the cutoff, and — when the
 * operator sets a retention for them — settled ones settled before theirs. In the transaction that deletes a
 * batch, the rows are first added up per minute of creation into `sponsorship_rollup` (what the console's
 * activity charts and the strategy history read beside the rows still present) and counted into
 * `sponsorship_pruned_counts` (the records-by-status gauge). Caps and usage never read these rows: they live in
 * strategy_usage; the batch's usage links and charge flags go with it.
 *
 * Never pruned, whatever the retention: a sponsorship whose token charge went unpaid (an `unpaid` row of
 * token_charge_flags, second review finding 4). That row keeps its sender on pre-charge only, and it and its
 * sponsorship's cost are what the postOp-charge at-risk budget adds up (sql/reservations.ts): deleting them
 * would lift both defences. They are few (each is a loss the paymaster took) and stay as the debt's record.
 */
import type { Dialect, Param, Queryer } from "./db/types.ts";
import type { PrunableCounts, PruneCounts, PruneCutoffs, SponsorshipActivity, SponsorshipCount } from "./types.ts";

export type { PrunableCounts, PruneCounts, PruneCutoffs };

type Amount = string | bigint;

interface PrunedRow {
  id: string;
  created_at: number | string;
  network: string;
  project_id: string;
  strategy_id: string | null;
  mode: string;
  version: string;
  status: "released" | "settled";
  max_cost_wei: Amount;
  max_cost_usd_micros: Amount;
  actual_gas_cost_wei: Amount | null;
  actual_cost_usd_micros: Amount | null;
}

const PRUNED_COLUMNS = `id, created_at, network, project_id, strategy_id, mode, version, status, max_cost_wei, max_cost_usd_micros,
  actual_gas_cost_wei, actual_cost_usd_micros`;
const AMOUNTS = ["max_cost_wei", "max_cost_usd_micros", "actual_gas_cost_wei", "actual_cost_usd_micros"] as const;

/** A sponsorship that is no record of an unpaid charge (those are kept: see above). */
const NOT_UNPAID = `NOT EXISTS (SELECT 1 FROM token_charge_flags f WHERE f.sponsorship_id = sponsorships.id AND f.unpaid = ?)`;

export function retentionQueries(d: Dialect) {
  return {
    // Locked (PostgreSQL re-checks the status of a row a concurrent settlement changed): only final rows go.
    // Each binds (cutoff…, true for NOT_UNPAID[, limit]).
    selectReleased: `SELECT ${PRUNED_COLUMNS} FROM sponsorships WHERE status = 'released' AND created_at < ? AND valid_until < ?
      AND ${NOT_UNPAID} ORDER BY created_at LIMIT ?${d.forUpdate}`,
    selectSettled: `SELECT ${PRUNED_COLUMNS} FROM sponsorships WHERE status = 'settled' AND settled_at < ?
      AND ${NOT_UNPAID} ORDER BY settled_at LIMIT ?${d.forUpdate}`,
    countReleased: `SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM sponsorships WHERE status = 'released' AND created_at < ? AND valid_until < ?
      AND ${NOT_UNPAID}`,
    countSettled: `SELECT COUNT(*) AS n, MIN(settled_at) AS oldest FROM sponsorships WHERE status = 'settled' AND settled_at < ? AND ${NOT_UNPAID}`,
    insertRollup: `INSERT INTO sponsorship_rollup (minute, network, project_id, strategy_id, mode, version, status, count, max_cost_wei,
        max_cost_usd_micros, actual_gas_cost_wei, actual_cost_usd_micros)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    upsertPrunedCount: `INSERT INTO sponsorship_pruned_counts (network, mode, version, status, count) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (network, mode, version, status) DO UPDATE SET count = sponsorship_pruned_counts.count + excluded.count`,
    selectPrunedCounts: "SELECT network, mode, version, status, count FROM sponsorship_pruned_counts",
  };
}

export type RetentionQueries = ReturnType<typeof retentionQueries>;

/** `DELETE … WHERE column IN (?, …)` for one batch's ids. */
function deleteIn(table: string, column: string, ids: readonly string[]): string {
  return `DELETE FROM ${table} WHERE ${column} IN (${ids.map(() => "?").join(", ")})`;
}

/** The batch's rows added up per (minute, network, project, strategy, mode, version, status). Pure. */
export function rollUp(rows: readonly PrunedRow[]): Param[][] {
  const groups = new Map<string, { key: Param[]; count: number; sums: bigint[] }>();
  for (const row of rows) {
    const created = Number(row.created_at);
    const key: Param[] = [created - (created % 60), row.network, row.project_id, row.strategy_id, row.mode, row.version, row.status];
    const id = JSON.stringify(key);
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { key, count: 0, sums: [0n, 0n, 0n, 0n] }));
    g.count++;
    AMOUNTS.forEach((column, i) => (g.sums[i]! += BigInt(row[column] ?? 0)));
  }
  return [...groups.values()].map((g) => [...g.key, g.count, ...g.sums]);
}

/** The batch counted per (network, mode, version, status). Pure. */
function countUp(rows: readonly PrunedRow[]): Param[][] {
  const counts = new Map<string, { key: string[]; count: number }>();
  for (const row of rows) {
    const key = [row.network, row.mode, row.version, row.status];
    const id = key.join("\u0000");
    const c = counts.get(id) ?? { key, count: 0 };
    c.count++;
    counts.set(id, c);
  }
  return [...counts.values()].map((c) => [...c.key, c.count]);
}

/**
 * Deletes one batch (at most `limit` rows: released ones first, then settled ones) inside the caller's
 * transaction, rolling it up first; answers how many of each went.
 */
export async function pruneBatch(tx: Queryer, q: RetentionQueries, cutoffs: PruneCutoffs, limit: number): Promise<PruneCounts> {
  const rows: PrunedRow[] = [];
  if (cutoffs.releasedBefore !== undefined) {
    rows.push(...(await tx.all<PrunedRow>(q.selectReleased, [cutoffs.releasedBefore, cutoffs.releasedBefore, true, limit])));
  }
  if (cutoffs.settledBefore !== undefined && rows.length < limit) {
    rows.push(...(await tx.all<PrunedRow>(q.selectSettled, [cutoffs.settledBefore, true, limit - rows.length])));
  }
  if (rows.length === 0) return { released: 0, settled: 0 };
  for (const values of rollUp(rows)) await tx.run(q.insertRollup, values);
  for (const values of countUp(rows)) await tx.run(q.upsertPrunedCount, values);
  const ids = rows.map((r) => r.id);
  await tx.run(deleteIn("token_charge_flags", "sponsorship_id", ids), ids);
  await tx.run(deleteIn("sponsorships", "id", ids), ids);
  const released = rows.filter((r) => r.status === "released").length;
  return { released, settled: rows.length - released };
}

/** What a pass with these cutoffs would delete, and the oldest of each (unix seconds, null if none). */
export async function countPrunable(db: Queryer, q: RetentionQueries, cutoffs: PruneCutoffs): Promise<PrunableCounts> {
  type Row = { n: number | string; oldest: number | string | null };
  const none: Row = { n: 0, oldest: null };
  const released = cutoffs.releasedBefore === undefined ? none : ((await db.one<Row>(q.countReleased, [cutoffs.releasedBefore, cutoffs.releasedBefore, true])) ?? none);
  const settled = cutoffs.settledBefore === undefined ? none : ((await db.one<Row>(q.countSettled, [cutoffs.settledBefore, true])) ?? none);
  const oldest = (r: Row) => (r.oldest === null ? null : Number(r.oldest));
  return { released: Number(released.n), settled: Number(settled.n), oldestReleased: oldest(released), oldestSettled: oldest(settled) };
}

/** Two activity lists added up per (bucket, network, status), in the rows' order. Pure. */
export function mergeActivity(a: readonly SponsorshipActivity[], b: readonly SponsorshipActivity[]): SponsorshipActivity[] {
  const out = new Map<string, SponsorshipActivity>();
  for (const x of [...a, ...b]) {
    const key = `${x.bucket}\u0000${x.network}\u0000${x.status}`;
    const y = out.get(key);
    if (!y) out.set(key, { ...x });
    else {
      y.count += x.count;
      y.maxCostWei += x.maxCostWei;
      y.maxCostUsdMicros += x.maxCostUsdMicros;
      y.actualCostWei += x.actualCostWei;
      y.actualCostUsdMicros += x.actualCostUsdMicros;
    }
  }
  return [...out.values()].sort((x, y) => x.bucket - y.bucket || x.network.localeCompare(y.network) || x.status.localeCompare(y.status));
}

/** The rows' counts plus the deleted ones' (the gauge counts every sponsorship ever recorded). Pure. */
export function mergeCounts(present: readonly SponsorshipCount[], pruned: readonly SponsorshipCount[]): SponsorshipCount[] {
  const out = new Map<string, SponsorshipCount>();
  for (const c of [...present, ...pruned]) {
    const key = [c.network, c.mode, c.version, c.status].join("\u0000");
    const prior = out.get(key);
    out.set(key, prior ? { ...prior, count: prior.count + c.count } : { ...c });
  }
  return [...out.values()];
}
