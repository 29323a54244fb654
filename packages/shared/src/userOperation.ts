// User operation codecs: v0.7's unpacked ERC-7769 form <-> the on-chain PackedUserOperation, and the
// domain (bigint) forms <-> the JSON-RPC wire forms (hex strings). Packing mirrors EntryPoint v0.7's
// UserOperationLib (high 128 bits first); unpacking refuses what the EntryPoint could not parse.
import { getAddress } from "viem/utils";
import {
  assertAddress,
  assertHexBytes,
  byteLength,
  fromQuantity,
  sliceBytes,
  toQuantity,
  uintDigits,
  type ErrorFactory,
} from "./bytes.ts";
import { UserOperationError } from "./errors.ts";
import {
  decodePaymasterAndData,
  encodePaymasterAndDataV07,
  PAYMASTER_DATA_OFFSET_V07,
} from "./paymasterData.ts";
import type { Address, Hex, PackedUserOperation, UserOperationV06, UserOperationV07 } from "./types.ts";

const opError: ErrorFactory = (message) => new UserOperationError(message);

/** Bytes of the factory address at the start of a v0.7 initCode. */
const FACTORY_LENGTH = 20;

// ---------------------------------------------------------------- wire types
/** EntryPoint v0.6 user operation as sent over JSON-RPC: quantities are hex. */
export type RpcUserOperationV06 = {
  sender: Address;
  nonce: Hex;
  initCode: Hex;
  callData: Hex;
  callGasLimit: Hex;
  verificationGasLimit: Hex;
  preVerificationGas: Hex;
  maxFeePerGas: Hex;
  maxPriorityFeePerGas: Hex;
  paymasterAndData: Hex;
  signature: Hex;
};

/**
 * EntryPoint v0.7 user operation as sent over JSON-RPC (ERC-7769). Optional fields may be absent or
 * null (some clients send null), both meaning "no factory" / "no paymaster".
 */
export type RpcUserOperationV07 = {
  sender: Address;
  nonce: Hex;
  factory?: Address | null;
  factoryData?: Hex | null;
  callData: Hex;
  callGasLimit: Hex;
  verificationGasLimit: Hex;
  preVerificationGas: Hex;
  maxFeePerGas: Hex;
  maxPriorityFeePerGas: Hex;
  paymaster?: Address | null;
  paymasterVerificationGasLimit?: Hex | null;
  paymasterPostOpGasLimit?: Hex | null;
  paymasterData?: Hex | null;
  signature: Hex;
};

// ---------------------------------------------------------------- v0.7 pack / unpack
/**
 * v0.7 initCode: factory ‖ factoryData, or 0x without a factory. factoryData without a factory is
 * refused: it cannot be represented on-chain and silently dropping it would change the signed op.
 */
export function initCodeV07(op: Pick<UserOperationV07, "factory" | "factoryData">): Hex {
  const factoryData = op.factoryData ?? "0x";
  assertHexBytes(factoryData, "factoryData", opError);
  if (op.factory === undefined) {
    if (factoryData !== "0x") throw opError("factoryData is set but factory is not");
    return "0x";
  }
  assertAddress(op.factory, "factory", opError);
  return `0x${op.factory.slice(2)}${factoryData.slice(2)}`;
}

/**
 * v0.7 paymasterAndData of an unpacked op, or 0x without a paymaster. Missing gas limits are 0 and a
 * missing paymasterData is empty; paymaster fields without a paymaster are refused.
 */
export function paymasterAndDataV07(
  op: Pick<UserOperationV07, "paymaster" | "paymasterVerificationGasLimit" | "paymasterPostOpGasLimit" | "paymasterData">,
): Hex {
  if (op.paymaster === undefined) {
    if (
      (op.paymasterData !== undefined && op.paymasterData !== "0x") ||
      (op.paymasterVerificationGasLimit ?? 0n) !== 0n ||
      (op.paymasterPostOpGasLimit ?? 0n) !== 0n
    ) {
      throw opError("paymaster fields are set but paymaster is not");
    }
    return "0x";
  }
  return encodePaymasterAndDataV07({
    paymaster: op.paymaster,
    paymasterVerificationGasLimit: op.paymasterVerificationGasLimit ?? 0n,
    paymasterPostOpGasLimit: op.paymasterPostOpGasLimit ?? 0n,
    paymasterData: op.paymasterData ?? "0x",
  });
}

/** bytes32 of two uint128s, `high` in the upper half (accountGasLimits, gasFees). */
export function packUint128Pair(high: bigint, low: bigint, highName: string, lowName: string): Hex {
  return `0x${uintDigits(high, 16, highName, opError)}${uintDigits(low, 16, lowName, opError)}`;
}

