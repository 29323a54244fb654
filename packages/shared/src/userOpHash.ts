// The EntryPoint's userOpHash (what the account signs and what bundlers and receipts use as the op's
// id): v0.6/v0.7 keccak256(abi.encode(keccak256(encode(op)), entryPoint, chainId)); v0.8 the EIP-712
// typed-data hash of the PackedUserOperation. The paymaster never signs it: it covers
// paymasterAndData, which holds the paymaster's own signature.
import { addressWord, bytes32Word, freshKeccakWord, keccakWord, keccakWords, uintWord } from "./abiWords.ts";
import { initCodeHashV08 } from "./eip7702.ts";
import { userOpWordsV06 } from "./hash.ts";
import { keccak256 } from "./keccak.ts";
import { packUserOpV07 } from "./userOperation.ts";
import type { Address, Hex, PackedUserOperation, UserOperationV06, UserOperationV07, UserOperationV08, VersionedUserOperation } from "./types.ts";

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

// EIP-712 pieces of EntryPoint v0.8 (EntryPoint.sol DOMAIN_NAME "ERC4337", DOMAIN_VERSION "1";
// UserOperationLib.PACKED_USEROP_TYPEHASH). Strings hashed once at load.
const ascii = (text: string): Hex => `0x${Buffer.from(text, "utf8").toString("hex")}`;
const EIP712_DOMAIN_TYPEHASH = keccak256(ascii("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")).slice(2);
const DOMAIN_NAME_HASH = keccak256(ascii("ERC4337")).slice(2);
const DOMAIN_VERSION_HASH = keccak256(ascii("1")).slice(2);
/** keccak256 of the PackedUserOperation EIP-712 type string (signature excluded). */
export const PACKED_USEROP_TYPEHASH: Hex = keccak256(
  ascii(
    "PackedUserOperation(address sender,uint256 nonce,bytes initCode,bytes callData,bytes32 accountGasLimits,uint256 preVerificationGas,bytes32 gasFees,bytes paymasterAndData)",
  ),
);

/** EntryPoint v0.8 getDomainSeparatorV4(): the EIP-712 domain ("ERC4337", "1", chainId, the EntryPoint). */
export function entryPointDomainSeparatorV08(entryPoint: Address, chainId: bigint | number): Hex {
  return keccakWords([EIP712_DOMAIN_TYPEHASH, DOMAIN_NAME_HASH, DOMAIN_VERSION_HASH, uintWord(chainId, 256, "chainId"), addressWord(entryPoint, "entryPoint")]);
}

/**
 * EntryPoint v0.8 getUserOpHash of a PackedUserOperation: keccak256(0x1901 ‖ domainSeparator ‖ structHash).
 * For a 7702 initCode the struct's initCode hash is keccak(delegate ‖ initCode[20:]) (eip7702.ts), so the
 * delegate must be given then; the EntryPoint reads it from the sender's code.
 */
export function getPackedUserOpHashV08(
  packed: PackedUserOperation,
  entryPoint: Address,
  chainId: bigint | number,
  delegate?: Address,
): Hex {
  const structHash = keccakWords([
    PACKED_USEROP_TYPEHASH.slice(2),
    addressWord(packed.sender, "sender"),
    uintWord(packed.nonce, 256, "nonce"),
    initCodeHashV08(packed.initCode, delegate).slice(2),
    keccakWord(packed.callData, "callData"),
    bytes32Word(packed.accountGasLimits, "accountGasLimits"),
    uintWord(packed.preVerificationGas, 256, "preVerificationGas"),
    bytes32Word(packed.gasFees, "gasFees"),
    freshKeccakWord(packed.paymasterAndData, "paymasterAndData"),
  ]);
  return keccak256(`0x1901${entryPointDomainSeparatorV08(entryPoint, chainId).slice(2)}${structHash.slice(2)}`);
}

/** EntryPoint v0.8 getUserOpHash of an unpacked op; a 7702 op's delegate defaults to eip7702Auth.address. */
export function getUserOpHashV08(op: UserOperationV08, entryPoint: Address, chainId: bigint | number, delegate?: Address): Hex {
  return getPackedUserOpHashV08(packUserOpV07(op), entryPoint, chainId, delegate ?? op.eip7702Auth?.address);
}

/** getUserOpHash of any version. */
export function getUserOpHash(params: VersionedUserOperation & { entryPoint: Address; chainId: bigint | number }): Hex {
  switch (params.version) {
    case "v0.6":
      return getUserOpHashV06(params.userOp, params.entryPoint, params.chainId);
    case "v0.7":
      return getUserOpHashV07(params.userOp, params.entryPoint, params.chainId);
    case "v0.8":
      return getUserOpHashV08(params.userOp, params.entryPoint, params.chainId);
  }
}

/** keccak256(abi.encode(innerHash, address(entryPoint), block.chainid)) — same order in v0.6 and v0.7. */
function outerHash(inner: Hex, entryPoint: Address, chainId: bigint | number): Hex {
  return keccakWords([inner.slice(2), addressWord(entryPoint, "entryPoint"), uintWord(chainId, 256, "chainId")]);
}
