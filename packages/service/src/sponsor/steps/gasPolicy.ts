/**
 * Step: the strategy's gas, fee and per-op rules, once the gas figures are known (Sponsor mode only; the call
 * rules ran in the cheap step): gas limit and fee ceilings, the per-op wei and USD maximums.
 * Raises STRATEGY_NOT_ALLOWED naming the first failing rule (unless the verdicts are collected).
 */
import type { RuleVerdict } from "../../policy/types.ts";
import { evaluateRules } from "../../policy/rules.ts";
import { applyVerdicts, ruleInput, splitRules, type FailingVerdicts } from "../policy.ts";
import type { GasValues } from "../op.ts";
import type { MaxCost } from "./maxCost.ts";
import type { Target } from "./target.ts";

export interface GasPolicyInput {
  target: Target;
  gas: GasValues;
  cost: MaxCost;
  failing: FailingVerdicts;
}

export function gasPolicy({ target, gas, cost, failing }: GasPolicyInput): RuleVerdict[] {
  const { mode } = target;
  if (mode.mode !== "sponsor") return [];
  const verdicts = evaluateRules(splitRules(mode.strategy.rules).rest, {
    ...ruleInput(target.request, target.eip7702Delegate),
    gas,
    marketMaxFeePerGas: target.market.maxFeePerGas,
    maxCostWei: cost.maxCostWei,
    maxCostUsdMicros: cost.maxCostUsdMicros,
  });
  return applyVerdicts(mode.strategy, verdicts, failing);
}
