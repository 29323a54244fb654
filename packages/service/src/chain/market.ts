/**
 * The chain's current block and fees, fetched once per block: a poller notices new blocks (eth_blockNumber)
 * and refreshes the snapshot; requests read the snapshot and never wait on the chain unless it is older than
 * `maxAgeMs` (e.g. right after start, or when the node stops answering the poller: then the request's own
 * read answers, or fails with CHAIN_UNAVAILABLE). A snapshot is "fresh" while the poller keeps hearing from
 * the node, whether or not blocks come (an idle chain's block stays current).
 *
 * `onBlock` listeners hear of each new block as soon as the poller sees its number (before the snapshot's own
 * reads come back), so the per-block reads kept in memory (src/chain/blockReads.ts) are refreshed beside it.
 */
import type { ChainRpc } from "./rpc.ts";

export interface MarketSnapshot {
  blockNumber: bigint;
  /** Timestamp of the latest block (unix seconds). */
  timestamp: number;
  baseFeePerGas: bigint;
  /** The node's suggested priority fee. */
  maxPriorityFeePerGas: bigint;
  /** What we fill when the client gives none: 2 x base fee + priority fee (survives ~6 full blocks). */
  maxFeePerGas: bigint;
  /** When this snapshot was taken (ms since epoch). */
  fetchedAt: number;
}

export interface Market {
  /** The latest snapshot, refreshed first if it is older than maxAgeMs. */
  current(): Promise<MarketSnapshot>;
  /** Drops the snapshot (tests that move time call this). */
  invalidate(): void;
  /** Calls `listener` with each new block number seen (never twice for one block, never a lower one). */
  onBlock(listener: (block: bigint) => void): void;
  stop(): void;
}

export function createMarket(rpc: ChainRpc, { pollMs = 1000, maxAgeMs = 2000 } = {}): Market {
  let snapshot: MarketSnapshot | undefined;
  let inflight: Promise<MarketSnapshot> | undefined;
  const listeners: ((block: bigint) => void)[] = [];
  let lastBlock = -1n;

  function seen(block: bigint): void {
    if (block <= lastBlock) return;
    lastBlock = block;
    for (const listener of listeners) listener(block);
  }

  async function fetchSnapshot(): Promise<MarketSnapshot> {
    const [block, priority] = await Promise.all([
      rpc.request<{ number: string; timestamp: string; baseFeePerGas?: string }>("eth_getBlockByNumber", ["latest", false]),
      rpc.request<string>("eth_maxPriorityFeePerGas", []).catch(() => "0x3b9aca00"),
    ]);
    const baseFeePerGas = BigInt(block.baseFeePerGas ?? "0x0");
    const maxPriorityFeePerGas = BigInt(priority);
    return {
      blockNumber: BigInt(block.number),
      timestamp: Number(BigInt(block.timestamp)),
      baseFeePerGas,
      maxPriorityFeePerGas,
      maxFeePerGas: baseFeePerGas * 2n + maxPriorityFeePerGas,
      fetchedAt: Date.now(),
    };
  }

  function refresh(): Promise<MarketSnapshot> {
    inflight ??= fetchSnapshot()
      .then((fresh) => {
        seen(fresh.blockNumber);
        return (snapshot = fresh);
      })
      .finally(() => (inflight = undefined));
    return inflight;
  }

  const timer = setInterval(() => {
    rpc
      .request<string>("eth_blockNumber", [])
      .then((hex) => {
        if (!snapshot || BigInt(hex) !== snapshot.blockNumber) {
          seen(BigInt(hex));
          return refresh();
        }
        snapshot.fetchedAt = Date.now();
        return snapshot;
      })
      .catch(() => undefined);
  }, pollMs);
  timer.unref();

  return {
    async current() {
      if (snapshot && Date.now() - snapshot.fetchedAt <= maxAgeMs) return snapshot;
      return refresh();
    },
    invalidate() {
      snapshot = undefined;
    },
    onBlock(listener) {
      listeners.push(listener);
    },
    stop() {
      clearInterval(timer);
    },
  };
}
