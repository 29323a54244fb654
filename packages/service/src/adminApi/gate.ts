/**
 * What every request on the admin listener passes before any route answers it, in this order (app.ts):
 *
 *   1. Host      the Host header names this listener (its loopback names, its configured host, or one of
 *                PAYMASTER_ADMIN_ALLOWED_HOSTS for a named proxy in front): else 421. A page on another name
 *                that resolves to 127.0.0.1 (DNS rebinding) is refused before it can read an answer.
 *   2. Path      the path is in its one canonical form — letters, digits and - . _ ~ / only (no percent
 *                encoding), no empty, "." or ".." segment, no trailing slash (but "/" and "/console/"): else
 *                400 INVALID_PATH. Routing is case-sensitive and strict (ROUTER_OPTIONS), so the path the
 *                router dispatches on is exactly the one the auth decision saw.
 *   3. Writes    any method but GET/HEAD/OPTIONS carries Content-Type: application/json: else 415. No other site's
 *                page can send that without a CORS preflight, which the admin listener never grants.
 *   4. Principal unless the public router (a short explicit list: sign-in, the OpenAPI document, the console's
 *                files) matches the method and path, the request needs a principal: a bearer admin token, or the
 *                console's session cookie plus, on a mutation, the CSRF header from the same origin. Anything else
 *                — an unknown path included — is 401 before routing: deny by default.
 *   5. Role      the route the admin router would run needs the role its operation declares (src/admin/roles.ts;
 *                a route without one needs admin): a principal whose role does not include it is 403 FORBIDDEN
 *                naming that role (`requiredRole`), before the body is read or anything runs.
 */
import type { Context, Next } from "koa";
import type { Router, RouterOptions } from "@koa/router";
import { RoleRefused } from "../admin/context.ts";
import { roleProblem, strongerRole, type Role } from "../admin/roles.ts";
import { timingSafeEqual, createHash } from "node:crypto";
import { tokenRole, type AdminApiOptions, type AdminToken } from "./options.ts";
import { CSRF_HEADER, crossSiteProblem, sameSecret, sessionCookieHeader, sessionCookieValue, verifySession } from "./session.ts";
import { SESSION_PATHS } from "./openapi.ts";

/** Both admin routers: a path matches only as written (no case folding, a trailing slash is another path). */
export const ROUTER_OPTIONS: RouterOptions = Object.freeze({ sensitive: true, strict: true });

/** A refusal of the gate or a route, rendered by app.ts as {error: {code, message}} with its status. */
export class GateError extends Error {
  readonly code: "MISDIRECTED" | "INVALID_PATH" | "UNSUPPORTED_MEDIA_TYPE" | "UNAUTHORIZED" | "FORBIDDEN";
  constructor(code: GateError["code"], message: string) {
    super(message);
    this.code = code;
  }
}

/** The names the listener answers to by default (with any port): its loopback names. */
const OWN_NAMES = ["localhost", "127.0.0.1", "[::1]"] as const;

/** A host name as the Host header carries it: lower case, an IPv6 address in brackets. */
export function hostKey(name: string): string {
  const lower = name.trim().toLowerCase();
  return lower.includes(":") && !lower.startsWith("[") ? `[${lower}]` : lower;
}

/** The host part of a Host header ("name", "name:port", "[v6]", "[v6]:port"), lower case; undefined if malformed. */
export function hostOfHeader(header: string): string | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(header);
  return m ? m[1]!.toLowerCase() : undefined;
}

/** The host names this listener accepts in Host. */
export function acceptedHosts(options: Pick<AdminApiOptions, "host" | "allowedHosts">): ReadonlySet<string> {
  return new Set([...OWN_NAMES, hostKey(options.host), ...(options.allowedHosts ?? []).map(hostKey)]);
}

/** Why a Host header is refused, else undefined. */
export function hostProblem(header: string, accepted: ReadonlySet<string>): string | undefined {
  if (header === "") return "the request has no Host header";
  const host = hostOfHeader(header);
  if (host === undefined || !accepted.has(host)) {
    return `this admin listener does not answer to the host ${JSON.stringify(header.slice(0, 100))} (set PAYMASTER_ADMIN_ALLOWED_HOSTS for a named proxy in front of it)`;
  }
  return undefined;
}

const PATH_CHARACTERS = /^\/[A-Za-z0-9._~/-]*$/;
/** The only paths that end in a slash. */
const SLASH_ENDED = new Set(["/", "/console/"]);

/** Why a path is not in its canonical form, else undefined. */
export function pathProblem(path: string): string | undefined {
  if (path.length > 1000) return "the path is too long";
  if (!PATH_CHARACTERS.test(path)) return "a path holds only letters, digits, '-', '.', '_', '~' and '/' (no percent-encoding)";
  const segments = path.slice(1).split("/");
  const last = segments.length - 1;
  for (const [i, segment] of segments.entries()) {
    if (segment === "." || segment === "..") return "a path has no '.' or '..' segments";
    if (segment === "" && (i < last || !SLASH_ENDED.has(path))) return i < last ? "a path has no empty segments ('//')" : "a path does not end in '/'";
  }
  return undefined;
}

