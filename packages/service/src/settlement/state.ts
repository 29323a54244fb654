/**
 * What one network's settlement watcher keeps from its start to its stop, in one object every step is handed:
 * the contracts it watches, its store and chain client (the pass's, traced while tracing), the deposit journal,
 * and the loop's timer, queue and failure state. Built once by `createWatcherState`; the steps (reorg.ts,
 * scan.ts, match.ts, credit.ts, pass.ts) and the loop (watcher.ts) read and update it.
 */
import type { Logger } from "pino";
import { getAddress } from "viem";
import type { Address, Hex } from "@paymaster/shared";
import type { ChainRpc } from "../chain/rpc.ts";
import type { NetworkChain, NetworkRuntime } from "../context.ts";
import type { Store } from "../store/types.ts";
import { createDepositJournal, type DepositJournal } from "./journal.ts";
import { addressTopic } from "./logs.ts";
import { checkWatcherOptions, cursorNames, watcherOptions, type WatcherOptions } from "./options.ts";

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

/** A pass's counts before it did anything. */
export function emptyResult(head: bigint, safe: bigint, cursor: bigint): TickResult {
  return { head, safe, cursor, scanned: null, reorg: null, settled: 0, alreadySettled: 0, unmatched: 0, unsettled: 0, deposits: 0, contractDeposits: 0, depositsReverted: 0, released: 0 };
}

/** Told about every pass of the poller (metrics). */
export interface WatcherObserver {
  passed(result: TickResult): void;
  failed(): void;
}

export interface StartWatcherArgs {
  network: NetworkRuntime;
  store: Store;
  logger: Logger;
  /** Overrides of the network's configured options. */
  options?: Partial<WatcherOptions>;
  observer?: WatcherObserver;
}

/** The chain changed under a scan (a block vanished or was replaced): retry next tick. */
export class ChainMovedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChainMovedError";
  }
}

/** The contracts and addresses whose logs and transactions a pass reads. */
export interface WatchedContracts {
  entryPoints: Address[];
  /** Every paymaster of ours (verifying and ERC-20), checksummed, and as log topics. */
  paymasters: Address[];
  paymasterTopics: Hex[];
  erc20Paymasters: Address[];
  /** The ERC-20 paymasters, lowercase: their ops carry a token charge. */
  erc20Set: ReadonlySet<string>;
  /** Lowercase; undefined: plain transfers are not credited. */
  depositAddress: string | undefined;
  depositContract: Address | undefined;
  watchesDeposits: boolean;
}

export interface WatcherState {
  readonly name: string;
  readonly network: NetworkRuntime;
  readonly chain: NetworkChain;
  readonly options: Readonly<WatcherOptions>;
  readonly logger: Logger;
  readonly names: ReturnType<typeof cursorNames>;
  readonly journal: DepositJournal;
  readonly watched: WatchedContracts;
  /** Wall-clock unix seconds. */
  readonly now: () => number;
  readonly baseStore: Store;
  /** The pass's store and chain client: seen through the pass's span while tracing (passes never overlap: `tick`). */
  store: Store;
  rpc: ChainRpc;
  readonly observer: WatcherObserver | undefined;
  /** The last pass queued: the next waits for it, so passes never overlap. */
  queue: Promise<unknown>;
  stopped: boolean;
  timer: NodeJS.Timeout | undefined;
  /** The problem of the failing passes (one log line per state change), undefined while they pass. */
  failing: string | undefined;
}

const lower = (value: string) => value.toLowerCase();

/** The EntryPoints and paymasters of the network's versions, and the deposit address and contract. */
function watchedContracts(network: NetworkRuntime, options: WatcherOptions): WatchedContracts {
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
  const depositAddress = options.depositAddress === undefined ? undefined : lower(options.depositAddress);
  const depositContract = options.depositContract === undefined ? undefined : (getAddress(options.depositContract) as Address);
  return {
    entryPoints,
    paymasters,
    paymasterTopics: paymasters.map(addressTopic),
    erc20Paymasters,
    erc20Set: new Set(erc20Paymasters.map(lower)),
    depositAddress,
    depositContract,
    watchesDeposits: depositAddress !== undefined || depositContract !== undefined,
  };
}

/** The state of a watcher not yet polling; throws when the network has no chain access or an option is unusable. */
export function createWatcherState({ network, store, logger, options: overrides = {}, observer }: StartWatcherArgs): WatcherState {
  const chain: NetworkChain | undefined = network.chain;
  if (!chain) throw new Error(`network ${network.config.name}: the settlement watcher needs chain access`);
  const options = watcherOptions(network.config, overrides);
  checkWatcherOptions(options);
  const name = network.config.name;
  const names = cursorNames(name);
  return {
    name,
    network,
    chain,
    options,
    logger: logger.child({ component: "settlement", network: name }),
    names,
    journal: createDepositJournal(store, names.deposits),
    watched: watchedContracts(network, options),
    now: options.now ?? (() => Math.floor(Date.now() / 1000)),
    baseStore: store,
    store,
    rpc: chain.rpc,
    observer,
    queue: Promise.resolve(),
    stopped: false,
    timer: undefined,
    failing: undefined,
  };
}

/** Moves the cursor to `block`, whose hash is `hash`. */
export async function setCursor(state: WatcherState, block: bigint, hash: Hex): Promise<void> {
  // The hash first: a crash in between leaves a cursor whose hash does not match, read as a (spurious)
  // reorg, which only rescans the window.
  await state.store.setCursor(state.names.hash, BigInt(hash));
  await state.store.setCursor(state.names.block, block);
}
