/**
 * The EIP-7702 delegate each sender's code named when it was last read, per network: the delegate step's
 * guess for the next signature of that sender, so that the signature need not wait for the code read (the
 * final simulation checks the guess; src/sponsor/steps/delegate.ts). Only a guess: nothing is decided on it
 * alone. Only what the chain said is kept (code reads, the probe's), never a delegate a request names in its
 * authorization: anyone may send any authorization for any sender, and a remembered claim would cost that sender's
 * next request a second round trip. Bounded: the senders seen longest ago are forgotten first.
 */
import type { Address } from "@paymaster/shared";
import type { NetworkConfig } from "../config/types.ts";

/** Senders remembered per network. */
export const REMEMBERED_SENDERS = 10_000;

/**
 * Per network (its configuration, which lives as long as the network: a call sees the network's chain through a
 * view of its own, src/network/callDeadline.ts, so the view is no key): sender (lowercase) -> the delegate its code
 * named (undefined: not a delegation).
 */
const delegates = new WeakMap<NetworkConfig, Map<string, Address | undefined>>();

/** The delegate `sender`'s code named when last read; undefined when it named none, or was never read. */
export function lastDelegate(network: NetworkConfig, sender: Address): Address | undefined {
  return delegates.get(network)?.get(sender.toLowerCase());
}

/** What a code read of `sender` found. */
export function rememberDelegate(network: NetworkConfig, sender: Address, delegate: Address | undefined): void {
  let known = delegates.get(network);
  if (known === undefined) delegates.set(network, (known = new Map()));
  const key = sender.toLowerCase();
  known.delete(key); // re-inserted last: the most recently seen
  known.set(key, delegate);
  if (known.size > REMEMBERED_SENDERS) known.delete(known.keys().next().value!);
}
