/**
 * The admin API's routes as data: the router (app.ts), the OpenAPI document (openapi.ts) and the table of roles
 * (docs/admin-api.md, checked by test/adminRoles.test.ts) are all made from this one table. Each route calls one
 * operation of src/admin — the same functions as the CLI — and needs the role that operation declares.
 */
import type { AdminContext, AdminOperation } from "../admin/context.ts";
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
import { networkStatus, serviceInfo } from "../admin/networks.ts";
import { serviceSetTokenSupport, serviceTokenSupport } from "../admin/tokens.ts";
import { checkStrategyPolicy } from "../admin/policyCheck.ts";
import { createWebhook, listProjectWebhooks, removeWebhook, replayWebhook, webhookDeliveries } from "../admin/webhooks.ts";
import { adjustBilling, billingStatement, creditBilling, listBilling, setBillingPlan, showBilling } from "../admin/billing.ts";
import { statementFile, statementFileName, type Statement } from "../billing/statement.ts";

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
  /** Media types of its answer beside JSON (a FileAnswer), for the OpenAPI document. */
  files?: readonly string[];
  /** The operation of src/admin the route calls, and only that: the role it declares is the route's. */
  operation: AdminOperation<never, unknown>;
  handler(ctx: AdminContext, req: AdminRequest): Promise<unknown>;
}

/** An answer that is a file to download (a statement as CSV or JSON) rather than a JSON body. */
export class FileAnswer {
  readonly name: string;
  readonly contentType: string;
  readonly body: string;
  constructor(name: string, contentType: string, body: string) {
    this.name = name;
    this.contentType = contentType;
    this.body = body;
  }
}

type RouteSpec = Omit<AdminRoute, "operation" | "handler">;

/**
 * A route calling `operation` with the arguments `input` makes of the request, its result shaped by `answer` (a
 * file to download, say) when given. The route holds the operation itself, so the role the gate checks (app.ts)
 * is the one declared where the operation is defined: a route cannot call one operation and be checked for another.
 */
function route<A extends [] | unknown[], R>(
  spec: RouteSpec,
  operation: AdminOperation<A, R>,
  input: (r: AdminRequest) => NoInfer<A>,
  answer?: (result: R, r: AdminRequest) => unknown,
): AdminRoute {
  return {
    ...spec,
    operation: operation as AdminOperation<never, unknown>,
    handler: async (ctx, r) => {
      const result = await operation(ctx, ...input(r));
      return answer ? answer(result, r) : result;
    },
  };
}

function object(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) invalid("the body must be a JSON object");
  return body as Record<string, unknown>;
}

const tankOf = (r: AdminRequest) => ({ network: r.params.network, sender: r.params.sender });

/** A statement's download format (format=csv|json), checked before the statement is read; none: the JSON answer. */
function statementFormat(r: AdminRequest): "csv" | "json" | undefined {
  const { format } = r.query;
  if (format !== undefined && format !== "csv" && format !== "json") invalid(`format: csv or json, not ${JSON.stringify(format)}`);
  return format;
}

/** A project's statement: as it is, or as a file to download. */
function statementAnswer(statement: Statement, r: AdminRequest): unknown {
  const format = statementFormat(r);
  if (format === undefined) return statement;
  const type = format === "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8";
  return new FileAnswer(statementFileName(statement, format), type, statementFile(statement, format));
}

const SPONSORSHIP_FILTERS = ["project", "strategy", "network", "sender", "status", "userOpHash", "since", "until", "limit"] as const;

