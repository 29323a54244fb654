/**
 * pm_getPaymasterStubData (ERC-7677) [userOp, entryPoint, chainIdHex, context]: policy, the network's caps on
 * the gas values given, and the paymasters' constant gas limits, with no simulation (so a wallet's gas
 * estimation is not slowed by us; pm_getPaymasterData checks the op as it will land). Nothing is reserved
 * or signed. Answers stub paymaster data of the final data's length, built with STUB_SIGNATURE
 * (no zero bytes, so never cheaper calldata than the final data): v0.6 `{paymasterAndData}`, v0.7
 * `{paymaster, paymasterData, paymasterVerificationGasLimit, paymasterPostOpGasLimit}`, plus `sponsor` and
 * `isFinal: false` (the client then calls pm_getPaymasterData).
 */
import { defineMethod } from "../rpc/method.ts";
import { stubPipeline } from "../sponsor/pipeline.ts";
import { SPONSOR_INFO, erc7677ParamsSchema, erc7677Request, paymasterFields } from "./erc7677.ts";

export const pm_getPaymasterStubData = defineMethod({
  name: "pm_getPaymasterStubData",
  params: erc7677ParamsSchema,
  async handler(params, call) {
    const request = erc7677Request(params, call, "pm_getPaymasterStubData");
    const result = await stubPipeline(request, call);
    return { ...paymasterFields(result), sponsor: { ...SPONSOR_INFO }, isFinal: false };
  },
});
