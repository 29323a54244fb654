/**
 * ABI encoding of user operations, written out for the sponsor path: abi.encode of the op tuple (what
 * preVerificationGas prices) and simulateHandleOp's calldata. The layout of a tuple of static words and
 * dynamic byte strings is fixed (head words, dynamic values as offsets into the tail; each byte string is a
 * length word and its data right-padded to whole words), and viem's generic encoder walks the ABI types on
 * every call, several times per sponsorship. test/userOpAbi.test.ts checks the output equals viem's.
 */
import { toFunctionSelector, type Abi, type AbiFunction } from "viem";
import { EntryPointSimulationsV07Artifact, EntryPointSimulatorV08Artifact, EntryPointV06Artifact, EntryPointV07Artifact } from "@paymaster/contracts/artifacts";
import { packUserOpV07, type Address, type Hex, type PackedUserOperation, type UserOperationV06, type VersionedUserOperation } from "@paymaster/shared";

const UINT256_MAX = (1n << 256n) - 1n;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const HEX_BYTES_RE = /^0x(?:[0-9a-fA-F]{2})*$/;
const BYTES32_RE = /^0x[0-9a-fA-F]{64}$/;

/** One part of an abi.encode: a static word (64 hex digits), or the encoding of a dynamic value. */
export type Part = string | { dynamic: string };

export function uintWord(value: bigint, field: string): string {
  if (value < 0n || value > UINT256_MAX) throw new RangeError(`${field}: ${value} is not a uint256`);
  return value.toString(16).padStart(64, "0");
}

export function addressWord(value: Address, field: string): string {
  if (!ADDRESS_RE.test(value)) throw new TypeError(`${field}: not an address`);
  return `000000000000000000000000${value.slice(2).toLowerCase()}`;
}

function bytes32Word(value: Hex, field: string): string {
  if (!BYTES32_RE.test(value)) throw new TypeError(`${field}: not 32 bytes`);
  return value.slice(2);
}

/** A `bytes` value (a dynamic part): its length word, then its data right-padded with zeros to a whole number of words. */
export function bytesPart(value: Hex, field: string): { dynamic: string } {
  if (!HEX_BYTES_RE.test(value)) throw new TypeError(`${field}: not hex bytes`);
  const digits = value.length - 2;
  const padding = (64 - (digits % 64)) % 64;
  return { dynamic: uintWord(BigInt(digits / 2), field) + value.slice(2) + "0".repeat(padding) };
}

/** abi.encode of the parts (no 0x): static words in the head, dynamic values as byte offsets to the tail. */
export function encodeParts(parts: readonly Part[]): string {
  let head = "";
  let tail = "";
  const headBytes = parts.length * 32;
  for (const part of parts) {
    if (typeof part === "string") {
      head += part;
    } else {
      head += uintWord(BigInt(headBytes + tail.length / 2), "offset");
      tail += part.dynamic;
    }
  }
  return head + tail;
}

/** The v0.6 UserOperation tuple (no 0x). */
function userOpV06Tuple(op: UserOperationV06): string {
  return encodeParts([
    addressWord(op.sender, "sender"),
    uintWord(op.nonce, "nonce"),
    bytesPart(op.initCode, "initCode"),
    bytesPart(op.callData, "callData"),
    uintWord(op.callGasLimit, "callGasLimit"),
    uintWord(op.verificationGasLimit, "verificationGasLimit"),
    uintWord(op.preVerificationGas, "preVerificationGas"),
    uintWord(op.maxFeePerGas, "maxFeePerGas"),
    uintWord(op.maxPriorityFeePerGas, "maxPriorityFeePerGas"),
    bytesPart(op.paymasterAndData, "paymasterAndData"),
    bytesPart(op.signature, "signature"),
  ]);
}

/**
 * An op to encode. A v0.7 or v0.8 op (both use the PackedUserOperation) may carry its PackedUserOperation, made once by whoever also hashes it (the sponsor
 * pipeline's op as it will land: simulated, hashed and answered from one packing); it must be the packing of
 * `userOp`.
 */
export type EncodableOp = VersionedUserOperation & { packed?: PackedUserOperation };

