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
import Koa, { type Context, type Next } from "koa";
import { Router, type RouterContext } from "@koa/router";
import type { Logger } from "pino";
import { AdminError, RoleRefused, requireActor, type FieldIssue } from "../admin/context.ts";
import { declaresRole, requiredRoleOf, roleIncludes, ROLES, type Role } from "../admin/roles.ts";
import { listen, type RunningServer } from "../app.ts";
import { sendSiteFile } from "../console/static.ts";
import { repeatedWarnings, type RepeatedWarning } from "../dependencies/repeatedWarnings.ts";
import { dependencyFailure } from "../dependencies/failure.ts";
import type { ServiceContext } from "../context.ts";
import { readBody } from "../rpc/body.ts";
import { RpcError } from "../errors.ts";
import { memoryBuckets, type BucketStore } from "../rateLimit.ts";
import type { Store } from "../store/types.ts";
import { browserOrigin, GateError, matchAdminToken, overHttps, requestShape, requirePrincipal, requireRouteRole, ROUTER_OPTIONS } from "./gate.ts";
import { ADMIN_API_PREFIX, OPENAPI_PATH, SESSION_PATHS, openApiDocument } from "./openapi.ts";
import { tokenRole, type AdminApiOptions } from "./options.ts";
import { ADMIN_ROUTES, FileAnswer, type AdminRoute } from "./routes.ts";
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

/** What the admin application's steps share. */
interface AdminAppState {
  deps: AdminApiDeps;
  options: AdminApiOptions;
  /** Unix seconds (sessions' expiry). */
  now: () => number;
  /** Sign-in attempts per client address (SIGN_IN_RATE). */
  signIns: BucketStore;
  /** What each role may call, as "METHOD /admin/v1/path" (filled once the admin router is made). */
  permitted: Map<Role, string[]>;
}

/**
 * The middleware chain, in order: answer errors, the request's shape, the public router, the principal, the
 * route's role, the admin router.
 */
export function createAdminApp(deps: AdminApiDeps, options: AdminApiOptions): AdminApp {
  const app = new Koa();
  app.silent = true;
  app.on("error", (error: unknown) => deps.logger.error({ err: error }, "admin API: unhandled error"));
  const now = deps.now ?? (() => Math.floor(Date.now() / 1000));
  const state: AdminAppState = { deps, options, now, signIns: memoryBuckets(), permitted: new Map() };

  app.use(answerErrors(deps.logger, repeatedWarnings(deps.logger, now)));
  app.use(requestShape(options));
  // The public list: every other request needs a principal (gate.ts).
  const publicRouter = createPublicRouter(state);
  app.use(publicRoutesOnly(publicRouter));
  app.use(requirePrincipal(options.tokens, now));
  // Everything below has a principal (ctx.state.actor, ctx.state.role), and the role its route needs.
  const { router, roles } = createProtectedRouter(state);
  app.use(requireRouteRole(router, roles));
  app.use(router.routes());
  app.use(router.allowedMethods());

  const routeRoles = routeRolesOf(router, roles);
  for (const role of ROLES) state.permitted.set(role, routeRoles.filter((r) => roleIncludes(role, r.role)).map((r) => `${r.method} ${r.path}`));
  return Object.assign(app, { routers: { public: publicRouter, protected: router }, routeRoles });
}

/**
 * The first middleware: no caching and no sniffing on every answer, a 404 naming the request no route took,
 * and every error answered as `{ error: { code, message, … } }` with its status.
 */
function answerErrors(logger: Logger, unavailable: RepeatedWarning) {
  return async (ctx: Context, next: Next) => {
    ctx.set("Cache-Control", "no-store");
    ctx.set("X-Content-Type-Options", "nosniff");
    try {
      await next();
      if (ctx.body === undefined && ctx.status === 404) throw new HttpError("NOT_FOUND", `no admin route ${ctx.method} ${ctx.path.slice(0, 200)} (see ${OPENAPI_PATH})`);
    } catch (err) {
      const error = errorAnswer(err, ctx, logger, unavailable);
      ctx.status = STATUS[error.code];
      if (error.code === "UNAUTHORIZED") ctx.set("WWW-Authenticate", 'Bearer realm="paymaster-admin"');
      ctx.body = { error };
    }
  };
}

