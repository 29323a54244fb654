/**
 * The settlement watcher of one network. Each tick:
 *
 * 1. Reorg check. The cursor (the last block fully processed) is stored with its block hash. If the chain's
 *    block at the cursor has another hash (or is gone), some block at or below it changed: every settlement
 *    and deposit credit in the reorg window (the `reorgDepth` blocks up to the cursor) whose block hash no
 *    longer matches is undone, and the cursor moves back to the bottom of the window so the window is
 *    rescanned. Settlements above the cursor (written before a crash, before the cursor moved) are always
 *    re-checked. Below the cursor the check is by hash chaining: an unchanged cursor block means an unchanged
 *    history.
 * 2. Scan. Confirmed blocks (cursor+1 .. head - confirmations) are read in bounded ranges: the EntryPoints'
 *    UserOperationEvents whose paymaster is one of ours are matched to sponsorships by userOpHash and settled
 *    at their actualGasCost (USD at the current native price; ERC-20 mode: the paymaster's TokenCharged
 *    amount); with a deposit address, the range's transactions to it (value > 0, status 1) are credited to
 *    their sender's gas tank; with a deposit contract (GasTankDeposit), its Deposited events (eth_getLogs, so
 *    internal calls count: a smart account funding its own tank) are credited to the event's sender. The
 *    cursor moves to the end of a range only once the whole range is processed.
 *    Everything is idempotent (settling a settled sponsorship, crediting a known reference), so a crash
 *    anywhere at worst rescans a range.
 * 3. Expiry. Once caught up, reservations whose signature expired unused are released after a grace period.
 */
import type { Logger } from "pino";
import { getAddress } from "viem";
import type { Address, Hex } from "@paymaster/shared";
import type { NetworkConfig } from "../config/types.ts";
import type { NetworkChain, NetworkRuntime } from "../context.ts";
import { weiToUsdMicros } from "../policy/rules.ts";
import type { UsdPrice } from "../sponsor/usdPrice.ts";
import type { Settlement, Store } from "../store/types.ts";
import { createDepositJournal } from "./journal.ts";
import { tracedRoot, type TraceSpan } from "../telemetry/trace.ts";
import { tracedStore } from "../store/traced.ts";
import { tracedRpc } from "../chain/traced.ts";
import { failureFields } from "../dependencies/failure.ts";
import {
  TOKEN_CHARGED_TOPIC,
  TOKEN_CHARGE_UNPAID_TOPIC,
  USER_OPERATION_EVENT_TOPIC,
  addressTopic,
  DEPOSITED_TOPIC,
  decodeDeposited,
  decodeTokenCharge,
  decodeUserOperationEvent,
  getBlockHeader,
  getBlockWithTransactions,
  getLogs,
  getReceiptStatus,
  logKey,
  matchTokenCharges,
  type BlockHeader,
  type BlockWithTransactions,
  type TokenChargeLog,
  type UserOperationEventLog,
} from "./logs.ts";

export interface WatcherOptions {
  /** Blocks an event must be buried under before it counts (0: as soon as it is in the latest block). */
  confirmations: number;
  /** How many blocks below the cursor are re-verified (and rescanned) when a reorg is detected. */
  reorgDepth: number;
  /** An unused signature's reservation is released this long after its validUntil. */
  expiryGraceSeconds: number;
  /** ETH sent here (top-level transactions) is credited to the sender's gas tank. */
  depositAddress?: Address;
  /** GasTankDeposit: each Deposited event (internal calls included) is credited to the event's sender. */
  depositContract?: Address;
  /** Poll interval (ms). */
  pollMs: number;
  /** Most blocks per eth_getLogs range. */
  logBlockRange: number;
  /** false: no timer, the caller drives `tick()` (tests). Default true. */
  poll?: boolean;
  /** Wall-clock unix seconds. */
  now?: () => number;
}

export const WATCHER_DEFAULTS = Object.freeze({
  confirmations: 2,
  reorgDepth: 64,
  expiryGraceSeconds: 120,
  pollMs: 5_000,
  logBlockRange: 2_000,
});

/** Block fetches in flight at once while scanning for deposits. */
const BLOCK_FETCH_CONCURRENCY = 8;
/** With a deposit address every block is read with its transactions: smaller ranges bound the memory. */
const DEPOSIT_BLOCK_RANGE = 100;

/** The chain changed under a scan (a block vanished or was replaced): retry next tick. */
class ChainMovedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChainMovedError";
  }
}

