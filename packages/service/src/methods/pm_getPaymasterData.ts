/**
 * pm_getPaymasterData (ERC-7677) [userOp, entryPoint, chainIdHex, context]: runs the whole sponsor pipeline
 * (reserves the maximum cost, signs for 5 minutes) like pm_sponsorUserOperation. The signature covers the
 * op's gas fields, so the client's gas values (from its bundler's estimate after the stub) are the ones signed,
 * when within the network's caps; a missing or zero one is refused (finalGas.ts): ERC-7677 answers no gas value,
 * so the client could not learn one the service filled in.
 * Answers v0.6 `{paymasterAndData}`, v0.7 `{paymaster, paymasterData, paymasterVerificationGasLimit,
 * paymasterPostOpGasLimit}` (the limits the signature covers; they override the client's).
 */
import { defineMethod } from "../rpc/method.ts";
import { sponsorPipeline } from "../sponsor/pipeline.ts";
import { erc7677ParamsSchema, erc7677Request, paymasterFields } from "./erc7677.ts";
import { requireFinalGas } from "./finalGas.ts";

export const pm_getPaymasterData = defineMethod({
  name: "pm_getPaymasterData",
  params: erc7677ParamsSchema,
  async handler(params, call) {
    const request = erc7677Request(params, call, "pm_getPaymasterData");
    requireFinalGas(request, "pm_getPaymasterData");
    const result = await sponsorPipeline(request, call);
    return paymasterFields(result);
  },
});
