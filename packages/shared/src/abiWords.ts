// abi.encode of static types only (address, uintN, bytes32), built as one hex string of 32-byte words
// and hashed once. Every hash the contracts and the EntryPoint compute here is keccak256 of such a
// tuple, and skipping encodeAbiParameters' generic type walk keeps the service's signing path cheap.
// Layout rule (Solidity ABI): each value is left-padded to 32 bytes; addresses and uints alike.
import { assertAddress, assertHexBytes, encodingError, uintDigits, type ErrorFactory } from "./bytes.ts";
import { keccak256 } from "./keccak.ts";
import type { Address, Hex } from "./types.ts";

const ADDRESS_PAD = "000000000000000000000000"; // 12 zero bytes before the 20-byte address

/** One abi word of an address. */
export function addressWord(value: Address, field: string, fail?: ErrorFactory): string {
  assertAddress(value, field, fail);
  return ADDRESS_PAD + value.slice(2).toLowerCase();
}

/** One abi word of a uint`bits` (range-checked against `bits`, as Solidity's type would be). */
export function uintWord(value: bigint | number, bits: number, field: string, fail?: ErrorFactory): string {
  const digits = uintDigits(value, bits / 8, field, fail);
  return digits.padStart(64, "0");
}

/** One abi word of a bytes32. */
export function bytes32Word(value: Hex, field: string, fail: ErrorFactory = encodingError): string {
  assertHexBytes(value, field, fail);
  if (value.length !== 66) throw fail(`${field}: expected 32 bytes, got ${(value.length - 2) / 2}`);
  return value.slice(2).toLowerCase();
}

// The service hashes an op's callData and initCode for the paymaster hash and again for the userOpHash:
// the last few data hashes are remembered, keyed by content (a hit is always right), so large callData is
// checked and hashed once per request.
const recentDataWords = new Map<string, string>();
const RECENT_DATA_WORDS = 8;

/** The word of keccak256(bytes) (how Solidity's `keccak256(userOp.initCode)` enters a tuple). */
export function keccakWord(value: Hex, field: string, fail?: ErrorFactory): string {
  const known = recentDataWords.get(value);
  if (known !== undefined) return known;
  const word = freshKeccakWord(value, field, fail);
  if (recentDataWords.size >= RECENT_DATA_WORDS) recentDataWords.delete(recentDataWords.keys().next().value!);
  recentDataWords.set(value, word);
  return word;
}

/**
 * keccakWord of a value hashed once (paymasterAndData, which carries a fresh signature each time): not
 * remembered, so concurrent requests' one-off values do not push the callData they hash twice out.
 */
export function freshKeccakWord(value: Hex, field: string, fail?: ErrorFactory): string {
  assertHexBytes(value, field, fail);
  return keccak256(value).slice(2);
}

/** keccak256 of the concatenated words, i.e. keccak256(abi.encode(...)). */
export function keccakWords(words: readonly string[]): Hex {
  return keccak256(`0x${words.join("")}`);
}

