/**
 * The window a signature is valid in (validAfter, validUntil), against both clocks that judge it: the EntryPoint
 * compares it with block.timestamp, and bundlers (and our own final simulation) run the op at the latest block.
 * On an idle chain that mines only on demand (an automining dev chain), the latest block can be minutes older
 * than the wall clock: a validAfter of "wall clock − slack" is then in that block's future and the simulation
 * refuses the op (AA32 "paymaster expired or not due"). So validAfter starts from the earlier clock and
 * validUntil ends from the later one; the latest block's timestamp comes from the market snapshot the pipeline
 * already holds (refreshed once per block), so this costs no round trip.
 */

/** How long before "now" a signature is already valid: clock skew between us, the chain and bundlers. */
export const VALID_AFTER_SLACK_SECONDS = 60;

export function validityWindow(clocks: { wallNow: number; chainNow: number; ttlSeconds: number }): { validAfter: number; validUntil: number } {
  const earlier = Math.min(clocks.wallNow, clocks.chainNow);
  const later = Math.max(clocks.wallNow, clocks.chainNow);
  return { validAfter: Math.max(0, earlier - VALID_AFTER_SLACK_SECONDS), validUntil: later + clocks.ttlSeconds };
}
