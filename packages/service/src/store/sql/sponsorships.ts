/**
 * The store's reads of sponsorships (their status changes are sql/transitions.ts): by id, by userOpHash, by
 * filter, the op's active one, counts, what is outstanding, ERC-20 unpaid-charge marks.
 */
import type { Address, Hex } from "@paymaster/shared";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import { joinAmountParts, type Dialect, type Param } from "../db/types.ts";
import type { SponsorshipCount, SponsorshipFilter, SponsorshipRecord, Store } from "../types.ts";
import type { SponsorMode } from "../../policy/types.ts";
import { mergeCounts, retentionQueries } from "../retention.ts";
import { factsOf, type SponsorshipFactsRow, type SqlShared } from "./shared.ts";

function sponsorshipQueries(d: Dialect, sponsorship: string) {
  return {
    // Amounts are added up here, not in SQL (SQLite keeps them as TEXT): this reads the rows.
    countSponsorships: "SELECT network, mode, version, status, COUNT(*) AS count FROM sponsorships GROUP BY network, mode, version, status",
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
    selectSettledSince: `${sponsorship}
      WHERE network = ? AND status = 'settled' AND settled_block_number >= ?
      ORDER BY settled_block_number, settled_log_index, ${d.insertionOrder}`,
    selectSponsorshipByHash: `${sponsorship} WHERE user_op_hash = ?
      ORDER BY CASE status WHEN 'released' THEN 1 ELSE 0 END, created_at DESC, ${d.insertionOrder} DESC LIMIT 1`,
  };
}

export function sponsorshipStore(s: SqlShared) {
  const { db } = s;
  const q = { ...s.q, ...sponsorshipQueries(db.dialect, s.q.sponsorship) };
  const retention = retentionQueries(db.dialect);

  return {
    async listSettledSince(network: string, fromBlock: bigint): Promise<SponsorshipRecord[]> {
      const from = validation.amount(fromBlock, "fromBlock");
      if (from > BigInt(Number.MAX_SAFE_INTEGER)) return [];
      const rows = await db.all<dbRows.SponsorshipRow>(q.selectSettledSince, [network, Number(from)]);
      return rows.map(dbRows.toSponsorship);
    },

    async getSponsorship(id: string): Promise<SponsorshipRecord | undefined> {
      const row = await db.one<dbRows.SponsorshipRow>(q.selectSponsorship, [id]);
      return row && dbRows.toSponsorship(row);
    },

    /**
     * The sponsorship signed with that userOpHash. Should two share it (the same op re-signed within the same
     * second yields identical paymasterAndData), the active or settled one wins over a released one, then the newest.
     */
    async findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined> {
      const hash = validation.hashKey(userOpHash);
      if (hash === undefined) return undefined;
      const row = await db.one<dbRows.SponsorshipRow>(q.selectSponsorshipByHash, [hash]);
      return row && dbRows.toSponsorship(row);
    },

    // ---- ERC-20 token charges at risk

    async hasUnpaidTokenCharge(network: string, sender: Address): Promise<boolean> {
      return (await db.one(q.selectUnpaid, [network, validation.address(sender, "sender"), true])) !== undefined;
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
      for (const row of await db.all<{ mode: string; low: string; mid: string; high: string }>(q.selectOutstanding, [network, validation.address(entryPoint, "entryPoint")])) {
        if (wanted.has(row.mode)) total += joinAmountParts(row.low, row.mid, row.high);
      }
      return total;
    },

    async listSponsorships(filter: SponsorshipFilter): Promise<SponsorshipRecord[]> {
      const f = validation.validSponsorshipFilter(filter);
      const twice = (v: string | null): Param[] => [v, v];
      const rows = await db.all<dbRows.SponsorshipRow>(q.selectSponsorships, [
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
      return rows.map(dbRows.toSponsorship);
    },

    async findActiveSponsorship(op: { network: string; entryPoint: Address; sender: Address; nonce: bigint }) {
      const key: Param[] = [op.network, validation.address(op.entryPoint, "entryPoint"), validation.address(op.sender, "sender"), validation.amount(op.nonce, "nonce")];
      const row = await db.one<SponsorshipFactsRow>(q.selectActiveFacts, key);
      return row && { record: dbRows.toSponsorship(row), links: [...factsOf(row).links] };
    },
  } satisfies Partial<Store>;
}
