// Reference encodings built with viem's generic encodeAbiParameters straight from the Solidity
// (BasePaymasterV06/V07._userOpFieldsHash, getHash, EntryPoint getUserOpHash), independent of the
// hand-built word buffers in src/. The golden literals in the tests were first produced by these.
import { concat, encodeAbiParameters, hashTypedData, keccak256, pad, toHex, type Hex } from "viem";
import type { Address, UserOperationV06, UserOperationV07 } from "../src/index.ts";

const u256 = { type: "uint256" } as const;
const b32 = { type: "bytes32" } as const;
const addr = { type: "address" } as const;
const u48 = { type: "uint48" } as const;

/**
 * The paymaster hash's initCode word (core/InitCodeHash.sol): an empty initCode from a sender delegated to
 * `senderDelegate` hashes the delegate's 20 bytes; anything else hashes the initCode.
 */
function refPaymasterInitCodeHash(initCode: Hex, senderDelegate: Address | undefined): Hex {
  return keccak256(initCode === "0x" && senderDelegate !== undefined ? senderDelegate : initCode);
}

export function refFieldsHashV06(op: UserOperationV06, senderDelegate?: Address): Hex {
  return keccak256(
    encodeAbiParameters(
      [addr, u256, b32, b32, u256, u256, u256, u256, u256],
      [
        op.sender,
        op.nonce,
        refPaymasterInitCodeHash(op.initCode, senderDelegate),
        keccak256(op.callData),
        op.callGasLimit,
        op.verificationGasLimit,
        op.preVerificationGas,
        op.maxFeePerGas,
        op.maxPriorityFeePerGas,
      ],
    ),
  );
}

export function refFieldsHashV07(op: UserOperationV07, senderDelegate?: Address): Hex {
  const initCode = op.factory ? concat([op.factory, op.factoryData ?? "0x"]) : "0x";
  return refFieldsHashWithInitCodeHash(op, refPaymasterInitCodeHash(initCode, senderDelegate));
}

function refFieldsHashWithInitCodeHash(op: UserOperationV07, initCodeHash: Hex): Hex {
  return keccak256(
    encodeAbiParameters(
      [addr, u256, b32, b32, u256, u256, u256, u256, u256, u256, u256],
      [
        op.sender,
        op.nonce,
        initCodeHash,
        keccak256(op.callData),
        op.callGasLimit,
        op.verificationGasLimit,
        op.preVerificationGas,
        op.maxFeePerGas,
        op.maxPriorityFeePerGas,
        op.paymasterVerificationGasLimit ?? 0n,
        op.paymasterPostOpGasLimit ?? 0n,
      ],
    ),
  );
}

export function refVerifyingHash(fields: Hex, chainId: bigint, paymaster: Address, validUntil: number, validAfter: number): Hex {
  return keccak256(
    encodeAbiParameters([b32, u256, addr, u48, u48], [fields, chainId, paymaster, validUntil, validAfter]),
  );
}

export function refErc20Hash(
  fields: Hex,
  chainId: bigint,
  paymaster: Address,
  validUntil: number,
  validAfter: number,
  token: Address,
  exchangeRate: bigint,
  chargeMode: number,
  maxTokenCharge: bigint,
): Hex {
  return keccak256(
    encodeAbiParameters(
      [b32, u256, addr, u48, u48, addr, u256, { type: "uint8" }, u256],
      [fields, chainId, paymaster, validUntil, validAfter, token, exchangeRate, chargeMode, maxTokenCharge],
    ),
  );
}

export function refUserOpHashV06(op: UserOperationV06, entryPoint: Address, chainId: bigint): Hex {
  const inner = keccak256(
    encodeAbiParameters(
      [addr, u256, b32, b32, u256, u256, u256, u256, u256, b32],
      [
        op.sender,
        op.nonce,
        keccak256(op.initCode),
        keccak256(op.callData),
        op.callGasLimit,
        op.verificationGasLimit,
        op.preVerificationGas,
        op.maxFeePerGas,
        op.maxPriorityFeePerGas,
        keccak256(op.paymasterAndData),
      ],
    ),
  );
  return keccak256(encodeAbiParameters([b32, addr, u256], [inner, entryPoint, chainId]));
}

