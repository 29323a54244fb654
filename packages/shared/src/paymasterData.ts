// paymasterData and paymasterAndData of the four paymaster contracts (docs/paymaster-data.md):
// fixed-width, packed big-endian fields, exact lengths. Encoders and strict decoders mirror the
// contracts' parsing so the service never signs data the contracts would refuse.
import { concat, getAddress } from "viem/utils";
import { assertAddress, assertHexBytes, byteLength, sliceBytes, uintDigits, type ErrorFactory } from "./bytes.ts";
import { PaymasterDataError } from "./errors.ts";
import type { Address, EntryPointVersion, Hex } from "./types.ts";

// ---------------------------------------------------------------- lengths (bytes)
/** paymaster address at the start of paymasterAndData. */
export const PAYMASTER_ADDRESS_LENGTH = 20;
/** Each of v0.7's paymasterVerificationGasLimit and paymasterPostOpGasLimit (uint128). */
export const PAYMASTER_GAS_LIMIT_LENGTH = 16;
/** Where paymasterData starts in a v0.6 paymasterAndData. */
export const PAYMASTER_DATA_OFFSET_V06 = PAYMASTER_ADDRESS_LENGTH; // 20
/** Where paymasterData starts in a v0.7 paymasterAndData (after the two gas limits). */
export const PAYMASTER_DATA_OFFSET_V07 = PAYMASTER_ADDRESS_LENGTH + 2 * PAYMASTER_GAS_LIMIT_LENGTH; // 52
/** validUntil (uint48) + validAfter (uint48). */
export const VALIDITY_LENGTH = 12;
/** token (20) + exchangeRate (32) + chargeMode (1) + maxTokenCharge (32). */
export const TOKEN_FIELDS_LENGTH = 85;
/** Only 65-byte (r, s, v) signatures; the contracts refuse 64-byte compact ones by length. */
export const SIGNATURE_LENGTH = 65;
/** paymasterData of the verifying paymasters: validity + signature. */
export const VERIFYING_PAYMASTER_DATA_LENGTH = VALIDITY_LENGTH + SIGNATURE_LENGTH; // 77
/** paymasterData of the ERC-20 paymasters: validity + token fields + signature. */
export const ERC20_PAYMASTER_DATA_LENGTH = VALIDITY_LENGTH + TOKEN_FIELDS_LENGTH + SIGNATURE_LENGTH; // 162
export const VERIFYING_PAYMASTER_AND_DATA_LENGTH_V06 = PAYMASTER_DATA_OFFSET_V06 + VERIFYING_PAYMASTER_DATA_LENGTH; // 97
export const ERC20_PAYMASTER_AND_DATA_LENGTH_V06 = PAYMASTER_DATA_OFFSET_V06 + ERC20_PAYMASTER_DATA_LENGTH; // 182
export const VERIFYING_PAYMASTER_AND_DATA_LENGTH_V07 = PAYMASTER_DATA_OFFSET_V07 + VERIFYING_PAYMASTER_DATA_LENGTH; // 129
export const ERC20_PAYMASTER_AND_DATA_LENGTH_V07 = PAYMASTER_DATA_OFFSET_V07 + ERC20_PAYMASTER_DATA_LENGTH; // 214

// ---------------------------------------------------------------- field types
/** TokenChargeBase's CHARGE_IN_POSTOP (0) and PRE_CHARGE (1). */
export const ChargeMode = { InPostOp: 0, PreCharge: 1 } as const;
export type ChargeMode = (typeof ChargeMode)[keyof typeof ChargeMode];

/** uint48 seconds, handed to the EntryPoint in validationData. */
export type ValidityWindow = { validUntil: number; validAfter: number };

/**
 * The signed ERC-20 mode fields. exchangeRate: token base units per 1e18 wei. maxTokenCharge: the most the
 * sender can be charged for the op, in token base units, whatever the paymaster's owner-set postOpGas is
 * when the op lands (the service signs the op's maximum token cost).
 */
export type Erc20ModeFields = { token: Address; exchangeRate: bigint; chargeMode: ChargeMode; maxTokenCharge: bigint };

/**
 * maxTokenCharge of estimation stubs made before the op's maximum cost is known: "no cap" (2^256 - 1), so the
 * stub's pre-charge is the contract's own maximum, and its 32 non-zero bytes never under-price calldata.
 */
export const STUB_MAX_TOKEN_CHARGE = 2n ** 256n - 1n;

/** Decoded paymasterData of a verifying paymaster. */
export type VerifyingPaymasterData = ValidityWindow & { signature: Hex };

/** Decoded paymasterData of an ERC-20 paymaster. */
export type Erc20PaymasterData = ValidityWindow & Erc20ModeFields & { signature: Hex };

/** A v0.6 paymasterAndData split at the paymaster address. */
export type PaymasterAndDataV06 = { paymaster: Address; paymasterData: Hex };

