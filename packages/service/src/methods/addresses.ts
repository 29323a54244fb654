/** Address helpers of the informational methods. */
import { getAddress } from "viem";
import type { Address } from "@paymaster/shared";

/** `addresses` checksummed, first occurrence kept, undefined entries skipped. */
export function uniqueChecksummed(addresses: readonly (Address | undefined)[]): Address[] {
  const seen = new Set<Address>();
  for (const address of addresses) {
    if (address !== undefined) seen.add(getAddress(address));
  }
  return [...seen];
}
