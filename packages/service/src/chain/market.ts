/**
 * The chain's current block and fees, fetched once per block: a poller notices new blocks (eth_blockNumber)
 * and refreshes the snapshot; requests read the snapshot and never wait on the chain unless it is older than
 * `maxAgeMs` (e.g. right after start, or when the node stops answering the poller: then the request's own
 * read answers, or fails with CHAIN_UNAVAILABLE). A snapshot is "fresh" while the poller keeps hearing from
 * the node, whether or not blocks come (an idle chain's block stays current).
 *
 * `onBlock` listeners hear of each new block as soon as the poller sees its number (before the snapshot's own
 * reads come back), so the per-block reads kept in memory (src/chain/blockReads.ts) are refreshed beside it.
 *
 * The chain's clocks for a signature's validity window: on a chain whose clock is the wall clock (every public
 * network: blocks every few seconds, timestamps within seconds of ours), the snapshot's timestamp, at most a poll
 * and a block old, which a 5-minute signature does not notice. A development chain's clock moves at will —
 * evm_increaseTime, evm_setNextBlockTimestamp, blocks mined faster than one a second, a snapshot reverted — so a
 * snapshot taken before the move could sign ops already expired (AA32), or not due yet, at the block they land in.
 * There `freshClocks` reads both clocks: the latest block's timestamp (what simulations run at) and the pending
 * block's (what the op's block will carry, a time increase not mined yet included). The pipeline reads them beside
 * its chain call and signs on the snapshot's window only when they fall inside it; otherwise it runs again on
 * them (src/sponsor/chainClock.ts): no round trip on the critical path unless the clock moved. A chain's clock
 * moves when its chain id is one development nodes use (DEV_CHAIN_IDS), or once a block was seen
 * CLOCK_AHEAD_SECONDS ahead of ours (a public node refuses blocks 15 s in its future), unless the operator set
 * `chainClock: "wall"` (the network's setting: the snapshot's clock, never a fresh read).
 */
import { NodeError } from "./nodeError.ts";
import type { ChainRpc } from "./rpc.ts";

/** Chain ids development nodes use: Hardhat and anvil (31337), Ganache and geth --dev (1337). */
export const DEV_CHAIN_IDS: ReadonlySet<number> = new Set([31337, 1337]);
/** A block this far ahead of our clock means the chain keeps a clock of its own. */
export const CLOCK_AHEAD_SECONDS = 15;

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
  /** The chain's clocks read now, on a chain whose clock moves at will; undefined on one whose clock is ours (see the file's comment). */
  freshClocks(): Promise<ChainClocks> | undefined;
  /** Drops the snapshot (a test that wants the next request to read the chain's fees again). */
  invalidate(): void;
  /** Calls `listener` with each new block number seen (never twice for one block, never a lower one). */
  onBlock(listener: (block: bigint) => void): void;
  stop(): void;
}

/** Unix seconds: the latest block's timestamp, and the next block's when read (a chain with a clock of its own). */
export interface ChainClocks {
  chainNow: number;
  nextBlockAt?: number;
}

/** The latest and the pending block's timestamps, read now (a node without a pending block: the latest's for both). */
async function readClocks(rpc: ChainRpc): Promise<ChainClocks> {
  type Block = { timestamp: string } | null;
  const [latest, pending] = await Promise.all([
    rpc.request<Block>("eth_getBlockByNumber", ["latest", false]),
    // A node that has no pending block answers null or refuses the tag (its error is an answer).
    rpc.request<Block>("eth_getBlockByNumber", ["pending", false]).catch((error: unknown) => {
      if (error instanceof NodeError) return null;
      throw error;
    }),
  ]);
  if (!latest) throw new Error("the node has no latest block");
  const chainNow = Number(BigInt(latest.timestamp));
  return { chainNow, nextBlockAt: pending ? Number(BigInt(pending.timestamp)) : chainNow };
}

/**
 * Whose clock the chain keeps: "moves" (a development chain whose clock moves at will, see the file's comment),
 * "detect" (the wall clock until a block is seen CLOCK_AHEAD_SECONDS ahead of ours), "wall" (the operator's word
 * that it keeps the wall clock: never read fresh).
 */
export type ChainClockKind = "moves" | "detect" | "wall";

export function createMarket(rpc: ChainRpc, { pollMs = 1000, maxAgeMs = 2000, clock = "detect" as ChainClockKind } = {}): Market {
  let snapshot: MarketSnapshot | undefined;
  let ownClock = clock === "moves";
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
        if (clock === "detect" && fresh.timestamp > fresh.fetchedAt / 1000 + CLOCK_AHEAD_SECONDS) ownClock = true;
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
    freshClocks() {
      return ownClock ? readClocks(rpc) : undefined;
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