/** A v0.7 paymasterAndData split into its static fields and paymasterData (ERC-7769 names). */
export type PaymasterAndDataV07 = {
  paymaster: Address;
  paymasterVerificationGasLimit: bigint;
  paymasterPostOpGasLimit: bigint;
  paymasterData: Hex;
};

// ---------------------------------------------------------------- stub signature
/**
 * Dummy signature for gas estimation: 65 bytes like a real one, no zero byte (calldata gas is never
 * under-estimated), high entropy like a real signature (no 3-byte sequence repeats, so an L2 that prices
 * compressed data, e.g. OP Stack since Fjord, prices it like the real one; a patterned stub compresses to
 * almost nothing and would under-price preVerificationGas), r a valid curve x-coordinate, s in the low half,
 * v = 28, so ECDSA.tryRecover returns some address without error and the contract takes the same path as
 * with a real signature, ending in SIG_VALIDATION_FAILED.
 * Derived once: r = keccak256("paymaster stub signature: r"), s = keccak256("paymaster stub signature: s")
 * with the top bit cleared (test/paymasterData.test.ts re-derives it).
 */
export const STUB_SIGNATURE: Hex =
  "0xa2eb9a3b7f5b79fbcd8ea4461dbc5013109f33bce90ab0e798196d23a772ecb65dfc6ceb595acf710767b0dc30bbf8a5b01f695b5b3c830473094ec74e7ecfc51c";

// ---------------------------------------------------------------- paymasterData
const fieldError: ErrorFactory = (message) => new PaymasterDataError("field", message);

/** paymasterData of VerifyingPaymasterV06/V07: validUntil (6) ‖ validAfter (6) ‖ signature (65). */
export function encodeVerifyingPaymasterData(window: ValidityWindow, signature: Hex): Hex {
  return `0x${validityDigits(window)}${signatureDigits(signature)}`;
}

/**
 * paymasterData of ERC20PaymasterV06/V07/V08: validUntil (6) ‖ validAfter (6) ‖ token (20) ‖
 * exchangeRate (32) ‖ chargeMode (1) ‖ maxTokenCharge (32) ‖ signature (65).
 */
export function encodeErc20PaymasterData(fields: ValidityWindow & Erc20ModeFields, signature: Hex): Hex {
  assertAddress(fields.token, "token", fieldError);
  assertChargeMode(fields.chargeMode);
  return `0x${validityDigits(fields)}${fields.token.slice(2)}${uintDigits(fields.exchangeRate, 32, "exchangeRate", fieldError)}${uintDigits(fields.chargeMode, 1, "chargeMode", fieldError)}${uintDigits(fields.maxTokenCharge, 32, "maxTokenCharge", fieldError)}${signatureDigits(signature)}`;
}

/** Strictly decodes a verifying paymasterData: exactly 77 bytes. */
export function decodeVerifyingPaymasterData(paymasterData: Hex): VerifyingPaymasterData {
  assertHexBytes(paymasterData, "paymasterData", fieldError);
  assertLength("paymasterData", paymasterData, VERIFYING_PAYMASTER_DATA_LENGTH);
  return { ...decodeValidity(paymasterData), signature: sliceBytes(paymasterData, VALIDITY_LENGTH) };
}

/** Strictly decodes an ERC-20 paymasterData: exactly 162 bytes and chargeMode 0 or 1. */
export function decodeErc20PaymasterData(paymasterData: Hex): Erc20PaymasterData {
  assertHexBytes(paymasterData, "paymasterData", fieldError);
  assertLength("paymasterData", paymasterData, ERC20_PAYMASTER_DATA_LENGTH);
  const chargeMode = Number.parseInt(paymasterData.slice(2 + 64 * 2, 2 + 65 * 2), 16);
  assertChargeMode(chargeMode);
  return {
    ...decodeValidity(paymasterData),
    token: getAddress(sliceBytes(paymasterData, 12, 32)),
    exchangeRate: BigInt(sliceBytes(paymasterData, 32, 64)),
    chargeMode,
    maxTokenCharge: BigInt(sliceBytes(paymasterData, 65, 97)),
    signature: sliceBytes(paymasterData, 97),
  };
}

/** Estimation stub of a verifying paymasterData: the real layout with STUB_SIGNATURE. */
export function stubVerifyingPaymasterData(window: ValidityWindow): Hex {
  return encodeVerifyingPaymasterData(window, STUB_SIGNATURE);
}

/** Estimation stub of an ERC-20 paymasterData: the real layout with STUB_SIGNATURE. */
export function stubErc20PaymasterData(fields: ValidityWindow & Erc20ModeFields): Hex {
  return encodeErc20PaymasterData(fields, STUB_SIGNATURE);
}

