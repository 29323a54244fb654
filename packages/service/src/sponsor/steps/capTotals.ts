/**
 * Step (dry run only): the strategy's running caps as they stand, with this op counted, as read-only verdicts
 * (src/sponsor/policy.ts capVerdicts). The real check happens atomically in the store when an op is reserved
 * (the reserve step). Sponsor mode only; raises nothing.
 */
import type { RuleVerdict } from "../../policy/types.ts";
import { capChecks } from "../../policy/rules.ts";
import { capVerdicts } from "../policy.ts";
import type { MaxCost } from "./maxCost.ts";
import type { Target } from "./target.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { serviceStore } from "../../store/traced.ts";

export interface CapTotalsInput {
  target: Target;
  cost: MaxCost;
}

export async function capTotals({ target, cost }: CapTotalsInput, span: TraceSpan = NO_SPAN): Promise<RuleVerdict[]> {
  const { mode, request, call } = target;
  if (mode.mode !== "sponsor") return [];
  const u = request.userOp;
  const caps = capChecks(mode.strategy.rules, { now: target.now, sender: u.sender });
  const op = { network: call.network.config.name, entryPoint: target.entry.entryPoint, sender: u.sender, nonce: u.nonce };
  return capVerdicts(serviceStore(call.service, span), mode.strategy, caps, cost.maxCostWei, cost.maxCostUsdMicros, op);
}