/** The watcher options of a network: its configuration over the defaults, then `overrides`. */
export function watcherOptions(config: NetworkConfig, overrides: Partial<WatcherOptions> = {}): WatcherOptions {
  return {
    confirmations: config.confirmations ?? WATCHER_DEFAULTS.confirmations,
    reorgDepth: config.reorgDepth ?? WATCHER_DEFAULTS.reorgDepth,
    expiryGraceSeconds: config.expiryGraceSeconds ?? WATCHER_DEFAULTS.expiryGraceSeconds,
    ...(config.depositAddress === undefined ? {} : { depositAddress: config.depositAddress }),
    ...(config.depositContract === undefined ? {} : { depositContract: config.depositContract }),
    pollMs: config.pollMs ?? WATCHER_DEFAULTS.pollMs,
    logBlockRange: config.logBlockRange ?? WATCHER_DEFAULTS.logBlockRange,
    ...overrides,
  };
}

/** The cursor names of a network's watcher. */
export function cursorNames(network: string) {
  return {
    /** The last block fully processed. */
    block: `settlement:${network}`,
    /** That block's hash (as a bigint). */
    hash: `settlement:${network}:hash`,
    /** Prefix of the deposit journal. */
    deposits: `settlement:${network}:deposits`,
  };
}

/**
 * The gas-tank credit reference of a deposit: its transaction for a plain transfer (one per transaction), the
 * transaction and log index for a GasTankDeposit event (one transaction may hold several).
 */
export function depositReference(network: string, txHash: Hex, logIndex?: number): string {
  return `deposit:${network}:${txHash.toLowerCase()}${logIndex === undefined ? "" : `:${logIndex}`}`;
}

export interface TickResult {
  head: bigint;
  /** head - confirmations: the newest block processed. */
  safe: bigint;
  /** The cursor after the tick: the last block processed (never below 0: the genesis block holds no ops). */
  cursor: bigint;
  /** Blocks scanned in this tick, or null when there was nothing new to scan. */
  scanned: { from: bigint; to: bigint } | null;
  /** A reorg was detected: the cursor was moved back to rescan from `from`. */
  reorg: { from: bigint } | null;
  /** Sponsorships settled in this tick. */
  settled: number;
  /** Events of sponsorships already settled (rescans). */
  alreadySettled: number;
  /** Events of our paymasters with no (settleable) sponsorship. */
  unmatched: number;
  /** Settlements undone because their block was reorganised away. */
  unsettled: number;
  /** Deposits newly credited (a rescanned deposit is not credited again), of them through the deposit contract, and credits reverted. */
  deposits: number;
  contractDeposits: number;
  depositsReverted: number;
  /** Reservations released after expiry (every network's: the store's sweep is global). */
  released: number;
}

export interface Watcher {
  readonly network: string;
  readonly options: Readonly<WatcherOptions>;
  /** One pass (serialised with the poller's). Throws what the chain or store threw. */
  tick(): Promise<TickResult>;
  /** Stops polling and waits for a tick in progress. */
  stop(): Promise<void>;
}

export interface StartWatcherArgs {
  network: NetworkRuntime;
  store: Store;
  logger: Logger;
  /** Overrides of the network's configured options. */
  options?: Partial<WatcherOptions>;
  /** Told about every pass of the poller (metrics). */
  observer?: { passed(result: TickResult): void; failed(): void };
}


const lower = (value: string) => value.toLowerCase();