// ---------------------------------------------------------------- paymasterAndData
/** v0.6 paymasterAndData: paymaster (20) ‖ paymasterData. */
export function encodePaymasterAndDataV06(paymaster: Address, paymasterData: Hex): Hex {
  assertAddress(paymaster, "paymaster", fieldError);
  assertHexBytes(paymasterData, "paymasterData", fieldError);
  return concat([paymaster, paymasterData]);
}

/** v0.7 paymasterAndData: paymaster (20) ‖ paymasterVerificationGasLimit (16) ‖ paymasterPostOpGasLimit (16) ‖ paymasterData. */
export function encodePaymasterAndDataV07(fields: PaymasterAndDataV07): Hex {
  assertAddress(fields.paymaster, "paymaster", fieldError);
  assertHexBytes(fields.paymasterData, "paymasterData", fieldError);
  return `0x${fields.paymaster.slice(2)}${uintDigits(fields.paymasterVerificationGasLimit, 16, "paymasterVerificationGasLimit", fieldError)}${uintDigits(fields.paymasterPostOpGasLimit, 16, "paymasterPostOpGasLimit", fieldError)}${fields.paymasterData.slice(2)}`;
}

/**
 * Splits a paymasterAndData into the paymaster address (checksummed), for v0.7 the two gas limits,
 * and paymasterData. Throws when it is too short to hold them (the EntryPoint's AA93), including 0x.
 */
export function decodePaymasterAndData(version: "v0.6", paymasterAndData: Hex): PaymasterAndDataV06;
export function decodePaymasterAndData(version: "v0.7" | "v0.8", paymasterAndData: Hex): PaymasterAndDataV07;
export function decodePaymasterAndData(
  version: EntryPointVersion,
  paymasterAndData: Hex,
): PaymasterAndDataV06 | PaymasterAndDataV07;
export function decodePaymasterAndData(
  version: EntryPointVersion,
  paymasterAndData: Hex,
): PaymasterAndDataV06 | PaymasterAndDataV07 {
  assertHexBytes(paymasterAndData, "paymasterAndData", fieldError);
  const length = byteLength(paymasterAndData);
  const paymaster = (): Address => getAddress(sliceBytes(paymasterAndData, 0, PAYMASTER_ADDRESS_LENGTH));
  if (version === "v0.6") {
    if (length < PAYMASTER_DATA_OFFSET_V06) throw tooShort(length, PAYMASTER_DATA_OFFSET_V06, version);
    return { paymaster: paymaster(), paymasterData: sliceBytes(paymasterAndData, PAYMASTER_DATA_OFFSET_V06) };
  }
  if (version === "v0.7" || version === "v0.8") {
    if (length < PAYMASTER_DATA_OFFSET_V07) throw tooShort(length, PAYMASTER_DATA_OFFSET_V07, version);
    return {
      paymaster: paymaster(),
      paymasterVerificationGasLimit: BigInt(sliceBytes(paymasterAndData, 20, 36)),
      paymasterPostOpGasLimit: BigInt(sliceBytes(paymasterAndData, 36, 52)),
      paymasterData: sliceBytes(paymasterAndData, PAYMASTER_DATA_OFFSET_V07),
    };
  }
  throw new PaymasterDataError("field", `unknown EntryPoint version ${String(version)}`);
}

// ---------------------------------------------------------------- internal
function validityDigits(window: ValidityWindow): string {
  return uintDigits(window.validUntil, 6, "validUntil", fieldError) + uintDigits(window.validAfter, 6, "validAfter", fieldError);
}

function signatureDigits(signature: Hex): string {
  assertHexBytes(signature, "signature", fieldError);
  assertLength("signature", signature, SIGNATURE_LENGTH);
  return signature.slice(2);
}

/** uint48s of 12 hex digits fit a double exactly, so parseInt is exact here. */
function decodeValidity(paymasterData: Hex): ValidityWindow {
  return {
    validUntil: Number.parseInt(paymasterData.slice(2, 14), 16),
    validAfter: Number.parseInt(paymasterData.slice(14, 26), 16),
  };
}

function assertLength(field: string, hex: Hex, expected: number): void {
  const length = byteLength(hex);
  if (length !== expected) {
    throw new PaymasterDataError("length", `${field}: expected exactly ${expected} bytes, got ${length}`);
  }
}

function assertChargeMode(mode: unknown): asserts mode is ChargeMode {
  if (mode !== ChargeMode.InPostOp && mode !== ChargeMode.PreCharge) {
    throw new PaymasterDataError("chargeMode", `chargeMode: expected 0 (InPostOp) or 1 (PreCharge), got ${String(mode)}`);
  }
}

function tooShort(length: number, minimum: number, version: EntryPointVersion): PaymasterDataError {
  return new PaymasterDataError(
    "length",
    `paymasterAndData: ${length} bytes is shorter than the ${minimum} bytes of the ${version} paymaster fields`,
  );
}
