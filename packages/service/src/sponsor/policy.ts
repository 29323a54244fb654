/**
 * Mode and policy: which paymaster pays and whether the caller may use it. Each refusal names the rule, the
 * limit and the value that broke it.
 */
import type { CallContext } from "../context.ts";
import type { SponsorRequest } from "../wire/schemas.ts";
import { RpcError } from "../errors.ts";
import type { Store, Strategy, Token } from "../store/types.ts";
import type { SponsorMode } from "../policy/types.ts";
import type { CapCheck, RuleVerdict, StrategyRules } from "../policy/types.ts";
import { formatUsdMicros } from "../policy/rules.ts";
import type { Address } from "@paymaster/shared";
import { knownNow, lookupsOf } from "../store/configCache.ts";

export type ResolvedMode =
  | { mode: "sponsor"; strategy: Strategy }
  | { mode: "erc20"; token: Token }
  | { mode: "user" };

/** Sponsor mode's strategy checks that need no gas figures: status, time window, network. */
export function strategyVerdicts(strategy: Strategy, network: string, now: number): RuleVerdict[] {
  const verdicts: RuleVerdict[] = [
    {
      rule: "status",
      pass: strategy.status === "enabled",
      limit: "enabled",
      value: strategy.status,
      message: strategy.status === "enabled" ? "The strategy is enabled" : "The strategy is disabled",
    },
  ];
  if (strategy.validFrom !== null) {
    const pass = now >= strategy.validFrom;
    verdicts.push({ rule: "validFrom", pass, limit: strategy.validFrom, value: now, message: pass ? "The strategy has started" : "The strategy has not started yet" });
  }
  if (strategy.validUntil !== null) {
    const pass = now <= strategy.validUntil;
    verdicts.push({ rule: "validUntil", pass, limit: strategy.validUntil, value: now, message: pass ? "The strategy has not ended" : "The strategy has ended" });
  }
  if (strategy.networks !== null) {
    const pass = strategy.networks.includes(network);
    verdicts.push({ rule: "networks", pass, limit: strategy.networks, value: network, message: pass ? `The strategy allows ${network}` : `The strategy does not allow ${network}` });
  }
  return verdicts;
}

/**
 * `rules` split in two: the rules that need neither gas figures nor totals (who sends, and which calls: they
 * run before any chain work) and the rest (gas, fee and per-op rules, run once gas is known).
 */
export function splitRules(rules: StrategyRules): { call: StrategyRules; rest: StrategyRules } {
  const { senderAllowlist, senderDenylist, targets, eip7702, ...rest } = rules;
  const call: StrategyRules = {
    ...(senderDenylist ? { senderDenylist } : {}),
    ...(senderAllowlist ? { senderAllowlist } : {}),
    ...(eip7702 ? { eip7702 } : {}),
    ...(targets ? { targets } : {}),
  };
  return { call, rest };
}

/**
 * How a policy step treats a failing verdict: "refuse" raises STRATEGY_NOT_ALLOWED on the first one (every
 * real request); "collect" keeps them all for the answer (the dry run, pm_checkPolicy).
 */
export type FailingVerdicts = "refuse" | "collect";

/** The verdicts, after refusing on the first failing one unless they are collected. */
export function applyVerdicts(strategy: Strategy, verdicts: RuleVerdict[], failing: FailingVerdicts): RuleVerdict[] {
  if (failing === "refuse") refuseOnFirstFailure(strategy, verdicts);
  return verdicts;
}

/** The parts of a rule input that need no gas figures (gas rules are not configured in the cheap pass). */
export function ruleInput(request: SponsorRequest, eip7702Delegate: Address | undefined) {
  const { sender, callData } = request.userOp;
  return { sender, callData, entryPointVersion: request.version, ...(eip7702Delegate ? { eip7702Delegate } : {}), gas: { callGasLimit: 0n, verificationGasLimit: 0n, preVerificationGas: 0n, maxFeePerGas: 0n }, marketMaxFeePerGas: 0n, maxCostWei: 0n, maxCostUsdMicros: 0n };
}

/** Throws STRATEGY_NOT_ALLOWED naming the first failing verdict's rule, limit and value. */
export function refuseOnFirstFailure(strategy: Strategy, verdicts: readonly RuleVerdict[]): void {
  const failed = verdicts.find((v) => !v.pass);
  if (!failed) return;
  throw new RpcError("STRATEGY_NOT_ALLOWED", `Strategy ${strategy.code} refuses this request: ${failed.rule}: ${failed.message}`, {
    rule: failed.rule,
    limit: failed.limit,
    value: failed.value,
  });
}

/**
 * Read-only cap verdicts for the dry run: the strategy's current totals plus this op against each cap, counted
 * as reserveSponsorship counts them — an active reservation of the same op (`op`: network, EntryPoint, sender,
 * nonce) would be replaced, so it leaves the rows it counts in and the op is not counted twice. (The real check
 * happens atomically in the store when the op is reserved.) USD limits and values are dollars ("25.50").
 */
