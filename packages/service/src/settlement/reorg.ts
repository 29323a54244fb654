/**
 * Reorg step of the settlement pass. The cursor (the last block fully processed) is stored with its block hash.
 * If the chain's block at the cursor has another hash (or is gone), some block at or below it changed: every
 * settlement and deposit credit in the reorg window (the `reorgDepth` blocks up to the cursor) whose block hash
 * no longer matches is undone, and the cursor moves back to the bottom of the window so the window is rescanned.
 * Settlements above the cursor (written before a crash, before the cursor moved) are always re-checked. Below
 * the cursor the check is by hash chaining: an unchanged cursor block means an unchanged history.
 */
import type { Hex } from "@paymaster/shared";
import type { ChainRpc } from "../chain/rpc.ts";
import { getBlockHeader, type BlockHeader } from "./logs.ts";
import { depositReference } from "./options.ts";
import { ChainMovedError, setCursor, type TickResult, type WatcherState } from "./state.ts";

/** Block headers fetched during one reorg check, by number. */
type Headers = (n: bigint) => Promise<BlockHeader | null>;

function headerCache(rpc: ChainRpc): Headers {
  const cache = new Map<bigint, Promise<BlockHeader | null>>();
  return (n: bigint) => {
    let found = cache.get(n);
    if (!found) {
      found = getBlockHeader(rpc, n);
      cache.set(n, found);
    }
    return found;
  };
}

/** Whether the block a record was written from is still the chain's block at that height. */
async function stillThere(header: Headers, blockNumber: bigint, blockHash: Hex): Promise<boolean> {
  const block = await header(blockNumber);
  return block !== null && block.hash === blockHash.toLowerCase();
}

/**
 * Undoes what a reorg removed; returns the cursor to continue from (moved back to rescan the window after one)
 * and its block's hash as stored (what the next range's first block must follow).
 */
export async function checkReorg(state: WatcherState, cursor: bigint, head: bigint, result: TickResult): Promise<{ cursor: bigint; hash: Hex }> {
  const header = headerCache(state.rpc);
  const depth = BigInt(state.options.reorgDepth);
  const windowStart = cursor - depth + 1n > 0n ? cursor - depth + 1n : 0n;
  const storedHash = await state.store.getCursor(state.names.hash);
  const cursorBlock = await header(cursor);
  const reorg = cursorBlock === null || storedHash === undefined || BigInt(cursorBlock.hash) !== storedHash;
  // Below the cursor, an unchanged cursor block vouches for everything (each block commits to its parent);
  // above it, only a crash before the cursor moved leaves settlements or credits, and they are always checked.
  const checkFrom = reorg ? windowStart : cursor + 1n;
  await unsettleRemoved(state, header, checkFrom, result);
  if (state.watched.watchesDeposits || reorg) await revertRemovedDeposits(state, header, checkFrom, result);
  if (!reorg) return { cursor, hash: `0x${storedHash.toString(16).padStart(64, "0")}` as Hex };
  return rewind(state, header, { cursor, windowStart, head }, result);
}

/** Unsettles the settlements from `checkFrom` on whose block is no longer the chain's. */
async function unsettleRemoved(state: WatcherState, header: Headers, checkFrom: bigint, result: TickResult): Promise<void> {
  for (const record of await state.store.listSettledSince(state.name, checkFrom)) {
    const settlement = record.settlement;
    if (!settlement || settlement.blockNumber < checkFrom) continue;
    if (await stillThere(header, settlement.blockNumber, settlement.blockHash)) continue;
    if (await state.store.unsettleSponsorship(record.id)) {
      await state.store.setTokenChargeUnpaid(record.id, false); // the unpaid charge (if any) went with the block
      result.unsettled++;
      state.logger.warn(
        { sponsorship: record.id, userOpHash: record.userOpHash, block: settlement.blockNumber.toString(), txHash: settlement.txHash },
        "settlement reorganised away: unsettled",
      );
    }
  }
}

/** Reverts the journaled deposit credits from `checkFrom` on whose block is no longer the chain's. */
async function revertRemovedDeposits(state: WatcherState, header: Headers, checkFrom: bigint, result: TickResult): Promise<void> {
  for (const entry of await state.journal.live()) {
    if (entry.blockNumber < checkFrom) continue;
    if (await stillThere(header, entry.blockNumber, entry.blockHash)) continue;
    if (await state.store.revertGasTankCredit(depositReference(state.name, entry.txHash, entry.logIndex))) {
      result.depositsReverted++;
      state.logger.warn(
        { txHash: entry.txHash, ...(entry.logIndex === undefined ? {} : { logIndex: entry.logIndex }), block: entry.blockNumber.toString() },
        "deposit reorganised away: credit reverted",
      );
    }
    await state.journal.tombstone(entry.index);
  }
}

/** Moves the cursor below the reorg window; returns it and its block's hash. */
async function rewind(state: WatcherState, header: Headers, at: { cursor: bigint; windowStart: bigint; head: bigint }, result: TickResult): Promise<{ cursor: bigint; hash: Hex }> {
  // The fork point is somewhere in the window (or the reorg is deeper than reorgDepth, which this cannot
  // see): rescan the whole window, which is idempotent for whatever did not change.
  let rewound = at.windowStart > 0n ? at.windowStart - 1n : 0n;
  if (rewound > at.head) rewound = at.head;
  const rewoundHeader = await header(rewound);
  if (rewoundHeader === null) throw new ChainMovedError(`block ${rewound} is gone`);
  await setCursor(state, rewound, rewoundHeader.hash);
  result.reorg = { from: rewound + 1n };
  state.logger.warn({ cursor: at.cursor.toString(), rescanFrom: (rewound + 1n).toString() }, "chain reorganisation detected: rescanning");
  return { cursor: rewound, hash: rewoundHeader.hash };
}
