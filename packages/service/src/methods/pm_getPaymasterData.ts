/**
 * pm_getPaymasterData (ERC-7677): listed by the spec as "Coming". Until ERC-7677 support lands it answers
 * METHOD_NOT_AVAILABLE (501) whatever the params.
 */
import { z } from "zod";
import { RpcError } from "../rpc/errors.ts";
import { defineMethod } from "../rpc/method.ts";

export const pm_getPaymasterData = defineMethod({
  name: "pm_getPaymasterData",
  params: z.unknown(),
  async handler() {
    throw new RpcError(
      "METHOD_NOT_AVAILABLE",
      "pm_getPaymasterData is not available yet: it comes with ERC-7677 support. Use pm_sponsorUserOperation",
    );
  },
});