/** The two uint128 halves (high, low) of a packed bytes32. */
export function unpackUint128Pair(packed: Hex, field: string): [high: bigint, low: bigint] {
  assertHexBytes(packed, field, opError);
  if (byteLength(packed) !== 32) throw opError(`${field}: expected 32 bytes, got ${byteLength(packed)}`);
  return [BigInt(sliceBytes(packed, 0, 16)), BigInt(sliceBytes(packed, 16, 32))];
}

/** The on-chain PackedUserOperation of an unpacked v0.7 op. */
export function packUserOpV07(op: UserOperationV07): PackedUserOperation {
  assertAddress(op.sender, "sender", opError);
  assertHexBytes(op.callData, "callData", opError);
  assertHexBytes(op.signature, "signature", opError);
  return {
    sender: op.sender,
    nonce: op.nonce,
    initCode: initCodeV07(op),
    callData: op.callData,
    accountGasLimits: packUint128Pair(op.verificationGasLimit, op.callGasLimit, "verificationGasLimit", "callGasLimit"),
    preVerificationGas: op.preVerificationGas,
    gasFees: packUint128Pair(op.maxPriorityFeePerGas, op.maxFeePerGas, "maxPriorityFeePerGas", "maxFeePerGas"),
    paymasterAndData: paymasterAndDataV07(op),
    signature: op.signature,
  };
}

/**
 * The unpacked form of a PackedUserOperation (inverse of packUserOpV07). Addresses cut out of
 * initCode/paymasterAndData are checksummed. Throws on a 1–19 byte initCode or 1–51 byte
 * paymasterAndData, which the EntryPoint cannot parse either.
 */
export function unpackUserOpV07(packed: PackedUserOperation): UserOperationV07 {
  assertHexBytes(packed.initCode, "initCode", opError);
  assertHexBytes(packed.paymasterAndData, "paymasterAndData", opError);
  const [verificationGasLimit, callGasLimit] = unpackUint128Pair(packed.accountGasLimits, "accountGasLimits");
  const [maxPriorityFeePerGas, maxFeePerGas] = unpackUint128Pair(packed.gasFees, "gasFees");
  const op: UserOperationV07 = {
    sender: packed.sender,
    nonce: packed.nonce,
    callData: packed.callData,
    callGasLimit,
    verificationGasLimit,
    preVerificationGas: packed.preVerificationGas,
    maxFeePerGas,
    maxPriorityFeePerGas,
    signature: packed.signature,
  };

  const initCodeLength = byteLength(packed.initCode);
  if (initCodeLength > 0) {
    if (initCodeLength < FACTORY_LENGTH) {
      throw opError(`initCode: ${initCodeLength} bytes cannot hold the 20-byte factory address`);
    }
    op.factory = getAddress(sliceBytes(packed.initCode, 0, FACTORY_LENGTH));
    op.factoryData = sliceBytes(packed.initCode, FACTORY_LENGTH);
  }

  const paymasterAndDataLength = byteLength(packed.paymasterAndData);
  if (paymasterAndDataLength > 0) {
    if (paymasterAndDataLength < PAYMASTER_DATA_OFFSET_V07) {
      throw opError(
        `paymasterAndData: ${paymasterAndDataLength} bytes cannot hold the ${PAYMASTER_DATA_OFFSET_V07}-byte paymaster fields`,
      );
    }
    const pm = decodePaymasterAndData("v0.7", packed.paymasterAndData);
    op.paymaster = pm.paymaster;
    op.paymasterVerificationGasLimit = pm.paymasterVerificationGasLimit;
    op.paymasterPostOpGasLimit = pm.paymasterPostOpGasLimit;
    op.paymasterData = pm.paymasterData;
  }
  return op;
}

// ---------------------------------------------------------------- RPC <-> domain
/** Wire form of a v0.6 op: quantities as minimal 0x hex. */
export function toRpcUserOpV06(op: UserOperationV06): RpcUserOperationV06 {
  return {
    sender: op.sender,
    nonce: toQuantity(op.nonce, "nonce", opError),
    initCode: op.initCode,
    callData: op.callData,
    callGasLimit: toQuantity(op.callGasLimit, "callGasLimit", opError),
    verificationGasLimit: toQuantity(op.verificationGasLimit, "verificationGasLimit", opError),
    preVerificationGas: toQuantity(op.preVerificationGas, "preVerificationGas", opError),
    maxFeePerGas: toQuantity(op.maxFeePerGas, "maxFeePerGas", opError),
    maxPriorityFeePerGas: toQuantity(op.maxPriorityFeePerGas, "maxPriorityFeePerGas", opError),
    paymasterAndData: op.paymasterAndData,
    signature: op.signature,
  };
}

