/**
 * Chain reads the steps share: an ERC-20 read, the EntryPoint's refusal as our error, and the run of an op's
 * calls alone (to explain a revert with its revert data).
 */
import { encodeFunctionData, decodeFunctionResult, erc20Abi, type Abi } from "viem";
import type { Address, Hex } from "@paymaster/shared";
import type { NetworkChain } from "../context.ts";
import type { SponsorRequest } from "../wire/schemas.ts";
import { RpcError } from "../errors.ts";
import { simulateCalls, type SimulationFailure, type SimulationOutcome } from "../chain/entryPoint.ts";
import { chainWait, type Timing } from "../timing.ts";
import { buildOpWithoutCalls, type GasValues } from "./op.ts";
import { tracedChain } from "../network/tracedChain.ts";
import { NO_SPAN, type TraceSpan } from "../telemetry/trace.ts";
import type { Target } from "./steps/target.ts";

export function simulationError(failure: SimulationFailure): RpcError {
  const details = { aaCode: failure.aaCode, entryPointReason: failure.reason, ...(failure.inner ? { revertData: failure.inner.slice(0, 514) } : {}) };
  if (failure.aaCode === "AA31") return new RpcError("PAYMASTER_DEPOSIT_LOW", undefined, details);
  return new RpcError("SIMULATION_FAILED", `The EntryPoint would reject this user operation: ${failure.reason}`, details);
}

/** ERC-20 mode: the sender's balance of the token and its allowance to the paymaster. */
export interface SenderHoldings {
  balance: bigint;
  allowance: bigint;
}

/** The sender's holdings of the target's token (ERC-20 mode), read beside each other at the latest block. */
export async function readHoldings(target: Target, span: TraceSpan = NO_SPAN): Promise<SenderHoldings> {
  const { mode, chain, call, request, paymaster } = target;
  if (mode.mode !== "erc20") throw new TypeError("readHoldings outside ERC-20 mode");
  const reads = tracedChain(chain, span);
  const sender = request.userOp.sender;
  const [balance, allowance] = await chainWait(call.timing, () =>
    Promise.all([tokenRead(reads, mode.token.address, "balanceOf", [sender]), tokenRead(reads, mode.token.address, "allowance", [sender, paymaster])]),
  );
  return { balance, allowance };
}

export async function tokenRead(chain: NetworkChain, token: Address, functionName: "balanceOf" | "allowance", args: Address[]): Promise<bigint> {
  const data = encodeFunctionData({ abi: erc20Abi as Abi, functionName, args });
  const output = await chain.rpc.request<Hex>("eth_call", [{ to: token, data }, "latest"]);
  return decodeFunctionResult({ abi: erc20Abi as Abi, functionName, data: output }) as bigint;
}

/**
 * Refuses an op whose calls revert (EXECUTION_REVERTED with their revert data): the calls run alone, from the
 * EntryPoint right after validation (the op with empty callData, the calls as simulateHandleOp's target call).
 * Returns when the calls succeed.
 */
export async function refuseRevertingCalls(timing: Timing | undefined, chain: NetworkChain, entryPoint: Address, request: SponsorRequest, gas: GasValues, paymaster: Address, paymasterData: Hex): Promise<void> {
  const withoutCalls = buildOpWithoutCalls(request, gas, paymaster, paymasterData);
  const calls = await chainWait(timing, () => simulateCalls(chain.rpc, chain.simulator, entryPoint, withoutCalls, request.userOp.sender, request.userOp.callData));
  const refusal = callsRefusal(calls);
  if (refusal) throw refusal;
}

/** What an op's calls run alone (simulateCalls) answered, as our refusal: undefined when they succeeded. */
export function callsRefusal(calls: SimulationOutcome): RpcError | undefined {
  if (!calls.ok) return simulationError(calls.failure);
  if (!calls.result.targetSuccess) return new RpcError("EXECUTION_REVERTED", undefined, { revertData: calls.result.targetResult.slice(0, 514) });
  return undefined;
}
