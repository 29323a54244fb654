/**
 * Decodes a user operation's callData into the calls the account will make, for the targets/selectors rule.
 *
 * Understood account ABIs:
 * - SimpleAccount `execute(address,uint256,bytes)` (v0.6 and v0.7);
 * - SimpleAccount v0.6 `executeBatch(address[],bytes[])` (every value 0);
 * - SimpleAccount v0.7 `executeBatch(address[],uint256[],bytes[])` (an empty value array means every value 0);
 * - ERC-7579 `execute(bytes32 mode, bytes executionCalldata)` with call type single (0x00) or batch (0x01),
 *   exec type default (0x00) or try (0x01), the default mode selector (0x00000000) and zeroed unused bytes;
 * - EntryPoint v0.7's `executeUserOp` prefix (0x8dd7712f): the 4 bytes are stripped and the rest is decoded
 *   as one of the above (once; not under v0.6, where the prefix means nothing to the EntryPoint).
 *
 * Strict by design: the policy must see exactly the calls the chain will execute, so every ABI payload must
 * be the canonical encoding of its arguments (re-encoding the decoded values must give the same bytes): no
 * trailing bytes, no dirty padding, no unusual offsets. Anything else is refused with a reason; this module
 * never throws.
 */
import {
  decodeAbiParameters,
  encodeAbiParameters,
  getAddress,
  parseAbiParameters,
  toFunctionSelector,
  type DecodeAbiParametersReturnType,
} from "viem/utils";
import type { AbiParameter } from "viem";
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";

/** One call the account makes. */
export interface AccountCall {
  /** Checksummed. */
  target: Address;
  value: bigint;
  /** Lowercase hex; "0x" for a plain transfer. */
  data: Hex;
}

export type DecodedCalls = { ok: true; calls: AccountCall[] } | { ok: false; reason: string };

export interface DecodeOptions {
  /**
   * The EntryPoint version the operation targets. Under "v0.6" the executeUserOp prefix is not special (the
   * v0.6 EntryPoint calls the account with the callData as it is), so it is an unknown ABI. Default: the
   * prefix is stripped.
   */
  entryPointVersion?: EntryPointVersion;
}

/** The function signatures understood, keyed by name (for messages and tests). */
export const ACCOUNT_FUNCTIONS = Object.freeze({
  execute: "execute(address,uint256,bytes)",
  executeBatchV06: "executeBatch(address[],bytes[])",
  executeBatchV07: "executeBatch(address[],uint256[],bytes[])",
  execute7579: "execute(bytes32,bytes)",
  executeUserOp: "executeUserOp((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes),bytes32)",
});

/** Their 4-byte selectors (lowercase hex). */
export const ACCOUNT_SELECTORS = Object.freeze({
  execute: toFunctionSelector(`function ${ACCOUNT_FUNCTIONS.execute}`),
  executeBatchV06: toFunctionSelector(`function ${ACCOUNT_FUNCTIONS.executeBatchV06}`),
  executeBatchV07: toFunctionSelector(`function ${ACCOUNT_FUNCTIONS.executeBatchV07}`),
  execute7579: toFunctionSelector(`function ${ACCOUNT_FUNCTIONS.execute7579}`),
  executeUserOp: toFunctionSelector(`function ${ACCOUNT_FUNCTIONS.executeUserOp}`),
});

/** ERC-7579 call types (byte 0 of the mode). */
export const ERC7579_CALL_TYPE = Object.freeze({ single: 0x00, batch: 0x01, static: 0xfe, delegatecall: 0xff });
/** ERC-7579 exec types (byte 1 of the mode). */
export const ERC7579_EXEC_TYPE = Object.freeze({ default: 0x00, try: 0x01 });

const EXECUTE_PARAMS = parseAbiParameters("address target, uint256 value, bytes data");
const BATCH_V06_PARAMS = parseAbiParameters("address[] targets, bytes[] datas");
const BATCH_V07_PARAMS = parseAbiParameters("address[] targets, uint256[] values, bytes[] datas");
const EXECUTE_7579_PARAMS = parseAbiParameters("bytes32 mode, bytes executionCalldata");
const BATCH_7579_PARAMS = parseAbiParameters("(address target, uint256 value, bytes callData)[] executions");

const HEX_BYTES_RE = /^0x(?:[0-9a-fA-F]{2})*$/;

type Failure = { ok: false; reason: string };
const fail = (reason: string): Failure => ({ ok: false, reason });

/** The calls `callData` makes, or why they cannot be known. Never throws. */
export function decodeAccountCalls(callData: Hex, options: DecodeOptions = {}): DecodedCalls {
  if (typeof callData !== "string" || !HEX_BYTES_RE.test(callData)) return fail("callData is not 0x-prefixed, even-length hex");
  try {
    return decodeAccountCall(callData.toLowerCase() as Hex, options, false);
  } catch {
    // Defensive only: every path below catches its own decoding errors.
    return fail("callData could not be decoded");
  }
}

