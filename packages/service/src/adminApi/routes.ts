/**
 * The admin API's routes as data: the router (app.ts) and the OpenAPI document (openapi.ts) are both made from
 * this one table. Each route calls an operation of src/admin — the same functions as the CLI.
 */
import type { AdminContext } from "../admin/context.ts";
import { invalid, requireSafeText } from "../admin/context.ts";
import { approveApplication, listApplications, rejectApplication } from "../admin/applications.ts";
import { apply } from "../admin/apply.ts";
import { listAudit } from "../admin/auditLog.ts";
import { createKey, listKeys, revokeKey, rotateKey, setKeyAccess } from "../admin/keys.ts";
import { createProject, listProjects, setProjectStatus, showProject } from "../admin/projects.ts";
import { listSponsorships, showSponsorship } from "../admin/sponsorships.ts";
import { createStrategy, listStrategies, setStrategyStatus, showStrategy, strategyUsage, strategyUsageHistory, updateStrategy } from "../admin/strategies.ts";
import { allowTankProject, creditTank, debitTank, disallowTankProject, listTanks, showTank, tankLedger } from "../admin/tanks.ts";
import { activity } from "../admin/activity.ts";
import { networkStatus } from "../admin/networks.ts";
import { serviceSetTokenSupport, serviceTokenSupport } from "../admin/tokens.ts";
import { checkStrategyPolicy } from "../admin/policyCheck.ts";
import { createWebhook, listProjectWebhooks, removeWebhook, replayWebhook, webhookDeliveries } from "../admin/webhooks.ts";

export interface AdminRequest {
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  body: unknown;
}

export interface AdminRoute {
  method: "get" | "post" | "patch";
  /** Koa-router path under /admin/v1 (":name" parameters). */
  path: string;
  summary: string;
  /** The JSON body it takes (for the OpenAPI document), if any. */
  body?: string;
  /** Query parameters it reads. */
  query?: readonly string[];
  /** 201 for creations, else 200. */
  status?: number;
  handler(ctx: AdminContext, req: AdminRequest): Promise<unknown>;
}

function object(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) invalid("the body must be a JSON object");
  return body as Record<string, unknown>;
}

const tankOf = (r: AdminRequest) => ({ network: r.params.network, sender: r.params.sender });

const SPONSORSHIP_FILTERS = ["project", "strategy", "network", "sender", "status", "userOpHash", "since", "until", "limit"] as const;

