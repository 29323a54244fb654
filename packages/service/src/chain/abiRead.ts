/**
 * Reading ABI-encoded return data straight off its fixed layout, for the few results the sponsor path decodes
 * on every request (viem's generic decoders cost more than the rest of the service's work there).
 */
import type { Address, Hex } from "@paymaster/shared";

/** The 32-byte word `index` of ABI-encoded `hex` (0x-prefixed), from byte `base`. */
export function word(hex: Hex, index: number, base = 0): bigint {
  const start = 2 + (base + index * 32) * 2;
  return BigInt(`0x${hex.slice(start, start + 64)}`);
}

/** The address in word `index` (lowercase, as eip7702DelegateOfCode gives one), or undefined for address 0. */
export function addressAt(hex: Hex, index: number, base = 0): Address | undefined {
  const start = 2 + (base + index * 32) * 2 + 24;
  const address = `0x${hex.slice(start, start + 40).toLowerCase()}` as Address;
  return /^0x0{40}$/.test(address) ? undefined : address;
}

/** The dynamic `bytes` whose offset (relative to `base`) is in word `index`. */
export function bytesAt(hex: Hex, index: number, base = 0): { start: number; value: Hex } {
  const start = base + Number(word(hex, index, base));
  const length = Number(word(hex, 0, start));
  return { start: start + 32, value: `0x${hex.slice(2 + (start + 32) * 2, 2 + (start + 32 + length) * 2)}` };
}
