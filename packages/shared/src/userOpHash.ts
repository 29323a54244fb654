// The EntryPoint's userOpHash (what the account signs and what bundlers and receipts use as the op's
// id): keccak256(abi.encode(keccak256(encode(op)), entryPoint, chainId)). The paymaster never signs
// it: it covers paymasterAndData, which holds the paymaster's own signature.
import { addressWord, bytes32Word, freshKeccakWord, keccakWord, keccakWords, uintWord } from "./abiWords.ts";
import { userOpWordsV06 } from "./hash.ts";
import { packUserOpV07 } from "./userOperation.ts";
import type { Address, Hex, PackedUserOperation, UserOperationV06, UserOperationV07, VersionedUserOperation } from "./types.ts";

/**
 * EntryPoint v0.6 getUserOpHash: the inner tuple is UserOperationLib.pack — sender, nonce,
 * keccak(initCode), keccak(callData), the five gas values, keccak(paymasterAndData).
 */
export function getUserOpHashV06(op: UserOperationV06, entryPoint: Address, chainId: bigint | number): Hex {
  const inner = keccakWords([...userOpWordsV06(op), freshKeccakWord(op.paymasterAndData, "paymasterAndData")]);
  return outerHash(inner, entryPoint, chainId);
}

/**
 * EntryPoint v0.7 getUserOpHash of a PackedUserOperation: the inner tuple is UserOperationLib.encode —
 * sender, nonce, keccak(initCode), keccak(callData), accountGasLimits, preVerificationGas, gasFees,
 * keccak(paymasterAndData).
 */
export function getPackedUserOpHashV07(packed: PackedUserOperation, entryPoint: Address, chainId: bigint | number): Hex {
  const inner = keccakWords([
    addressWord(packed.sender, "sender"),
    uintWord(packed.nonce, 256, "nonce"),
    keccakWord(packed.initCode, "initCode"),
    keccakWord(packed.callData, "callData"),
    bytes32Word(packed.accountGasLimits, "accountGasLimits"),
    uintWord(packed.preVerificationGas, 256, "preVerificationGas"),
    bytes32Word(packed.gasFees, "gasFees"),
    freshKeccakWord(packed.paymasterAndData, "paymasterAndData"),
  ]);
  return outerHash(inner, entryPoint, chainId);
}

/** EntryPoint v0.7 getUserOpHash of an unpacked (ERC-7769) op: packs it first. */
export function getUserOpHashV07(op: UserOperationV07, entryPoint: Address, chainId: bigint | number): Hex {
  return getPackedUserOpHashV07(packUserOpV07(op), entryPoint, chainId);
}

/** getUserOpHash of either version. */
export function getUserOpHash(params: VersionedUserOperation & { entryPoint: Address; chainId: bigint | number }): Hex {
  return params.version === "v0.6"
    ? getUserOpHashV06(params.userOp, params.entryPoint, params.chainId)
    : getUserOpHashV07(params.userOp, params.entryPoint, params.chainId);
}

/** keccak256(abi.encode(innerHash, address(entryPoint), block.chainid)) — same order in v0.6 and v0.7. */
function outerHash(inner: Hex, entryPoint: Address, chainId: bigint | number): Hex {
  return keccakWords([inner.slice(2), addressWord(entryPoint, "entryPoint"), uintWord(chainId, 256, "chainId")]);
}
