/**
 * The admin HTTP API and the operator console: one Koa application on its own listener (loopback only, as the
 * public one; off unless PAYMASTER_ADMIN_TOKENS is set), never mounted on the public port.
 *
 *   GET  /console/…                  the console's built page (packages/console; no data without signing in)
 *   POST /admin/v1/session {token}   sign in: a session cookie (session.ts) for the console
 *   GET  /admin/v1/session           who is signed in, and the CSRF value mutations must carry
 *   POST /admin/v1/session/end       sign out (clears the cookie)
 *   /admin/v1/…                      the routes of routes.ts, JSON in and out
 *
 * Every route but the OpenAPI document, the console's files and sign-in needs `Authorization: Bearer <token>`
 * (compared in constant time against every configured token; the audit log's actor is "api:<name>") or the
 * console's session cookie (actor "console:<name>"; a mutation must also pass the CSRF check). The routes call
 * src/admin — the CLI's functions — so every mutating call lands in the audit log.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import Koa, { type Context } from "koa";
import { Router } from "@koa/router";
import type { Logger } from "pino";
import { AdminError, type FieldIssue } from "../admin/context.ts";
import { listen, type RunningServer } from "../app.ts";
import { sendSiteFile } from "../console/static.ts";
import type { ServiceContext } from "../context.ts";
import { readBody } from "../rpc/body.ts";
import { RpcError } from "../rpc/errors.ts";
import { memoryBuckets } from "../rpc/rateLimit.ts";
import type { Store } from "../store/types.ts";
import { ADMIN_API_PREFIX, OPENAPI_PATH, SESSION_PATHS, openApiDocument } from "./openapi.ts";
import type { AdminApiOptions, AdminToken } from "./options.ts";
import { ADMIN_ROUTES } from "./routes.ts";
import { CSRF_HEADER, crossSiteProblem, issueSession, sameSecret, sessionCookieHeader, sessionCookieValue, verifySession, type Session } from "./session.ts";

/** Largest admin request body (an apply document with long sender lists fits). */
export const ADMIN_BODY_LIMIT_BYTES = 2 * 1024 * 1024;
/** Sign-in attempts per client address: 10 at once, then one every 6 s (tokens are long: this only keeps logs quiet). */
export const SIGN_IN_RATE = Object.freeze({ rate: 1 / 6, capacity: 10 });

