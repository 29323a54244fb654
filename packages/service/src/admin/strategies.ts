/** Strategies: create and update from a document, enable / disable, list, show, usage against every cap. */
import { getAddress } from "viem/utils";
import type { Address } from "@paymaster/shared";
import { capChecks, formatUsdMicros, utcDayKey } from "../policy/rules.ts";
import { serializeRules } from "../policy/schema.ts";
import type { Strategy } from "../store/types.ts";
import { AdminError, audit, guarded, invalid, invalidField, notFound, read, validAddress, type AdminContext, mutation } from "./context.ts";
import { parseStrategyDocument } from "./strategyFile.ts";
import { strategyView } from "./views.ts";

async function byCode(ctx: AdminContext, code: string): Promise<Strategy> {
  const strategy = await ctx.store.getStrategyByCode(code);
  if (!strategy) notFound(`strategy ${JSON.stringify(code)} not found`);
  return strategy;
}

export const createStrategy = mutation("operator", async function createStrategy(ctx: AdminContext, data: unknown, where?: string) {
  const doc = parseStrategyDocument(ctx, data, where);
  const at = where ?? "strategy";
  if (doc.project === undefined) invalidField(at, "project", "required to create a strategy (a project id)");
  if (!(await ctx.store.getProject(doc.project))) {
    throw new AdminError("NOT_FOUND", `${at}: project: project ${JSON.stringify(doc.project)} not found`, [{ field: "project", message: `project ${JSON.stringify(doc.project)} not found` }]);
  }
  if (await ctx.store.getStrategyByCode(doc.code)) invalidField(at, "code", `a strategy "${doc.code}" already exists (use update)`);
  const strategy = await guarded(() =>
    ctx.store.createStrategy({
      projectId: doc.project!,
      code: doc.code,
      name: doc.name ?? doc.code,
      status: doc.status,
      validFrom: doc.validFrom,
      validUntil: doc.validUntil,
      networks: doc.networks,
      rules: doc.rules,
    }),
  );
  const view = strategyView(strategy);
  await audit(ctx, "strategy.create", strategy.code, null, view);
  return view;
});

/** Changes the fields the document gives (its code names the strategy; a project, if given, must be its own). */
export const updateStrategy = mutation("operator", async function updateStrategy(ctx: AdminContext, data: unknown, where?: string) {
  const doc = parseStrategyDocument(ctx, data, where);
  const current = await byCode(ctx, doc.code);
  if (doc.project !== undefined && doc.project !== current.projectId) {
    invalidField(where ?? "strategy", "project", "a strategy cannot move to another project");
  }
  const { code: _code, project: _project, ...patch } = doc;
  const updated = await guarded(() => ctx.store.updateStrategy(current.id, patch));
  const view = strategyView(updated);
  await audit(ctx, "strategy.update", current.code, strategyView(current), view);
  return view;
});

export const setStrategyStatus = mutation("operator", async function setStrategyStatus(ctx: AdminContext, code: string, status: "enabled" | "disabled") {
  const current = await byCode(ctx, code);
  const updated = await guarded(() => ctx.store.updateStrategy(current.id, { status }));
  const view = strategyView(updated);
  await audit(ctx, status === "enabled" ? "strategy.enable" : "strategy.disable", code, strategyView(current), view);
  return view;
});

export const listStrategies = read("viewer", async function listStrategies(ctx: AdminContext, input: { projectId?: string }) {
  return (await ctx.store.listStrategies(input.projectId)).map(strategyView);
});

export const showStrategy = read("viewer", async function showStrategy(ctx: AdminContext, code: string) {
  return strategyView(await byCode(ctx, code));
});

/**
 * What the strategy has spent and reserved in all (`totals`, kept whatever its caps), and spent, reserved and
 * remaining against every cap: global, today's daily row (UTC) and, given a sender, its perSender row. Amounts
 * in wei and dollars.
 */
