/**
 * Step (signing methods only): the project's approval webhook, when it has one (bounded by its timeout;
 * src/webhooks/approval.ts). Decides nothing itself: the project's endpoint does.
 * Raises APPROVAL_DENIED when it refuses (or does not answer under default-deny).
 */
import { RpcError } from "../../errors.ts";
import { lookupsOf } from "../../store/configCache.ts";
import { askApproval } from "../../webhooks/approval.ts";
import type { MaxCost } from "./maxCost.ts";
import type { Target } from "./target.ts";

export interface ApprovalInput {
  target: Target;
  cost: MaxCost;
}

export async function requireApproval({ target, cost }: ApprovalInput): Promise<void> {
  const { call, request, mode } = target;
  const endpoint = await lookupsOf(call).approvalEndpoint(call.apiKey.projectId);
  if (!endpoint) return;
  const u = request.userOp;
  const decision = await askApproval(endpoint, {
    network: call.network.config.name,
    version: request.version,
    sender: u.sender,
    nonce: u.nonce.toString(),
    callData: u.callData,
    mode: mode.mode,
    strategyCode: mode.mode === "sponsor" ? mode.strategy.code : null,
    token: mode.mode === "erc20" ? mode.token.address : null,
    maxCostWei: cost.maxCostWei.toString(),
    maxCostUsdMicros: cost.maxCostUsdMicros.toString(),
    apiKeyId: call.apiKey.id,
  }, { destinations: call.service.webhookDestinations });
  if (decision.approved) return;
  throw new RpcError("APPROVAL_DENIED", `The project's approval webhook refused this user operation: ${decision.reason}`, { reason: decision.reason, by: decision.by });
}
