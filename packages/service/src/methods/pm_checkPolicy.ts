/**
 * pm_checkPolicy [userOp, extra]: the dry run. Runs the whole policy check of pm_sponsorUserOperation on the
 * op (mode, the strategy's status, window, networks, sender lists, allowed calls, gas and fee ceilings, per-op
 * and running caps; in User Sponsor mode the gas tank) and answers every rule's verdict and the first one that
 * refuses, without simulating the final op, reserving or signing. Like the real request, it counts an active
 * reservation of the same op (network, EntryPoint, sender, nonce) as replaced: in the caps (sponsor/policy.ts
 * capVerdicts) and, in User Sponsor mode, in the gas tank.
 */
import { defineMethod } from "../rpc/method.ts";
import { sponsorParamsSchema } from "../wire/schemas.ts";
import { dryRunPipeline } from "../sponsor/pipeline.ts";
import type { RuleVerdict } from "../policy/types.ts";
import { formatUsdMicros } from "../policy/rules.ts";

export const pm_checkPolicy = defineMethod({
  name: "pm_checkPolicy",
  params: sponsorParamsSchema,
  async handler(request, call) {
    const result = await dryRunPipeline(request, call);
    const verdicts: RuleVerdict[] = [...result.verdicts];
    if (result.mode.mode === "user") {
      const store = call.service.store;
      const tank = await store.getGasTank(call.network.config.name, request.userOp.sender);
      const previous = await store.findActiveSponsorship({
        network: call.network.config.name,
        entryPoint: result.entryPoint,
        sender: request.userOp.sender,
        nonce: request.userOp.nonce,
      });
      const freed = previous?.record.mode === "user" ? previous.record.maxCostWei : 0n;
      const reserved = tank.reservedWei > freed ? tank.reservedWei - freed : 0n;
      const available = tank.balanceWei > reserved ? tank.balanceWei - reserved : 0n;
      const pass = available >= result.maxCostWei;
      verdicts.push({
        rule: "gasTank",
        pass,
        limit: available.toString(),
        value: result.maxCostWei.toString(),
        message: pass ? "The sender's gas tank covers the maximum cost" : "The sender's gas tank cannot cover the maximum cost",
      });
    }
    const rejectedBy = verdicts.find((v) => !v.pass) ?? null;
    return {
      mode: result.mode.mode,
      strategyId: result.mode.mode === "sponsor" ? result.mode.strategy.code : "",
      network: call.network.config.name,
      entrypointVersion: result.version,
      wouldSponsor: rejectedBy === null,
      rejectedBy,
      verdicts,
      maxCostWei: result.maxCostWei.toString(),
      maxCostUsd: formatUsdMicros(result.maxCostUsdMicros),
    };
  },
});
