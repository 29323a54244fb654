/**
 * EntryPoint simulation through eth_call: v0.6's own simulateHandleOp (always reverts with ExecutionResult or
 * FailedOp), v0.7's EntryPointSimulations code placed at the EntryPoint's address by a state override (it
 * returns ExecutionResult or reverts with FailedOp / FailedOpWithRevert). Both give the same result shape.
 */
import { decodeErrorResult, decodeFunctionResult, type Abi } from "viem";
import { EntryPointSimulationsV07Artifact, EntryPointV06Artifact } from "@paymaster/contracts/artifacts";
import type { Address, Hex, UserOperationV06, UserOperationV07 } from "@paymaster/shared";
import { NodeError, type ChainRpc } from "./rpc.ts";
import { RpcError } from "../rpc/errors.ts";
import { encodeSimulateHandleOp } from "./userOpAbi.ts";

export interface ExecutionResult {
  preOpGas: bigint;
  paid: bigint;
  targetSuccess: boolean;
  targetResult: Hex;
}

/** A simulation the EntryPoint refused: its AAxx reason and, where there is one, the inner revert data. */
export interface SimulationFailure {
  /** e.g. "AA33 reverted", "AA31 paymaster deposit too low". */
  reason: string;
  /** The AAxx code alone, e.g. "AA33". */
  aaCode: string | null;
  inner: Hex | null;
}

export type SimulationOutcome = { ok: true; result: ExecutionResult } | { ok: false; failure: SimulationFailure };

export type SimulatedOp = { version: "v0.6"; userOp: UserOperationV06 } | { version: "v0.7"; userOp: UserOperationV07 };

const entryPointV06Abi = EntryPointV06Artifact.abi as Abi;
const simulationsV07Abi = EntryPointSimulationsV07Artifact.abi as Abi;
/**
 * The simulation code (~21 kB) as pre-serialized JSON: every v0.7 simulation sends it as a state override, and
 * JSON.stringify would otherwise scan the 42k-character string on every call.
 */
const simulationsV07CodeJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(
  JSON.stringify(EntryPointSimulationsV07Artifact.deployedBytecode),
);

function failureOf(reason: string, inner: Hex | null): SimulationFailure {
  const match = /^(AA\d\d)/.exec(reason);
  return { reason, aaCode: match ? match[1]! : null, inner };
}

function decodeFailure(abi: Abi, data: Hex): SimulationFailure | undefined {
  try {
    const decoded = decodeErrorResult({ abi, data });
    const args = (decoded.args ?? []) as readonly unknown[];
    if (decoded.errorName === "FailedOp") return failureOf(String(args[1]), null);
    if (decoded.errorName === "FailedOpWithRevert") return failureOf(String(args[1]), args[2] as Hex);
  } catch {
    // not an EntryPoint error: handled by the caller
  }
  return undefined;
}

/**
 * simulateHandleOp(op, target, targetCallData) on the op's EntryPoint at the latest block. A target of the zero
 * address skips the target call.
 */
export async function simulateHandleOp(
  rpc: ChainRpc,
  entryPoint: Address,
  op: SimulatedOp,
  target: Address = "0x0000000000000000000000000000000000000000",
  targetCallData: Hex = "0x",
): Promise<SimulationOutcome> {
  if (op.version === "v0.6") {
    const data = encodeSimulateHandleOp(op, target, targetCallData);
    let revert: Hex | undefined;
    try {
      await rpc.request("eth_call", [{ to: entryPoint, data }, "latest"]);
    } catch (error) {
      if (!(error instanceof NodeError)) throw error;
      revert = error.revertData;
    }
    if (!revert) throw new RpcError("CHAIN_UNAVAILABLE", "simulateHandleOp gave no result");
    const failure = decodeFailure(entryPointV06Abi, revert);
    if (failure) return { ok: false, failure };
    const decoded = decodeErrorResult({ abi: entryPointV06Abi, data: revert });
    if (decoded.errorName !== "ExecutionResult") return { ok: false, failure: failureOf("unexpected revert", revert) };
    const [preOpGas, paid, , , targetSuccess, targetResult] = decoded.args as [bigint, bigint, number, number, boolean, Hex];
    return { ok: true, result: { preOpGas, paid, targetSuccess, targetResult } };
  }

  const data = encodeSimulateHandleOp(op, target, targetCallData);
  try {
    const output = await rpc.request<Hex>("eth_call", [{ to: entryPoint, data }, "latest", { [entryPoint]: { code: simulationsV07CodeJson } }]);
    const result = decodeFunctionResult({ abi: simulationsV07Abi, functionName: "simulateHandleOp", data: output }) as {
      preOpGas: bigint;
      paid: bigint;
      targetSuccess: boolean;
      targetResult: Hex;
    };
    return { ok: true, result: { preOpGas: result.preOpGas, paid: result.paid, targetSuccess: result.targetSuccess, targetResult: result.targetResult } };
  } catch (error) {
    if (!(error instanceof NodeError)) throw error;
    const revert = error.revertData;
    const failure = revert ? decodeFailure(simulationsV07Abi, revert) : undefined;
    return { ok: false, failure: failure ?? failureOf(`simulation reverted${revert ? "" : ": " + error.message.slice(0, 200)}`, revert ?? null) };
  }
}
