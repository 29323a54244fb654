/**
 * The EIP-7702 delegate each sender's code named when it was last read, per network: the delegate step's
 * guess for the next signature of that sender, so that the signature need not wait for the code read (the
 * final simulation checks the guess; src/sponsor/steps/delegate.ts). Only a guess: nothing is decided on it
 * alone. Bounded: the senders seen longest ago are forgotten first.
 */
import type { Address } from "@paymaster/shared";
import type { NetworkChain } from "../context.ts";

/** Senders remembered per network. */
export const REMEMBERED_SENDERS = 10_000;

/** Per network: sender (lowercase) -> the delegate its code named (undefined: not a delegation). */
const delegates = new WeakMap<NetworkChain, Map<string, Address | undefined>>();

/** The delegate `sender`'s code named when last read; undefined when it named none, or was never read. */
export function lastDelegate(chain: NetworkChain, sender: Address): Address | undefined {
  return delegates.get(chain)?.get(sender.toLowerCase());
}

/** What a code read of `sender` found. */
export function rememberDelegate(chain: NetworkChain, sender: Address, delegate: Address | undefined): void {
  let known = delegates.get(chain);
  if (known === undefined) delegates.set(chain, (known = new Map()));
  const key = sender.toLowerCase();
  known.delete(key); // re-inserted last: the most recently seen
  known.set(key, delegate);
  if (known.size > REMEMBERED_SENDERS) known.delete(known.keys().next().value!);
}
