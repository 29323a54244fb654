/**
 * The user operation the pipeline builds, hashes and simulates: the client's op with our gas values and
 * paymaster data, per EntryPoint version. Pure functions, shared by the steps (src/sponsor/steps/).
 */
import {
  ChargeMode,
  STUB_MAX_TOKEN_CHARGE,
  encodeErc20PaymasterData,
  encodePaymasterAndDataV06,
  encodePaymasterAndDataV07,
  encodeVerifyingPaymasterData,
  getPackedUserOpHashV07,
  getPackedUserOpHashV08,
  getUserOpHashV06,
  maxGasCostV06,
  maxGasCostV07,
  packUserOpV07,
  preChargeGasCostV06,
  preChargeGasCostV07,
  type Address,
  type Hex,
  type UserOperationV06,
  type UserOperationV08,
} from "@paymaster/shared";
import type { SimulatedOp } from "../chain/entryPoint.ts";
import type { SponsorRequest } from "../wire/schemas.ts";
import type { Target } from "./steps/target.ts";

export interface GasValues {
  callGasLimit: bigint;
  verificationGasLimit: bigint;
  preVerificationGas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  /** v0.7 only (0 for v0.6). */
  paymasterVerificationGasLimit: bigint;
  paymasterPostOpGasLimit: bigint;
}

/** buildOp for the op without its calls (empty callData): what simulates the calls alone, right after validation. */
export function buildOpWithoutCalls(request: SponsorRequest, gas: GasValues, paymaster: Address, paymasterData: Hex): SimulatedOp {
  return buildOp({ ...request, userOp: { ...request.userOp, callData: "0x" } } as SponsorRequest, gas, paymaster, paymasterData);
}

/** The wei an ERC-20 paymaster pre-charges `op` for (`postOpGas`: v0.6's charged postOp gas). */
export function preChargeWeiOf(op: SimulatedOp, postOpGas: bigint): bigint {
  return op.version === "v0.6" ? preChargeGasCostV06(op.userOp, postOpGas) : preChargeGasCostV07(op.userOp);
}

/** The version's op with the given gas values and paymaster data (paymasterData excludes the address). */
export function buildOp(request: SponsorRequest, gas: GasValues, paymaster: Address, paymasterData: Hex): SimulatedOp {
  if (request.version === "v0.6") {
    const u = request.userOp;
    const userOp: UserOperationV06 = {
      sender: u.sender,
      nonce: u.nonce,
      initCode: u.initCode,
      callData: u.callData,
      callGasLimit: gas.callGasLimit,
      verificationGasLimit: gas.verificationGasLimit,
      preVerificationGas: gas.preVerificationGas,
      maxFeePerGas: gas.maxFeePerGas,
      maxPriorityFeePerGas: gas.maxPriorityFeePerGas,
      paymasterAndData: encodePaymasterAndDataV06(paymaster, paymasterData),
      signature: u.signature,
    };
    return { version: "v0.6", userOp };
  }
  const u = request.userOp;
  const userOp: UserOperationV08 = {
    ...(u.eip7702Auth ? { eip7702Auth: u.eip7702Auth } : {}),
    sender: u.sender,
    nonce: u.nonce,
    ...(u.factory ? { factory: u.factory, factoryData: u.factoryData ?? "0x" } : {}),
    callData: u.callData,
    callGasLimit: gas.callGasLimit,
    verificationGasLimit: gas.verificationGasLimit,
    preVerificationGas: gas.preVerificationGas,
    maxFeePerGas: gas.maxFeePerGas,
    maxPriorityFeePerGas: gas.maxPriorityFeePerGas,
    paymaster,
    paymasterVerificationGasLimit: gas.paymasterVerificationGasLimit,
    paymasterPostOpGasLimit: gas.paymasterPostOpGasLimit,
    paymasterData,
    signature: u.signature,
  };
  return { version: request.version, userOp };
}

