/**
 * Strategy documents (a JSON or YAML file, an API body, an `apply` entry): the strategy's envelope checked here,
 * its `rules` by the schema the service itself uses (policy/schema.ts parseStrategyRules), every error naming
 * its field ("rules.caps.daily.maxUsd: …").
 *
 *   code: free-mint            # what clients send as strategy_code; unique; never changes
 *   name: Free mints
 *   project: <project id>      # create only
 *   status: enabled            # or disabled (default enabled)
 *   networks: [base-sepolia]   # default: every configured network
 *   validFrom: 1767225600      # unix seconds, optional
 *   validUntil: 1798761600
 *   rules: { caps: { daily: { maxUsd: "25.00" } } }
 */
import { parse as parseYaml } from "yaml";
import { parseStrategyRules } from "../policy/schema.ts";
import type { StrategyRules } from "../policy/types.ts";
import { invalid, invalidField, requireSafeText, type AdminContext } from "./context.ts";

export interface StrategyDocument {
  code: string;
  name?: string;
  project?: string;
  status?: "enabled" | "disabled";
  networks?: string[] | null;
  validFrom?: number | null;
  validUntil?: number | null;
  rules?: StrategyRules;
}

const FIELDS = new Set(["code", "name", "project", "status", "networks", "validFrom", "validUntil", "rules"]);
const CODE_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The text of a JSON or YAML file as data (YAML is a superset of JSON); a syntax error names the file and line. */
export function parseDocumentText(text: string, file: string): unknown {
  let data: unknown;
  try {
    data = parseYaml(text, { prettyErrors: true, maxAliasCount: 100 });
  } catch (err) {
    invalid(`${file}: not valid JSON or YAML: ${(err as Error).message.split("\n")[0]}`);
  }
  requireSafeText(data, { where: file });
  return data;
}

function time(value: unknown, where: string, field: string): number | null | undefined {
  if (value === undefined || value === null) return value as null | undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) invalidField(where, field, "must be unix seconds (a non-negative integer)");
  return value;
}

/** A strategy document checked; `where` prefixes every error (e.g. the file name). Errors carry the field(s). */
export function parseStrategyDocument(ctx: AdminContext, data: unknown, where = "strategy"): StrategyDocument {
  if (typeof data !== "object" || data === null || Array.isArray(data)) invalid(`${where}: must be an object with code, name, rules, …`);
  const doc = data as Record<string, unknown>;
  const bad = (field: string, problem: string): never => invalidField(where, field, problem);
  const unknown = Object.keys(doc).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) bad(unknown, `unknown field (known: ${[...FIELDS].join(", ")})`);
  if (typeof doc.code !== "string" || !CODE_RE.test(doc.code)) bad("code", "required, 1-64 letters, digits, '.', '_' or '-'");
  const out: StrategyDocument = { code: doc.code as string };
  if (doc.name !== undefined) {
    if (typeof doc.name !== "string" || doc.name.length > 200) bad("name", "must be a string of at most 200 characters");
    out.name = doc.name as string;
  }
  if (doc.project !== undefined) {
    if (typeof doc.project !== "string" || doc.project === "") bad("project", "must be a project id");
    out.project = doc.project as string;
  }
  if (doc.status !== undefined) {
    if (doc.status !== "enabled" && doc.status !== "disabled") bad("status", 'must be "enabled" or "disabled"');
    out.status = doc.status as "enabled" | "disabled";
  }
  if (doc.networks !== undefined) {
    if (doc.networks !== null) {
      if (!Array.isArray(doc.networks) || doc.networks.length === 0) bad("networks", "must be a non-empty list of network names, or null for every network");
      for (const [i, n] of (doc.networks as unknown[]).entries()) {
        if (typeof n !== "string" || !ctx.networks.includes(n)) {
          bad(`networks[${i}]`, `unknown network ${JSON.stringify(n)} (configured: ${ctx.networks.join(", ")})`);
        }
      }
    }
    out.networks = doc.networks as string[] | null;
  }
  const validFrom = time(doc.validFrom, where, "validFrom");
  const validUntil = time(doc.validUntil, where, "validUntil");
  if (validFrom !== undefined) out.validFrom = validFrom;
  if (validUntil !== undefined) out.validUntil = validUntil;
  if (typeof validFrom === "number" && typeof validUntil === "number" && validUntil <= validFrom) bad("validUntil", "must be after validFrom");
  if (doc.rules !== undefined) {
    const parsed = parseStrategyRules(doc.rules);
    if (!parsed.ok) {
      // "caps.daily.maxUsd: expected …" per issue ("(root): …" for the rules object itself).
      const issues = parsed.errors.map((e) => {
        const cut = e.indexOf(": ");
        const path = e.slice(0, cut);
        return { field: path === "(root)" ? "rules" : `rules${path.startsWith("[") ? "" : "."}${path}`, message: e.slice(cut + 2) };
      });
      invalid(`${where}: ${issues.map((i) => `${i.field}: ${i.message}`).join("; ")}`, issues);
    }
    out.rules = parsed.rules;
  }
  return out;
}
