/**
 * The admin HTTP API and the operator console: one Koa application on its own listener (loopback only, as the
 * public one; off unless PAYMASTER_ADMIN_TOKENS is set), never mounted on the public port.
 *
 *   GET  /console/…                  the console's built page (packages/console; no data without signing in)
 *   POST /admin/v1/session {token}   sign in: a session cookie (session.ts) for the console
 *   GET  /admin/v1/session           who is signed in, with which role and what it may call, and the CSRF value
 *                                    mutations must carry
 *   POST /admin/v1/session/end       sign out (clears the cookie)
 *   /admin/v1/…                      the routes of routes.ts, JSON in and out
 *
 * Deny by default (gate.ts): every request passes the Host, canonical-path and JSON-write checks, then either the
 * public router (its short list: the console's files, the OpenAPI document, sign-in) matches it exactly, or it
 * needs a principal — `Authorization: Bearer <token>` (compared in constant time against every configured token;
 * the audit log's actor is "api:<name>") or the console's session cookie (actor "console:<name>"; a mutation must
 * also pass the CSRF check) — and the role of the route it asks for (the one its operation declares; a route
 * registered without one needs admin) before the admin router sees it. Both routers are case-sensitive and
 * strict. The routes call src/admin — the CLI's functions — whose mutations commit with their audit row (actor
 * and role) as one transaction.
 */
import Koa, { type Context } from "koa";
import { Router } from "@koa/router";
import type { Logger } from "pino";
import { AdminError, RoleRefused, requireActor, type FieldIssue } from "../admin/context.ts";
import { declaresRole, requiredRoleOf, roleIncludes, ROLES, type Role } from "../admin/roles.ts";
import { listen, type RunningServer } from "../app.ts";
import { sendSiteFile } from "../console/static.ts";
import { dependencyFailure } from "../dependencies/failure.ts";
import type { ServiceContext } from "../context.ts";
import { readBody } from "../rpc/body.ts";
import { RpcError } from "../rpc/errors.ts";
import { memoryBuckets } from "../rpc/rateLimit.ts";
import type { Store } from "../store/types.ts";
import { browserOrigin, GateError, matchAdminToken, overHttps, requestShape, requirePrincipal, requireRouteRole, ROUTER_OPTIONS } from "./gate.ts";
import { ADMIN_API_PREFIX, OPENAPI_PATH, SESSION_PATHS, openApiDocument } from "./openapi.ts";
import { tokenRole, type AdminApiOptions } from "./options.ts";
import { ADMIN_ROUTES, FileAnswer } from "./routes.ts";
import { crossSiteProblem, issueSession, sessionCookieHeader, type Session } from "./session.ts";
import { clientBucket } from "../access/clientAddress.ts";

export { matchAdminToken, matchToken } from "./gate.ts";

/** Largest admin request body (an apply document with long sender lists fits). */
export const ADMIN_BODY_LIMIT_BYTES = 2 * 1024 * 1024;
/** Sign-in attempts per client address: 10 at once, then one every 6 s (tokens are long: this only keeps logs quiet). */
export const SIGN_IN_RATE = Object.freeze({ rate: 1 / 6, capacity: 10 });

const STATUS = {
  NOT_FOUND: 404,
  INVALID_INPUT: 400,
  INVALID_PATH: 400,
  CONFLICT: 409,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  BODY_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  MISDIRECTED: 421,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const;
type Code = keyof typeof STATUS;

class HttpError extends Error {
  readonly code: Code;
  constructor(code: Code, message: string) {
    super(message);
    this.code = code;
  }
}

export interface AdminApiDeps {
  store: Store;
  networks: readonly string[];
  logger: Logger;
  /** The running service: network status and the policy dry run need it (absent: those routes answer 503). */
  service?: ServiceContext;
  /** Unix seconds (sessions' expiry). */
  now?: () => number;
}

async function jsonBody(ctx: Context): Promise<unknown> {
  const raw = await readBody(ctx.req, { limitBytes: ADMIN_BODY_LIMIT_BYTES });
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new HttpError("INVALID_INPUT", "the body is not valid JSON");
  }
}

/** One method and path of the admin router, and the role it needs (`declared`: false when it declares none and so needs admin). */
export interface RouteRole {
  method: string;
  path: string;
  role: Role;
  declared: boolean;
}

/**
 * The admin application, with its two routers (tests walk every route they register) and the role each route of
 * the admin router needs (what the gate enforces; docs/admin-api.md's table is checked against it).
 */
