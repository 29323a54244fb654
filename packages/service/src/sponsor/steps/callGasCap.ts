/**
 * Step (EntryPoint v0.7, ERC-20 mode, a callGasLimit the client gave): bound the penalty v0.7 takes on unused
 * execution gas. v0.7 charges 10% of the unused part of callGasLimit + postOp limit after postOp has run, so the
 * paymaster pays it and the token charge (computed in postOp) never includes it: a sender that is also its own
 * bundler would profit from a large callGasLimit on every op (THREAT_MODEL.md, N-8). Decides nothing; it
 * measures the call's gas with the estimate step's one simulation and refuses a callGasLimit above that
 * estimate x CALL_GAS_MARGIN_BPS: GAS_LIMIT_TOO_HIGH (rule callGasLimit, the limit that is accepted). v0.6 has no
 * penalty and v0.8 charges it inside the op's gas cost, which postOp does see; Sponsor and User Sponsor mode pay
 * the penalty from what they were budgeted (the maximum cost counts the whole limit).
 */
import type { Hex } from "@paymaster/shared";
import { RpcError } from "../../rpc/errors.ts";
import type { GasValues } from "../op.ts";
import { estimateGas } from "./estimate.ts";
import type { Target } from "./target.ts";

/** callGasLimit may be at most the estimate (itself execution x 1.2 + 10k) x 1.25. */
export const CALL_GAS_MARGIN_BPS = 12_500n;

export interface CallGasCapInput {
  target: Target;
  /** The client's own gas values (callGasLimit 0: the estimate step chose it, nothing to bound). */
  given: GasValues;
  /** The final gas values. */
  gas: GasValues;
  /** Stub paymaster data of the final length. */
  paymasterData: Hex;
}

/** Whether the step applies: the only EntryPoint whose unused-gas penalty the token charge cannot see. */
export function penaltyUncharged(target: Target): boolean {
  return target.request.version === "v0.7" && target.mode.mode === "erc20";
}

export async function capCallGas({ target, given, gas, paymasterData }: CallGasCapInput): Promise<void> {
  if (!penaltyUncharged(target) || given.callGasLimit === 0n) return;
  const measured = await estimateGas({ target, gas: { ...gas, callGasLimit: 0n }, paymasterData });
  const limit = (measured.callGasLimit * CALL_GAS_MARGIN_BPS) / 10_000n;
  if (gas.callGasLimit > limit) {
    throw new RpcError(
      "GAS_LIMIT_TOO_HIGH",
      `callGasLimit ${gas.callGasLimit} is above ${limit}, this op's estimate x ${Number(CALL_GAS_MARGIN_BPS) / 10_000}: EntryPoint v0.7 takes 10% of the unused call gas from the paymaster, which the token charge cannot include (leave callGasLimit out to have it estimated)`,
      { rule: "callGasLimit", limit: limit.toString(), value: gas.callGasLimit.toString() },
    );
  }
}
