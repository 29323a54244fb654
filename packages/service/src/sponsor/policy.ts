/**
 * Mode and policy: which paymaster pays and whether the caller may use it. Each refusal names the rule, the
 * limit and the value that broke it.
 */
import type { CallContext } from "../rpc/method.ts";
import { RpcError } from "../rpc/errors.ts";
import type { SponsorMode, Strategy, Token } from "../store/types.ts";

export type ResolvedMode =
  | { mode: "sponsor"; strategy: Strategy }
  | { mode: "erc20"; token: Token }
  | { mode: "user" };

/** Sponsor mode's strategy rules that need no gas figures: ownership, status, time window, network. */
export function checkStrategy(strategy: Strategy, call: CallContext, now: number): void {
  const refuse = (rule: string, limit: unknown, value: unknown) => {
    throw new RpcError("STRATEGY_NOT_ALLOWED", `Strategy ${strategy.code} refuses this request: ${rule}`, { rule, limit, value });
  };
  if (strategy.status !== "enabled") refuse("status", "enabled", strategy.status);
  if (strategy.validFrom !== null && now < strategy.validFrom) refuse("validFrom", strategy.validFrom, now);
  if (strategy.validUntil !== null && now > strategy.validUntil) refuse("validUntil", strategy.validUntil, now);
  const network = call.network.config.name;
  if (strategy.networks !== null && !strategy.networks.includes(network)) refuse("networks", strategy.networks, network);
}

export async function resolveMode(
  call: CallContext,
  request: { strategyCode?: string; token?: string },
  now: number,
): Promise<ResolvedMode> {
  const store = call.service.store;
  if (request.strategyCode !== undefined) {
    const strategy = await store.getStrategyByCode(request.strategyCode);
    // Another project's strategy is reported as unknown: its existence is not the caller's business.
    if (!strategy || strategy.projectId !== call.apiKey.projectId) {
      throw new RpcError("STRATEGY_NOT_FOUND", `Unknown strategy ${JSON.stringify(request.strategyCode)} for this API key's project`);
    }
    checkStrategy(strategy, call, now);
    return { mode: "sponsor", strategy };
  }
  if (request.token !== undefined) {
    const token = await store.findToken(call.network.config.name, request.token);
    if (!token || !token.enabled) {
      const supported = (await store.listTokens(call.network.config.name)).filter((t) => t.enabled).map((t) => t.symbol);
      throw new RpcError("TOKEN_NOT_SUPPORTED", `Token ${JSON.stringify(request.token)} is not supported on ${call.network.config.name}`, {
        supported,
      });
    }
    return { mode: "erc20", token };
  }
  return { mode: "user" };
}

export type { SponsorMode };
