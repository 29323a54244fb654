/**
 * What the store's parts share (see ../sqlStore.ts for the lock order they all follow): the database, the
 * statements more than one part runs, the database's constraint violations as answers, and the locking reads
 * and writes of the rows several transactions take in the lock order — the gas tank (1), the strategy usage rows
 * (2) — plus the webhook event of a sponsorship, written in the transaction that changed it.
 */
import * as common from "../common.ts";
import type { Db, Dialect, Queryer, Tx } from "../db/types.ts";
import { writeEvents } from "../webhookRows.ts";
import type { GasTank, SponsorshipRecord, UsageTotals, WebhookEventType } from "../types.ts";
import type { Address } from "@paymaster/shared";

/** The statements more than one part runs, rendered once for the database's dialect. */
function sharedQueries(d: Dialect) {
  const usageColumns = "reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros, ops";
  const activeOp = `SELECT id, mode, status, max_cost_wei, max_cost_usd_micros, project_id, billing_hold_usd_micros FROM sponsorships
    WHERE network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND status IN ('reserved', 'signed')`;
  return {
    usageColumns,
    insertProject: "INSERT INTO projects (id, name, status, created_at) VALUES (?, ?, 'active', ?)",
    insertApiKey: `INSERT INTO api_keys (id, project_id, key_hash, prefix, label, status, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?)`,

    selectTank: "SELECT balance_wei, reserved_wei FROM gas_tanks WHERE network = ? AND sender = ?",
    lockTank: `SELECT balance_wei, reserved_wei FROM gas_tanks WHERE network = ? AND sender = ?${d.forUpdate}`,
    insertEmptyTank: `INSERT INTO gas_tanks (network, sender, balance_wei, reserved_wei, updated_at)
      VALUES (?, ?, '0', '0', ?) ON CONFLICT (network, sender) DO NOTHING`,
    updateTank: "UPDATE gas_tanks SET balance_wei = ?, reserved_wei = ?, updated_at = ? WHERE network = ? AND sender = ?",

    lockUsage: `SELECT ${usageColumns} FROM strategy_usage WHERE strategy_id = ? AND scope = ? AND key = ?${d.forUpdate}`,
    // Creates the row if missing, and locks it either way (ON CONFLICT DO UPDATE locks the existing row).
    upsertLockUsage: `INSERT INTO strategy_usage (strategy_id, scope, key, reserved_wei, spent_wei, reserved_usd_micros,
        spent_usd_micros, ops, updated_at)
      VALUES (?, ?, ?, '0', '0', '0', '0', 0, ?)
      ON CONFLICT (strategy_id, scope, key) DO UPDATE SET updated_at = strategy_usage.updated_at
      RETURNING ${usageColumns}`,
    updateUsage: `UPDATE strategy_usage SET reserved_wei = ?, spent_wei = ?, reserved_usd_micros = ?,
        spent_usd_micros = ?, ops = ?, updated_at = ?
      WHERE strategy_id = ? AND scope = ? AND key = ?`,
    selectLinks: `SELECT strategy_id AS "strategyId", scope, key FROM sponsorship_usage WHERE sponsorship_id = ?`,

    sponsorship: `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships`,
    selectSponsorship: `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships WHERE id = ?`,
    selectActiveOp: activeOp,
    lockActiveOp: `${activeOp}${d.forUpdate}`,
    releaseActive: `UPDATE sponsorships SET status = 'released', release_reason = ?, updated_at = ?
      WHERE id = ? AND status IN ('reserved', 'signed')`,
  };
}

export type SharedQueries = ReturnType<typeof sharedQueries>;

/** The database and the shared statements, given to every part of the store. */
export interface SqlShared {
  readonly db: Db;
  readonly q: SharedQueries;
}

export function sqlShared(db: Db): SqlShared {
  return { db, q: sharedQueries(db.dialect) };
}

/** Webhook outbox rows are stamped in milliseconds (delivery backoff is finer than a second). */
export const nowMs = (): number => Date.now();