export function startWatcher({ network, store: baseStore, logger: parentLogger, options: overrides = {}, observer }: StartWatcherArgs): Watcher {
  const chain: NetworkChain | undefined = network.chain;
  if (!chain) throw new Error(`network ${network.config.name}: the settlement watcher needs chain access`);
  // The pass's store and chain client: seen through the pass's span while tracing (passes never overlap: `tick`).
  let store = baseStore;
  let rpc = chain.rpc;
  const options = watcherOptions(network.config, overrides);
  if (!Number.isInteger(options.confirmations) || options.confirmations < 0) throw new RangeError("confirmations must be a non-negative integer");
  if (!Number.isInteger(options.reorgDepth) || options.reorgDepth < 1) throw new RangeError("reorgDepth must be a positive integer");
  if (!Number.isInteger(options.logBlockRange) || options.logBlockRange < 1) throw new RangeError("logBlockRange must be a positive integer");
  const name = network.config.name;
  const logger = parentLogger.child({ component: "settlement", network: name });
  const names = cursorNames(name);
  const journal = createDepositJournal(baseStore, names.deposits);
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const depositAddress = options.depositAddress === undefined ? undefined : lower(options.depositAddress);
  const depositContract = options.depositContract === undefined ? undefined : (getAddress(options.depositContract) as Address);
  const watchesDeposits = depositAddress !== undefined || depositContract !== undefined;

  const entryPoints: Address[] = [];
  const paymasters: Address[] = [];
  const erc20Paymasters: Address[] = [];
  for (const version of network.versions) {
    const entry = network.entryPoint(version);
    if (!entry) continue;
    entryPoints.push(getAddress(entry.entryPoint) as Address);
    paymasters.push(getAddress(entry.verifyingPaymaster) as Address, getAddress(entry.erc20Paymaster) as Address);
    erc20Paymasters.push(getAddress(entry.erc20Paymaster) as Address);
  }
  const paymasterTopics = paymasters.map(addressTopic);
  const erc20Set = new Set(erc20Paymasters.map(lower));

  function emptyResult(head: bigint, safe: bigint, cursor: bigint): TickResult {
    return { head, safe, cursor, scanned: null, reorg: null, settled: 0, alreadySettled: 0, unmatched: 0, unsettled: 0, deposits: 0, contractDeposits: 0, depositsReverted: 0, released: 0 };
  }

  /** Block headers fetched during one tick, by number. */
  function headerCache() {
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

  async function setCursor(block: bigint, hash: Hex): Promise<void> {
    // The hash first: a crash in between leaves a cursor whose hash does not match, read as a (spurious)
    // reorg, which only rescans the window.
    await store.setCursor(names.hash, BigInt(hash));
    await store.setCursor(names.block, block);
  }

  /** Step 1: undo what a reorg removed; returns the cursor to continue from. */
  async function checkReorg(cursor: bigint, head: bigint, result: TickResult): Promise<bigint> {
    const header = headerCache();
    const depth = BigInt(options.reorgDepth);
    const windowStart = cursor - depth + 1n > 0n ? cursor - depth + 1n : 0n;
    const storedHash = await store.getCursor(names.hash);
    const cursorBlock = await header(cursor);
    const reorg = cursorBlock === null || storedHash === undefined || BigInt(cursorBlock.hash) !== storedHash;
    // Below the cursor, an unchanged cursor block vouches for everything (each block commits to its parent);
    // above it, only a crash before the cursor moved leaves settlements or credits, and they are always checked.
    const checkFrom = reorg ? windowStart : cursor + 1n;
    for (const record of await store.listSettledSince(name, checkFrom)) {
      const settlement = record.settlement;
      if (!settlement || settlement.blockNumber < checkFrom) continue;
      const block = await header(settlement.blockNumber);
      if (block !== null && block.hash === lower(settlement.blockHash)) continue;
      if (await store.unsettleSponsorship(record.id)) {
        await store.setTokenChargeUnpaid(record.id, false); // the unpaid charge (if any) went with the block
        result.unsettled++;
        logger.warn(
          { sponsorship: record.id, userOpHash: record.userOpHash, block: settlement.blockNumber.toString(), txHash: settlement.txHash },
          "settlement reorganised away: unsettled",
        );
      }
    }
    if (watchesDeposits || reorg) {
      for (const entry of await journal.live()) {
        if (entry.blockNumber < checkFrom) continue;
        const block = await header(entry.blockNumber);
        if (block !== null && block.hash === lower(entry.blockHash)) continue;
        if (await store.revertGasTankCredit(depositReference(name, entry.txHash, entry.logIndex))) {
          result.depositsReverted++;
          logger.warn({ txHash: entry.txHash, ...(entry.logIndex === undefined ? {} : { logIndex: entry.logIndex }), block: entry.blockNumber.toString() }, "deposit reorganised away: credit reverted");
        }
        await journal.tombstone(entry.index);
      }
    }
    if (!reorg) return cursor;
    // The fork point is somewhere in the window (or the reorg is deeper than reorgDepth, which this cannot
    // see): rescan the whole window, which is idempotent for whatever did not change.
    let rewound = windowStart > 0n ? windowStart - 1n : 0n;
    if (rewound > head) rewound = head;
    const rewoundHeader = await header(rewound);
    if (rewoundHeader === null) throw new ChainMovedError(`block ${rewound} is gone`);
    await setCursor(rewound, rewoundHeader.hash);
    result.reorg = { from: rewound + 1n };
    logger.warn({ cursor: cursor.toString(), rescanFrom: (rewound + 1n).toString() }, "chain reorganisation detected: rescanning");
    return rewound;
  }

  async function fetchBlocks(from: bigint, to: bigint): Promise<BlockWithTransactions[]> {
    const numbers: bigint[] = [];
    for (let n = from; n <= to; n++) numbers.push(n);
    const blocks: BlockWithTransactions[] = new Array(numbers.length);
    let next = 0;
    const worker = async () => {
      while (next < numbers.length) {
        const i = next++;
        const block = await getBlockWithTransactions(rpc, numbers[i]!);
        if (block === null) throw new ChainMovedError(`block ${numbers[i]} is gone`);
        blocks[i] = block;
      }
    };
    await Promise.all(Array.from({ length: Math.min(BLOCK_FETCH_CONCURRENCY, numbers.length) }, worker));
    return blocks;
  }

  /** Step 2 for one range: settle, credit, then move the cursor to `to`. */
  async function processRange(from: bigint, to: bigint, previousHash: Hex | null, result: TickResult): Promise<Hex> {
    const endBefore = await getBlockHeader(rpc, to);
    if (endBefore === null) throw new ChainMovedError(`block ${to} is gone`);

    const eventLogs = entryPoints.length === 0
      ? []
      : await getLogs(rpc, { address: entryPoints, topics: [USER_OPERATION_EVENT_TOPIC, null, null, paymasterTopics], fromBlock: from, toBlock: to });
    const events = eventLogs.map(decodeUserOperationEvent).filter((e) => paymasters.some((p) => p === e.paymaster));
    events.sort((a, b) => (a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1));

    let charges: TokenChargeLog[] = [];
    const erc20Events = events.filter((e) => erc20Set.has(lower(e.paymaster)));
    if (erc20Events.length > 0) {
      const first = erc20Events[0]!.blockNumber;
      const last = erc20Events[erc20Events.length - 1]!.blockNumber;
      const chargeLogs = await getLogs(rpc, { address: erc20Paymasters, topics: [[TOKEN_CHARGED_TOPIC, TOKEN_CHARGE_UNPAID_TOPIC]], fromBlock: first, toBlock: last });
      charges = chargeLogs.map(decodeTokenCharge);
    }
    const chargeOf = matchTokenCharges(erc20Events, charges);

    const blocks = depositAddress === undefined ? [] : await fetchBlocks(from, to);
    // The blocks must form one chain from the cursor block to the range's end.
    let parent = previousHash;
    for (const block of blocks) {
      if (parent !== null && block.parentHash !== parent) throw new ChainMovedError(`block ${block.number} does not extend ${parent}`);
      parent = block.hash;
    }
    if (blocks.length > 0 && blocks[blocks.length - 1]!.hash !== endBefore.hash) throw new ChainMovedError(`block ${to} changed`);

    const contractDeposits = depositContract === undefined
      ? []
      : (await getLogs(rpc, { address: [depositContract], topics: [DEPOSITED_TOPIC], fromBlock: from, toBlock: to })).map(decodeDeposited);

    const endAfter = await getBlockHeader(rpc, to);
    if (endAfter === null || endAfter.hash !== endBefore.hash) throw new ChainMovedError(`block ${to} changed during the scan`);
    for (const log of [...events, ...contractDeposits]) {
      if (log.blockNumber === to && log.blockHash !== endBefore.hash) throw new ChainMovedError(`logs of block ${to} are from another fork`);
    }

    let price: UsdPrice | undefined;
    for (const event of events) {
      price ??= await chain!.prices.usd(network.config.nativeUsdPrice);
      await settle(event, chargeOf.get(logKey(event)), price, result);
    }

    for (const block of blocks) {
      for (const tx of block.transactions) {
        if (tx.to === null || lower(tx.to) !== depositAddress) continue;
        const value = BigInt(tx.value);
        if (value <= 0n) continue;
        const receipt = await getReceiptStatus(rpc, tx.hash);
        if (receipt === null || receipt.blockHash !== block.hash) throw new ChainMovedError(`the receipt of ${tx.hash} is not in block ${block.number}`);
        if (!receipt.success) {
          logger.info({ txHash: tx.hash, block: block.number.toString() }, "failed transaction to the deposit address: not credited");
          continue;
        }
        const sender = getAddress(tx.from) as Address;
        await credit({ sender, amount: value, txHash: tx.hash.toLowerCase() as Hex, blockNumber: block.number, blockHash: block.hash }, result);
      }
    }
    for (const deposit of contractDeposits) {
      await credit({ sender: deposit.sender, from: deposit.from, amount: deposit.amount, txHash: deposit.txHash, logIndex: deposit.logIndex, blockNumber: deposit.blockNumber, blockHash: deposit.blockHash }, result);
    }

    await setCursor(to, endBefore.hash);
    return endBefore.hash;
  }

  /**
   * Credits one confirmed deposit to `sender`'s tank and journals it (for a reorg to revert). creditGasTank is
   * idempotent by reference, so a rescanned deposit leaves the balance as it was and counts nothing.
   */
  async function credit(
    deposit: { sender: Address; from?: Address; amount: bigint; txHash: Hex; logIndex?: number; blockNumber: bigint; blockHash: Hex },
    result: TickResult,
  ): Promise<void> {
    const { sender, amount, txHash, logIndex, blockNumber, blockHash } = deposit;
    const before = await store.getGasTank(name, sender);
    const after = await store.creditGasTank(name, sender, amount, depositReference(name, txHash, logIndex));
    await journal.append({ txHash, ...(logIndex === undefined ? {} : { logIndex }), blockNumber, blockHash });
    if (after.balanceWei === before.balanceWei) return;
    result.deposits++;
    if (logIndex !== undefined) result.contractDeposits++;
    logger.info(
      { sender, wei: amount.toString(), txHash, block: blockNumber.toString(), ...(logIndex === undefined ? { via: "transfer" } : { via: "contract", from: deposit.from, logIndex }) },
      "deposit credited to the gas tank",
    );
  }

  async function settle(event: UserOperationEventLog, charge: TokenChargeLog | undefined, price: UsdPrice, result: TickResult): Promise<void> {
    const where = { userOpHash: event.userOpHash, txHash: event.txHash, block: event.blockNumber.toString(), paymaster: event.paymaster };
    const record = await store.findSponsorshipByUserOpHash(event.userOpHash);
    if (!record || record.network !== name || lower(record.entryPoint) !== lower(event.entryPoint)) {
      result.unmatched++;
      logger.warn(where, "UserOperationEvent of our paymaster with no sponsorship: skipped");
      return;
    }
    // An ERC-20 op with no paid TokenCharged (v0.6 TokenChargeUnpaid; v0.7 a reverted postOp, which the
    // EntryPoint reports with PostOpRevertReason) left its charge unpaid: recorded before settling (idempotent,
    // so a rescan after a crash records it too); the pipeline then offers that sender pre-charge only.
    if (record.mode === "erc20" && !charge?.paid) await store.setTokenChargeUnpaid(record.id, true);
    if (record.status === "settled") {
      result.alreadySettled++;
      return;
    }
    if (record.status === "released") {
      // Its reservation was released (expired before the event was seen, or replaced), but the chain charged
      // it: the store settles it all the same.
      logger.warn({ ...where, sponsorship: record.id }, "UserOperationEvent of a released sponsorship: settling it");
    }
    let actualTokenCost: bigint | null = null;
    if (record.mode === "erc20") {
      if (charge === undefined) logger.warn({ ...where, sponsorship: record.id }, "ERC-20 sponsorship without a token charge event: settled with 0 tokens");
      else if (!charge.paid) logger.warn({ ...where, sponsorship: record.id, tokenAmount: charge.tokenAmount.toString() }, "the token charge failed (TokenChargeUnpaid)");
      actualTokenCost = charge?.paid ? charge.tokenAmount : 0n;
    }
    const settlement: Settlement = {
      actualGasCostWei: event.actualGasCost,
      actualCostUsdMicros: weiToUsdMicros(event.actualGasCost, price),
      actualTokenCost,
      success: event.success,
      txHash: event.txHash,
      blockNumber: event.blockNumber,
      blockHash: event.blockHash,
      logIndex: event.logIndex,
    };
    if (await store.settleSponsorship(record.id, settlement)) {
      result.settled++;
      logger.info({ ...where, sponsorship: record.id, mode: record.mode, actualGasCost: event.actualGasCost.toString(), success: event.success }, "sponsorship settled");
    } else if ((await store.getSponsorship(record.id))?.status === "settled") {
      result.alreadySettled++; // settled meanwhile (another watcher on the same database)
    } else {
      result.unmatched++;
      logger.error({ ...where, sponsorship: record.id, status: record.status }, "UserOperationEvent of a sponsorship that cannot be settled (never signed?): skipped");
    }
  }

  async function tickOnce(): Promise<TickResult> {
    const latest = await getBlockHeader(rpc, "latest");
    if (latest === null) throw new Error("the node has no latest block");
    const head = latest.number;
    const safe = head - BigInt(options.confirmations);
    const stored = await store.getCursor(names.block);
    // First run: start reorgDepth blocks back (sponsorships signed just before the first start still settle).
    // Block 0 counts as processed: the genesis block holds no transactions.
    let cursor = stored ?? (safe - BigInt(options.reorgDepth) > 0n ? safe - BigInt(options.reorgDepth) : 0n);
    const result = emptyResult(head, safe, cursor);
    let previousHash: Hex | null = null;
    let firstScanned = cursor + 1n;
    let complete = true;
    const range = BigInt(depositAddress === undefined ? options.logBlockRange : Math.min(options.logBlockRange, DEPOSIT_BLOCK_RANGE));
    try {
      if (stored !== undefined) {
        cursor = await checkReorg(cursor, head, result);
        const hash = await store.getCursor(names.hash);
        previousHash = hash === undefined ? null : (`0x${hash.toString(16).padStart(64, "0")}` as Hex);
      }
      firstScanned = cursor + 1n;
      while (cursor < safe) {
        const from = cursor + 1n;
        const to = safe - from + 1n > range ? from + range - 1n : safe;
        previousHash = await processRange(from, to, previousHash, result);
        cursor = to;
      }
    } catch (error) {
      if (!(error instanceof ChainMovedError)) throw error;
      // The chain moved under the scan: what was processed stands (the cursor is at the last whole range);
      // the next tick's reorg check sorts the rest out.
      complete = false;
      logger.info({ reason: error.message }, "the chain changed during the scan: retrying next tick");
    }
    result.cursor = cursor;
    if (cursor >= firstScanned) result.scanned = { from: firstScanned, to: cursor };
    if (watchesDeposits) await journal.prune(cursor - BigInt(options.reorgDepth) + 1n);
    if (complete && cursor >= safe) {
      // Caught up: every confirmed event has been settled, so a reservation still open after its validUntil
      // plus the grace period was not used in any confirmed block.
      result.released = await store.releaseExpired(Math.max(now(), latest.timestamp), options.expiryGraceSeconds, network.config.name);
      if (result.released > 0) logger.info({ released: result.released }, "expired reservations released");
    }
    return result;
  }

  /** One pass, its own trace ("settlement.pass") while tracing: its chain calls and store transactions as children. */
  const tracedTick = (): Promise<TickResult> =>
    tracedRoot(
      "settlement.pass",
      "internal",
      async (_: undefined, span: TraceSpan) => {
        if (!span.recording) return tickOnce();
        span.set("paymaster.network", name);
        store = tracedStore(baseStore, span);
        rpc = tracedRpc(chain!.rpc, span);
        try {
          const result = await tickOnce();
          span.set("paymaster.settlement.settled", result.settled);
          span.set("paymaster.settlement.deposits", result.deposits);
          span.set("paymaster.settlement.released", result.released);
          if (result.scanned) span.set("paymaster.settlement.blocks", Number(result.scanned.to - result.scanned.from + 1n));
          return result;
        } finally {
          store = baseStore;
          rpc = chain!.rpc;
        }
      },
      undefined,
    );

  let queue: Promise<unknown> = Promise.resolve();
  const tick = (): Promise<TickResult> => {
    const run = queue.then(tracedTick, tracedTick);
    queue = run.catch(() => undefined);
    return run;
  };

  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  // One log line per state change: the first failure (with its cause), a different failure, the recovery.
  let failing: string | undefined;
  const poll = () =>
    tick().then(
      (result) => {
        observer?.passed(result);
        if (failing !== undefined) logger.info({ was: failing }, "settlement watcher recovered");
        failing = undefined;
      },
      (error: unknown) => {
        observer?.failed();
        // One line per outage: the problem reads the same for the same reason and cause (never a stack).
        const fields = failureFields(error);
        if (fields.problem !== failing) logger.warn(fields, "settlement pass failed: retrying every pollMs");
        failing = fields.problem;
      },
    );
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      void poll().finally(schedule);
    }, options.pollMs);
    timer.unref();
  };
  if (options.poll !== false) {
    // The first pass at once, then every pollMs.
    void poll().finally(schedule);
  }

  return {
    network: name,
    options,
    tick,
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await queue;
    },
  };
}