/** Domain form of a wire v0.6 op; validates every field's shape (throws UserOperationError). */
export function fromRpcUserOpV06(rpc: RpcUserOperationV06): UserOperationV06 {
  return {
    sender: address(rpc.sender, "sender"),
    nonce: fromQuantity(rpc.nonce, "nonce", opError),
    initCode: bytes(rpc.initCode, "initCode"),
    callData: bytes(rpc.callData, "callData"),
    callGasLimit: fromQuantity(rpc.callGasLimit, "callGasLimit", opError),
    verificationGasLimit: fromQuantity(rpc.verificationGasLimit, "verificationGasLimit", opError),
    preVerificationGas: fromQuantity(rpc.preVerificationGas, "preVerificationGas", opError),
    maxFeePerGas: fromQuantity(rpc.maxFeePerGas, "maxFeePerGas", opError),
    maxPriorityFeePerGas: fromQuantity(rpc.maxPriorityFeePerGas, "maxPriorityFeePerGas", opError),
    paymasterAndData: bytes(rpc.paymasterAndData, "paymasterAndData"),
    signature: bytes(rpc.signature, "signature"),
  };
}

/** Wire form of a v0.7 op: quantities as minimal 0x hex; absent optional fields stay absent. */
export function toRpcUserOpV07(op: UserOperationV07): RpcUserOperationV07 {
  const rpc: RpcUserOperationV07 = {
    sender: op.sender,
    nonce: toQuantity(op.nonce, "nonce", opError),
    callData: op.callData,
    callGasLimit: toQuantity(op.callGasLimit, "callGasLimit", opError),
    verificationGasLimit: toQuantity(op.verificationGasLimit, "verificationGasLimit", opError),
    preVerificationGas: toQuantity(op.preVerificationGas, "preVerificationGas", opError),
    maxFeePerGas: toQuantity(op.maxFeePerGas, "maxFeePerGas", opError),
    maxPriorityFeePerGas: toQuantity(op.maxPriorityFeePerGas, "maxPriorityFeePerGas", opError),
    signature: op.signature,
  };
  if (op.factory !== undefined) rpc.factory = op.factory;
  if (op.factoryData !== undefined) rpc.factoryData = op.factoryData;
  if (op.paymaster !== undefined) rpc.paymaster = op.paymaster;
  if (op.paymasterVerificationGasLimit !== undefined) {
    rpc.paymasterVerificationGasLimit = toQuantity(op.paymasterVerificationGasLimit, "paymasterVerificationGasLimit", opError);
  }
  if (op.paymasterPostOpGasLimit !== undefined) {
    rpc.paymasterPostOpGasLimit = toQuantity(op.paymasterPostOpGasLimit, "paymasterPostOpGasLimit", opError);
  }
  if (op.paymasterData !== undefined) rpc.paymasterData = op.paymasterData;
  return rpc;
}

/** Domain form of a wire v0.7 op; null optional fields become absent. Validates every field's shape. */
export function fromRpcUserOpV07(rpc: RpcUserOperationV07): UserOperationV07 {
  const op: UserOperationV07 = {
    sender: address(rpc.sender, "sender"),
    nonce: fromQuantity(rpc.nonce, "nonce", opError),
    callData: bytes(rpc.callData, "callData"),
    callGasLimit: fromQuantity(rpc.callGasLimit, "callGasLimit", opError),
    verificationGasLimit: fromQuantity(rpc.verificationGasLimit, "verificationGasLimit", opError),
    preVerificationGas: fromQuantity(rpc.preVerificationGas, "preVerificationGas", opError),
    maxFeePerGas: fromQuantity(rpc.maxFeePerGas, "maxFeePerGas", opError),
    maxPriorityFeePerGas: fromQuantity(rpc.maxPriorityFeePerGas, "maxPriorityFeePerGas", opError),
    signature: bytes(rpc.signature, "signature"),
  };
  if (rpc.factory != null) op.factory = address(rpc.factory, "factory");
  if (rpc.factoryData != null) op.factoryData = bytes(rpc.factoryData, "factoryData");
  if (rpc.paymaster != null) op.paymaster = address(rpc.paymaster, "paymaster");
  if (rpc.paymasterVerificationGasLimit != null) {
    op.paymasterVerificationGasLimit = fromQuantity(rpc.paymasterVerificationGasLimit, "paymasterVerificationGasLimit", opError);
  }
  if (rpc.paymasterPostOpGasLimit != null) {
    op.paymasterPostOpGasLimit = fromQuantity(rpc.paymasterPostOpGasLimit, "paymasterPostOpGasLimit", opError);
  }
  if (rpc.paymasterData != null) op.paymasterData = bytes(rpc.paymasterData, "paymasterData");
  return op;
}

function address(value: unknown, field: string): Address {
  assertAddress(value, field, opError);
  return value;
}

function bytes(value: unknown, field: string): Hex {
  assertHexBytes(value, field, opError);
  return value;
}
