/**
 * pm_sponsorUserOperation [userOp, extra]: runs the whole pipeline, reserves the maximum cost and returns
 * paymasterAndData signed for 5 minutes with the gas values the signature covers.
 */
import { defineMethod } from "../rpc/method.ts";
import { sponsorParamsSchema } from "../wire/schemas.ts";
import { sponsorPipeline } from "../sponsor/pipeline.ts";
import { sponsorResult } from "../sponsor/response.ts";

export const pm_sponsorUserOperation = defineMethod({
  name: "pm_sponsorUserOperation",
  params: sponsorParamsSchema,
  async handler(request, call) {
    const result = await sponsorPipeline(request, call);
    return sponsorResult(result, call.network.config.name);
  },
});
