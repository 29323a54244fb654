/**
 * `apply`: a declarative document of projects (with their strategies) and tokens, created or updated to match,
 * idempotently — applying it twice changes nothing the second time — so a deployment can be kept in git. API
 * keys are never in such a file (a `keys` field is refused): they are created with `key create`.
 *
 *   projects:
 *     - name: Acme                 # projects are matched by name
 *       status: active             # or disabled
 *       strategies:                # strategy documents (strategyFile.ts) without `project`
 *         - { code: acme-free, name: Free mints, rules: { caps: { daily: { maxUsd: "25" } } } }
 *   tokens:
 *     - { network: base-sepolia, symbol: USDC, address: "0x…", decimals: 6, priceSource: { type: fixed, usd: "1" }, markupBps: 0 }
 *
 * The whole document is checked before anything is written; an error names its place ("projects[0].strategies[1]: …").
 * Projects and strategies are an operator's; `tokens` (their prices) an admin's: a document with tokens is refused
 * to an operator before anything is written.
 */
import { isDeepStrictEqual } from "node:util";
import type { Token } from "../store/types.ts";
import { audit, guarded, invalid, knownNetwork, requireRole, validAddress, type AdminContext, mutation } from "./context.ts";
import { createProject, setProjectStatus } from "./projects.ts";
import { createStrategy, updateStrategy } from "./strategies.ts";
import { parseStrategyDocument } from "./strategyFile.ts";
import { strategyView } from "./views.ts";

export interface ApplyChange {
  kind: "project" | "strategy" | "token";
  name: string;
  action: "created" | "updated" | "unchanged";
}

function object(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) invalid(`${where}: must be an object`);
  return value as Record<string, unknown>;
}

function list(value: unknown, where: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) invalid(`${where}: must be a list`);
  return value;
}

function onlyFields(doc: Record<string, unknown>, fields: string[], where: string): void {
  if ("keys" in doc) invalid(`${where}: keys: API keys are never applied from a file (create them with \`key create\`)`);
  const unknown = Object.keys(doc).find((k) => !fields.includes(k));
  if (unknown !== undefined) invalid(`${where}: ${unknown}: unknown field (known: ${fields.join(", ")})`);
}

function token(ctx: AdminContext, value: unknown, where: string): Token {
  const t = object(value, where);
  onlyFields(t, ["network", "symbol", "address", "decimals", "priceSource", "markupBps", "enabled"], where);
  const network = (() => {
    try {
      return knownNetwork(ctx, t.network);
    } catch (err) {
      invalid(`${where}: network: ${(err as Error).message}`);
    }
  })();
  if (typeof t.symbol !== "string" || !/^[A-Za-z0-9.$_-]{1,16}$/.test(t.symbol)) invalid(`${where}: symbol: 1-16 letters or digits`);
  if (typeof t.decimals !== "number" || !Number.isInteger(t.decimals) || t.decimals < 0 || t.decimals > 255) invalid(`${where}: decimals: an integer 0..255`);
  const markupBps = t.markupBps ?? 0;
  if (typeof markupBps !== "number" || !Number.isInteger(markupBps) || markupBps < 0 || markupBps > 10_000) invalid(`${where}: markupBps: an integer 0..10000`);
  if (t.enabled !== undefined && typeof t.enabled !== "boolean") invalid(`${where}: enabled: true or false`);
  const p = object(t.priceSource, `${where}: priceSource`);
  let priceSource: Token["priceSource"];
  if (p.type === "fixed" && typeof p.usd === "string" && /^\d+(\.\d+)?$/.test(p.usd)) priceSource = { type: "fixed", usd: p.usd };
  else if (p.type === "chainlink") {
    priceSource = { type: "chainlink", feed: validAddress(p.feed, `${where}: priceSource.feed`) };
    if (p.maxAgeSeconds !== undefined) {
      if (typeof p.maxAgeSeconds !== "number" || !Number.isSafeInteger(p.maxAgeSeconds) || p.maxAgeSeconds <= 0) invalid(`${where}: priceSource.maxAgeSeconds: a positive integer`);
      priceSource.maxAgeSeconds = p.maxAgeSeconds;
    }
  } else invalid(`${where}: priceSource: {type: fixed, usd: "<decimal>"} or {type: chainlink, feed: <address>}`);
  return {
    network,
    symbol: t.symbol,
    address: validAddress(t.address, `${where}: address`),
    decimals: t.decimals,
    priceSource,
    markupBps,
    enabled: (t.enabled as boolean | undefined) ?? true,
  };
}