export const strategyUsage = read("viewer", async function strategyUsage(ctx: AdminContext, code: string, input: { sender?: string } = {}) {
  const strategy = await byCode(ctx, code);
  const now = (ctx.now ?? (() => Math.floor(Date.now() / 1000)))();
  const sender: Address = input.sender === undefined ? getAddress("0x0000000000000000000000000000000000000000") : validAddress(input.sender, "sender");
  const checks = capChecks(strategy.rules, { now, sender }).filter((c) => c.scope !== "perSender" || input.sender !== undefined);
  const caps = [];
  for (const check of checks) {
    const u = await ctx.store.getUsage(strategy.id, check.scope, check.key);
    const usedWei = u.spentWei + u.reservedWei;
    const usedUsd = u.spentUsdMicros + u.reservedUsdMicros;
    const remaining = (limit: bigint, used: bigint) => (limit > used ? limit - used : 0n);
    caps.push({
      cap: check.rulePrefix,
      key: check.key,
      spentWei: u.spentWei.toString(),
      reservedWei: u.reservedWei.toString(),
      spentUsd: formatUsdMicros(u.spentUsdMicros),
      reservedUsd: formatUsdMicros(u.reservedUsdMicros),
      ops: u.ops,
      ...(check.maxWei !== undefined ? { maxWei: check.maxWei.toString(), remainingWei: remaining(check.maxWei, usedWei).toString() } : {}),
      ...(check.maxUsdMicros !== undefined
        ? { maxUsd: formatUsdMicros(check.maxUsdMicros), remainingUsd: formatUsdMicros(remaining(check.maxUsdMicros, usedUsd)) }
        : {}),
      ...(check.maxOps !== undefined ? { maxOps: check.maxOps, remainingOps: Math.max(0, check.maxOps - u.ops) } : {}),
    });
  }
  // The global row keeps the strategy's totals whatever its caps (policy/totals.ts links every sponsorship to it).
  const global = await ctx.store.getUsage(strategy.id, "global", "");
  return {
    code: strategy.code,
    totals: {
      spentWei: global.spentWei.toString(),
      reservedWei: global.reservedWei.toString(),
      spentUsd: formatUsdMicros(global.spentUsdMicros),
      reservedUsd: formatUsdMicros(global.reservedUsdMicros),
      ops: global.ops,
    },
    caps,
  };
});

export const USAGE_HISTORY_MAX_DAYS = 90;

/**
 * The strategy's usage per UTC day of the last `days` (default 14, at most USAGE_HISTORY_MAX_DAYS), today last:
 * spent (what the chain charged for its settled ops) and reserved (the maximum cost its open signatures still
 * hold), in wei and dollars, and ops counted (released ones do not count), by the day each op was reserved —
 * how the daily cap counts them — with the daily cap itself, for a chart of spent vs reserved against it.
 */
export const strategyUsageHistory = read("viewer", async function strategyUsageHistory(ctx: AdminContext, code: string, input: { days?: string | number } = {}) {
  const strategy = await byCode(ctx, code);
  const days = input.days === undefined ? 14 : Number(input.days);
  if (!Number.isSafeInteger(days) || days < 1 || days > USAGE_HISTORY_MAX_DAYS) invalid(`days: an integer from 1 to ${USAGE_HISTORY_MAX_DAYS}`);
  const now = (ctx.now ?? (() => Math.floor(Date.now() / 1000)))();
  const today = now - (now % 86_400);
  const since = today - (days - 1) * 86_400;
  const { buckets, truncated } = await guarded(() => ctx.store.sponsorshipActivity({ since, until: today + 86_400, bucketSeconds: 86_400, strategyId: strategy.id }));
  const rows = Array.from({ length: days }, (_, i) => ({ day: since + i * 86_400, spentWei: 0n, reservedWei: 0n, spentUsdMicros: 0n, reservedUsdMicros: 0n, ops: 0, released: 0 }));
  for (const b of buckets) {
    const row = rows[(b.bucket - since) / 86_400];
    if (!row) continue;
    if (b.status === "released") row.released += b.count;
    else if (b.status === "settled") {
      row.ops += b.count;
      row.spentWei += b.actualCostWei;
      row.spentUsdMicros += b.actualCostUsdMicros;
    } else {
      row.ops += b.count;
      row.reservedWei += b.maxCostWei;
      row.reservedUsdMicros += b.maxCostUsdMicros;
    }
  }
  return {
    code: strategy.code,
    dailyCap: serializeRules(strategy.rules).caps?.daily ?? null,
    days: rows.map((r) => ({
      day: utcDayKey(r.day),
      spentWei: r.spentWei.toString(),
      reservedWei: r.reservedWei.toString(),
      spentUsd: formatUsdMicros(r.spentUsdMicros),
      reservedUsd: formatUsdMicros(r.reservedUsdMicros),
      ops: r.ops,
      released: r.released,
    })),
    truncated,
  };
});
