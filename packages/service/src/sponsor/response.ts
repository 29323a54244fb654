/**
 * The spec's sponsor result (section 2.5) from a pipeline result. Gas and fee values are decimal integers;
 * v0.6 leaves accountGasLimit/gasFees empty and the paymaster gas limits null; v0.7 gives the packed bytes32
 * fields and the paymaster limits, and paymasterAndData is the full packed field.
 */
import { packUint128Pair } from "@paymaster/shared";
import type { PipelineResult } from "./pipeline.ts";
import { RpcError } from "../errors.ts";

/** A JSON number for a gas or fee value; such values stay far below 2^53 under the network's caps. */
function decimal(value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new RpcError("INTERNAL_ERROR");
  return Number(value);
}

export interface Erc20TokenCost {
  token: string;
  address: string;
  decimals: number;
  exchangeRate: string;
  maxTokenCost: string;
}

export function sponsorResult(result: PipelineResult, network: string) {
  const { gas } = result;
  const v07 = result.version !== "v0.6"; // v0.8 answers in v0.7's (packed) shape
  const tokenCost: Erc20TokenCost | null = result.token
    ? {
        token: result.token.symbol,
        address: result.token.address,
        decimals: result.token.decimals,
        exchangeRate: result.token.exchangeRate.toString(),
        maxTokenCost: result.token.maxTokenCost.toString(),
      }
    : null;
  return {
    strategyId: result.mode.mode === "sponsor" ? result.mode.strategy.code : "",
    network,
    entrypointVersion: result.version,
    entrypointAddress: result.entryPoint,
    paymasterAddress: result.paymaster,
    Erc20TokenCost: tokenCost,
    userOpResponse: {
      paymasterAndData: result.paymasterAndData,
      preVerificationGas: decimal(gas.preVerificationGas),
      verificationGasLimit: decimal(gas.verificationGasLimit),
      callGasLimit: decimal(gas.callGasLimit),
      maxFeePerGas: decimal(gas.maxFeePerGas),
      maxPriorityFeePerGas: decimal(gas.maxPriorityFeePerGas),
      accountGasLimit: v07 ? packUint128Pair(gas.verificationGasLimit, gas.callGasLimit, "verificationGasLimit", "callGasLimit") : "",
      paymasterVerificationGasLimit: v07 ? decimal(gas.paymasterVerificationGasLimit) : null,
      paymasterPostOpGasLimit: v07 ? decimal(gas.paymasterPostOpGasLimit) : null,
      gasFees: v07 ? packUint128Pair(gas.maxPriorityFeePerGas, gas.maxFeePerGas, "maxPriorityFeePerGas", "maxFeePerGas") : "",
    },
  };
}