const STATUS = {
  NOT_FOUND: 404,
  INVALID_INPUT: 400,
  CONFLICT: 409,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  BODY_TOO_LARGE: 413,
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

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

/**
 * The token presented, else undefined. Both sides are hashed to equal lengths and every configured token is
 * compared (no early exit), so the time taken says nothing about any token.
 */
export function matchAdminToken(tokens: readonly AdminToken[], presented: string): AdminToken | undefined {
  const p = digest(presented);
  let found: AdminToken | undefined;
  for (const t of tokens) if (timingSafeEqual(p, digest(t.token)) && found === undefined) found = t;
  return found;
}

/** The name of the token presented, else undefined (see matchAdminToken). */
export function matchToken(tokens: readonly AdminToken[], presented: string): string | undefined {
  return matchAdminToken(tokens, presented)?.name;
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

/** Whether the request came over HTTPS to the proxy in front (only ever adds Secure to the cookie). */
const overHttps = (ctx: Context) => ctx.protocol === "https" || ctx.get("x-forwarded-proto").split(",")[0]?.trim() === "https";

function browserOrigin(ctx: Context) {
  return { origin: ctx.get("origin") || undefined, host: ctx.get("host") || undefined, secFetchSite: ctx.get("sec-fetch-site") || undefined };
}

export function createAdminApp(deps: AdminApiDeps, options: AdminApiOptions): Koa {
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
      if (err instanceof AdminError) [code, message, issues] = [err.code, err.message, err.issues];
      else if (err instanceof HttpError) [code, message] = [err.code, err.message];
      else if (err instanceof RpcError && err.reason === "BODY_TOO_LARGE") [code, message] = ["BODY_TOO_LARGE", err.message];
      else {
        deps.logger.error({ err, path: ctx.path }, "admin API: internal error");
        [code, message] = ["INTERNAL", "internal error (see the service log)"];
      }
      ctx.status = STATUS[code];
      if (code === "UNAUTHORIZED") ctx.set("WWW-Authenticate", 'Bearer realm="paymaster-admin"');
      ctx.body = { error: { code, message, ...(issues ? { issues } : {}) } };
    }
  });

  const router = new Router();
  const document = openApiDocument();
  router.get(OPENAPI_PATH, (ctx) => {
    ctx.body = document;
  });

  // The console's files: a page without data until the operator signs in.
  // Exact paths (the router matches with or without a trailing slash): "/" and "/console" to "/console/".
  app.use(async (ctx, next) => {
    if (ctx.method === "GET" && (ctx.path === "/" || ctx.path === "/console")) return ctx.redirect("/console/");
    return next();
  });
  router.get("/console/*file", (ctx) => sendSiteFile(ctx, "console", (ctx.params as { file?: string }).file ?? ""));
  router.get("/console/", (ctx) => sendSiteFile(ctx, "console", ""));

  const audit = (actor: string, action: string) => deps.store.appendAudit({ actor, action, target: null, before: null, after: null });
  const sessionAnswer = (s: Session) => ({ name: s.name, expiresAt: s.expiresAt, csrf: s.csrf });

  router.post(SESSION_PATHS.signIn, async (ctx) => {
    const problem = crossSiteProblem(browserOrigin(ctx));
    if (problem) throw new HttpError("FORBIDDEN", problem);
    const wait = await signIns.take(ctx.ip, SIGN_IN_RATE);
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
    await audit(`console:${token.name}`, "session.start");
    ctx.body = sessionAnswer(session);
  });

  // Everything else: a bearer token, or the console's session cookie (with the CSRF check on mutations).
  app.use(async (ctx, next) => {
    const signingIn = ctx.method === "POST" && ctx.path === SESSION_PATHS.signIn;
    if (ctx.path === OPENAPI_PATH || signingIn || !ctx.path.startsWith(`${ADMIN_API_PREFIX}/`)) return next();
    const header = ctx.get("authorization");
    if (header !== "") {
      const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
      const name = match ? matchToken(options.tokens, match[1]!) : undefined;
      if (name === undefined) throw new HttpError("UNAUTHORIZED", "invalid admin token");
      ctx.state.actor = `api:${name}`;
      ctx.state.session = undefined;
      return next();
    }
    const cookie = sessionCookieValue(ctx.get("cookie"));
    const session = cookie === undefined ? undefined : verifySession(options.tokens, cookie, now());
    if (!session) {
      if (cookie !== undefined) ctx.append("Set-Cookie", sessionCookieHeader("", 0, overHttps(ctx)));
      throw new HttpError(
        "UNAUTHORIZED",
        cookie === undefined ? "missing Authorization: Bearer <admin token> (or sign in to the console)" : "the console session has expired or its token was removed: sign in again",
      );
    }
    if (ctx.method !== "GET" && ctx.method !== "HEAD") {
      const problem = crossSiteProblem(browserOrigin(ctx));
      if (problem) throw new HttpError("FORBIDDEN", problem);
      const csrf = ctx.get(CSRF_HEADER);
      if (csrf === "" || !sameSecret(csrf, session.csrf)) {
        throw new HttpError("FORBIDDEN", `missing or wrong ${CSRF_HEADER} header: a change made with the console's session must carry the value GET ${SESSION_PATHS.current} answers`);
      }
    }
    ctx.state.actor = `console:${session.name}`;
    ctx.state.session = session;
    return next();
  });

  router.get(SESSION_PATHS.current, (ctx) => {
    const session = ctx.state.session as Session | undefined;
    const actor = ctx.state.actor as string;
    // A bearer caller has no session: it is told who it is.
    ctx.body = session ? sessionAnswer(session) : { name: actor.slice(actor.indexOf(":") + 1), expiresAt: null, csrf: null };
  });
  router.post(SESSION_PATHS.signOut, async (ctx) => {
    ctx.set("Set-Cookie", sessionCookieHeader("", 0, overHttps(ctx)));
    if (ctx.state.session) await audit(ctx.state.actor as string, "session.end");
    ctx.body = { signedOut: true };
  });

  for (const route of ADMIN_ROUTES) {
    router[route.method](ADMIN_API_PREFIX + route.path, async (ctx) => {
      const body = route.method === "get" ? undefined : await jsonBody(ctx);
      const query: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(ctx.query)) {
        if (typeof v !== "string") throw new HttpError("INVALID_INPUT", `query parameter ${k} is given more than once`);
        query[k] = v;
      }
      const admin = { store: deps.store, networks: deps.networks, actor: ctx.state.actor as string, ...(deps.service ? { service: deps.service } : {}) };
      const result = await route.handler(admin, { params: ctx.params as Record<string, string>, query, body });
      ctx.status = route.status ?? 200;
      ctx.body = result;
    });
  }
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

/** Serves the admin API and the console on their own loopback listener. */
export function startAdminApi(deps: AdminApiDeps, options: AdminApiOptions): Promise<RunningServer> {
  return listen(createAdminApp(deps, options), { host: options.host, port: options.port });
}
