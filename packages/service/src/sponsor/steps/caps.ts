/**
 * Step: the network's caps on the gas values. Runs on the client's own values first (an over-cap limit must
 * never reach a simulation), and again once they are estimated. Decides nothing; it refuses:
 * GAS_LIMIT_TOO_HIGH (a limit above the network's cap), FEE_TOO_HIGH (maxFeePerGas above the market's x the
 * configured multiplier), INVALID_PARAMS (maxPriorityFeePerGas above maxFeePerGas).
 */
import { RpcError } from "../../errors.ts";
import type { GasValues } from "../op.ts";
import type { Target } from "./target.ts";

export interface CapsInput {
  target: Target;
  gas: GasValues;
}

export function checkCaps({ target, gas }: CapsInput): void {
  const caps = target.call.network.config.caps;
  const limits: [keyof GasValues, bigint][] = [
    ["verificationGasLimit", caps.maxVerificationGasLimit],
    ["callGasLimit", caps.maxCallGasLimit],
    ["preVerificationGas", caps.maxPreVerificationGas],
    ["paymasterVerificationGasLimit", caps.maxPaymasterVerificationGasLimit],
    ["paymasterPostOpGasLimit", caps.maxPaymasterPostOpGasLimit],
  ];
  for (const [field, limit] of limits) {
    if (gas[field] > limit) {
      throw new RpcError("GAS_LIMIT_TOO_HIGH", `${field} ${gas[field]} is above this network's cap ${limit}`, {
        rule: field,
        limit: limit.toString(),
        value: gas[field].toString(),
      });
    }
  }
  const feeCap = (target.market.maxFeePerGas * BigInt(caps.maxFeeMultiplierBps)) / 10_000n;
  if (gas.maxFeePerGas > feeCap) {
    throw new RpcError("FEE_TOO_HIGH", `maxFeePerGas ${gas.maxFeePerGas} is above ${feeCap} (market x ${caps.maxFeeMultiplierBps / 10_000})`, {
      rule: "maxFeePerGas",
      limit: feeCap.toString(),
      value: gas.maxFeePerGas.toString(),
    });
  }
  if (gas.maxPriorityFeePerGas > gas.maxFeePerGas) {
    throw new RpcError("INVALID_PARAMS", "maxPriorityFeePerGas is above maxFeePerGas", {
      issues: [{ path: [0, "maxPriorityFeePerGas"], message: "must not exceed maxFeePerGas" }],
    });
  }
}
