/**
 * pm_supportEntrypoint (no params): the network's configured EntryPoint addresses, checksummed, v0.6 first.
 */
import { defineMethod } from "../rpc/method.ts";
import { noParamsSchema } from "../wire/schemas.ts";
import { uniqueChecksummed } from "./addresses.ts";

export const pm_supportEntrypoint = defineMethod({
  name: "pm_supportEntrypoint",
  params: noParamsSchema,
  async handler(_params, { network }) {
    return uniqueChecksummed(network.versions.map((version) => network.entryPoint(version)?.entryPoint));
  },
});