/** The v0.7 PackedUserOperation tuple (no 0x). */
function userOpV07Tuple(packed: PackedUserOperation): string {
  return encodeParts([
    addressWord(packed.sender, "sender"),
    uintWord(packed.nonce, "nonce"),
    bytesPart(packed.initCode, "initCode"),
    bytesPart(packed.callData, "callData"),
    bytes32Word(packed.accountGasLimits, "accountGasLimits"),
    uintWord(packed.preVerificationGas, "preVerificationGas"),
    bytes32Word(packed.gasFees, "gasFees"),
    bytesPart(packed.paymasterAndData, "paymasterAndData"),
    bytesPart(packed.signature, "signature"),
  ]);
}

/** The op's tuple (no 0x): v0.6 UserOperation, v0.7/v0.8 PackedUserOperation (packed first unless it carries its packing). */
function tupleOf(op: EncodableOp): string {
  return op.version === "v0.6" ? userOpV06Tuple(op.userOp) : userOpV07Tuple(op.packed ?? packUserOpV07(op.userOp));
}

/** abi.encode(op) as one tuple parameter: v0.6 UserOperation, v0.7 PackedUserOperation (packed first). */
export function encodeUserOpParameter(op: EncodableOp): Hex {
  const tuple = tupleOf(op);
  return `0x${encodeParts([{ dynamic: tuple }])}`;
}

/** The 4-byte selector (no 0x) of function `name` in `abi`. */
export function selectorOf(abi: Abi, name: string): string {
  const item = abi.find((entry): entry is AbiFunction => entry.type === "function" && entry.name === name);
  if (!item) throw new Error(`${name} is not in the ABI`);
  return toFunctionSelector(item).slice(2);
}

const SIMULATE_HANDLE_OP = {
  "v0.6": selectorOf(EntryPointV06Artifact.abi as Abi, "simulateHandleOp"),
  "v0.7": selectorOf(EntryPointSimulationsV07Artifact.abi as Abi, "simulateHandleOp"),
  // v0.8 keeps v0.7's PackedUserOperation, so its simulateHandleOp and handleOps have v0.7's selectors.
  "v0.8": selectorOf(EntryPointSimulatorV08Artifact.abi as Abi, "simulateHandleOp"),
} as const;

const SIMULATE_VALIDATION = {
  "v0.6": selectorOf(EntryPointV06Artifact.abi as Abi, "simulateValidation"),
  "v0.7": selectorOf(EntryPointSimulationsV07Artifact.abi as Abi, "simulateValidation"),
  "v0.8": selectorOf(EntryPointSimulatorV08Artifact.abi as Abi, "simulateValidation"),
} as const;

/** Calldata of simulateValidation(op) on the op's EntryPoint (v0.7 / v0.8: the simulations'). */
export function encodeSimulateValidation(op: EncodableOp): Hex {
  return `0x${SIMULATE_VALIDATION[op.version]}${encodeParts([{ dynamic: tupleOf(op) }])}`;
}

/** Calldata of simulateHandleOp(op, target, targetCallData) on the op's EntryPoint (v0.7: EntryPointSimulations). */
export function encodeSimulateHandleOp(op: EncodableOp, target: Address, targetCallData: Hex): Hex {
  const tuple = tupleOf(op);
  const args = encodeParts([{ dynamic: tuple }, addressWord(target, "target"), bytesPart(targetCallData, "targetCallData")]);
  return `0x${SIMULATE_HANDLE_OP[op.version]}${args}`;
}

const HANDLE_OPS = {
  "v0.6": selectorOf(EntryPointV06Artifact.abi as Abi, "handleOps"),
  "v0.7": selectorOf(EntryPointV07Artifact.abi as Abi, "handleOps"),
  "v0.8": selectorOf(EntryPointV07Artifact.abi as Abi, "handleOps"),
} as const;

/**
 * Calldata of handleOps([op], beneficiary): the one-op bundle a bundler sends, which is what an L2 charges the
 * L1 data fee for. The array is one offset word, a length word of 1, the element's offset (32: right after
 * its own offset word) and the op tuple.
 */
export function encodeHandleOps(op: EncodableOp, beneficiary: Address): Hex {
  const tuple = tupleOf(op);
  const array = uintWord(1n, "length") + uintWord(32n, "offset") + tuple;
  return `0x${HANDLE_OPS[op.version]}${encodeParts([{ dynamic: array }, addressWord(beneficiary, "beneficiary")])}`;
}