/** An error as the answer's `error` member: its code and message (issues, required role, failed dependency when it has them). */
function errorAnswer(err: unknown, ctx: Context, logger: Logger, unavailable: RepeatedWarning): { code: Code; message: string } {
  let code: Code;
  let message: string;
  let issues: readonly FieldIssue[] | undefined;
  // A dependency that failed (the database, a chain RPC): 503 with its name and cause, to every role alike.
  // The driver's words (its host, database, user) go to the log only: a token is no licence to the network's layout;
  // one line per outage (src/dependencies/repeatedWarnings.ts), not one per answer.
  const failure = dependencyFailure(err);
  if (err instanceof AdminError) [code, message, issues] = [err.code, err.message, err.issues];
  else if (err instanceof HttpError || err instanceof GateError) [code, message] = [err.code, err.message];
  else if (err instanceof RpcError && err.reason === "BODY_TOO_LARGE") [code, message] = ["BODY_TOO_LARGE", err.message];
  else if (failure) {
    [code, message] = ["UNAVAILABLE", failure.message];
    unavailable(failure, { path: ctx.path, actor: ctx.state.actor }, "admin API: a dependency is unavailable");
  } else {
    logger.error({ err, path: ctx.path }, "admin API: internal error");
    [code, message] = ["INTERNAL", "internal error (see the service log)"];
  }
  const dependency = failure && code === "UNAVAILABLE" ? { reason: failure.reason, cause: failure.cause } : {};
  return { code, message, ...dependency, ...(issues ? { issues } : {}), ...(err instanceof RoleRefused ? { requiredRole: err.requiredRole } : {}) };
}

/** The routes open to anyone: the OpenAPI document, the console's files (a page without data until the operator signs in), sign-in. */
function createPublicRouter(state: AdminAppState): Router {
  const router = new Router(ROUTER_OPTIONS);
  const document = openApiDocument();
  router.get(OPENAPI_PATH, (ctx) => {
    ctx.body = document;
  });
  router.get("/", (ctx) => ctx.redirect("/console/"));
  router.get("/console", (ctx) => ctx.redirect("/console/"));
  router.get("/console/", (ctx) => sendSiteFile(ctx, "console", ""));
  router.get("/console/*file", (ctx) => sendSiteFile(ctx, "console", (ctx.params as { file?: string }).file ?? ""));
  router.post(SESSION_PATHS.signIn, (ctx) => signIn(ctx, state));
  return router;
}

/** The public router takes a request only when one of its routes matches it exactly; the rest go on to the gate. */
function publicRoutesOnly(publicRouter: Router) {
  const publicRoutes = publicRouter.routes();
  return (ctx: Context, next: Next) => (publicRouter.match(ctx.path, ctx.method).route ? publicRoutes(ctx as Parameters<typeof publicRoutes>[0], next) : next());
}

/** Sign-in: a same-site request, within the client's attempts, with an admin token, gets a session cookie (audited). */
async function signIn(ctx: Context, state: AdminAppState): Promise<void> {
  const { deps, options, now } = state;
  const problem = crossSiteProblem(browserOrigin(ctx));
  if (problem) throw new HttpError("FORBIDDEN", problem);
  // Per client, an IPv6 one's /64 as one (access/clientAddress.ts).
  const wait = await state.signIns.take(clientBucket(ctx.ip, deps.service?.config.ipv6ClientPrefix), SIGN_IN_RATE);
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
  await auditSession(deps.store, `console:${token.name}`, tokenRole(token), "session.start");
  ctx.body = sessionAnswer(session, state.permitted);
}

/** The session routes' audit row (sign-in, sign-out). */
function auditSession(store: Store, actor: string, role: Role, action: string) {
  return store.appendAudit({ actor, role, action, target: null, before: null, after: null });
}

