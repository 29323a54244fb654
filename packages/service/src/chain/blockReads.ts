/**
 * Chain reads that do not depend on the op (a paymaster's EntryPoint deposit, whether its ERC-20 paymaster
 * allows a token), kept in memory per block and refreshed in the background when a new block is seen, so that
 * a request reads them from memory instead of paying a round trip to the node (issue 38; docs/pipeline.md,
 * "Reads kept in memory").
 *
 * Each value carries the block it was read for. A request asks for the value at the block of its market
 * snapshot (src/chain/market.ts) and gets one read for that block or a later one: never an older one. When the
 * background refresh has not finished, the request shares its read; when it failed (the node does not answer),
 * or the key is new, the request reads itself, and the node's error is its answer (CHAIN_UNAVAILABLE). So no
 * decision is made on a value older than the request's snapshot, which is itself at most the market's
 * `maxAgeMs` old (else the market reads the chain first, or fails).
 *
 * A read is made at "latest" (what the simulation sees too): a value read for block B may already show B + 1.
 * Only keys used within `hotMs` are refreshed; the others are forgotten (read again on their next use).
 */
export interface BlockReads {
  /** `read`'s value for `block` or a later block: from memory, the read in flight, or a read made now. */
  value<V>(key: string, block: bigint, read: () => Promise<V>): Promise<V>;
  /** A read made now whatever memory holds (a decision a stale value could make wrong); it is kept for `block`. */
  fresh<V>(key: string, block: bigint, read: () => Promise<V>): Promise<V>;
  /** A new block: every key used within `hotMs` is read again in the background; the others are forgotten. */
  refresh(block: bigint): void;
}

interface Entry {
  read: () => Promise<unknown>;
  /** The last value read, and the block it was read for. */
  settled?: { block: bigint; value: unknown };
  /** The read in flight, and the block it is for. */
  pending?: { block: bigint; value: Promise<unknown> };
  /** When a request last asked for it (Date.now()). */
  usedAt: number;
}

/** Keys not asked for in this long stop being refreshed. */
export const HOT_MS = 60_000;

export function createBlockReads({ hotMs = HOT_MS, now = () => Date.now() }: { hotMs?: number; now?: () => number } = {}): BlockReads {
  const entries = new Map<string, Entry>();

  function start(entry: Entry, block: bigint): Promise<unknown> {
    const value = entry.read();
    entry.pending = { block, value };
    value.then(
      (settled) => {
        if (entry.settled === undefined || entry.settled.block <= block) entry.settled = { block, value: settled };
        if (entry.pending?.value === value) entry.pending = undefined;
      },
      () => {
        // A failed read is not kept: the next request for this block reads again (and gets the error itself).
        if (entry.pending?.value === value) entry.pending = undefined;
      },
    );
    return value;
  }

  function entryFor(key: string, read: () => Promise<unknown>): Entry {
    let entry = entries.get(key);
    if (entry === undefined) entries.set(key, (entry = { read, usedAt: 0 }));
    entry.usedAt = now();
    return entry;
  }

  return {
    value<V>(key: string, block: bigint, read: () => Promise<V>): Promise<V> {
      const entry = entryFor(key, read);
      if (entry.settled !== undefined && entry.settled.block >= block) return Promise.resolve(entry.settled.value as V);
      if (entry.pending !== undefined && entry.pending.block >= block) return entry.pending.value as Promise<V>;
      return start(entry, block) as Promise<V>;
    },
    fresh<V>(key: string, block: bigint, read: () => Promise<V>): Promise<V> {
      return start(entryFor(key, read), block) as Promise<V>;
    },
    refresh(block: bigint): void {
      const cold = now() - hotMs;
      for (const [key, entry] of entries) {
        if (entry.usedAt < cold) {
          entries.delete(key);
          continue;
        }
        const has = (entry.settled !== undefined && entry.settled.block >= block) || (entry.pending !== undefined && entry.pending.block >= block);
        if (!has) start(entry, block).catch(() => undefined); // a request that needs it reads again
      }
    },
  };
}