/** The paymaster data of the target's mode (ERC-20: token, rate and charge mode) around `signature`. */
export function paymasterDataFor(target: Target, exchangeRate: bigint, chargeMode: ChargeMode, signature: Hex, maxTokenCharge: bigint = STUB_MAX_TOKEN_CHARGE): Hex {
  return target.mode.mode === "erc20"
    ? encodeErc20PaymasterData({ ...target.window, token: target.mode.token.address, exchangeRate, chargeMode, maxTokenCharge }, signature)
    : encodeVerifyingPaymasterData(target.window, signature);
}

/** The full paymasterAndData field of `op` (v0.7: packed with the paymaster's gas limits). */
export function paymasterAndDataOf(op: SimulatedOp): Hex {
  if (op.version === "v0.6") return op.userOp.paymasterAndData;
  const u = op.userOp;
  return encodePaymasterAndDataV07({
    paymaster: u.paymaster!,
    paymasterVerificationGasLimit: u.paymasterVerificationGasLimit!,
    paymasterPostOpGasLimit: u.paymasterPostOpGasLimit!,
    paymasterData: u.paymasterData!,
  });
}

/**
 * The op as it will land, packed once (v0.7, v0.8): the final simulation's calldata, its userOpHash and the answer's
 * paymasterAndData all read that one packing. Built once and never changed after.
 */
export function packedOnce(op: SimulatedOp): SimulatedOp {
  return op.version === "v0.6" ? op : { ...op, packed: packUserOpV07(op.userOp) };
}

/** The EntryPoint's userOpHash of `op` and its full paymasterAndData field (from its packing when it has one). */
export function landedFields(op: SimulatedOp, entryPoint: Address, chainId: number): { userOpHash: Hex; paymasterAndData: Hex } {
  if (op.version === "v0.6") return { userOpHash: getUserOpHashV06(op.userOp, entryPoint, chainId), paymasterAndData: op.userOp.paymasterAndData };
  const packed = op.packed ?? packUserOpV07(op.userOp);
  // v0.8 hashes EIP-712 typed data; a 7702 op's initCode hash binds the delegate its authorization sets.
  const userOpHash =
    op.version === "v0.7"
      ? getPackedUserOpHashV07(packed, entryPoint, chainId)
      : getPackedUserOpHashV08(packed, entryPoint, chainId, op.userOp.eip7702Auth?.address);
  return { userOpHash, paymasterAndData: packed.paymasterAndData };
}

export function maxGasCost(op: SimulatedOp): bigint {
  return op.version === "v0.6" ? maxGasCostV06(op.userOp) : maxGasCostV07(op.userOp);
}

/** The gas values an op carries (to rebuild it with other callData or paymaster data). */
export function gasOf(op: SimulatedOp): GasValues {
  const u = op.userOp;
  return {
    callGasLimit: u.callGasLimit,
    verificationGasLimit: u.verificationGasLimit,
    preVerificationGas: u.preVerificationGas,
    maxFeePerGas: u.maxFeePerGas,
    maxPriorityFeePerGas: u.maxPriorityFeePerGas,
    paymasterVerificationGasLimit: op.version !== "v0.6" ? (op.userOp.paymasterVerificationGasLimit ?? 0n) : 0n,
    paymasterPostOpGasLimit: op.version !== "v0.6" ? (op.userOp.paymasterPostOpGasLimit ?? 0n) : 0n,
  };
}

/** The paymaster address and paymasterData (without the address) an op carries. */
export function paymasterOf(op: SimulatedOp): { paymaster: Address; paymasterData: Hex } {
  if (op.version === "v0.6") {
    const field = op.userOp.paymasterAndData;
    return { paymaster: field.slice(0, 42) as Address, paymasterData: `0x${field.slice(42)}` as Hex };
  }
  return { paymaster: op.userOp.paymaster!, paymasterData: op.userOp.paymasterData! };
}

/** A given (non-zero) client value, else undefined: zero means "estimate it". */
export function given(value: bigint | undefined): bigint | undefined {
  return value === undefined || value === 0n ? undefined : value;
}