export type AdminApp = Koa & { readonly routers: { readonly public: Router; readonly protected: Router }; readonly routeRoles: readonly RouteRole[] };

export function createAdminApp(deps: AdminApiDeps, options: AdminApiOptions): AdminApp {
  const app = new Koa();
  app.silent = true;
  app.on("error", (error: unknown) => deps.logger.error({ err: error }, "admin API: unhandled error"));
  const now = deps.now ?? (() => Math.floor(Date.now() / 1000));
  const signIns = memoryBuckets();

  app.use(async (ctx, next) => {
    ctx.set("Cache-Control", "no-store");
    ctx.set("X-Content-Type-Options", "nosniff");
    try {
      await next();
      if (ctx.body === undefined && ctx.status === 404) throw new HttpError("NOT_FOUND", `no admin route ${ctx.method} ${ctx.path.slice(0, 200)} (see ${OPENAPI_PATH})`);
    } catch (err) {
      let code: Code;
      let message: string;
      let issues: readonly FieldIssue[] | undefined;
      // A dependency that failed (the database, a chain RPC): 503 with its name and cause, to every role alike.
      // The driver's words (its host, database, user) go to the log only: a token is no licence to the network's layout.
      const failure = dependencyFailure(err);
      if (err instanceof AdminError) [code, message, issues] = [err.code, err.message, err.issues];
      else if (err instanceof HttpError || err instanceof GateError) [code, message] = [err.code, err.message];
      else if (err instanceof RpcError && err.reason === "BODY_TOO_LARGE") [code, message] = ["BODY_TOO_LARGE", err.message];
      else if (failure) {
        [code, message] = ["UNAVAILABLE", failure.message];
        deps.logger.warn({ path: ctx.path, actor: ctx.state.actor, reason: failure.reason, cause: failure.cause, detail: failure.detail }, "admin API: a dependency is unavailable");
      } else {
        deps.logger.error({ err, path: ctx.path }, "admin API: internal error");
        [code, message] = ["INTERNAL", "internal error (see the service log)"];
      }
      ctx.status = STATUS[code];
      if (code === "UNAUTHORIZED") ctx.set("WWW-Authenticate", 'Bearer realm="paymaster-admin"');
      const dependency = failure && code === "UNAVAILABLE" ? { reason: failure.reason, cause: failure.cause } : {};
      ctx.body = { error: { code, message, ...dependency, ...(issues ? { issues } : {}), ...(err instanceof RoleRefused ? { requiredRole: err.requiredRole } : {}) } };
    }
  });
  app.use(requestShape(options));

  // The public list: every other request needs a principal (gate.ts).
  const publicRouter = new Router(ROUTER_OPTIONS);
  const document = openApiDocument();
  publicRouter.get(OPENAPI_PATH, (ctx) => {
    ctx.body = document;
  });
  // The console's files: a page without data until the operator signs in.
  publicRouter.get("/", (ctx) => ctx.redirect("/console/"));
  publicRouter.get("/console", (ctx) => ctx.redirect("/console/"));
  publicRouter.get("/console/", (ctx) => sendSiteFile(ctx, "console", ""));
  publicRouter.get("/console/*file", (ctx) => sendSiteFile(ctx, "console", (ctx.params as { file?: string }).file ?? ""));

  const audit = (actor: string, role: Role, action: string) => deps.store.appendAudit({ actor, role, action, target: null, before: null, after: null });
  // What each role may call, as "METHOD /admin/v1/path" (filled once the admin router is made, below).
  const permitted = new Map<Role, string[]>();
  const sessionAnswer = (s: Pick<Session, "name" | "role"> & { expiresAt: number | null; csrf: string | null }) => ({
    name: s.name,
    role: s.role,
    expiresAt: s.expiresAt,
    csrf: s.csrf,
    permitted: permitted.get(s.role) ?? [],
  });

  publicRouter.post(SESSION_PATHS.signIn, async (ctx) => {
    const problem = crossSiteProblem(browserOrigin(ctx));
    if (problem) throw new HttpError("FORBIDDEN", problem);
    // Per client, an IPv6 one's /64 as one (access/clientAddress.ts).
    const wait = await signIns.take(clientBucket(ctx.ip, deps.service?.config.ipv6ClientPrefix), SIGN_IN_RATE);
    if (wait > 0) {
      ctx.set("Retry-After", String(Math.ceil(wait)));
      throw new HttpError("RATE_LIMITED", `too many sign-in attempts; retry in ${Math.ceil(wait)} s`);
    }
    const body = await jsonBody(ctx);
    const presented = (body as { token?: unknown } | undefined)?.token;
    if (typeof presented !== "string" || presented === "") throw new HttpError("INVALID_INPUT", "token: required (an admin token from PAYMASTER_ADMIN_TOKENS)");
    const token = presented.length > 512 ? undefined : matchAdminToken(options.tokens, presented);
    if (!token) {
      deps.logger.warn({ ip: ctx.ip }, "console sign-in refused: invalid admin token");
      throw new HttpError("UNAUTHORIZED", "invalid admin token");
    }
    const session = issueSession(token, now());
    ctx.set("Set-Cookie", sessionCookieHeader(session.cookie, session.expiresAt - now(), overHttps(ctx)));
    await audit(`console:${token.name}`, tokenRole(token), "session.start");
    ctx.body = sessionAnswer(session);
  });

  const publicRoutes = publicRouter.routes();
  app.use((ctx, next) => (publicRouter.match(ctx.path, ctx.method).route ? publicRoutes(ctx as Parameters<typeof publicRoutes>[0], next) : next()));
  app.use(requirePrincipal(options.tokens, now));

  // Everything below has a principal (ctx.state.actor, ctx.state.role), and the role its route needs.
  const router = new Router(ROUTER_OPTIONS);
  const roles = new Map<unknown, Role>();
  /** Registers a route of the admin router with the role it needs (undefined: it declares none, so it needs admin). */
  const register = (method: "get" | "post" | "patch", path: string, role: Role | undefined, handler: Parameters<Router["get"]>[1]) => {
    router[method](path, handler);
    if (role !== undefined) roles.set(router.stack.at(-1)!, role);
  };
  app.use(requireRouteRole(router, roles));

  // Any principal: who it is, and signing out.
  register("get", SESSION_PATHS.current, "viewer", (ctx) => {
    const session = ctx.state.session as Session | undefined;
    const actor = ctx.state.actor as string;
    // A bearer caller has no session: it is told who it is.
    ctx.body = sessionAnswer(session ?? { name: actor.slice(actor.indexOf(":") + 1), role: ctx.state.role as Role, expiresAt: null, csrf: null });
  });
  register("post", SESSION_PATHS.signOut, "viewer", async (ctx) => {
    ctx.set("Set-Cookie", sessionCookieHeader("", 0, overHttps(ctx)));
    if (ctx.state.session) await audit(ctx.state.actor as string, ctx.state.role as Role, "session.end");
    ctx.body = { signedOut: true };
  });

  for (const route of ADMIN_ROUTES) {
    register(route.method, ADMIN_API_PREFIX + route.path, declaresRole(route.operation) ? requiredRoleOf(route.operation) : undefined, async (ctx) => {
      const actor = requireActor(ctx.state.actor);
      const body = route.method === "get" ? undefined : await jsonBody(ctx);
      const query: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(ctx.query)) {
        if (typeof v !== "string") throw new HttpError("INVALID_INPUT", `query parameter ${k} is given more than once`);
        query[k] = v;
      }
      const admin = { store: deps.store, networks: deps.networks, actor, role: ctx.state.role as Role, ...(deps.service ? { service: deps.service } : {}) };
      const result = await route.handler(admin, { params: ctx.params as Record<string, string>, query, body });
      ctx.status = route.status ?? 200;
      if (result instanceof FileAnswer) {
        ctx.attachment(result.name, { type: "attachment" });
        ctx.type = result.contentType;
      }
      ctx.body = result instanceof FileAnswer ? result.body : result;
    });
  }
  app.use(router.routes());
  app.use(router.allowedMethods());

  const routeRoles: RouteRole[] = router.stack.flatMap((layer) =>
    layer.methods.filter((m) => m !== "HEAD").map((method) => ({ method, path: String(layer.path), role: roles.get(layer) ?? "admin", declared: roles.has(layer) })),
  );
  for (const role of ROLES) permitted.set(role, routeRoles.filter((r) => roleIncludes(role, r.role)).map((r) => `${r.method} ${r.path}`));
  return Object.assign(app, { routers: { public: publicRouter, protected: router }, routeRoles });
}

/** Serves the admin API and the console on their own loopback listener. */
export function startAdminApi(deps: AdminApiDeps, options: AdminApiOptions): Promise<RunningServer> {
  return listen(createAdminApp(deps, options), { host: options.host, port: options.port });
}