/** Who is signed in, with which role, what it may call and the CSRF value mutations must carry. */
function sessionAnswer(s: Pick<Session, "name" | "role"> & { expiresAt: number | null; csrf: string | null }, permitted: ReadonlyMap<Role, string[]>) {
  return { name: s.name, role: s.role, expiresAt: s.expiresAt, csrf: s.csrf, permitted: permitted.get(s.role) ?? [] };
}

/** The routes that need a principal, and the role each needs (absent from `roles`: it declares none, so it needs admin). */
function createProtectedRouter(state: AdminAppState): { router: Router; roles: Map<unknown, Role> } {
  const router = new Router(ROUTER_OPTIONS);
  const roles = new Map<unknown, Role>();
  /** Registers a route of the admin router with the role it needs (undefined: it declares none, so it needs admin). */
  const register = (method: "get" | "post" | "patch", path: string, role: Role | undefined, handler: Parameters<Router["get"]>[1]) => {
    router[method](path, handler);
    if (role !== undefined) roles.set(router.stack.at(-1)!, role);
  };
  // Any principal: who it is, and signing out.
  register("get", SESSION_PATHS.current, "viewer", (ctx) => currentSession(ctx, state.permitted));
  register("post", SESSION_PATHS.signOut, "viewer", (ctx) => signOut(ctx, state.deps.store));
  for (const route of ADMIN_ROUTES) {
    register(route.method, ADMIN_API_PREFIX + route.path, declaresRole(route.operation) ? requiredRoleOf(route.operation) : undefined, (ctx) => serveRoute(ctx, route, state.deps));
  }
  return { router, roles };
}

/** GET session: the console's session, or a bearer caller (no session) told who it is. */
function currentSession(ctx: Context, permitted: ReadonlyMap<Role, string[]>): void {
  const session = ctx.state.session as Session | undefined;
  const actor = ctx.state.actor as string;
  ctx.body = sessionAnswer(session ?? { name: actor.slice(actor.indexOf(":") + 1), role: ctx.state.role as Role, expiresAt: null, csrf: null }, permitted);
}

/** Sign-out: clears the cookie (audited when there was a session). */
async function signOut(ctx: Context, store: Store): Promise<void> {
  ctx.set("Set-Cookie", sessionCookieHeader("", 0, overHttps(ctx)));
  if (ctx.state.session) await auditSession(store, ctx.state.actor as string, ctx.state.role as Role, "session.end");
  ctx.body = { signedOut: true };
}

/** One route of routes.ts: its params, query (each parameter once) and JSON body to its handler; its answer, JSON or a file. */
async function serveRoute(ctx: RouterContext, route: AdminRoute, deps: AdminApiDeps): Promise<void> {
  const actor = requireActor(ctx.state.actor);
  const body = route.method === "get" ? undefined : await jsonBody(ctx);
  const query: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(ctx.query)) {
    if (typeof v !== "string") throw new HttpError("INVALID_INPUT", `query parameter ${k} is given more than once`);
    query[k] = v;
  }
  const admin = { store: deps.store, networks: deps.networks, actor, role: ctx.state.role as Role, ...(deps.service ? { service: deps.service } : {}) };
  const result = await route.handler(admin, { params: ctx.params, query, body });
  ctx.status = route.status ?? 200;
  if (result instanceof FileAnswer) {
    ctx.attachment(result.name, { type: "attachment" });
    ctx.type = result.contentType;
  }
  ctx.body = result instanceof FileAnswer ? result.body : result;
}

/** Each method and path of the admin router with the role it needs (HEAD goes with GET). */
function routeRolesOf(router: Router, roles: ReadonlyMap<unknown, Role>): RouteRole[] {
  return router.stack.flatMap((layer) =>
    layer.methods.filter((m) => m !== "HEAD").map((method) => ({ method, path: String(layer.path), role: roles.get(layer) ?? "admin", declared: roles.has(layer) })),
  );
}

/** Serves the admin API and the console on their own loopback listener. */
export function startAdminApi(deps: AdminApiDeps, options: AdminApiOptions): Promise<RunningServer> {
  return listen(createAdminApp(deps, options), { host: options.host, port: options.port });
}
