/**
 * The strategy dry run for operators (the console's strategy editor): a pasted user operation checked against a
 * strategy by pm_checkPolicy itself — the same params schema and the same handler a client's call runs (no
 * second implementation): every rule's verdict, the first that refuses, the maximum cost, nothing reserved or
 * signed. The operator needs no API key: the call runs as a key of the strategy's own project that exists only
 * for this call (never stored, never able to sign).
 */
import { DEPENDENCY_REASONS } from "../dependencies/failure.ts";
import { pm_checkPolicy } from "../methods/pm_checkPolicy.ts";
import { parseParams, resolveNetwork } from "../rpc/dispatch.ts";
import { RpcError } from "../errors.ts";
import type { ApiKey } from "../store/types.ts";
import { AdminError, invalid, notFound, read, runningService, type AdminContext } from "./context.ts";

/** A dependency that failed, or the service itself: the check could not run (503); the rest are the input's (400). */
const couldNotRun = (reason: string): boolean => DEPENDENCY_REASONS.has(reason as never) || reason === "INTERNAL_ERROR";

export interface PolicyCheckInput {
  /** The user operation as a client sends it (hex fields). */
  userOp?: unknown;
  /** Default: the strategy's first network, else the first configured one. */
  network?: unknown;
  /** EntryPoint version ("v0.6", "v0.7", "v0.8"), as in pm_checkPolicy's extra. */
  version?: unknown;
}

/**
 * Operator, though it writes nothing: it is part of editing a strategy, and a viewer's calls stay GETs only (the
 * console's viewer test relies on that rule: no request but a GET leaves a viewer's page).
 */
export const checkStrategyPolicy = read("operator", async function checkStrategyPolicy(ctx: AdminContext, code: string, input: PolicyCheckInput) {
  const service = runningService(ctx);
  const strategy = await ctx.store.getStrategyByCode(code);
  if (!strategy) notFound(`strategy ${JSON.stringify(code)} not found`);
  if (input.userOp === undefined) invalid("userOp: required (the user operation as JSON, as a client sends it)");
  const networkName = input.network ?? strategy.networks?.[0] ?? [...service.networks.keys()][0];
  if (typeof networkName !== "string" || !service.networks.has(networkName)) {
    invalid(`network: unknown network ${JSON.stringify(networkName)}: configured networks are ${[...service.networks.keys()].join(", ")}`);
  }
  const now = service.now();
  const dryRunKey: ApiKey = {
    id: "admin-dry-run",
    projectId: strategy.projectId,
    prefix: "",
    label: "policy dry run",
    status: "active",
    createdAt: now,
    revokedAt: null,
    allowedOrigins: null,
    allowedIps: null,
  };
  try {
    const network = resolveNetwork(service, networkName);
    const params = await parseParams(pm_checkPolicy, [input.userOp, { strategy_code: strategy.code, ...(input.version === undefined ? {} : { version: input.version }) }]);
    return await pm_checkPolicy.handler(params, { service, network, apiKey: dryRunKey });
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    // "params[0].callData: …" reads as the pasted op's field: name it so.
    const message = `${error.reason}: ${error.message.replace(/Invalid params for pm_checkPolicy: params\[0\]/, "userOp").replace(/params\[1\]/, "extra")}`;
    throw new AdminError(couldNotRun(error.reason) ? "UNAVAILABLE" : "INVALID_INPUT", message);
  }
});
