/**
 * Step: the maximum cost. Decides the op as it will be signed (final gas and charge mode, stub paymaster
 * data) and what it can cost at most: in wei (its gas limits at maxFeePerGas) and in USD micro-units (at the
 * native token's price). Raises only the price source's errors.
 */
import type { Hex } from "@paymaster/shared";
import type { SimulatedOp } from "../../chain/entryPoint.ts";
import { weiToUsdMicros } from "../../policy/rules.ts";
import { chainWait } from "../../timing.ts";
import { buildOp, maxGasCost, type GasValues } from "../op.ts";
import type { UsdPrice } from "../price.ts";
import type { Target } from "./target.ts";

export interface MaxCost {
  /** The op with its final gas and stub paymaster data (the signed op differs only in the signature). */
  op: SimulatedOp;
  maxCostWei: bigint;
  maxCostUsdMicros: bigint;
  /** The native coin's USD price it was valued at (what a billed project's hold and bill are valued at). */
  nativeUsd: UsdPrice;
}

export interface MaxCostInput {
  target: Target;
  gas: GasValues;
  paymasterData: Hex;
  /** The native token's USD price when already read (ERC-20 mode's price step). */
  nativeUsd: UsdPrice | undefined;
}

export async function maxCost({ target, gas, paymasterData, nativeUsd }: MaxCostInput): Promise<MaxCost> {
  const { call, chain } = target;
  const op = buildOp(target.request, gas, target.paymaster, paymasterData);
  const maxCostWei = maxGasCost(op);
  const usd = nativeUsd ?? (await chainWait(call.timing, () => chain.prices.usd(call.network.config.nativeUsdPrice)));
  return { op, maxCostWei, maxCostUsdMicros: weiToUsdMicros(maxCostWei, usd), nativeUsd: usd };
}