export const apply = mutation("operator", async function apply(ctx: AdminContext, data: unknown, file: string = "document"): Promise<ApplyChange[]> {
  const doc = object(data, file);
  onlyFields(doc, ["projects", "tokens"], file);
  if (doc.tokens !== undefined) requireRole(ctx, "admin", `${file}: tokens (token prices)`);
  // 1. Check everything.
  const projects = list(doc.projects, `${file}: projects`).map((value, i) => {
    const where = `${file}: projects[${i}]`;
    const p = object(value, where);
    onlyFields(p, ["name", "status", "strategies"], where);
    if (typeof p.name !== "string" || p.name.trim() === "") invalid(`${where}: name: required`);
    if (p.status !== undefined && p.status !== "active" && p.status !== "disabled") invalid(`${where}: status: "active" or "disabled"`);
    const strategies = list(p.strategies, `${where}.strategies`).map((s, j) => {
      const sw = `${where}.strategies[${j}]`;
      if (typeof s === "object" && s !== null && "project" in s) invalid(`${sw}: project: given by the enclosing project`);
      return { data: s, doc: parseStrategyDocument(ctx, s, sw), where: sw };
    });
    return { name: p.name, status: (p.status as "active" | "disabled" | undefined) ?? "active", strategies };
  });
  const names = projects.map((p) => p.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) invalid(`${file}: projects: "${dup}" is listed twice`);
  const codes = projects.flatMap((p) => p.strategies.map((s) => s.doc.code));
  const dupCode = codes.find((c, i) => codes.indexOf(c) !== i);
  if (dupCode !== undefined) invalid(`${file}: strategy code "${dupCode}" is listed twice`);
  const tokens = list(doc.tokens, `${file}: tokens`).map((t, i) => token(ctx, t, `${file}: tokens[${i}]`));

  const existing = await ctx.store.listProjects();
  for (const p of projects) {
    if (existing.filter((e) => e.name === p.name).length > 1) invalid(`${file}: project name "${p.name}" matches several projects: rename them first`);
    const project = existing.find((e) => e.name === p.name);
    for (const s of p.strategies) {
      const current = await ctx.store.getStrategyByCode(s.doc.code);
      if (current && current.projectId !== project?.id) invalid(`${s.where}: code: strategy "${s.doc.code}" belongs to another project`);
    }
  }

  // 2. Write.
  const changes: ApplyChange[] = [];
  for (const p of projects) {
    let project = (await ctx.store.listProjects()).find((e) => e.name === p.name);
    if (!project) {
      const created = await createProject(ctx, { name: p.name });
      project = (await ctx.store.getProject(created.id))!;
      changes.push({ kind: "project", name: p.name, action: "created" });
    } else changes.push({ kind: "project", name: p.name, action: "unchanged" });
    if (project.status !== p.status) {
      await setProjectStatus(ctx, project.id, p.status);
      changes.at(-1)!.action = changes.at(-1)!.action === "created" ? "created" : "updated";
    }
    for (const s of p.strategies) {
      const current = await ctx.store.getStrategyByCode(s.doc.code);
      if (!current) {
        await createStrategy(ctx, { ...(s.data as object), project: project.id }, s.where);
        changes.push({ kind: "strategy", name: s.doc.code, action: "created" });
        continue;
      }
      // Fields the document leaves out go back to their defaults: the file is the whole truth.
      const wanted = {
        name: s.doc.name ?? s.doc.code,
        status: s.doc.status ?? "enabled",
        validFrom: s.doc.validFrom ?? null,
        validUntil: s.doc.validUntil ?? null,
        networks: s.doc.networks ?? null,
        rules: s.doc.rules ?? {},
      };
      const view = strategyView(current);
      const now = { name: view.name, status: view.status, validFrom: view.validFrom, validUntil: view.validUntil, networks: view.networks, rules: view.rules };
      const target = strategyView({ ...current, ...wanted });
      const next = { name: target.name, status: target.status, validFrom: target.validFrom, validUntil: target.validUntil, networks: target.networks, rules: target.rules };
      if (isDeepStrictEqual(now, next)) changes.push({ kind: "strategy", name: s.doc.code, action: "unchanged" });
      else {
        await updateStrategy(ctx, { code: s.doc.code, ...wanted, rules: target.rules }, s.where);
        changes.push({ kind: "strategy", name: s.doc.code, action: "updated" });
      }
    }
  }
  for (const t of tokens) {
    const current = await ctx.store.findToken(t.network, t.address);
    const name = `${t.network}:${t.symbol}`;
    if (current && isDeepStrictEqual(current, t)) {
      changes.push({ kind: "token", name, action: "unchanged" });
      continue;
    }
    await guarded(() => ctx.store.upsertToken(t));
    await audit(ctx, "token.upsert", name, current ?? null, t);
    changes.push({ kind: "token", name, action: current ? "updated" : "created" });
  }
  return changes;
});
