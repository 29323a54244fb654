/**
 * pm_paymasterAccount (no params): the network's paymaster addresses, checksummed: per EntryPoint version
 * (v0.6 first) the verifying paymaster, then the ERC-20 paymaster; each address once.
 */
import { defineMethod } from "../rpc/method.ts";
import { noParamsSchema } from "../wire/schemas.ts";
import { uniqueChecksummed } from "./addresses.ts";

export const pm_paymasterAccount = defineMethod({
  name: "pm_paymasterAccount",
  params: noParamsSchema,
  async handler(_params, { network }) {
    return uniqueChecksummed(
      network.versions.flatMap((version) => {
        const entry = network.entryPoint(version);
        return [entry?.verifyingPaymaster, entry?.erc20Paymaster];
      }),
    );
  },
});