/** The packed bytes32 / bytes fields of v0.7's PackedUserOperation (UserOperationLib), built with viem. */
function refPackedFields(op: UserOperationV07): { accountGasLimits: Hex; gasFees: Hex; paymasterAndData: Hex } {
  const accountGasLimits = concat([pad(toHex(op.verificationGasLimit), { size: 16 }), pad(toHex(op.callGasLimit), { size: 16 })]);
  const gasFees = concat([pad(toHex(op.maxPriorityFeePerGas), { size: 16 }), pad(toHex(op.maxFeePerGas), { size: 16 })]);
  const paymasterAndData = op.paymaster
    ? concat([
        op.paymaster,
        pad(toHex(op.paymasterVerificationGasLimit ?? 0n), { size: 16 }),
        pad(toHex(op.paymasterPostOpGasLimit ?? 0n), { size: 16 }),
        op.paymasterData ?? "0x",
      ])
    : "0x";
  return { accountGasLimits, gasFees, paymasterAndData };
}

export function refUserOpHashV07(op: UserOperationV07, entryPoint: Address, chainId: bigint): Hex {
  const initCode = op.factory ? concat([op.factory, op.factoryData ?? "0x"]) : "0x";
  const { accountGasLimits, gasFees, paymasterAndData } = refPackedFields(op);
  const inner = keccak256(
    encodeAbiParameters(
      [addr, u256, b32, b32, b32, u256, b32, b32],
      [
        op.sender,
        op.nonce,
        keccak256(initCode),
        keccak256(op.callData),
        accountGasLimits,
        op.preVerificationGas,
        gasFees,
        keccak256(paymasterAndData),
      ],
    ),
  );
  return keccak256(encodeAbiParameters([b32, addr, u256], [inner, entryPoint, chainId]));
}

const MARKER_7702 = "0x7702000000000000000000000000000000000000";

/** The bytes v0.8 hashes for initCode (Eip7702Support): delegate ‖ initCode[20:] for a 7702 op. */
function refInitCodePreimageV08(op: UserOperationV07, delegate: Address | undefined): Hex {
  if (op.factory?.toLowerCase() !== MARKER_7702) return op.factory ? concat([op.factory, op.factoryData ?? "0x"]) : "0x";
  return concat([delegate!, op.factoryData ?? "0x"]);
}

/** The paymaster's v0.8 initCode word: the marker's, else every version's (an empty initCode binds a delegated sender). */
function refInitCodeHashV08(op: UserOperationV07, delegate: Address | undefined): Hex {
  if (op.factory?.toLowerCase() === MARKER_7702) return keccak256(refInitCodePreimageV08(op, delegate));
  return refPaymasterInitCodeHash(refInitCodePreimageV08(op, delegate), delegate);
}

export function refFieldsHashV08(op: UserOperationV07, delegate: Address | undefined): Hex {
  return refFieldsHashWithInitCodeHash(op, refInitCodeHashV08(op, delegate));
}

/** EntryPoint v0.8 getUserOpHash through viem's generic EIP-712 hashTypedData (a 7702 initCode as its hashed preimage). */
export function refUserOpHashV08(op: UserOperationV07, entryPoint: Address, chainId: bigint, delegate?: Address): Hex {
  const { accountGasLimits, gasFees, paymasterAndData } = refPackedFields(op);
  return hashTypedData({
    domain: { name: "ERC4337", version: "1", chainId, verifyingContract: entryPoint },
    types: {
      PackedUserOperation: [
        { name: "sender", type: "address" },
        { name: "nonce", type: "uint256" },
        { name: "initCode", type: "bytes" },
        { name: "callData", type: "bytes" },
        { name: "accountGasLimits", type: "bytes32" },
        { name: "preVerificationGas", type: "uint256" },
        { name: "gasFees", type: "bytes32" },
        { name: "paymasterAndData", type: "bytes" },
      ],
    },
    primaryType: "PackedUserOperation",
    message: {
      sender: op.sender,
      nonce: op.nonce,
      initCode: refInitCodePreimageV08(op, delegate),
      callData: op.callData,
      accountGasLimits,
      preVerificationGas: op.preVerificationGas,
      gasFees,
      paymasterAndData,
    },
  });
}
