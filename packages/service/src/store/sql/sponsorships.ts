/**
 * The store's part for a sponsorship after it is reserved: its status transitions (confirmed, withdrawn,
 * released, expired, settled, un-settled), each one transaction under the lock order of ../sqlStore.ts that
 * moves what it holds in its tank, usage rows and (billed projects) billing account; the ERC-20 unpaid-charge
 * marks; and the reads of sponsorships.
 */
import type { Address, Hex } from "@paymaster/shared";
import * as common from "../common.ts";
import { joinAmountParts, type Dialect, type Param, type Tx } from "../db/types.ts";
import { releasedData, settledData, sponsorshipData } from "../../webhooks/events.ts";
import type { Settlement, SponsorMode, SponsorshipCount, SponsorshipFilter, SponsorshipRecord, Store, WebhookEventType } from "../types.ts";
import { mergeCounts, retentionQueries } from "../retention.ts";
import { isActiveOpRace, usageLinks, lockTank, lockUsage, sponsorshipEvent, writeUsage, type SqlShared } from "./shared.ts";
import { billedProjects, billingParts, billingRowColumns, type BillingNext, type BillingRow } from "./billing.ts";

/** releaseExpired looks for expired sponsorships this many at a time. */
const EXPIRY_BATCH = 500;

/** What a sponsorship's status change does (see transition): the delta to apply and the statement that changes the row. */
interface Change {
  delta: common.Delta;
  sql: string;
  values: Param[];
  /** The status it goes to (what billing moves by: store/sql/billing.ts), and a settlement's figures. */
  next: BillingNext;
  settlement?: Settlement;
  /** The webhook event the change causes (written to the outbox in the same transaction), from the changed record. */
  event?: { type: WebhookEventType; data: (record: SponsorshipRecord) => Record<string, unknown> };
}

function sponsorshipQueries(d: Dialect, sponsorship: string) {
  return {
    // Amounts are added up here, not in SQL (SQLite keeps them as TEXT): this reads the rows.
    countSponsorships: "SELECT network, mode, version, status, COUNT(*) AS count FROM sponsorships GROUP BY network, mode, version, status",
    upsertUnpaid: `INSERT INTO token_charge_flags (sponsorship_id, network, sender, postop_charge, unpaid, updated_at)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (sponsorship_id) DO UPDATE SET unpaid = excluded.unpaid, updated_at = excluded.updated_at`,
    selectUnpaid: "SELECT 1 AS one FROM token_charge_flags WHERE network = ? AND sender = ? AND unpaid = ? LIMIT 1",
    // Summed by the database (one row per mode), not row by row here: the deposit check reads it every block.
    selectOutstanding: `SELECT mode, ${d
      .amountParts("max_cost_wei")
      .map((part, i) => `CAST(SUM(${part}) AS TEXT) AS ${["low", "mid", "high"][i]}`)
      .join(", ")} FROM sponsorships WHERE network = ? AND entry_point = ? AND status IN ('reserved', 'signed') GROUP BY mode`,
    // Filters bound twice each: NULL = no filter.
    selectSponsorships: `${sponsorship}
      WHERE (CAST(? AS TEXT) IS NULL OR project_id = ?) AND (CAST(? AS TEXT) IS NULL OR strategy_id = ?)
        AND (CAST(? AS TEXT) IS NULL OR network = ?) AND (CAST(? AS TEXT) IS NULL OR sender = ?)
        AND (CAST(? AS TEXT) IS NULL OR status = ?) AND (CAST(? AS TEXT) IS NULL OR user_op_hash = ?)
        AND created_at >= ? AND created_at < ?
      ORDER BY created_at DESC, ${d.insertionOrder} DESC LIMIT ?`,
    selectActiveSponsorship: `${sponsorship}
      WHERE network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND status IN ('reserved', 'signed')`,
    deleteLinks: "DELETE FROM sponsorship_usage WHERE sponsorship_id = ?",
    deleteChargeFlag: "DELETE FROM token_charge_flags WHERE sponsorship_id = ?",
    deleteSponsorship: "DELETE FROM sponsorships WHERE id = ?",
    confirmReserved: `UPDATE sponsorships SET status = 'signed', updated_at = ? WHERE id = ? AND status = 'reserved'
      RETURNING project_id`,
    settle: `UPDATE sponsorships SET status = 'settled', actual_gas_cost_wei = ?, actual_cost_usd_micros = ?,
        actual_token_cost = ?, settled_success = ?, settled_tx_hash = ?, settled_block_number = ?,
        settled_block_hash = ?, settled_log_index = ?, settled_at = ?, updated_at = ?
      WHERE id = ?`,
    unsettle: `UPDATE sponsorships SET status = ?, release_reason = ?, actual_gas_cost_wei = NULL,
        actual_cost_usd_micros = NULL, actual_token_cost = NULL, settled_success = NULL, settled_tx_hash = NULL,
        settled_block_number = NULL, settled_block_hash = NULL, settled_log_index = NULL, settled_at = NULL,
        updated_at = ?
      WHERE id = ?`,
    selectSettledSince: `${sponsorship}
      WHERE network = ? AND status = 'settled' AND settled_block_number >= ?
      ORDER BY settled_block_number, settled_log_index, ${d.insertionOrder}`,
    // Scans sponsorships_active_op: only open sponsorships are in it (see migration 1).
    selectExpired: `SELECT id FROM sponsorships WHERE status IN ('reserved', 'signed') AND valid_until < ?
      AND (CAST(? AS TEXT) IS NULL OR network = ?) ORDER BY valid_until LIMIT ?`,
    selectSponsorshipPlan: `SELECT sender, ${billingRowColumns(d)} FROM sponsorships WHERE id = ?`,
    lockSponsorship: `${sponsorship} WHERE id = ?${d.forUpdate}`,
    selectSponsorshipByHash: `${sponsorship} WHERE user_op_hash = ?
      ORDER BY CASE status WHEN 'released' THEN 1 ELSE 0 END, created_at DESC, ${d.insertionOrder} DESC LIMIT 1`,
  };
}

