/**
 * Project billing (a hosted operator charging its projects; docs/policies.md "Project billing"): the projects
 * billed, one project's plan and balance, the plan's changes, credits and corrections by hand (idempotent by
 * reference), and statements. USD amounts are dollars as decimal strings ("25.50", at most 6 decimals: money is
 * never rounded on the way in).
 *
 * Roles (the operator roles of DESIGN.md §11): reading is viewer; changing a plan, crediting and correcting are admin.
 */
import { formatUsdMicros } from "../policy/rules.ts";
import { MAX_MARKUP_BPS } from "../billing/charge.ts";
import { buildStatement, currentMonth, monthPeriod, rangePeriod, type Statement, type StatementPeriod } from "../billing/statement.ts";
import type { BillingAccount, BillingPlan, BillingPlanChange } from "../billing/ledger.ts";
import { audit, guarded, invalid, mutation, notFound, read, type AdminContext } from "./context.ts";
import { parseTime } from "./sponsorships.ts";

const USD_RE = /^(-?)(\d{1,30})(?:\.(\d{1,6}))?$/;

/** Dollars ("25.50") as USD micro-units; `signed` admits a leading "-". */
export function validUsd(value: unknown, field: string, options: { signed?: boolean } = {}): bigint {
  const match = typeof value === "string" ? USD_RE.exec(value.trim()) : null;
  if (!match || (match[1] === "-" && !options.signed)) {
    invalid(`${field}: must be an amount of dollars with at most 6 decimals (e.g. "25.50")${options.signed ? ", negative to take away" : ""}, not ${JSON.stringify(value)}`);
  }
  const micros = BigInt(match[2]!) * 1_000_000n + BigInt((match[3] ?? "").padEnd(6, "0"));
  return match[1] === "-" ? -micros : micros;
}

const usdOrNull = (micros: bigint | null): string | null => (micros === null ? null : formatUsdMicros(micros));

const planView = (plan: BillingPlan | undefined) => ({
  enabled: plan?.enabled ?? false,
  markupBps: plan?.markupBps ?? 0,
  feeUsd: formatUsdMicros(plan?.feeUsdMicros ?? 0n),
  alertBelowUsd: usdOrNull(plan?.alertBelowUsdMicros ?? null),
});

const accountView = (account: BillingAccount) => ({
  balanceUsd: formatUsdMicros(account.balanceUsdMicros),
  heldUsd: formatUsdMicros(account.heldUsdMicros),
  availableUsd: formatUsdMicros(account.balanceUsdMicros - account.heldUsdMicros),
  updatedAt: account.updatedAt,
});

async function project(ctx: AdminContext, id: unknown): Promise<{ id: string; name: string }> {
  const found = typeof id === "string" && id !== "" ? await ctx.store.getProject(id) : undefined;
  if (!found) notFound(`project ${JSON.stringify(id)} not found`);
  return { id: found.id, name: found.name };
}

/** Whether the balance is below the plan's alert threshold (none set: never low). */
function isLow(plan: BillingPlan | null | undefined, account: BillingAccount): boolean {
  return plan?.alertBelowUsdMicros !== null && plan?.alertBelowUsdMicros !== undefined && account.balanceUsdMicros < plan.alertBelowUsdMicros;
}

async function billingView(ctx: AdminContext, p: { id: string; name: string }) {
  const [plan, account] = await Promise.all([ctx.store.getBillingPlan(p.id), ctx.store.getBillingAccount(p.id)]);
  return { projectId: p.id, projectName: p.name, ...planView(plan), ...accountView(account), low: isLow(plan, account) };
}

/** One project's plan and balance: balance, held by open sponsorships, available (balance - held). */
export const showBilling = read("viewer", async function showBilling(ctx: AdminContext, projectId: string) {
  return billingView(ctx, await project(ctx, projectId));
});

/** Every project with a plan or a balance, by name. */
export const listBilling = read("viewer", async function listBilling(ctx: AdminContext) {
  const [accounts, projects] = await Promise.all([ctx.store.listBillingAccounts(), ctx.store.listProjects()]);
  const names = new Map(projects.map((p) => [p.id, p.name]));
  return accounts
    .map(({ projectId, plan, account }) => ({ projectId, projectName: names.get(projectId) ?? projectId, ...planView(plan), ...accountView(account), low: isLow(plan, account) }))
    .sort((a, b) => a.projectName.localeCompare(b.projectName) || a.projectId.localeCompare(b.projectId));
});

export interface PlanInput {
  enabled?: unknown;
  markupBps?: unknown;
  feeUsd?: unknown;
  /** Dollars, or null (or "none") for no alert. */
  alertBelowUsd?: unknown;
}

