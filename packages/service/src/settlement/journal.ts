/**
 * The deposits the watcher credited, with the block each was in, so a reorg that removes one can revert its
 * credit. The Store has no table for this, so the journal lives in named cursors (bigints):
 *
 *   <prefix>            entries written so far (n)
 *   <prefix>:low        entries below this index are out of the reorg window (never read again)
 *   <prefix>:<i>:tx     entry i's transaction hash, as a bigint
 *   <prefix>:<i>:block  its block number + 1; 0 once its credit was reverted (cursors are non-negative)
 *   <prefix>:<i>:hash   its block hash, as a bigint
 *   <prefix>:<i>:log    a contract deposit's log index + 1 (absent or 0: a plain transfer, one per transaction)
 *
 * An entry is written (fields first, the count last) after its credit: a crash in between leaves an unread
 * slot that the next append overwrites, and the rescan credits idempotently and journals again. The same
 * deposit may be journaled twice (a range rescanned after a restart or a reorg): harmless, since reverting
 * a credit twice reverts it once.
 *
 * One writer per network: `append` reads the count and writes slot n without a lock, so two watchers of one
 * network appending at once could both take slot n and lose an entry. Leader election (leader.ts) runs one
 * watcher per network across replicas; the one window left is a leader that lost its database session
 * finishing its current pass while the next leader starts.
 */
import type { Hex } from "@paymaster/shared";
import type { Store } from "../store/types.ts";

export interface JournalEntry {
  index: bigint;
  txHash: Hex;
  /** A GasTankDeposit event's log index; absent for a plain transfer. */
  logIndex?: number;
  blockNumber: bigint;
  blockHash: Hex;
}

const toHex32 = (value: bigint): Hex => `0x${value.toString(16).padStart(64, "0")}`;

export function createDepositJournal(store: Store, prefix: string) {
  const key = (i: bigint, field: "tx" | "block" | "hash" | "log") => `${prefix}:${i}:${field}`;
  const count = async () => (await store.getCursor(prefix)) ?? 0n;
  const low = async () => (await store.getCursor(`${prefix}:low`)) ?? 0n;

  return {
    async append(entry: Omit<JournalEntry, "index">): Promise<void> {
      const n = await count();
      await store.setCursor(key(n, "tx"), BigInt(entry.txHash));
      await store.setCursor(key(n, "block"), entry.blockNumber + 1n);
      await store.setCursor(key(n, "hash"), BigInt(entry.blockHash));
      // Always written: the slot may hold a leftover of an append a crash cut short.
      await store.setCursor(key(n, "log"), entry.logIndex === undefined ? 0n : BigInt(entry.logIndex) + 1n);
      await store.setCursor(prefix, n + 1n);
    },

    /** Live (not reverted) entries from the low-water mark on, oldest first. */
    async live(): Promise<JournalEntry[]> {
      const [from, n] = [await low(), await count()];
      const entries: JournalEntry[] = [];
      for (let i = from; i < n; i++) {
        const stored = await store.getCursor(key(i, "block"));
        if (stored === undefined || stored === 0n) continue;
        const tx = await store.getCursor(key(i, "tx"));
        const hash = await store.getCursor(key(i, "hash"));
        if (tx === undefined || hash === undefined) continue;
        const log = (await store.getCursor(key(i, "log"))) ?? 0n;
        entries.push({ index: i, txHash: toHex32(tx), ...(log === 0n ? {} : { logIndex: Number(log - 1n) }), blockNumber: stored - 1n, blockHash: toHex32(hash) });
      }
      return entries;
    },

    /** Marks an entry reverted. */
    async tombstone(index: bigint): Promise<void> {
      await store.setCursor(key(index, "block"), 0n);
    },

    /** Moves the low-water mark past leading entries that are reverted or in blocks below `fromBlock`. */
    async prune(fromBlock: bigint): Promise<void> {
      const [start, n] = [await low(), await count()];
      let i = start;
      while (i < n) {
        const stored = await store.getCursor(key(i, "block"));
        if (stored !== undefined && stored !== 0n && stored - 1n >= fromBlock) break;
        i++;
      }
      if (i !== start) await store.setCursor(`${prefix}:low`, i);
    },
  };
}

export type DepositJournal = ReturnType<typeof createDepositJournal>;
