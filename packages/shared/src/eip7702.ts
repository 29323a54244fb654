// EIP-7702 senders under EntryPoint v0.8 (core/Eip7702Support.sol): an initCode that starts with the
// 0x7702 marker says "the sender is an EOA delegated by EIP-7702". The EntryPoint then hashes the
// delegate (read from the sender's code 0xef0100 ‖ delegate) instead of the marker, so one signature
// can never be replayed for a different delegate. The paymaster hash binds the delegate the same way, and
// also (every version) for an already-delegated sender whose op carries no initCode at all (re-audit N-5).
import { assertAddress, assertHexBytes, byteLength, encodingError, sliceBytes } from "./bytes.ts";
import { keccak256 } from "./keccak.ts";
import type { Address, Hex, UserOperationV08 } from "./types.ts";

/** The initCode marker, padded to 20 bytes: what `factory` is for a 7702 sender. */
export const EIP7702_MARKER: Address = "0x7702000000000000000000000000000000000000";
/** The code prefix of a delegated EOA: 0xef0100 ‖ delegate (23 bytes). */
export const EIP7702_CODE_PREFIX: Hex = "0xef0100";

const MARKER_DIGITS = EIP7702_MARKER.slice(2);

/**
 * Whether an initCode is the 7702 marker, exactly as the EntryPoint tests it: at least 2 bytes whose first
 * 20 bytes, zero-padded, equal 0x7702 followed by zeros (so the short form "0x7702" counts too).
 */
export function isEip7702InitCode(initCode: Hex): boolean {
  assertHexBytes(initCode, "initCode");
  if (byteLength(initCode) < 2) return false;
  return initCode.slice(2, 42).toLowerCase().padEnd(40, "0") === MARKER_DIGITS;
}

/** Whether a v0.8 op's factory is the 7702 marker (full or short form). */
export function isEip7702UserOp(op: Pick<UserOperationV08, "factory">): boolean {
  return op.factory !== undefined && isEip7702InitCode(op.factory);
}

/** The code an EOA has once delegated to `delegate` (what a simulation puts in as a state override). */
export function eip7702DelegationCode(delegate: Address): Hex {
  assertAddress(delegate, "delegate");
  return `0xef0100${delegate.slice(2).toLowerCase()}`;
}

/** The delegate of a delegated EOA's code, or undefined when the code is not a 7702 delegation. */
export function eip7702DelegateOfCode(code: Hex): Address | undefined {
  assertHexBytes(code, "code");
  if (byteLength(code) !== 23 || !code.toLowerCase().startsWith(EIP7702_CODE_PREFIX)) return undefined;
  return `0x${sliceBytes(code, 3).slice(2)}`;
}

/**
 * The paymaster hash's initCode word outside the 0x7702 marker, every EntryPoint version (the contracts'
 * core/InitCodeHash.sol): keccak(initCode), except for an op that deploys nothing (empty initCode) whose
 * sender is delegated by EIP-7702 — keccak(senderDelegate), the bare marker's hash. `senderDelegate` is the
 * delegate the sender's code (0xef0100 ‖ delegate) points to when the op is validated; undefined when it is
 * not delegated. Ignored when the op has initCode.
 */
export function paymasterInitCodeHash(initCode: Hex, senderDelegate: Address | undefined): Hex {
  assertHexBytes(initCode, "initCode");
  if (senderDelegate === undefined || byteLength(initCode) !== 0) return keccak256(initCode);
  assertAddress(senderDelegate, "sender's eip7702 delegate");
  return keccak256(senderDelegate);
}

/**
 * The initCode hash the v0.8 EntryPoint uses (Eip7702Support._getEip7702InitCodeHashOverride): for a 7702
 * initCode keccak(delegate) when it is the bare marker, else keccak(delegate ‖ initCode[20:]); otherwise
 * keccak(initCode). A 7702 initCode without a delegate is refused: its hash cannot be known.
 */
export function initCodeHashV08(initCode: Hex, delegate: Address | undefined): Hex {
  if (!isEip7702InitCode(initCode)) return keccak256(initCode);
  if (delegate === undefined) {
    throw encodingError("initCode is the EIP-7702 marker but no delegate is known (eip7702Auth.address or the sender's code)");
  }
  assertAddress(delegate, "eip7702 delegate");
  const rest = byteLength(initCode) <= 20 ? "" : initCode.slice(42);
  return keccak256(`0x${delegate.slice(2)}${rest}`);
}
