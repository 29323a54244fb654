/** The store's part for sponsorship retention: deleting old rows in batches, after rolling up what the console and caps need (../retention.ts). */
import { countPrunable, pruneBatch, retentionQueries, type PrunableCounts, type PruneCounts, type PruneCutoffs } from "../retention.ts";
import type { Store } from "../types.ts";
import type { SqlShared } from "./shared.ts";

export function retentionStore(s: SqlShared) {
  const { db } = s;
  const q = retentionQueries(db.dialect);
  return {
    async pruneSponsorships(cutoffs: PruneCutoffs, limit: number): Promise<PruneCounts> {
      return db.transaction((tx) => pruneBatch(tx, q, cutoffs, limit));
    },

    async countPrunableSponsorships(cutoffs: PruneCutoffs): Promise<PrunableCounts> {
      return countPrunable(db, q, cutoffs);
    },
  } satisfies Partial<Store>;
}
