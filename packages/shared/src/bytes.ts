// Byte-level helpers on hex strings. Hex strings are the working representation because viem's
// keccak256 and every wire format take them directly; these checks keep them honest (even length,
// fixed widths, integer ranges) since JavaScript strings and bigints would otherwise never overflow.
import { EncodingError } from "./errors.ts";
import type { Address, Hex } from "./types.ts";

/** Builds the error a check throws, so each module can throw its own typed error. */
export type ErrorFactory = (message: string) => Error;

/** The default ErrorFactory: an EncodingError. */
export const encodingError: ErrorFactory = (message) => new EncodingError(message);

export const UINT48_MAX = (1n << 48n) - 1n;
export const UINT128_MAX = (1n << 128n) - 1n;
export const UINT256_MAX = (1n << 256n) - 1n;

const HEX_BYTES_RE = /^0x(?:[0-9a-fA-F]{2})*$/;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const QUANTITY_RE = /^0x[0-9a-fA-F]{1,64}$/;

/** Whether `value` is 0x-prefixed hex with an even number of digits (a byte string). */
export function isHexBytes(value: unknown): value is Hex {
  return typeof value === "string" && HEX_BYTES_RE.test(value);
}

/** Whether `value` is a 20-byte hex address (checksum not verified: case does not change the bytes). */
export function isAddressHex(value: unknown): value is Address {
  return typeof value === "string" && ADDRESS_RE.test(value);
}

/** Throws unless `value` is a byte string. */
export function assertHexBytes(value: unknown, field: string, fail: ErrorFactory = encodingError): asserts value is Hex {
  if (!isHexBytes(value)) throw fail(`${field}: expected 0x-prefixed even-length hex, got ${describe(value)}`);
}

/** Throws unless `value` is a 20-byte hex address. */
export function assertAddress(value: unknown, field: string, fail: ErrorFactory = encodingError): asserts value is Address {
  if (!isAddressHex(value)) throw fail(`${field}: expected a 20-byte hex address, got ${describe(value)}`);
}

/** Number of bytes of a byte string (assumed valid). */
export function byteLength(hex: Hex): number {
  return (hex.length - 2) / 2;
}

/** Bytes [start, end) of a byte string, case preserved (a plain string slice, no copies to bytes). */
export function sliceBytes(hex: Hex, start: number, end?: number): Hex {
  return `0x${hex.slice(2 + start * 2, end === undefined ? undefined : 2 + end * 2)}`;
}

/**
 * `value` as exactly `bytes` bytes of big-endian hex digits (no 0x), throwing when it is not an
 * integer in [0, 2^(8·bytes)): a silent wider encoding would shift every later field.
 */
export function uintDigits(value: bigint | number, bytes: number, field: string, fail: ErrorFactory = encodingError): string {
  let big: bigint;
  if (typeof value === "bigint") {
    big = value;
  } else if (typeof value === "number" && Number.isSafeInteger(value)) {
    big = BigInt(value);
  } else {
    throw fail(`${field}: expected an integer, got ${describe(value)}`);
  }
  if (big < 0n || big >> BigInt(bytes * 8) !== 0n) {
    throw fail(`${field}: ${big} does not fit in uint${bytes * 8}`);
  }
  return big.toString(16).padStart(bytes * 2, "0");
}

/** `value` as a fixed-width `bytes`-byte 0x hex string. */
export function uintToHex(value: bigint | number, bytes: number, field: string, fail: ErrorFactory = encodingError): Hex {
  return `0x${uintDigits(value, bytes, field, fail)}`;
}

/** JSON-RPC quantity: minimal 0x hex of a uint256 ("0x0" for zero). */
export function toQuantity(value: bigint, field = "quantity", fail: ErrorFactory = encodingError): Hex {
  if (typeof value !== "bigint" || value < 0n || value > UINT256_MAX) {
    throw fail(`${field}: expected a uint256 bigint, got ${describe(value)}`);
  }
  return `0x${value.toString(16)}`;
}

/** Parses a JSON-RPC quantity (1–64 hex digits; leading zeros tolerated, "0x" refused). */
export function fromQuantity(value: unknown, field = "quantity", fail: ErrorFactory = encodingError): bigint {
  if (typeof value !== "string" || !QUANTITY_RE.test(value)) {
    throw fail(`${field}: expected a hex quantity, got ${describe(value)}`);
  }
  return BigInt(value);
}

/** Short printable form of a bad value for error messages (never dumps a whole calldata). */
export function describe(value: unknown): string {
  if (typeof value === "string") return value.length > 80 ? `"${value.slice(0, 77)}..." (${value.length} chars)` : `"${value}"`;
  if (typeof value === "bigint") return `${value}n`;
  return String(value);
}
