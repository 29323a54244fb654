// Public API of @paymaster/shared: pure functions and types, no I/O. bytes.ts and abiWords.ts are
// internal helpers; only their wire-format pieces are public.
export * from "./types.ts";
export * from "./errors.ts";
export {
  fromQuantity,
  isAddressHex,
  isHexBytes,
  toQuantity,
  UINT48_MAX,
  UINT128_MAX,
  UINT256_MAX,
} from "./bytes.ts";
export { checksumAddress } from "./address.ts";
export * from "./userOperation.ts";
export * from "./paymasterData.ts";
export * from "./hash.ts";
export * from "./eip7702.ts";
export * from "./userOpHash.ts";
export * from "./maxCost.ts";
export * from "./networks.ts";
export * from "./paymasterGas.ts";
export * from "./hashVectors.ts";
export * from "./gasTankConsent.ts";
