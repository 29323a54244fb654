/**
 * Console sessions: an operator signs in with an admin token once and the browser then holds a session cookie
 * instead of the token. Stateless, so every replica accepts it and nothing is stored:
 *
 *   cookie  pm_console = <expiry>:<token name>:<MAC>      MAC  = HMAC-SHA256(K, "session:<expiry>:<name>:<role>")
 *   CSRF    X-Paymaster-CSRF: HMAC-SHA256(K, "csrf:<expiry>:<name>:<role>")   K = HMAC-SHA256(token, SESSION_KEY_LABEL)
 *
 * K is derived from the admin token itself: removing or changing a token in PAYMASTER_ADMIN_TOKENS ends all of
 * its sessions at the next request, and a cookie cannot be made without the token. The session has the role of
 * the token it signed in with (PAYMASTER_ADMIN_TOKENS' `name:role=token`), bound into the MAC: giving the token
 * another role ends its sessions too, so a session never holds a role its token no longer has. The cookie is HttpOnly (no
 * script reads it), SameSite=Strict (no other site's page makes the browser send it) and scoped to the admin
 * API's path; Secure when the request came over HTTPS (a TLS proxy saying X-Forwarded-Proto: https) — plain
 * http on loopback cannot carry a Secure cookie. Every mutating request made with the cookie must also carry
 * the CSRF value (only the console's own page can read it: GET /admin/v1/session answers it to a same-origin
 * request) and, when the browser says where it comes from (Origin, Sec-Fetch-Site), come from the same origin.
 * Sign-out clears the cookie; the session itself ends at its expiry or when its token is removed.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Role } from "../admin/roles.ts";
import { tokenRole, type AdminToken } from "./options.ts";

export const SESSION_COOKIE = "pm_console";
/** The cookie goes only to the admin API (the console's files need none). */
export const SESSION_COOKIE_PATH = "/admin/v1";
export const SESSION_TTL_SECONDS = 8 * 3600;
export const CSRF_HEADER = "x-paymaster-csrf";
const SESSION_KEY_LABEL = "paymaster console session v1";

const COOKIE_RE = /^(\d{1,12}):([A-Za-z0-9._-]{1,64}):([A-Za-z0-9_-]{43})$/;

export interface Session {
  name: string;
  /** The role of the token it signed in with. */
  role: Role;
  /** Unix seconds. */
  expiresAt: number;
  /** The value mutating requests must send in X-Paymaster-CSRF. */
  csrf: string;
}

const mac = (key: Buffer, text: string): string => createHmac("sha256", key).update(text, "utf8").digest("base64url");
const sessionKey = (token: string): Buffer => createHmac("sha256", token).update(SESSION_KEY_LABEL, "utf8").digest();

/** Equal strings, compared in constant time over their digests (any lengths). */
export function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHmac("sha256", "compare").update(s, "utf8").digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** A new session of `token` (the one the operator signed in with): the cookie value and what the page may know. */
export function issueSession(token: AdminToken, now: number, ttlSeconds = SESSION_TTL_SECONDS): Session & { cookie: string } {
  const expiresAt = now + ttlSeconds;
  const key = sessionKey(token.token);
  const role = tokenRole(token);
  return {
    name: token.name,
    role,
    expiresAt,
    csrf: mac(key, `csrf:${expiresAt}:${token.name}:${role}`),
    cookie: `${expiresAt}:${token.name}:${mac(key, `session:${expiresAt}:${token.name}:${role}`)}`,
  };
}

/** The session a cookie value proves, else undefined (malformed, expired, forged, or its token removed, changed or given another role). */
export function verifySession(tokens: readonly AdminToken[], value: string, now: number): Session | undefined {
  const m = COOKIE_RE.exec(value);
  if (!m) return undefined;
  const [, exp, name, presented] = m as unknown as [string, string, string, string];
  const expiresAt = Number(exp);
  const token = tokens.find((t) => t.name === name);
  // The MAC is computed either way, so an unknown name takes as long as a wrong MAC.
  const key = sessionKey(token?.token ?? "");
  const role = token ? tokenRole(token) : "viewer";
  const valid = sameSecret(mac(key, `session:${expiresAt}:${name}:${role}`), presented);
  if (!token || !valid || expiresAt <= now) return undefined;
  return { name, role, expiresAt, csrf: mac(key, `csrf:${expiresAt}:${name}:${role}`) };
}

/** The Set-Cookie header value: the session, or (value "" and maxAge 0) its removal. */
export function sessionCookieHeader(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=${SESSION_COOKIE_PATH}; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, maxAgeSeconds)}${secure ? "; Secure" : ""}`;
}

/** The session cookie's value in a Cookie header, if there is one. */
export function sessionCookieValue(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Why a request that a browser made may be another site's, else undefined: Sec-Fetch-Site other than
 * same-origin (or none: typed in by the operator), or an Origin whose host is not the Host the request was sent
 * to. Proxies in front of the admin listener must pass the Host header through.
 */
export function crossSiteProblem(headers: { origin?: string | undefined; host?: string | undefined; secFetchSite?: string | undefined }): string | undefined {
  if (headers.secFetchSite !== undefined && headers.secFetchSite !== "" && headers.secFetchSite !== "same-origin" && headers.secFetchSite !== "none") {
    return `a ${headers.secFetchSite} request is refused: the console only accepts requests from its own page`;
  }
  if (headers.origin === undefined || headers.origin === "") return undefined;
  let host: string;
  try {
    host = new URL(headers.origin).host;
  } catch {
    return "the Origin header is not an origin";
  }
  if (headers.host === undefined || host !== headers.host) return `requests from ${headers.origin.slice(0, 100)} are refused: the console only accepts requests from its own page`;
  return undefined;
}
