/**
 * One pass of the settlement watcher, its steps in order (the header of watcher.ts says what each decides):
 * reorg (reorg.ts); then per range of confirmed blocks, scan (scan.ts), match (match.ts), settle (settle.ts),
 * credit (credit.ts) and the cursor moved to the range's end; last, once caught up, expiry.
 */
import type { Hex } from "@paymaster/shared";
import { tracedRoot, type TraceSpan } from "../telemetry/trace.ts";
import { tracedStore } from "../store/traced.ts";
import { tracedRpc } from "../network/tracedChain.ts";
import { creditDeposits } from "./credit.ts";
import { getBlockHeader, type TokenChargeLog, type UserOperationEventLog } from "./logs.ts";
import { checkReorg } from "./reorg.ts";
import { scanRange } from "./scan.ts";
import { settleEvents } from "./settle.ts";
import { ChainMovedError, emptyResult, setCursor, type TickResult, type WatcherState } from "./state.ts";

/** With a deposit address every block is read with its transactions: smaller ranges bound the memory. */
const DEPOSIT_BLOCK_RANGE = 100;

/** One pass, its own trace ("settlement.pass") while tracing: its chain calls and store transactions as children. */
export function tracedPass(state: WatcherState): Promise<TickResult> {
  return tracedRoot("settlement.pass", "internal", (_: undefined, span: TraceSpan) => (span.recording ? passInSpan(state, span) : runPass(state)), undefined);
}

/** A pass whose store and chain client are seen through `span`; the pass's figures on the span. */
async function passInSpan(state: WatcherState, span: TraceSpan): Promise<TickResult> {
  span.set("paymaster.network", state.name);
  state.store = tracedStore(state.baseStore, span);
  state.rpc = tracedRpc(state.chain.rpc, span);
  try {
    const result = await runPass(state);
    span.set("paymaster.settlement.settled", result.settled);
    span.set("paymaster.settlement.deposits", result.deposits);
    span.set("paymaster.settlement.released", result.released);
    if (result.scanned) span.set("paymaster.settlement.blocks", Number(result.scanned.to - result.scanned.from + 1n));
    return result;
  } finally {
    state.store = state.baseStore;
    state.rpc = state.chain.rpc;
  }
}

/** One pass: reorg check, the confirmed blocks since the cursor, expiry once caught up. Throws what the chain or store threw. */
export async function runPass(state: WatcherState): Promise<TickResult> {
  const { options } = state;
  const latest = await getBlockHeader(state.rpc, "latest");
  if (latest === null) throw new Error("the node has no latest block");
  const head = latest.number;
  const safe = head - BigInt(options.confirmations);
  const stored = await state.store.getCursor(state.names.block);
  // First run: start reorgDepth blocks back (sponsorships signed just before the first start still settle).
  // Block 0 counts as processed: the genesis block holds no transactions.
  const start = stored ?? (safe - BigInt(options.reorgDepth) > 0n ? safe - BigInt(options.reorgDepth) : 0n);
  const result = emptyResult(head, safe, start);
  const { cursor, firstScanned, complete } = await catchUp(state, start, stored !== undefined, result);
  result.cursor = cursor;
  if (cursor >= firstScanned) result.scanned = { from: firstScanned, to: cursor };
  if (state.watched.watchesDeposits) await state.journal.prune(cursor - BigInt(options.reorgDepth) + 1n);
  if (complete && cursor >= safe) {
    // Caught up: every confirmed event has been settled, so a reservation still open after its validUntil
    // plus the grace period was not used in any confirmed block.
    result.released = await state.store.releaseExpired(Math.max(state.now(), latest.timestamp), options.expiryGraceSeconds, state.network.config.name);
    if (result.released > 0) state.logger.info({ released: result.released }, "expired reservations released");
  }
  return result;
}

interface CaughtUp {
  /** The last block processed. */
  cursor: bigint;
  /** The first block this pass scanned (above `cursor`: none). */
  firstScanned: bigint;
  /** false: the chain moved under the scan, which stopped early. */
  complete: boolean;
}

/** From `start` (a stored cursor when `resumed`): the reorg check, then every range up to `result.safe`. */
async function catchUp(state: WatcherState, start: bigint, resumed: boolean, result: TickResult): Promise<CaughtUp> {
  let cursor = start;
  let firstScanned = cursor + 1n;
  try {
    let previousHash: Hex | null = null;
    if (resumed) {
      ({ cursor, hash: previousHash } = await checkReorg(state, cursor, result.head, result));
    }
    firstScanned = cursor + 1n;
    const range = rangeSize(state);
    while (cursor < result.safe) {
      const from = cursor + 1n;
      const to = result.safe - from + 1n > range ? from + range - 1n : result.safe;
      previousHash = await processRange(state, from, to, previousHash, result);
      cursor = to;
    }
    return { cursor, firstScanned, complete: true };
  } catch (error) {
    if (!(error instanceof ChainMovedError)) throw error;
    // The chain moved under the scan: what was processed stands (the cursor is at the last whole range);
    // the next tick's reorg check sorts the rest out.
    state.logger.info({ reason: error.message }, "the chain changed during the scan: retrying next tick");
    return { cursor, firstScanned, complete: false };
  }
}

/** Blocks per range: logBlockRange, at most DEPOSIT_BLOCK_RANGE while whole blocks are read for a deposit address. */
function rangeSize(state: WatcherState): bigint {
  const { logBlockRange } = state.options;
  return BigInt(state.watched.depositAddress === undefined ? logBlockRange : Math.min(logBlockRange, DEPOSIT_BLOCK_RANGE));
}

/** One range: scan, settle, credit, then the cursor moves to `to`; answers `to`'s hash. */
async function processRange(state: WatcherState, from: bigint, to: bigint, previousHash: Hex | null, result: TickResult): Promise<Hex> {
  const scanned = await scanRange(state, from, to, previousHash);
  await settleRange(state, scanned.events, scanned.chargeOf, result);
  await creditDeposits(state, scanned, result);
  await setCursor(state, to, scanned.endHash);
  return scanned.endHash;
}

/** Settles the range's ops at their actualGasCost, in USD at the current native price. */
async function settleRange(state: WatcherState, events: UserOperationEventLog[], chargeOf: Map<string, TokenChargeLog>, result: TickResult): Promise<void> {
  if (events.length === 0) return;
  const price = await state.chain.prices.usd(state.network.config.nativeUsdPrice);
  await settleEvents({ store: state.store, logger: state.logger, network: state.name, events, chargeOf, erc20Paymasters: state.watched.erc20Set, price }, result);
}