/** Thrown inside a reservation that found it would have to take a lock out of the lock order. */
export class LockOrderRetry extends Error {
  override name = "LockOrderRetry";
}

export function isUnique(s: SqlShared, err: unknown, constraint?: string): boolean {
  const v = s.db.violation(err);
  return v?.kind === "unique" && (constraint === undefined || v.constraint === constraint);
}

export function isForeignKey(s: SqlShared, err: unknown): boolean {
  return s.db.violation(err)?.kind === "foreignKey";
}

/** A lost race for the op's one active sponsorship (partial unique index): the next attempt sees the winner. */
export function isActiveOpRace(s: SqlShared, err: unknown): boolean {
  return err instanceof LockOrderRetry || isUnique(s, err, "sponsorships_active_op");
}

export async function readTank(s: SqlShared, on: Queryer, network: string, sender: Address): Promise<GasTank> {
  return { network, sender, ...common.toTank(await on.one<common.TankRow>(s.q.selectTank, [network, sender])) };
}

/** Locks the tank row (lock order 1), creating an empty one first if there is none. */
export async function lockTank(s: SqlShared, tx: Tx, network: string, sender: string): Promise<{ balanceWei: bigint; reservedWei: bigint }> {
  let row = await tx.one<common.TankRow>(s.q.lockTank, [network, sender]);
  if (!row) {
    await tx.run(s.q.insertEmptyTank, [network, sender, common.nowSeconds()]);
    row = await tx.one<common.TankRow>(s.q.lockTank, [network, sender]);
  }
  return common.toTank(row);
}

/** Locks usage rows (lock order 2) in common.lockOrder, creating missing ones when `create`; their totals by usageId. */
export async function lockUsage(s: SqlShared, tx: Tx, keys: readonly common.UsageKey[], create: boolean): Promise<Map<string, UsageTotals>> {
  const totals = new Map<string, UsageTotals>();
  const now = common.nowSeconds();
  for (const k of common.lockOrder(keys)) {
    const row = create
      ? await tx.one<common.UsageRow>(s.q.upsertLockUsage, [k.strategyId, k.scope, k.key, now])
      : await tx.one<common.UsageRow>(s.q.lockUsage, [k.strategyId, k.scope, k.key]);
    totals.set(common.usageId(k), common.toUsage(row));
  }
  return totals;
}

export async function writeUsage(s: SqlShared, tx: Tx, writes: readonly { key: common.UsageKey; totals: UsageTotals }[], now: number): Promise<void> {
  for (const { key: k, totals: u } of writes) {
    await tx.run(s.q.updateUsage, [u.reservedWei, u.spentWei, u.reservedUsdMicros, u.spentUsdMicros, u.ops, now, k.strategyId, k.scope, k.key]);
  }
}

/** The usage rows a sponsorship counts in: written with it, never changed, so safe to read before locking. */
export async function usageLinks(s: SqlShared, on: Queryer, id: string): Promise<common.UsageKey[]> {
  return on.all<common.UsageKey>(s.q.selectLinks, [id]);
}

/**
 * Writes a sponsorship's event for its project's subscribers, from the record as the transaction left it.
 * With the project known (`projectId`), the record is read only when some endpoint subscribes.
 */
export async function sponsorshipEvent(
  s: SqlShared,
  tx: Tx,
  id: string,
  type: WebhookEventType,
  data: (record: SponsorshipRecord) => Record<string, unknown>,
  projectId?: string,
): Promise<void> {
  const read = async (): Promise<SponsorshipRecord | undefined> => {
    const row = await tx.one<common.SponsorshipRow>(s.q.selectSponsorship, [id]);
    return row && common.toSponsorship(row);
  };
  const known = projectId === undefined ? await read() : undefined;
  if (projectId === undefined && !known) return;
  const record = async (): Promise<Record<string, unknown>> => data((known ?? (await read()))!);
  await writeEvents(tx, { projectId: projectId ?? known!.projectId, type, data: record, sponsorshipId: id }, nowMs());
}