const ROUTES: readonly AdminRoute[] = [
  route({ method: "get", path: "/info", summary: "The service's configured networks (what network fields accept)" }, serviceInfo, () => []),
  route({ method: "get", path: "/networks", summary: "Each network's state: paymaster deposits, stake and signers on chain, the settlement watcher's lag" }, networkStatus, () => []),
  route(
    { method: "get", path: "/networks/:network/tokens", summary: "Whether each ERC-20 paymaster of the network allows each configured token (on chain)" },
    serviceTokenSupport,
    (r) => [r.params.network],
  ),
  route(
    {
      method: "post",
      path: "/networks/:network/tokens/:token/allow",
      summary: "Allow a token (configured symbol or address) on the network's ERC-20 paymasters; needs PAYMASTER_OWNER_KEY in the service's environment",
    },
    serviceSetTokenSupport,
    (r) => [r.params.network, r.params.token, true],
  ),
  route(
    { method: "post", path: "/networks/:network/tokens/:token/disallow", summary: "Disallow a token on the network's ERC-20 paymasters; needs PAYMASTER_OWNER_KEY in the service's environment" },
    serviceSetTokenSupport,
    (r) => [r.params.network, r.params.token, false],
  ),
  route(
    { method: "get", path: "/activity", summary: "Requests (ok, refused by reason) and sponsorships (by status, with costs) per time bucket", query: ["since", "until", "network", "bucket"] },
    activity,
    (r) => [r.query],
  ),
  route({ method: "get", path: "/projects/:id/webhooks", summary: "A project's webhook endpoints (never their secrets)" }, listProjectWebhooks, (r) => [r.params.id!]),
  route(
    {
      method: "post",
      path: "/projects/:id/webhooks",
      summary: "Add a webhook endpoint; the answer's `secret` is shown this once",
      body: "{url, kind?: events|approval, events?, timeoutMs?, defaultDecision?}",
      status: 201,
    },
    createWebhook,
    (r) => [{ projectId: r.params.id!, ...(object(r.body) as { url: string }) }],
  ),
  route({ method: "post", path: "/webhooks/:id/delete", summary: "Remove a webhook endpoint" }, removeWebhook, (r) => [r.params.id!]),
  route(
    { method: "get", path: "/webhook-deliveries", summary: "Webhook events and their delivery, newest first (status=dead: the dead-letter list)", query: ["project", "status", "limit"] },
    webhookDeliveries,
    (r) => [{ ...(r.query.project ? { projectId: r.query.project } : {}), ...(r.query.status ? { status: r.query.status } : {}), ...(r.query.limit ? { limit: Number(r.query.limit) } : {}) }],
  ),
  route({ method: "post", path: "/webhook-deliveries/:id/replay", summary: "Send a delivered or dead event again (same id)" }, replayWebhook, (r) => [r.params.id!]),

  route({ method: "get", path: "/billing", summary: "Projects billed: each one's plan, balance, held and available amounts (USD)" }, listBilling, () => []),
  route({ method: "get", path: "/projects/:id/billing", summary: "A project's billing plan and prepaid balance (USD)" }, showBilling, (r) => [r.params.id!]),
  route(
    {
      method: "post",
      path: "/projects/:id/billing",
      summary: "Set a project's billing plan (the fields given): enabled, markupBps, feeUsd (per settled op), alertBelowUsd (null: none)",
      body: "{enabled?, markupBps?, feeUsd?, alertBelowUsd?}",
    },
    setBillingPlan,
    (r) => [r.params.id!, object(r.body)],
  ),
  route(
    {
      method: "post",
      path: "/projects/:id/billing/credit",
      summary: "Add prepaid credit to a project's balance; the same reference twice credits once, another amount with it is 409",
      body: "{usd, reference}",
    },
    creditBilling,
    (r) => [r.params.id!, object(r.body)],
  ),
  route(
    { method: "post", path: "/projects/:id/billing/adjust", summary: "Correct a project's balance by hand (signed dollars); idempotent by reference", body: "{usd, reference}" },
    adjustBilling,
    (r) => [r.params.id!, object(r.body)],
  ),
  route(
    {
      method: "get",
      path: "/projects/:id/billing/statement",
      summary: "A project's statement for a calendar month (month=YYYY-MM, default the current one, UTC) or any range (since, until); format=csv|json: a file to download",
      query: ["month", "since", "until", "format"],
      files: ["text/csv", "application/json"],
    },
    billingStatement,
    (r) => {
      statementFormat(r);
      return [r.params.id!, { month: r.query.month, since: r.query.since, until: r.query.until }];
    },
    statementAnswer,
  ),

  route({ method: "get", path: "/projects", summary: "List projects" }, listProjects, () => []),
  route({ method: "post", path: "/projects", summary: "Create a project", body: "{name}", status: 201 }, createProject, (r) => [{ name: object(r.body).name }]),
  route({ method: "get", path: "/projects/:id", summary: "A project with its keys and strategies" }, showProject, (r) => [r.params.id!]),
  route({ method: "post", path: "/projects/:id/disable", summary: "Disable a project (its keys are refused)" }, setProjectStatus, (r) => [r.params.id!, "disabled" as const]),
  route({ method: "post", path: "/projects/:id/enable", summary: "Enable a project" }, setProjectStatus, (r) => [r.params.id!, "active" as const]),

  route({ method: "get", path: "/keys", summary: "List API keys (never their plaintext)", query: ["project"] }, listKeys, (r) => [{ projectId: r.query.project }]),
  route(
    { method: "post", path: "/keys", summary: "Create an API key; the answer's `key` is the plaintext, shown this once", body: "{projectId, label?, origins?, ips?}", status: 201 },
    createKey,
    (r) => {
      const b = object(r.body);
      if (typeof b.projectId !== "string") invalid("projectId: required (a project id)");
      return [{ projectId: b.projectId, label: b.label, origins: b.origins, ips: b.ips }];
    },
  ),
  route(
    {
      method: "post",
      path: "/keys/:id/access",
      summary: "Set a key's allowed origins ([] = server-side only, null = any) and client IP ranges (null = any)",
      body: "{origins?, ips?}",
    },
    setKeyAccess,
    (r) => [r.params.id!, { origins: object(r.body).origins, ips: object(r.body).ips }],
  ),
  route({ method: "post", path: "/keys/:id/revoke", summary: "Revoke an API key" }, revokeKey, (r) => [r.params.id!]),
  route({ method: "post", path: "/keys/:id/rotate", summary: "New key for the same project and label; the old one revoked", status: 201 }, rotateKey, (r) => [r.params.id!]),

  route({ method: "get", path: "/applications", summary: "Key applications, oldest first", query: ["status"] }, listApplications, (r) => [{ status: r.query.status }]),
  route(
    { method: "post", path: "/applications/:id/approve", summary: "Approve: creates the project; the answer's claimToken (shown once) is for the applicant" },
    approveApplication,
    (r) => [r.params.id!],
  ),
  route({ method: "post", path: "/applications/:id/reject", summary: "Reject an application", body: "{reason}" }, rejectApplication, (r) => [r.params.id!, object(r.body).reason]),

  route({ method: "get", path: "/strategies", summary: "List strategies", query: ["project"] }, listStrategies, (r) => [{ projectId: r.query.project }]),
  route({ method: "post", path: "/strategies", summary: "Create a strategy from a strategy document", body: "strategy document", status: 201 }, createStrategy, (r) => [r.body, "body"]),
  route({ method: "get", path: "/strategies/:code", summary: "A strategy with its rules" }, showStrategy, (r) => [r.params.code!]),
  route({ method: "patch", path: "/strategies/:code", summary: "Change the fields the body gives", body: "strategy document without code" }, updateStrategy, (r) => {
    const b = object(r.body);
    if (b.code !== undefined && b.code !== r.params.code) invalid("code: a strategy's code never changes");
    return [{ ...b, code: r.params.code }, "body"];
  }),
  route({ method: "post", path: "/strategies/:code/enable", summary: "Enable a strategy" }, setStrategyStatus, (r) => [r.params.code!, "enabled" as const]),
  route({ method: "post", path: "/strategies/:code/disable", summary: "Disable a strategy" }, setStrategyStatus, (r) => [r.params.code!, "disabled" as const]),
  route(
    { method: "get", path: "/strategies/:code/usage", summary: "Spent, reserved and remaining against every cap", query: ["sender"] },
    strategyUsage,
    (r) => [r.params.code!, { sender: r.query.sender }],
  ),
  route(
    { method: "get", path: "/strategies/:code/history", summary: "Spent and reserved per UTC day of the last `days` (default 14), with the daily cap", query: ["days"] },
    strategyUsageHistory,
    (r) => [r.params.code!, { ...(r.query.days === undefined ? {} : { days: r.query.days }) }],
  ),
  route(
    {
      method: "post",
      path: "/strategies/:code/check",
      summary: "Dry run (pm_checkPolicy): every rule's verdict on a user operation under this strategy; nothing reserved or signed",
      body: "{userOp, network?, version?}",
    },
    checkStrategyPolicy,
    (r) => [r.params.code!, object(r.body)],
  ),

  route({ method: "get", path: "/tanks", summary: "Gas tanks, most recently changed first", query: ["network", "limit"] }, listTanks, (r) => [r.query]),
  route({ method: "get", path: "/tanks/:network/:sender", summary: "A sender's gas tank" }, showTank, (r) => [tankOf(r)]),
  route(
    { method: "get", path: "/tanks/:network/:sender/ledger", summary: "A gas tank with its credits, debits and the settled ops it paid for, newest first", query: ["limit"] },
    tankLedger,
    (r) => [{ ...tankOf(r), limit: r.query.limit }],
  ),
  route({ method: "post", path: "/tanks/:network/:sender/credit", summary: "Credit a gas tank by hand", body: "{wei, reference?}" }, creditTank, (r) => [
    { ...tankOf(r), wei: object(r.body).wei, reference: object(r.body).reference },
  ]),
  route({ method: "post", path: "/tanks/:network/:sender/debit", summary: "Debit a gas tank by hand (never beyond what is available)", body: "{wei, reference?}" }, debitTank, (r) => [
    { ...tankOf(r), wei: object(r.body).wei, reference: object(r.body).reference },
  ]),
  route(
    {
      method: "post",
      path: "/tanks/:network/:sender/allow",
      summary: "Allow a project to draw from a gas tank (User Sponsor mode denies every project the tank has not allowed)",
      body: "{project}",
    },
    allowTankProject,
    (r) => [{ ...tankOf(r), project: object(r.body).project }],
  ),
  route({ method: "post", path: "/tanks/:network/:sender/disallow", summary: "No longer allow a project to draw from a gas tank", body: "{project}" }, disallowTankProject, (r) => [
    { ...tankOf(r), project: object(r.body).project },
  ]),

  route({ method: "get", path: "/sponsorships", summary: "List sponsorships, newest first", query: SPONSORSHIP_FILTERS }, listSponsorships, (r) => [r.query]),
  route({ method: "get", path: "/sponsorships/:id", summary: "One sponsorship by id or userOpHash" }, showSponsorship, (r) => [r.params.id!]),

  route(
    { method: "post", path: "/apply", summary: "Declarative, idempotent create/update of projects, strategies and tokens (tokens: admin)", body: "apply document" },
    apply,
    (r) => [r.body, "body"],
  ),
  route({ method: "get", path: "/audit", summary: "The audit log, newest first", query: ["action", "target", "limit"] }, listAudit, (r) => {
    const limit = r.query.limit === undefined ? undefined : Number(r.query.limit);
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000)) invalid("limit: an integer from 1 to 1000");
    return [{ action: r.query.action, target: r.query.target, limit }];
  }),
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
