/**
 * The settlement watcher's settings (a network's configuration over the defaults) and the names it keeps its
 * progress under in the store: the cursor, and the references of the gas-tank credits it makes.
 */
import type { Address, Hex } from "@paymaster/shared";
import type { NetworkConfig } from "../config/types.ts";

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

/** Refuses the block counts a pass cannot work with (a RangeError naming the option). */
export function checkWatcherOptions(options: WatcherOptions): void {
  if (!Number.isInteger(options.confirmations) || options.confirmations < 0) throw new RangeError("confirmations must be a non-negative integer");
  if (!Number.isInteger(options.reorgDepth) || options.reorgDepth < 1) throw new RangeError("reorgDepth must be a positive integer");
  if (!Number.isInteger(options.logBlockRange) || options.logBlockRange < 1) throw new RangeError("logBlockRange must be a positive integer");
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
