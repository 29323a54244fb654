/**
 * What ERC-20 postOp-charge mode may put at risk (THREAT_MODEL.md, N-4). Charging in postOp trusts the op's own
 * calls to leave the allowance in place; a sender can defeat that for free, and the paymaster has paid the gas.
 * One outstanding postOp-charge sponsorship per sender and pre-charge only after an unpaid one bound a single
 * sender, but fresh counterfactual senders are free: so the store also bounds, per project and per API key, the
 * USD of outstanding postOp-charge sponsorships plus charges that went unpaid within the window, this op
 * counted (reserve step; POSTOP_CHARGE_AT_RISK). Pre-charge mode (the allowance already covers the maximum)
 * is never limited by it.
 */
import type { ServiceConfig } from "../config/types.ts";
import { usdToMicros } from "../policy/rules.ts";

export const DEFAULT_POSTOP_CHARGE_RISK = Object.freeze({ maxUsdPerProject: "1000", maxUsdPerKey: "250", windowSeconds: 86_400 });

/** The store's bound for a postOp-charge reservation made at `now` (unix seconds). */
export function postOpChargeRisk(config: Pick<ServiceConfig, "postOpChargeRisk">, now: number) {
  const c = { ...DEFAULT_POSTOP_CHARGE_RISK, ...config.postOpChargeRisk };
  return { maxUsdMicrosPerProject: usdToMicros(c.maxUsdPerProject), maxUsdMicrosPerKey: usdToMicros(c.maxUsdPerKey), sinceSeconds: now - c.windowSeconds };
}
