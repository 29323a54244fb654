/**
 * The usage rows a sponsorship of a strategy counts in: its caps' rows, plus always the global row, which keeps
 * what the strategy has reserved and spent in all (the totals of `strategy usage`, the admin API and the
 * console) even when it sets no global cap. The global row of an uncapped strategy is a check without limits:
 * the store keeps its totals and never refuses on it.
 */
import type { Address } from "@paymaster/shared";

import { capChecks } from "./rules.ts";
import type { CapCheck, StrategyRules } from "./types.ts";

export function usageChecks(rules: StrategyRules, context: { now: number; sender: Address }): CapCheck[] {
  const checks = capChecks(rules, context);
  return checks.some((c) => c.scope === "global") ? checks : [{ scope: "global", key: "", rulePrefix: "caps.global" }, ...checks];
}
