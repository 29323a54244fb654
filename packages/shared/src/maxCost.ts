// The EntryPoint's maximum gas cost of an op (its requiredPrefund, the `maxCost` a paymaster is handed)
// and the token amount TokenChargeBase charges for a wei cost. bigint arithmetic is exact, so these match
// the contracts bit for bit; inputs are range-checked where the contracts' types would bound them.
import { EncodingError } from "./errors.ts";
import { UINT256_MAX } from "./bytes.ts";
import type { UserOperationV06, UserOperationV07 } from "./types.ts";

/** 1e18: exchangeRate is token base units per 1e18 wei. */
export const EXCHANGE_RATE_SCALE = 10n ** 18n;

/** The v0.6 fields the EntryPoint's prefund depends on. */
export type MaxCostFieldsV06 = Pick<
  UserOperationV06,
  "callGasLimit" | "verificationGasLimit" | "preVerificationGas" | "maxFeePerGas" | "paymasterAndData"
>;

/** The v0.7 fields the EntryPoint's prefund depends on. */
export type MaxCostFieldsV07 = Pick<
  UserOperationV07,
  | "callGasLimit"
  | "verificationGasLimit"
  | "preVerificationGas"
  | "maxFeePerGas"
  | "paymasterVerificationGasLimit"
  | "paymasterPostOpGasLimit"
>;

/**
 * EntryPoint v0.6 _getRequiredPrefund: (callGasLimit + verificationGasLimit·mul + preVerificationGas)
 * · maxFeePerGas, mul = 3 when paymasterAndData names a non-zero paymaster (verificationGasLimit also
 * bounds postOp, which may run twice), else 1.
 */
export function maxGasCostV06(op: MaxCostFieldsV06): bigint {
  const mul = hasPaymasterV06(op.paymasterAndData) ? 3n : 1n;
  return (op.callGasLimit + op.verificationGasLimit * mul + op.preVerificationGas) * op.maxFeePerGas;
}

/**
 * EntryPoint v0.7 _getRequiredPrefund: (verificationGasLimit + callGasLimit + paymasterVerificationGasLimit
 * + paymasterPostOpGasLimit + preVerificationGas) · maxFeePerGas; absent paymaster limits are 0.
 */
export function maxGasCostV07(op: MaxCostFieldsV07): bigint {
  const gas =
    op.verificationGasLimit +
    op.callGasLimit +
    (op.paymasterVerificationGasLimit ?? 0n) +
    (op.paymasterPostOpGasLimit ?? 0n) +
    op.preVerificationGas;
  return gas * op.maxFeePerGas;
}

/**
 * Wei cost ERC20PaymasterV06 pre-charges in PRE_CHARGE mode: maxCost + postOpGas · maxFeePerGas (its
 * postOp charges postOpGas on top of actualGasCost, which maxCost does not cover).
 */
export function preChargeGasCostV06(op: MaxCostFieldsV06, postOpGas: bigint): bigint {
  return maxGasCostV06(op) + postOpGas * op.maxFeePerGas;
}

/** Wei cost ERC20PaymasterV07 pre-charges: maxCost itself (it already includes the postOp gas limit). */
export function preChargeGasCostV07(op: MaxCostFieldsV07): bigint {
  return maxGasCostV07(op);
}

/**
 * TokenChargeBase.tokenCost: ceil(gasCostWei · exchangeRate / 1e18) (Math.mulDiv, Rounding.Ceil), so a
 * non-zero cost at a non-zero rate is never charged as zero. Throws where the contract would revert
 * (a result over uint256) and on inputs outside uint256.
 */
export function tokenCost(gasCostWei: bigint, exchangeRate: bigint): bigint {
  if (gasCostWei < 0n || gasCostWei > UINT256_MAX) throw new EncodingError(`gasCostWei: ${gasCostWei} is not a uint256`);
  if (exchangeRate < 0n || exchangeRate > UINT256_MAX) throw new EncodingError(`exchangeRate: ${exchangeRate} is not a uint256`);
  const product = gasCostWei * exchangeRate;
  const quotient = product / EXCHANGE_RATE_SCALE;
  const result = product % EXCHANGE_RATE_SCALE === 0n ? quotient : quotient + 1n;
  if (result > UINT256_MAX) throw new EncodingError(`tokenCost: ${result} overflows uint256`);
  return result;
}

/** Like EntryPoint v0.6 _copyUserOpToMemory: a paymaster is the first 20 bytes, if non-zero. */
function hasPaymasterV06(paymasterAndData: UserOperationV06["paymasterAndData"]): boolean {
  if (paymasterAndData === "0x") return false;
  if (paymasterAndData.length < 42) {
    throw new EncodingError(`paymasterAndData: ${(paymasterAndData.length - 2) / 2} bytes cannot hold a paymaster address (AA93)`);
  }
  return BigInt(paymasterAndData.slice(0, 42)) !== 0n;
}