function planChange(input: PlanInput): BillingPlanChange {
  if (typeof input !== "object" || input === null) invalid("the plan must be an object");
  const known = new Set(["enabled", "markupBps", "feeUsd", "alertBelowUsd"]);
  const unknown = Object.keys(input).find((k) => !known.has(k));
  if (unknown !== undefined) invalid(`${unknown}: not a plan field (enabled, markupBps, feeUsd, alertBelowUsd)`);
  const change: BillingPlanChange = {};
  if (input.enabled !== undefined) {
    if (typeof input.enabled !== "boolean") invalid("enabled: must be true or false");
    change.enabled = input.enabled;
  }
  if (input.markupBps !== undefined) {
    const bps = typeof input.markupBps === "string" && /^\d+$/.test(input.markupBps) ? Number(input.markupBps) : input.markupBps;
    if (typeof bps !== "number" || !Number.isSafeInteger(bps) || bps < 0 || bps > MAX_MARKUP_BPS) {
      invalid(`markupBps: must be an integer number of basis points from 0 to ${MAX_MARKUP_BPS} (100 = 1 %), not ${JSON.stringify(input.markupBps)}`);
    }
    change.markupBps = bps;
  }
  if (input.feeUsd !== undefined) change.feeUsdMicros = validUsd(input.feeUsd, "feeUsd");
  if (input.alertBelowUsd !== undefined) change.alertBelowUsdMicros = input.alertBelowUsd === null || input.alertBelowUsd === "none" ? null : validUsd(input.alertBelowUsd, "alertBelowUsd");
  if (Object.keys(change).length === 0) invalid("give at least one of enabled, markupBps, feeUsd, alertBelowUsd");
  return change;
}

/**
 * Creates or changes a project's plan (the fields given; a new plan starts disabled, 0 markup, no fee, no alert).
 * New reservations are priced by it at once (every replica: the plan is read per config version); sponsorships
 * already open keep the terms they were reserved with.
 */
export const setBillingPlan = mutation("admin", async function setBillingPlan(ctx: AdminContext, projectId: string, input: PlanInput) {
  const p = await project(ctx, projectId);
  const change = planChange(input);
  const { plan, previous } = await guarded(() => ctx.store.setBillingPlan(p.id, change));
  await audit(ctx, "billing.plan", p.id, previous ? planView(previous) : null, planView(plan));
  return billingView(ctx, p);
});

function reference(value: unknown): string {
  if (typeof value !== "string" || value.trim() === "" || value.length > 200) {
    invalid("reference: required, 1 to 200 characters (e.g. the invoice or payment id): the same reference twice counts once");
  }
  return value;
}

/**
 * A credit or a correction by hand: audited with the balance before and after; a repeated reference changes (and
 * audits) nothing. Run inside the mutation of creditBilling or adjustBilling.
 */
async function addEntry(ctx: AdminContext, projectId: string, input: { usd?: unknown; reference?: unknown }, kind: "credit" | "adjustment") {
  const p = await project(ctx, projectId);
  const amount = validUsd(input?.usd, "usd", { signed: kind === "adjustment" });
  if (amount === 0n || (kind === "credit" && amount < 0n)) invalid(`usd: ${kind === "credit" ? "a credit must be positive" : "a correction must not be zero"}`);
  const ref = reference(input?.reference);
  const before = accountView(await ctx.store.getBillingAccount(p.id));
  const { entry, account, duplicate } = await guarded(() => ctx.store.addBillingEntry({ projectId: p.id, kind, amountUsdMicros: amount, reference: ref, actor: ctx.actor }));
  const after = { projectId: p.id, ...accountView(account), [kind === "credit" ? "creditedUsd" : "adjustedUsd"]: formatUsdMicros(amount), reference: ref, seq: entry.seq, duplicate };
  if (!duplicate) await audit(ctx, `billing.${kind === "credit" ? "credit" : "adjust"}`, p.id, before, after);
  return after;
}

/** Adds prepaid credit (a positive amount of dollars) to a project's balance, idempotent by `reference`. */
export const creditBilling = mutation("admin", function creditBilling(ctx: AdminContext, projectId: string, input: { usd?: unknown; reference?: unknown }) {
  return addEntry(ctx, projectId, input, "credit");
});

/** A correction of the balance by hand (signed dollars: "-5.00" takes away), idempotent by `reference`; an adjustment line. */
export const adjustBilling = mutation("admin", function adjustBilling(ctx: AdminContext, projectId: string, input: { usd?: unknown; reference?: unknown }) {
  return addEntry(ctx, projectId, input, "adjustment");
});

export interface StatementQuery {
  /** A calendar month (UTC), "YYYY-MM"; the default is the current one. */
  month?: string;
  /** Any range instead: unix seconds or ISO 8601, [since, until). */
  since?: string;
  until?: string;
}

/** The period a statement query asks for. */
export function statementPeriod(ctx: AdminContext, q: StatementQuery): StatementPeriod {
  const now = ctx.now?.() ?? Math.floor(Date.now() / 1000);
  if (q.month !== undefined && (q.since !== undefined || q.until !== undefined)) invalid("month: give a month, or since and until, not both");
  if (q.since !== undefined || q.until !== undefined) {
    const since = parseTime(q.since, "since");
    const until = parseTime(q.until, "until");
    if (since === undefined || until === undefined) invalid("since, until: a range needs both (unix seconds or ISO 8601)");
    if (since >= until) invalid("since: must be before until");
    return rangePeriod(since, until);
  }
  const month = q.month ?? currentMonth(now);
  return monthPeriod(month) ?? invalid(`month: must be YYYY-MM (a calendar month, UTC), not ${JSON.stringify(month)}`);
}

/** A project's statement for a period (the current calendar month by default): every line, opening and closing balance. */
export const billingStatement = read("viewer", async function billingStatement(ctx: AdminContext, projectId: string, q: StatementQuery = {}): Promise<Statement> {
  const p = await project(ctx, projectId);
  const period = statementPeriod(ctx, q);
  const slice = await ctx.store.billingLedger(p.id, period.since, period.until);
  return buildStatement(p, period, slice, ctx.now?.() ?? Math.floor(Date.now() / 1000));
});
