/** The store's part for the operator console's reads: request counts, activity, tanks and their ledger, a sponsorship's timeline. Statements and row conversion: ../consoleRows.ts. */
import type { Address } from "@paymaster/shared";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import type { Param } from "../db/types.ts";
import {
  CONSOLE_QUERIES as C,
  activitySql,
  mergeLedger,
  toActivity,
  toRequestCountBucket,
  toTimeline,
  type ActivityRow,
  type LedgerRow,
  type RequestCountRow,
  type SpendRow,
  type TimelineRow,
} from "../consoleRows.ts";
import type { ActivityFilter, GasTankListing, RequestCount, RequestCountBucket, SponsorshipActivity, SponsorshipTimeline, Store, TankLedgerEntry } from "../types.ts";
import type { SqlShared } from "./shared.ts";
import { mergeActivity } from "../retention.ts";

export function consoleStore(s: SqlShared) {
  const { db } = s;
  const activity = { rows: activitySql(db.dialect, "sponsorships"), rollup: activitySql(db.dialect, "sponsorship_rollup") };
  return {
    async addRequestCounts(rows: readonly RequestCount[]): Promise<void> {
      const valid = rows.filter((r) => r.count > 0);
      for (const r of valid) {
        if (!Number.isSafeInteger(r.minute) || r.minute % 60 !== 0 || !Number.isSafeInteger(r.count)) validation.invalid("a request count needs a whole minute and an integer count");
      }
      if (valid.length === 0) return;
      await db.transaction(async (tx) => {
        for (const r of valid) await tx.run(C.upsertRequestCount, [r.minute, r.network, r.method, r.outcome, r.count]);
      });
    },

    async requestCounts(filter: { since: number; until: number; bucketSeconds: number; network?: string }): Promise<RequestCountBucket[]> {
      const { since, until, bucketSeconds } = filter;
      if (!Number.isSafeInteger(bucketSeconds) || bucketSeconds < 60 || bucketSeconds % 60 !== 0) validation.invalid("bucketSeconds must be a positive multiple of 60");
      const network = filter.network ?? null;
      const rows = await db.all<RequestCountRow>(C.selectRequestCounts, [bucketSeconds, bucketSeconds, since, until, network, network]);
      return rows.map(toRequestCountBucket);
    },

    async pruneRequestCounts(beforeMinute: number): Promise<number> {
      return db.run(C.pruneRequestCounts, [beforeMinute]);
    },

    async sponsorshipActivity(filter: ActivityFilter): Promise<{ buckets: SponsorshipActivity[]; truncated: boolean }> {
      if (!Number.isSafeInteger(filter.bucketSeconds) || filter.bucketSeconds < 1) validation.invalid("bucketSeconds must be a positive integer");
      const twice = (v: string | undefined): Param[] => [v ?? null, v ?? null];
      const read = async (sql: string, since: number) =>
        (
          await db.all<ActivityRow>(sql, [
            filter.bucketSeconds,
            filter.bucketSeconds,
            since,
            filter.until,
            ...twice(filter.network),
            ...twice(filter.projectId),
            ...twice(filter.strategyId),
          ])
        ).map(toActivity);
      // The rows still present, and the rollup of deleted ones, whose minutes are whole: a window edge inside a
      // minute counts that minute (as the request counts do).
      const present = await read(activity.rows, filter.since);
      const pruned = await read(activity.rollup, filter.since - (filter.since % 60));
      return { buckets: mergeActivity(present, pruned), truncated: false };
    },

    async listGasTanks(filter: { network?: string; limit?: number }): Promise<GasTankListing[]> {
      const network = filter.network ?? null;
      const rows = await db.all<dbRows.TankRow & { network: string; sender: Address; updated_at: number | string }>(C.selectTanks, [
        network,
        network,
        validation.listLimit(filter.limit),
      ]);
      return rows.map((r) => ({ network: r.network, sender: r.sender, ...dbRows.toTank(r), updatedAt: Number(r.updated_at) }));
    },

    async gasTankLedger(network: string, sender: Address, limit?: number): Promise<TankLedgerEntry[]> {
      const who = validation.address(sender, "sender");
      const n = validation.listLimit(limit);
      const [credits, debits, spends] = await Promise.all([
        db.all<LedgerRow>(C.selectCredits, [network, who, n]),
        db.all<LedgerRow>(C.selectDebits, [network, who, n]),
        db.all<SpendRow>(C.selectSpends, [network, who, n]),
      ]);
      return mergeLedger(credits, debits, spends);
    },

    async sponsorshipTimeline(id: string): Promise<SponsorshipTimeline | undefined> {
      const row = await db.one<TimelineRow>(C.selectTimeline, [id]);
      return row && toTimeline(row);
    },
  } satisfies Partial<Store>;
}
