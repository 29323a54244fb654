/**
 * pm_estimateUserOperationGas [userOp, extra]: the same pipeline as sponsoring (same params, same refusals)
 * without reserving or signing: the gas values, the maximum cost in wei, the token cost in ERC-20 mode, and
 * stub paymaster data of the final length (its signature is not usable).
 */
import { defineMethod } from "../rpc/method.ts";
import { sponsorParamsSchema } from "../wire/schemas.ts";
import { estimatePipeline } from "../sponsor/pipeline.ts";
import { sponsorResult } from "../sponsor/response.ts";

export const pm_estimateUserOperationGas = defineMethod({
  name: "pm_estimateUserOperationGas",
  params: sponsorParamsSchema,
  async handler(request, call) {
    const result = await estimatePipeline(request, call);
    return { ...sponsorResult(result, call.network.config.name), maxCostWei: result.maxCostWei.toString() };
  },
});