export async function capVerdicts(
  store: Store,
  strategy: Strategy,
  checks: readonly CapCheck[],
  maxCostWei: bigint,
  maxCostUsdMicros: bigint,
  op: { network: string; entryPoint: Address; sender: Address; nonce: bigint },
): Promise<RuleVerdict[]> {
  const verdicts: RuleVerdict[] = [];
  const previous = checks.length === 0 ? undefined : await store.findActiveSponsorship(op);
  for (const check of checks) {
    const usage = await store.getUsage(strategy.id, check.scope, check.key);
    const replaced = previous?.links.some((l) => l.strategyId === strategy.id && l.scope === check.scope && l.key === check.key);
    const freedWei = replaced ? previous!.record.maxCostWei : 0n;
    const freedUsd = replaced ? previous!.record.maxCostUsdMicros : 0n;
    const floor0 = (v: bigint) => (v < 0n ? 0n : v);
    const limits: [string, bigint | undefined, bigint][] = [
      ["maxWei", check.maxWei, floor0(usage.reservedWei - freedWei) + usage.spentWei + maxCostWei],
      ["maxUsd", check.maxUsdMicros, floor0(usage.reservedUsdMicros - freedUsd) + usage.spentUsdMicros + maxCostUsdMicros],
      ["maxOps", check.maxOps === undefined ? undefined : BigInt(check.maxOps), BigInt(Math.max(0, usage.ops - (replaced ? 1 : 0)) + 1)],
    ];
    for (const [name, limit, value] of limits) {
      if (limit === undefined) continue;
      const pass = value <= limit;
      const usd = name === "maxUsd";
      verdicts.push({
        rule: `${check.rulePrefix}.${name}`,
        pass,
        limit: usd ? formatUsdMicros(limit) : limit.toString(),
        value: usd ? formatUsdMicros(value) : value.toString(),
        message: `${pass ? "within" : "over"} the ${check.scope} cap${check.key ? ` (${check.key})` : ""}${usd ? " (USD)" : ""}`,
      });
    }
  }
  return verdicts;
}

/**
 * The request's mode. User Sponsor mode: the tank's consent is read here, unless `consent` is "reservation" (the
 * request signs: its reservation's batch checks the consent in the same round trip, NewSponsorship.requires).
 */
export async function resolveMode(
  call: CallContext,
  request: { strategyCode?: string; token?: string; sender: Address },
  consent: "read" | "reservation" = "read",
): Promise<ResolvedMode> {
  const { strategyCode, token: wantedToken } = request;
  if (strategyCode !== undefined) {
    const lookups = lookupsOf(call);
    // Unknown under lookups that may be a moment old: a strategy just created anywhere is known under the version as it is now.
    const strategy = await knownNow(lookups, (l) => l.strategyByCode(strategyCode));
    // Another project's strategy is reported as unknown: its existence is not the caller's business.
    if (!strategy || strategy.projectId !== call.apiKey.projectId) {
      throw new RpcError("STRATEGY_NOT_FOUND", `Unknown strategy ${JSON.stringify(strategyCode)} for this API key's project`);
    }
    return { mode: "sponsor", strategy };
  }
  if (wantedToken !== undefined) {
    const lookups = lookupsOf(call);
    const network = call.network.config.name;
    const token = await knownNow(lookups, (l) => l.token(network, wantedToken));
    if (!token || !token.enabled) {
      const supported = (await lookups.tokens(network)).filter((t) => t.enabled).map((t) => t.symbol);
      throw new RpcError("TOKEN_NOT_SUPPORTED", `Token ${JSON.stringify(wantedToken)} is not supported on ${network}`, {
        supported,
      });
    }
    return { mode: "erc20", token };
  }
  if (consent === "read") await requireTankConsent(call, request.sender);
  return { mode: "user" };
}

/**
 * User Sponsor mode draws from the sender's own gas tank, which belongs to no project: only projects the tank's
 * owner allowed (a signed consent, pm_setGasTankConsent) or the operator allowed for it (`tank allow`) may.
 * Deny by default: without this, any key of any project could hold a stranger's tank with reservations.
 */
async function requireTankConsent(call: CallContext, sender: Address): Promise<void> {
  if (await call.service.store.gasTankAllows(call.network.config.name, sender, call.apiKey.projectId)) return;
  throw tankNotAllowed(call, sender);
}

/** GAS_TANK_NOT_ALLOWED, whether the consent read or the reservation's batch (its tankConsent check) found it missing. */
export function tankNotAllowed(call: CallContext, sender: Address): RpcError {
  const network = call.network.config.name;
  const projectId = call.apiKey.projectId;
  return new RpcError(
    "GAS_TANK_NOT_ALLOWED",
    `The gas tank of ${sender} on ${network} has not allowed this API key's project (${projectId}): its owner signs a consent (pm_gasTankConsentRequest, then pm_setGasTankConsent) or the operator allows it`,
    { sender, projectId },
  );
}

export type { SponsorMode };