function decodeAccountCall(data: Hex, options: DecodeOptions, stripped: boolean): DecodedCalls {
  if (data === "0x") return { ok: true, calls: [] };
  if (data.length < 10) return fail(`callData is ${(data.length - 2) / 2} byte(s), shorter than a 4-byte selector`);
  const selector = data.slice(0, 10) as Hex;
  const args = `0x${data.slice(10)}` as Hex;
  switch (selector) {
    case ACCOUNT_SELECTORS.execute: {
      const decoded = decodeCanonical(EXECUTE_PARAMS, args, ACCOUNT_FUNCTIONS.execute);
      if (!decoded.ok) return decoded;
      const [target, value, callData] = decoded.values;
      return { ok: true, calls: [{ target, value, data: callData }] };
    }
    case ACCOUNT_SELECTORS.executeBatchV06: {
      const decoded = decodeCanonical(BATCH_V06_PARAMS, args, ACCOUNT_FUNCTIONS.executeBatchV06);
      if (!decoded.ok) return decoded;
      const [targets, datas] = decoded.values;
      if (targets.length !== datas.length) {
        return fail(`${ACCOUNT_FUNCTIONS.executeBatchV06}: ${targets.length} targets but ${datas.length} calldatas (the account would revert)`);
      }
      return { ok: true, calls: targets.map((target, i) => ({ target, value: 0n, data: datas[i]! })) };
    }
    case ACCOUNT_SELECTORS.executeBatchV07: {
      const decoded = decodeCanonical(BATCH_V07_PARAMS, args, ACCOUNT_FUNCTIONS.executeBatchV07);
      if (!decoded.ok) return decoded;
      const [targets, values, datas] = decoded.values;
      if (targets.length !== datas.length || (values.length !== 0 && values.length !== datas.length)) {
        return fail(
          `${ACCOUNT_FUNCTIONS.executeBatchV07}: ${targets.length} targets, ${values.length} values and ${datas.length} calldatas ` +
            "(the account would revert)",
        );
      }
      return { ok: true, calls: targets.map((target, i) => ({ target, value: values.length === 0 ? 0n : values[i]!, data: datas[i]! })) };
    }
    case ACCOUNT_SELECTORS.execute7579:
      return decodeErc7579(args);
    case ACCOUNT_SELECTORS.executeUserOp:
      if (options.entryPointVersion === "v0.6") {
        return fail(`unknown account ABI: selector ${selector} (the executeUserOp prefix is an EntryPoint v0.7 feature)`);
      }
      if (stripped) return fail("the executeUserOp prefix (0x8dd7712f) appears twice");
      return decodeAccountCall(args, options, true);
    default:
      return fail(`unknown account ABI: selector ${selector}`);
  }
}

/** ERC-7579 execute(bytes32 mode, bytes executionCalldata). */
function decodeErc7579(args: Hex): DecodedCalls {
  const decoded = decodeCanonical(EXECUTE_7579_PARAMS, args, ACCOUNT_FUNCTIONS.execute7579);
  if (!decoded.ok) return decoded;
  const [mode, execution] = decoded.values;
  // mode = callType (1) | execType (1) | unused (4) | modeSelector (4) | modePayload (22)
  const callType = parseInt(mode.slice(2, 4), 16);
  const execType = parseInt(mode.slice(4, 6), 16);
  const unused = mode.slice(6, 14);
  const modeSelector = mode.slice(14, 22);
  const byte = (b: number) => `0x${b.toString(16).padStart(2, "0")}`;
  if (callType === ERC7579_CALL_TYPE.delegatecall) {
    return fail("ERC-7579 delegatecall (call type 0xff) is not supported: the effects of a delegatecall cannot be checked");
  }
  if (callType === ERC7579_CALL_TYPE.static) return fail("ERC-7579 staticcall (call type 0xfe) is not supported");
  if (callType !== ERC7579_CALL_TYPE.single && callType !== ERC7579_CALL_TYPE.batch) {
    return fail(`unknown ERC-7579 call type ${byte(callType)}`);
  }
  if (execType !== ERC7579_EXEC_TYPE.default && execType !== ERC7579_EXEC_TYPE.try) {
    return fail(`unknown ERC-7579 exec type ${byte(execType)}`);
  }
  if (unused !== "00000000") return fail(`ERC-7579 mode has non-zero reserved bytes 0x${unused}`);
  if (modeSelector !== "00000000") return fail(`unsupported ERC-7579 mode selector 0x${modeSelector}`);

  if (callType === ERC7579_CALL_TYPE.single) {
    // target (20) | value (32) | callData
    if (execution.length < 2 + 2 * 52) {
      return fail(`ERC-7579 single execution is ${(execution.length - 2) / 2} byte(s), shorter than target and value (52 bytes)`);
    }
    const target = getAddress(`0x${execution.slice(2, 42)}`);
    const value = BigInt(`0x${execution.slice(42, 106)}`);
    return { ok: true, calls: [{ target, value, data: `0x${execution.slice(106)}` }] };
  }
  const batch = decodeCanonical(BATCH_7579_PARAMS, execution, "ERC-7579 batch (abi.encode((address,uint256,bytes)[]))");
  if (!batch.ok) return batch;
  const [executions] = batch.values;
  return { ok: true, calls: executions.map((e) => ({ target: e.target, value: e.value, data: e.callData })) };
}

/**
 * decodeAbiParameters, refused unless `data` is exactly the canonical encoding of what it decodes to (so no
 * trailing bytes, dirty padding or non-standard offsets can make this decoder and the account's disagree).
 */
function decodeCanonical<const P extends readonly AbiParameter[]>(
  params: P,
  data: Hex,
  what: string,
): { ok: true; values: DecodeAbiParametersReturnType<P> } | Failure {
  let values: DecodeAbiParametersReturnType<P>;
  try {
    values = decodeAbiParameters(params, data);
  } catch {
    return fail(`malformed ABI encoding of ${what} arguments`);
  }
  let reencoded: Hex;
  try {
    reencoded = encodeAbiParameters(params, values as never);
  } catch {
    return fail(`malformed ABI encoding of ${what} arguments`);
  }
  if (reencoded.toLowerCase() !== data) {
    const extra = (data.length - reencoded.length) / 2;
    return fail(
      extra > 0 && data.startsWith(reencoded.toLowerCase())
        ? `${what} arguments are followed by ${extra} trailing byte(s)`
        : `non-canonical ABI encoding of ${what} arguments (dirty padding or unusual offsets)`,
    );
  }
  return { ok: true, values };
}
