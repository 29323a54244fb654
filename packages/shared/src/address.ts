// EIP-55 checksummed addresses with the native keccak (keccak.ts): viem's getAddress hashes in pure JS
// (~10 us per address), and the service checksums every sender and factory it parses.
import { assertAddress, type ErrorFactory } from "./bytes.ts";
import { keccak256 } from "./keccak.ts";
import type { Address } from "./types.ts";

/** The last addresses checksummed (by their lowercase digits): the same few come again and again. */
const recent = new Map<string, Address>();
const RECENT = 1024;

/**
 * The EIP-55 form of a 20-byte hex address (any case in): a hex letter is upper case when the matching
 * nibble of keccak256(lowercase hex digits as ASCII) is 8 or more. The case of `address` is not checked.
 */
export function checksumAddress(address: string, field = "address", fail?: ErrorFactory): Address {
  assertAddress(address, field, fail);
  const lower = address.slice(2).toLowerCase();
  const known = recent.get(lower);
  if (known !== undefined) return known;
  const checksummed = eip55(lower);
  // EntryPoints, factories and paymasters come with every request; senders come back too.
  if (recent.size >= RECENT) recent.clear();
  recent.set(lower, checksummed);
  return checksummed;
}

function eip55(lower: string): Address {
  const hash = keccak256(`0x${Buffer.from(lower, "latin1").toString("hex")}`);
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const c = lower[i]!;
    out += c >= "a" && parseInt(hash[i + 2]!, 16) >= 8 ? c.toUpperCase() : c;
  }
  return out as Address;
}
