/**
 * The spec's key application process: a team applies (public endpoint, `submitApplication`), the operator lists
 * and decides (`key applications|approve|reject`, admin API), and an approved applicant claims the key once
 * with the claim token the operator hands over (`claimApplication`, public endpoint). No key exists before the
 * claim, and the plaintext exists only in the claim's answer; the claim token is shown once to the operator and
 * stored hashed. An application never creates two projects or two keys (store transactions).
 */
import { randomBytes } from "node:crypto";
import { DEFAULT_APPLICATION_EXPIRY_DAYS } from "../config/schema.ts";
import { sha256Hex } from "../store/apiKeys.ts";
import type { KeyApplication, KeyApplicationStatus } from "../store/types.ts";
import { AdminError, audit, guarded, invalid, notFound, type AdminContext, mutation, read } from "./context.ts";
import { PUBLIC_PRINCIPAL } from "./roles.ts";

/** Bounds of an application (the endpoint is public). */
export const APPLICATION_LIMITS = Object.freeze({ contact: 200, projectName: 100, intendedUse: 2000, networks: 20, pending: 1000 });
const STATUSES: readonly KeyApplicationStatus[] = ["pending", "approved", "rejected", "claimed"];
const CLAIM_TOKEN_PREFIX = "pmclaim_";

function text(value: unknown, field: string, max: number): string {
  if (typeof value !== "string" || value.trim() === "" || value.length > max) invalid(`${field}: required, at most ${max} characters`);
  return value.trim();
}

/** Pending applications older than the configured days (default 14) are rejected by "expiry" first. */
async function expireStale(ctx: AdminContext): Promise<void> {
  const days = ctx.applicationExpiryDays ?? ctx.service?.config.applicationExpiryDays ?? DEFAULT_APPLICATION_EXPIRY_DAYS;
  await ctx.store.expireKeyApplications(days * 86_400);
}

/**
 * A public application, checked; refused while too many (not yet expired) wait for the operator. The public door's
 * (its principal only); no audit row: the application is its own record.
 */
export const submitApplication = mutation(PUBLIC_PRINCIPAL, async function submitApplication(ctx: AdminContext, body: unknown): Promise<{ id: string; status: KeyApplicationStatus }> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) invalid("the body must be a JSON object: {contact, project, networks, use}");
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).find((k) => !["contact", "project", "networks", "use"].includes(k));
  if (unknown !== undefined) invalid(`${unknown.slice(0, 64)}: unknown field (known: contact, project, networks, use)`);
  const contact = text(b.contact, "contact", APPLICATION_LIMITS.contact);
  const projectName = text(b.project, "project", APPLICATION_LIMITS.projectName);
  const intendedUse = text(b.use, "use", APPLICATION_LIMITS.intendedUse);
  if (!Array.isArray(b.networks) || b.networks.length === 0 || b.networks.length > APPLICATION_LIMITS.networks) {
    invalid(`networks: a list of 1 to ${APPLICATION_LIMITS.networks} of ${ctx.networks.join(", ")}`);
  }
  const networks = b.networks.map((n, i) => {
    if (typeof n !== "string" || !ctx.networks.includes(n)) invalid(`networks[${i}]: not a network of this service (${ctx.networks.join(", ")})`);
    return n;
  });
  await expireStale(ctx);
  if ((await ctx.store.countKeyApplications("pending")) >= APPLICATION_LIMITS.pending) {
    throw new AdminError("CONFLICT", "too many applications are waiting for the operator; try again later");
  }
  const application = await ctx.store.createKeyApplication({ contact, projectName, networks: [...new Set(networks)], intendedUse });
  return { id: application.id, status: application.status };
});

export const listApplications = read("viewer", async function listApplications(ctx: AdminContext, input: { status?: string }): Promise<KeyApplication[]> {
  if (input.status !== undefined && !STATUSES.includes(input.status as KeyApplicationStatus)) invalid(`status: one of ${STATUSES.join(", ")}`);
  await expireStale(ctx);
  return ctx.store.listKeyApplications(input.status as KeyApplicationStatus | undefined);
});

/** Approves: the project is created; the answer's claimToken (shown this once) is for the applicant. */
export const approveApplication = mutation("operator", async function approveApplication(ctx: AdminContext, id: string) {
  const before = await ctx.store.getKeyApplication(id);
  if (!before) notFound(`application ${JSON.stringify(id)} not found`);
  const claimToken = CLAIM_TOKEN_PREFIX + randomBytes(32).toString("base64url");
  const after = await guarded(() => ctx.store.approveKeyApplication(id, { decidedBy: ctx.actor, claimTokenHash: sha256Hex(claimToken) }));
  await audit(ctx, "application.approve", id, before, after);
  return { ...after, claimToken };
});

export const rejectApplication = mutation("operator", async function rejectApplication(ctx: AdminContext, id: string, reason: unknown) {
  const why = text(reason, "reason", 500);
  const before = await ctx.store.getKeyApplication(id);
  if (!before) notFound(`application ${JSON.stringify(id)} not found`);
  const after = await guarded(() => ctx.store.rejectKeyApplication(id, { decidedBy: ctx.actor, reason: why }));
  await audit(ctx, "application.reject", id, before, after);
  return after;
});

/**
 * The applicant's claim: the key, exactly once; a used, unknown or rejected token gets NOT_FOUND. The public
 * door's: only its principal calls it (an operator's is refused), and no admin route offers it.
 */
export const claimApplication = mutation(PUBLIC_PRINCIPAL, async function claimApplication(ctx: AdminContext, body: unknown) {
  const token = (body as { claimToken?: unknown } | null)?.claimToken;
  if (typeof token !== "string" || !token.startsWith(CLAIM_TOKEN_PREFIX) || token.length > 200) invalid("claimToken: required (pmclaim_…)");
  const claimed = await ctx.store.claimKeyApplication(sha256Hex(token));
  if (!claimed) notFound("this claim token is unknown or has been used already");
  await audit(ctx, "application.claim", claimed.application.id, null, { projectId: claimed.apiKey.projectId, apiKeyId: claimed.apiKey.id });
  // The codes the key's requests can name (strategy_code): none yet when the operator has made none.
  const strategies = (await ctx.store.listStrategies(claimed.apiKey.projectId)).filter((s) => s.status === "enabled").map((s) => s.code);
  return { projectId: claimed.apiKey.projectId, apiKeyId: claimed.apiKey.id, apiKey: claimed.plaintext, networks: claimed.application.networks, strategies };
});