export function sponsorshipStore(s: SqlShared) {
  const { db } = s;
  const q = { ...s.q, ...sponsorshipQueries(db.dialect, s.q.sponsorship) };
  const retention = retentionQueries(db.dialect);
  const activeOpRace = (err: unknown): boolean => isActiveOpRace(s, err);
  const billing = billingParts(s);

  /**
   * Changes one sponsorship's status in one transaction, in the lock order: its tank (User Sponsor mode), its
   * usage rows, its project's billing account (billed sponsorships), then its own row (locked). `decide` sees the
   * locked row and answers the change — the delta for the usage rows and tank, the statement for the row and the
   * status it goes to (for billing) — or null to change nothing (answered false).
   */
  async function transition(id: string, decide: (row: common.SponsorshipRow, tx: Tx, now: number) => Promise<Change | null>): Promise<boolean> {
    const plan = await db.one<BillingRow & { sender: string }>(q.selectSponsorshipPlan, [id]);
    if (!plan) return false;
    const links = await usageLinks(s, db, id);
    return db.transaction(async (tx) => {
      const tank = plan.mode === "user" ? await lockTank(s, tx, plan.network, plan.sender) : undefined;
      const usage = await lockUsage(s, tx, links, false);
      const accounts = await billing.lockAccounts(tx, billedProjects([plan]));
      const row = await tx.one<common.SponsorshipRow>(q.lockSponsorship, [id]);
      const now = common.nowSeconds();
      const change = row && (await decide(row, tx, now));
      if (!change) return false;
      await tx.run(change.sql, change.values);
      await billing.billTransition(tx, accounts, id, plan, { from: row.status, next: change.next, settlement: change.settlement }, now);
      await billing.saveAccounts(tx, accounts, now);
      await writeUsage(s, 
        tx,
        links.map((k) => ({ key: k, totals: common.applyUsage(usage.get(common.usageId(k))!, change.delta) })),
        now,
      );
      if (tank) {
        const t = common.applyTank(tank, change.delta);
        await tx.run(q.updateTank, [t.balanceWei, t.reservedWei, now, plan.network, plan.sender]);
      }
      if (change.event) await sponsorshipEvent(s, tx, id, change.event.type, change.event.data);
      return true;
    }, activeOpRace);
  }

  function release(id: string, reason: common.ReleaseReason): Promise<boolean> {
    return transition(id, async (row, _tx, now) =>
      row.status === "reserved" || row.status === "signed"
        ? {
            delta: common.releaseDelta(common.rowCost(row)),
            sql: q.releaseActive,
            values: [reason, now, id],
            next: "released",
            // Only a signature handed out is news to the project: an unsigned reservation leaves quietly.
            ...(row.status === "signed" ? { event: { type: "sponsorship.released" as const, data: (r: SponsorshipRecord) => releasedData(r, reason) } } : {}),
          }
        : null,
    );
  }

  return {
    async confirmSponsorship(id: string): Promise<boolean> {
      // Only the row changes (what it holds stays): no usage or tank row to lock.
      return db.transaction(async (tx) => {
        const row = await tx.one<{ project_id: string }>(q.confirmReserved, [common.nowSeconds(), id]);
        if (!row) return false;
        await sponsorshipEvent(s, tx, id, "sponsorship.signed", sponsorshipData, row.project_id);
        return true;
      });
    },

    async withdrawSponsorship(id: string): Promise<boolean> {
      // Under the lock order of every transition (tank, usage rows, the row): the rows it was counted in give back
      // exactly what it held, then it goes with its links and charge flag. A pending row has no webhook event.
      return transition(id, async (row, tx) => {
        if (row.status !== "reserved") return null;
        await tx.run(q.deleteLinks, [id]);
        await tx.run(q.deleteChargeFlag, [id]);
        return { delta: common.releaseDelta(common.rowCost(row)), sql: q.deleteSponsorship, values: [id], next: "deleted" };
      });
    },

    /** Idempotent: releasing a released, settled or unknown sponsorship changes nothing. */
    async releaseSponsorship(id: string): Promise<void> {
      await release(id, "released");
    },

    /** See common.settleDelta for which sponsorships settle. */
    async settleSponsorship(id: string, settlement: Settlement): Promise<boolean> {
      const valid = common.validSettlement(settlement);
      const actual = { wei: valid.actualGasCostWei, usdMicros: valid.actualCostUsdMicros };
      return transition(id, async (row, _tx, now) => {
        const delta = common.settleDelta(row, actual);
        return delta && {
          delta,
          sql: q.settle,
          values: [...common.settlementColumns(valid), now, now, id],
          next: "settled",
          settlement: valid,
          event: { type: "sponsorship.settled", data: settledData },
        };
      });
    },

    /**
     * See common.unsettleTransition. The op's active sponsorship, if any, is locked after this one's row (the
     * lock order's last step); should one be inserted concurrently (PostgreSQL), the unique index refuses one of
     * the two transactions and it runs again.
     */
    async unsettleSponsorship(id: string): Promise<boolean> {
      return transition(id, async (row, tx, now) => {
        if (row.status !== "settled") return null;
        const active = await tx.one(q.lockActiveOp, [row.network, row.entry_point, row.sender, BigInt(row.nonce)]);
        const change = common.unsettleTransition(row, active !== undefined);
        return change && { delta: change.delta, sql: q.unsettle, values: [change.status, change.releaseReason, now, id], next: change.status };
      });
    },

    async listSettledSince(network: string, fromBlock: bigint): Promise<SponsorshipRecord[]> {
      const from = common.amount(fromBlock, "fromBlock");
      if (from > BigInt(Number.MAX_SAFE_INTEGER)) return [];
      const rows = await db.all<common.SponsorshipRow>(q.selectSettledSince, [network, Number(from)]);
      return rows.map(common.toSponsorship);
    },

    /**
     * Releases (reason "expired") every reserved or signed sponsorship with validUntil + graceSeconds < now, each in
     * its own transaction under the lock order (as releaseSponsorship); one settled or replaced meanwhile is left
     * alone, so this may run while other replicas reserve and settle.
     */
    async releaseExpired(now: number, graceSeconds: number, network?: string): Promise<number> {
      const cutoff = common.validExpiry(now, graceSeconds);
      const only = network ?? null;
      let released = 0;
      for (;;) {
        const rows = await db.all<{ id: string }>(q.selectExpired, [cutoff, only, only, EXPIRY_BATCH]);
        let batch = 0;
        for (const { id } of rows) if (await release(id, "expired")) batch++;
        released += batch;
        // A full batch of which none could be released (all changed meanwhile) would be found again: stop.
        if (rows.length < EXPIRY_BATCH || batch === 0) return released;
      }
    },

    async getSponsorship(id: string): Promise<SponsorshipRecord | undefined> {
      const row = await db.one<common.SponsorshipRow>(q.selectSponsorship, [id]);
      return row && common.toSponsorship(row);
    },

    /**
     * The sponsorship signed with that userOpHash. Should two share it (the same op re-signed within the same
     * second yields identical paymasterAndData), the active or settled one wins over a released one, then the newest.
     */
    async findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined> {
      const hash = common.hashKey(userOpHash);
      if (hash === undefined) return undefined;
      const row = await db.one<common.SponsorshipRow>(q.selectSponsorshipByHash, [hash]);
      return row && common.toSponsorship(row);
    },

    // ---- ERC-20 token charges at risk

    async setTokenChargeUnpaid(id: string, unpaid: boolean): Promise<void> {
      const row = await db.one<common.SponsorshipRow>(q.selectSponsorship, [id]);
      if (!row) return;
      await db.run(q.upsertUnpaid, [id, row.network, row.sender, false, unpaid, common.nowSeconds()]);
    },

    async hasUnpaidTokenCharge(network: string, sender: Address): Promise<boolean> {
      return (await db.one(q.selectUnpaid, [network, common.address(sender, "sender"), true])) !== undefined;
    },

    // ---- counts and reads (metrics, the deposit check, the console and the CLI)

    async sponsorshipCounts(): Promise<SponsorshipCount[]> {
      const read = async (sql: string) => (await db.all<Omit<SponsorshipCount, "count"> & { count: number | string }>(sql)).map((row) => ({ ...row, count: Number(row.count) }));
      // The rows still present, and the counts of those the retention pass deleted.
      return mergeCounts(await read(q.countSponsorships), await read(retention.selectPrunedCounts));
    },

    async outstandingMaxCost(network: string, entryPoint: Address, modes: readonly SponsorMode[]): Promise<bigint> {
      const wanted = new Set<string>(modes);
      let total = 0n;
      for (const row of await db.all<{ mode: string; low: string; mid: string; high: string }>(q.selectOutstanding, [network, common.address(entryPoint, "entryPoint")])) {
        if (wanted.has(row.mode)) total += joinAmountParts(row.low, row.mid, row.high);
      }
      return total;
    },

    async listSponsorships(filter: SponsorshipFilter): Promise<SponsorshipRecord[]> {
      const f = common.validSponsorshipFilter(filter);
      const twice = (v: string | null): Param[] => [v, v];
      const rows = await db.all<common.SponsorshipRow>(q.selectSponsorships, [
        ...twice(f.projectId),
        ...twice(f.strategyId),
        ...twice(f.network),
        ...twice(f.sender),
        ...twice(f.status),
        ...twice(f.userOpHash),
        f.since,
        f.until,
        f.limit,
      ]);
      return rows.map(common.toSponsorship);
    },

    async findActiveSponsorship(op: { network: string; entryPoint: Address; sender: Address; nonce: bigint }) {
      const key: Param[] = [op.network, common.address(op.entryPoint, "entryPoint"), common.address(op.sender, "sender"), common.amount(op.nonce, "nonce")];
      const row = await db.one<common.SponsorshipRow>(q.selectActiveSponsorship, key);
      return row && { record: common.toSponsorship(row), links: await usageLinks(s, db, row.id) };
    },
  } satisfies Partial<Store>;
}