const ROUTES: readonly AdminRoute[] = [
  { method: "get", path: "/info", summary: "The service's configured networks (what network fields accept)", handler: async (ctx) => ({ networks: ctx.networks }) },
  {
    method: "get",
    path: "/networks",
    summary: "Each network's state: paymaster deposits, stake and signers on chain, the settlement watcher's lag",
    handler: (ctx) => networkStatus(ctx),
  },
  {
    method: "get",
    path: "/networks/:network/tokens",
    summary: "Whether each ERC-20 paymaster of the network allows each configured token (on chain)",
    handler: (ctx, r) => serviceTokenSupport(ctx, r.params.network),
  },
  {
    method: "post",
    path: "/networks/:network/tokens/:token/allow",
    summary: "Allow a token (configured symbol or address) on the network's ERC-20 paymasters; needs PAYMASTER_OWNER_KEY in the service's environment",
    handler: (ctx, r) => serviceSetTokenSupport(ctx, r.params.network, r.params.token, true),
  },
  {
    method: "post",
    path: "/networks/:network/tokens/:token/disallow",
    summary: "Disallow a token on the network's ERC-20 paymasters; needs PAYMASTER_OWNER_KEY in the service's environment",
    handler: (ctx, r) => serviceSetTokenSupport(ctx, r.params.network, r.params.token, false),
  },
  {
    method: "get",
    path: "/activity",
    summary: "Requests (ok, refused by reason) and sponsorships (by status, with costs) per time bucket",
    query: ["since", "until", "network", "bucket"],
    handler: (ctx, r) => activity(ctx, r.query),
  },
  { method: "get", path: "/projects/:id/webhooks", summary: "A project's webhook endpoints (never their secrets)", handler: (ctx, r) => listProjectWebhooks(ctx, r.params.id!) },
  {
    method: "post",
    path: "/projects/:id/webhooks",
    summary: "Add a webhook endpoint; the answer's `secret` is shown this once",
    body: "{url, kind?: events|approval, events?, timeoutMs?, defaultDecision?}",
    status: 201,
    handler: (ctx, r) => {
      const b = object(r.body);
      return createWebhook(ctx, { projectId: r.params.id!, ...(b as { url: string }) });
    },
  },
  { method: "post", path: "/webhooks/:id/delete", summary: "Remove a webhook endpoint", handler: (ctx, r) => removeWebhook(ctx, r.params.id!) },
  {
    method: "get",
    path: "/webhook-deliveries",
    summary: "Webhook events and their delivery, newest first (status=dead: the dead-letter list)",
    query: ["project", "status", "limit"],
    handler: (ctx, r) => webhookDeliveries(ctx, { ...(r.query.project ? { projectId: r.query.project } : {}), ...(r.query.status ? { status: r.query.status } : {}), ...(r.query.limit ? { limit: Number(r.query.limit) } : {}) }),
  },
  { method: "post", path: "/webhook-deliveries/:id/replay", summary: "Send a delivered or dead event again (same id)", handler: (ctx, r) => replayWebhook(ctx, r.params.id!) },

  { method: "get", path: "/projects", summary: "List projects", handler: (ctx) => listProjects(ctx) },
  { method: "post", path: "/projects", summary: "Create a project", body: "{name}", status: 201, handler: (ctx, r) => createProject(ctx, { name: object(r.body).name }) },
  { method: "get", path: "/projects/:id", summary: "A project with its keys and strategies", handler: (ctx, r) => showProject(ctx, r.params.id!) },
  { method: "post", path: "/projects/:id/disable", summary: "Disable a project (its keys are refused)", handler: (ctx, r) => setProjectStatus(ctx, r.params.id!, "disabled") },
  { method: "post", path: "/projects/:id/enable", summary: "Enable a project", handler: (ctx, r) => setProjectStatus(ctx, r.params.id!, "active") },

  { method: "get", path: "/keys", summary: "List API keys (never their plaintext)", query: ["project"], handler: (ctx, r) => listKeys(ctx, { projectId: r.query.project }) },
  {
    method: "post",
    path: "/keys",
    summary: "Create an API key; the answer's `key` is the plaintext, shown this once",
    body: "{projectId, label?, origins?, ips?}",
    status: 201,
    handler: (ctx, r) => {
      const b = object(r.body);
      if (typeof b.projectId !== "string") invalid("projectId: required (a project id)");
      return createKey(ctx, { projectId: b.projectId, label: b.label, origins: b.origins, ips: b.ips });
    },
  },
  {
    method: "post",
    path: "/keys/:id/access",
    summary: "Set a key's allowed origins ([] = server-side only, null = any) and client IP ranges (null = any)",
    body: "{origins?, ips?}",
    handler: (ctx, r) => setKeyAccess(ctx, r.params.id!, { origins: object(r.body).origins, ips: object(r.body).ips }),
  },
  { method: "post", path: "/keys/:id/revoke", summary: "Revoke an API key", handler: (ctx, r) => revokeKey(ctx, r.params.id!) },
  { method: "post", path: "/keys/:id/rotate", summary: "New key for the same project and label; the old one revoked", status: 201, handler: (ctx, r) => rotateKey(ctx, r.params.id!) },

  { method: "get", path: "/applications", summary: "Key applications, oldest first", query: ["status"], handler: (ctx, r) => listApplications(ctx, { status: r.query.status }) },
  {
    method: "post",
    path: "/applications/:id/approve",
    summary: "Approve: creates the project; the answer's claimToken (shown once) is for the applicant",
    handler: (ctx, r) => approveApplication(ctx, r.params.id!),
  },
  { method: "post", path: "/applications/:id/reject", summary: "Reject an application", body: "{reason}", handler: (ctx, r) => rejectApplication(ctx, r.params.id!, object(r.body).reason) },

  { method: "get", path: "/strategies", summary: "List strategies", query: ["project"], handler: (ctx, r) => listStrategies(ctx, { projectId: r.query.project }) },
  { method: "post", path: "/strategies", summary: "Create a strategy from a strategy document", body: "strategy document", status: 201, handler: (ctx, r) => createStrategy(ctx, r.body, "body") },
  { method: "get", path: "/strategies/:code", summary: "A strategy with its rules", handler: (ctx, r) => showStrategy(ctx, r.params.code!) },
  {
    method: "patch",
    path: "/strategies/:code",
    summary: "Change the fields the body gives",
    body: "strategy document without code",
    handler: (ctx, r) => {
      const b = object(r.body);
      if (b.code !== undefined && b.code !== r.params.code) invalid("code: a strategy's code never changes");
      return updateStrategy(ctx, { ...b, code: r.params.code }, "body");
    },
  },
  { method: "post", path: "/strategies/:code/enable", summary: "Enable a strategy", handler: (ctx, r) => setStrategyStatus(ctx, r.params.code!, "enabled") },
  { method: "post", path: "/strategies/:code/disable", summary: "Disable a strategy", handler: (ctx, r) => setStrategyStatus(ctx, r.params.code!, "disabled") },
  { method: "get", path: "/strategies/:code/usage", summary: "Spent, reserved and remaining against every cap", query: ["sender"], handler: (ctx, r) => strategyUsage(ctx, r.params.code!, { sender: r.query.sender }) },
  {
    method: "get",
    path: "/strategies/:code/history",
    summary: "Spent and reserved per UTC day of the last `days` (default 14), with the daily cap",
    query: ["days"],
    handler: (ctx, r) => strategyUsageHistory(ctx, r.params.code!, { ...(r.query.days === undefined ? {} : { days: r.query.days }) }),
  },
  {
    method: "post",
    path: "/strategies/:code/check",
    summary: "Dry run (pm_checkPolicy): every rule's verdict on a user operation under this strategy; nothing reserved or signed",
    body: "{userOp, network?, version?}",
    handler: (ctx, r) => checkStrategyPolicy(ctx, r.params.code!, object(r.body)),
  },

  { method: "get", path: "/tanks", summary: "Gas tanks, most recently changed first", query: ["network", "limit"], handler: (ctx, r) => listTanks(ctx, r.query) },
  { method: "get", path: "/tanks/:network/:sender", summary: "A sender's gas tank", handler: (ctx, r) => showTank(ctx, tankOf(r)) },
  {
    method: "get",
    path: "/tanks/:network/:sender/ledger",
    summary: "A gas tank with its credits, debits and the settled ops it paid for, newest first",
    query: ["limit"],
    handler: (ctx, r) => tankLedger(ctx, { ...tankOf(r), limit: r.query.limit }),
  },
  {
    method: "post",
    path: "/tanks/:network/:sender/credit",
    summary: "Credit a gas tank by hand",
    body: "{wei, reference?}",
    handler: (ctx, r) => creditTank(ctx, { ...tankOf(r), wei: object(r.body).wei, reference: object(r.body).reference }),
  },
  {
    method: "post",
    path: "/tanks/:network/:sender/debit",
    summary: "Debit a gas tank by hand (never beyond what is available)",
    body: "{wei, reference?}",
    handler: (ctx, r) => debitTank(ctx, { ...tankOf(r), wei: object(r.body).wei, reference: object(r.body).reference }),
  },
  {
    method: "post",
    path: "/tanks/:network/:sender/allow",
    summary: "Allow a project to draw from a gas tank (User Sponsor mode denies every project the tank has not allowed)",
    body: "{project}",
    handler: (ctx, r) => allowTankProject(ctx, { ...tankOf(r), project: object(r.body).project }),
  },
  {
    method: "post",
    path: "/tanks/:network/:sender/disallow",
    summary: "No longer allow a project to draw from a gas tank",
    body: "{project}",
    handler: (ctx, r) => disallowTankProject(ctx, { ...tankOf(r), project: object(r.body).project }),
  },

  { method: "get", path: "/sponsorships", summary: "List sponsorships, newest first", query: SPONSORSHIP_FILTERS, handler: (ctx, r) => listSponsorships(ctx, r.query) },
  { method: "get", path: "/sponsorships/:id", summary: "One sponsorship by id or userOpHash", handler: (ctx, r) => showSponsorship(ctx, r.params.id!) },

  { method: "post", path: "/apply", summary: "Declarative, idempotent create/update of projects, strategies and tokens", body: "apply document", handler: (ctx, r) => apply(ctx, r.body, "body") },
  {
    method: "get",
    path: "/audit",
    summary: "The audit log, newest first",
    query: ["action", "target", "limit"],
    handler: (ctx, r) => {
      const limit = r.query.limit === undefined ? undefined : Number(r.query.limit);
      if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000)) invalid("limit: an integer from 1 to 1000");
      return listAudit(ctx, { action: r.query.action, target: r.query.target, limit });
    },
  },
];

/** Every route, its whole input (path parameters, query, body) refused first when a string in it is not safe text. */
export const ADMIN_ROUTES: readonly AdminRoute[] = ROUTES.map((route) => ({
  ...route,
  handler: (ctx: AdminContext, r: AdminRequest) => {
    requireSafeText(r.params, { root: "path" });
    requireSafeText(r.query, { root: "query" });
    requireSafeText(r.body);
    return route.handler(ctx, r);
  },
}));