const BODYLESS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Why a request's Content-Type is refused (writes must be JSON), else undefined. */
export function contentTypeProblem(method: string, contentType: string): string | undefined {
  if (BODYLESS.has(method)) return undefined;
  const type = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  if (type === "application/json") return undefined;
  return `a ${method} to the admin API must have Content-Type: application/json${type === "" ? "" : `, not ${type.slice(0, 100)}`}`;
}

/** Steps 1-3 of the module comment, as one middleware (before any router). */
export function requestShape(options: Pick<AdminApiOptions, "host" | "allowedHosts">) {
  const accepted = acceptedHosts(options);
  return async (ctx: Context, next: Next) => {
    const host = hostProblem(ctx.get("host"), accepted);
    if (host) throw new GateError("MISDIRECTED", host);
    const path = pathProblem(ctx.path);
    if (path) throw new GateError("INVALID_PATH", `${path}: ${JSON.stringify(ctx.path.slice(0, 200))}`);
    const type = contentTypeProblem(ctx.method, ctx.get("content-type"));
    if (type) throw new GateError("UNSUPPORTED_MEDIA_TYPE", type);
    return next();
  };
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

/** Whether the request came over HTTPS to the proxy in front (only ever adds Secure to the cookie). */
export const overHttps = (ctx: Context) => ctx.protocol === "https" || ctx.get("x-forwarded-proto").split(",")[0]?.trim() === "https";

export function browserOrigin(ctx: Context) {
  return { origin: ctx.get("origin") || undefined, host: ctx.get("host") || undefined, secFetchSite: ctx.get("sec-fetch-site") || undefined };
}

/**
 * Step 4: sets ctx.state.actor ("api:<name>" or "console:<name>"), ctx.state.role (its token's) and
 * ctx.state.session, or refuses. Every request that reaches it needs a principal, whatever its path.
 */
export function requirePrincipal(tokens: readonly AdminToken[], now: () => number) {
  return async (ctx: Context, next: Next) => {
    const header = ctx.get("authorization");
    if (header !== "") {
      const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
      const token = match ? matchAdminToken(tokens, match[1]!) : undefined;
      if (token === undefined) throw new GateError("UNAUTHORIZED", "invalid admin token");
      ctx.state.actor = `api:${token.name}`;
      ctx.state.role = tokenRole(token);
      ctx.state.session = undefined;
      return next();
    }
    const cookie = sessionCookieValue(ctx.get("cookie"));
    const session = cookie === undefined ? undefined : verifySession(tokens, cookie, now());
    if (!session) {
      if (cookie !== undefined) ctx.append("Set-Cookie", sessionCookieHeader("", 0, overHttps(ctx)));
      throw new GateError(
        "UNAUTHORIZED",
        cookie === undefined ? "missing Authorization: Bearer <admin token> (or sign in to the console)" : "the console session has expired or its token was removed: sign in again",
      );
    }
    if (!BODYLESS.has(ctx.method)) {
      const problem = crossSiteProblem(browserOrigin(ctx));
      if (problem) throw new GateError("FORBIDDEN", problem);
      const csrf = ctx.get(CSRF_HEADER);
      if (csrf === "" || !sameSecret(csrf, session.csrf)) {
        throw new GateError("FORBIDDEN", `missing or wrong ${CSRF_HEADER} header: a change made with the console's session must carry the value GET ${SESSION_PATHS.current} answers`);
      }
    }
    ctx.state.actor = `console:${session.name}`;
    ctx.state.role = session.role;
    ctx.state.session = session;
    return next();
  };
}

/** The role each route of the admin router needs, by its layer (app.ts fills it as it registers them). */
export type RouteRoles = ReadonlyMap<unknown, Role>;

/**
 * The role a request to `path` needs, else undefined when the router has no route for it (it then answers 404 or
 * 405 itself). A route the map does not know needs admin: deny by default.
 */
export function roleForRequest(router: Router, roles: RouteRoles, method: string, path: string): Role | undefined {
  const layers = router.match(path, method).pathAndMethod;
  if (layers.length === 0) return undefined;
  return layers.map((layer) => roles.get(layer) ?? "admin").reduce(strongerRole);
}

/** Step 5: refuses (403, naming the role) a principal whose role does not include the route's. */
export function requireRouteRole(router: Router, roles: RouteRoles) {
  return async (ctx: Context, next: Next) => {
    const needed = roleForRequest(router, roles, ctx.method, ctx.path);
    const problem = needed === undefined ? undefined : roleProblem(ctx.state.role as Role, needed, `${ctx.method} ${ctx.path}`);
    if (problem) throw new RoleRefused(needed!, problem);
    return next();
  };
}
