/**
 * Step: the cheap policy checks, before any chain work (so a refused sender or call costs none). Sponsor mode
 * only: the strategy's status, time window and networks, then its sender lists, EIP-7702 delegates and
 * allowed call targets. Other modes have no strategy: no verdicts.
 * Raises STRATEGY_NOT_ALLOWED naming the first failing rule (unless the verdicts are collected).
 */
import type { RuleVerdict } from "../../policy/types.ts";
import { evaluateRules } from "../../policy/rules.ts";
import { applyVerdicts, ruleInput, splitRules, strategyVerdicts, type FailingVerdicts } from "../policy.ts";
import type { Target } from "./target.ts";

export interface CheapPolicyInput {
  target: Target;
  failing: FailingVerdicts;
}

export function cheapPolicy({ target, failing }: CheapPolicyInput): RuleVerdict[] {
  const { mode } = target;
  if (mode.mode !== "sponsor") return [];
  const verdicts = [
    ...strategyVerdicts(mode.strategy, target.call.network.config.name, target.now),
    ...evaluateRules(splitRules(mode.strategy.rules).call, ruleInput(target.request, target.eip7702Delegate)),
  ];
  return applyVerdicts(mode.strategy, verdicts, failing);
}
