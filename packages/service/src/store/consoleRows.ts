/**
 * The operator console's reads (the admin API serves them; src/admin/activity.ts and tanks.ts shape them), used
 * by sql/console.ts: per-minute request counts (migration 9), sponsorship activity per time bucket, gas tank
 * listings and ledgers, and a sponsorship's timeline. None of them runs on the sponsoring path. Amounts are read
 * as rows and added up here as bigints (SQLite keeps them as TEXT); counts are summed in SQL.
 */
import type { Hex } from "@paymaster/shared";
import type { RequestCountBucket, SponsorshipActivity, SponsorshipStatus, SponsorshipTimeline, TankLedgerEntry } from "./types.ts";

/** sponsorshipActivity reads at most this many sponsorships (a month of a busy paymaster; the answer says when it cut). */
export const ACTIVITY_ROW_LIMIT = 200_000;

type Amount = string | bigint;

export const CONSOLE_QUERIES = {
  // One row per (minute, network, method, outcome): each flush adds its counts to the row.
  upsertRequestCount: `INSERT INTO request_counts (minute, network, method, outcome, count) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (minute, network, method, outcome) DO UPDATE SET count = request_counts.count + excluded.count`,
  // Bucket width bound twice (node:sqlite binds numbers as REAL: the casts keep the division an integer one).
  selectRequestCounts: `SELECT (minute / CAST(? AS INTEGER)) * CAST(? AS INTEGER) AS bucket, network, method, outcome,
      SUM(count) AS count
    FROM request_counts WHERE minute >= ? AND minute < ? AND (CAST(? AS TEXT) IS NULL OR network = ?)
    GROUP BY 1, network, method, outcome ORDER BY 1, network, method, outcome`,
  pruneRequestCounts: "DELETE FROM request_counts WHERE minute < ?",
  // Filters bound twice each: NULL = no filter.
  selectActivity: `SELECT created_at, network, status, max_cost_wei, max_cost_usd_micros, actual_gas_cost_wei, actual_cost_usd_micros
    FROM sponsorships WHERE created_at >= ? AND created_at < ?
      AND (CAST(? AS TEXT) IS NULL OR network = ?) AND (CAST(? AS TEXT) IS NULL OR project_id = ?)
      AND (CAST(? AS TEXT) IS NULL OR strategy_id = ?)
    LIMIT ?`,
  selectTanks: `SELECT network, sender, balance_wei, reserved_wei, updated_at FROM gas_tanks
    WHERE (CAST(? AS TEXT) IS NULL OR network = ?) ORDER BY updated_at DESC, network, sender LIMIT ?`,
  selectCredits: `SELECT reference, amount_wei, created_at FROM gas_tank_credits WHERE network = ? AND sender = ?
    ORDER BY created_at DESC, reference LIMIT ?`,
  selectDebits: `SELECT reference, amount_wei, created_at FROM gas_tank_debits WHERE network = ? AND sender = ?
    ORDER BY created_at DESC, reference LIMIT ?`,
  selectSpends: `SELECT id, user_op_hash, settled_tx_hash, actual_gas_cost_wei, settled_at FROM sponsorships
    WHERE network = ? AND sender = ? AND mode = 'user' AND status = 'settled' ORDER BY settled_at DESC, id LIMIT ?`,
  selectTimeline: "SELECT status, release_reason, created_at, updated_at, settled_at FROM sponsorships WHERE id = ?",
} as const;

export interface RequestCountRow {
  bucket: number | string;
  network: string;
  method: string;
  outcome: string;
  count: number | string;
}

/** PostgreSQL answers BIGINT and SUM as text: numbers here. */
export function toRequestCountBucket(row: RequestCountRow): RequestCountBucket {
  return { bucket: Number(row.bucket), network: row.network, method: row.method, outcome: row.outcome, count: Number(row.count) };
}

export interface ActivityRow {
  created_at: number | string;
  network: string;
  status: SponsorshipStatus;
  max_cost_wei: Amount;
  max_cost_usd_micros: Amount;
  actual_gas_cost_wei: Amount | null;
  actual_cost_usd_micros: Amount | null;
}

/** Sponsorship rows added up per (bucket, network, status), oldest bucket first. */
export function aggregateActivity(rows: readonly ActivityRow[], bucketSeconds: number): SponsorshipActivity[] {
  const out = new Map<string, SponsorshipActivity>();
  for (const row of rows) {
    const createdAt = Number(row.created_at);
    const bucket = createdAt - (createdAt % bucketSeconds);
    const key = `${bucket}\u0000${row.network}\u0000${row.status}`;
    let a = out.get(key);
    if (!a) {
      a = { bucket, network: row.network, status: row.status, count: 0, maxCostWei: 0n, maxCostUsdMicros: 0n, actualCostWei: 0n, actualCostUsdMicros: 0n };
      out.set(key, a);
    }
    a.count++;
    a.maxCostWei += BigInt(row.max_cost_wei);
    a.maxCostUsdMicros += BigInt(row.max_cost_usd_micros);
    if (row.status === "settled") {
      a.actualCostWei += BigInt(row.actual_gas_cost_wei ?? 0);
      a.actualCostUsdMicros += BigInt(row.actual_cost_usd_micros ?? 0);
    }
  }
  return [...out.values()].sort((x, y) => x.bucket - y.bucket || x.network.localeCompare(y.network) || x.status.localeCompare(y.status));
}

export interface LedgerRow {
  reference: string;
  amount_wei: Amount;
  created_at: number | string;
}

export interface SpendRow {
  id: string;
  user_op_hash: string | null;
  settled_tx_hash: string | null;
  actual_gas_cost_wei: Amount;
  settled_at: number | string;
}

/** Credits, debits and spends merged, newest first (ties: credits before debits before spends, then by reference). */
export function mergeLedger(credits: readonly LedgerRow[], debits: readonly LedgerRow[], spends: readonly SpendRow[]): TankLedgerEntry[] {
  const entries: TankLedgerEntry[] = [
    ...credits.map((r) => ({ kind: "credit" as const, at: Number(r.created_at), amountWei: BigInt(r.amount_wei), reference: r.reference })),
    ...debits.map((r) => ({ kind: "debit" as const, at: Number(r.created_at), amountWei: BigInt(r.amount_wei), reference: r.reference })),
    ...spends.map((r) => ({
      kind: "spend" as const,
      at: Number(r.settled_at),
      amountWei: BigInt(r.actual_gas_cost_wei),
      reference: r.id,
      userOpHash: r.user_op_hash as Hex | null,
      txHash: r.settled_tx_hash as Hex | null,
    })),
  ];
  const order = { credit: 0, debit: 1, spend: 2 };
  return entries.sort((a, b) => b.at - a.at || order[a.kind] - order[b.kind] || a.reference.localeCompare(b.reference));
}

export interface TimelineRow {
  status: SponsorshipStatus;
  release_reason: SponsorshipTimeline["releaseReason"];
  created_at: number | string;
  updated_at: number | string;
  settled_at: number | string | null;
}

export function toTimeline(row: TimelineRow): SponsorshipTimeline {
  return {
    createdAt: Number(row.created_at),
    releasedAt: row.status === "released" ? Number(row.updated_at) : null,
    releaseReason: row.release_reason ?? null,
    settledAt: row.status === "settled" && row.settled_at !== null ? Number(row.settled_at) : null,
  };
}
