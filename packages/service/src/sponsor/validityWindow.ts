/**
 * The window a signature is valid in (validAfter, validUntil), against every clock that judges it: the EntryPoint
 * compares it with the timestamp of the block the op lands in, and bundlers (and our own final simulation) run the
 * op at the latest block.
 *
 * On a chain whose clock is the wall clock, the latest block's timestamp comes from the market snapshot the
 * pipeline already holds (refreshed once per block: no round trip) and the wall clock stands for the next block's.
 * On an idle chain that mines only on demand (an automining dev chain) the latest block can be minutes older than
 * the wall clock: a validAfter of "wall clock − slack" would be in that block's future and the simulation would
 * refuse the op (AA32 "paymaster expired or not due"). So validAfter starts from the earlier clock and validUntil
 * ends from the later one.
 *
 * A development chain keeps a clock of its own (evm_increaseTime, blocks mined faster than one a second): there
 * the market reads the latest and the next block's timestamps at signing (src/chain/market.ts `clocks`), and the
 * window spans those two; the wall clock only lengthens validUntil. The paymaster refuses a window longer than
 * MAX_VALIDITY_WINDOW_SECONDS (it fails like a bad signature, AA34), so when the clocks are further apart than
 * that, the chain's clocks win (they are what the EntryPoint judges by), and of those the next block's.
 */

/** How long before "now" a signature is already valid: clock skew between us, the chain and bundlers. */
export const VALID_AFTER_SLACK_SECONDS = 60;
/** The longest window the paymasters accept (PaymasterBase.MAX_VALIDITY_WINDOW, packages/contracts). */
export const MAX_VALIDITY_WINDOW_SECONDS = 86_400;

export interface WindowClocks {
  /** Our clock (unix seconds). */
  wallNow: number;
  /** The latest block's timestamp. */
  chainNow: number;
  /** The next block's timestamp, when the chain keeps a clock of its own (read at signing). */
  nextBlockAt?: number | undefined;
  ttlSeconds: number;
}

export function validityWindow(clocks: WindowClocks): { validAfter: number; validUntil: number } {
  const chain = clocks.nextBlockAt === undefined ? [clocks.chainNow] : [clocks.chainNow, clocks.nextBlockAt];
  // Without the next block's time, the wall clock stands for it.
  const earliest = Math.min(...chain, ...(clocks.nextBlockAt === undefined ? [clocks.wallNow] : []));
  let validAfter = Math.max(0, earliest - VALID_AFTER_SLACK_SECONDS);
  let validUntil = Math.max(...chain, clocks.wallNow) + clocks.ttlSeconds;
  if (validUntil - validAfter > MAX_VALIDITY_WINDOW_SECONDS) validUntil = Math.max(...chain) + clocks.ttlSeconds;
  if (validUntil - validAfter > MAX_VALIDITY_WINDOW_SECONDS) validAfter = validUntil - MAX_VALIDITY_WINDOW_SECONDS;
  return { validAfter, validUntil };
}
