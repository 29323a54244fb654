/**
 * The admin HTTP API's settings, from the environment only (its tokens are secrets):
 *
 *   PAYMASTER_ADMIN_TOKENS  comma-separated entries `name:role=token` (role: viewer, operator or admin; see
 *                           src/admin/roles.ts) or `name=token` (admin: every token was before roles, so an
 *                           upgrade locks nobody out); token: at least 32 characters; unset = the API is off.
 *                           The name is what the audit log records ("api:<name>", with the role). A name never
 *                           holds ':' (nor '='), so the first '=' ends `name[:role]` and a ':' before it can only
 *                           be the role's: a token holding ':' or '=' is read the same either way.
 *   PAYMASTER_ADMIN_PORT    the admin listener's port (default 3001; 0 picks a free one)
 *   PAYMASTER_ADMIN_HOST    its host: a loopback address (default 127.0.0.1), like the public listener
 *   PAYMASTER_ADMIN_ALLOWED_HOSTS  comma-separated host names the listener also answers to in the Host header
 *                           (a proxy in front that passes its own name, e.g. admin.example.com); by default only
 *                           localhost, 127.0.0.1, [::1] and PAYMASTER_ADMIN_HOST (gate.ts: DNS rebinding)
 */
import { DEFAULT_ROLE, isRole, ROLES, type Role } from "../admin/roles.ts";
import { ConfigError } from "../config/errors.ts";

export interface AdminToken {
  name: string;
  token: string;
  /** What the token may do; absent: admin (DEFAULT_ROLE), as a `name=token` entry. */
  role?: Role;
}

/** The role a token grants. */
export const tokenRole = (token: AdminToken): Role => token.role ?? DEFAULT_ROLE;

export interface AdminApiOptions {
  host: string;
  port: number;
  tokens: readonly AdminToken[];
  /** Host names accepted in the Host header beyond the listener's own (gate.ts). */
  allowedHosts?: readonly string[];
}

export const ADMIN_TOKENS_ENV = "PAYMASTER_ADMIN_TOKENS";
export const ADMIN_TOKEN_MIN_CHARS = 32;
export const DEFAULT_ADMIN_PORT = 3001;
export const ADMIN_ALLOWED_HOSTS_ENV = "PAYMASTER_ADMIN_ALLOWED_HOSTS";
/** A DNS name, an IPv4 address, or an IPv6 address (bare or in brackets). */
const HOST_NAME = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*|\[?[0-9A-Fa-f:.]+\]?)$/;

/** The admin API's options, or undefined when no token is configured (the API is off). */
export function adminApiOptionsFromEnv(env: NodeJS.ProcessEnv): AdminApiOptions | undefined {
  const raw = env[ADMIN_TOKENS_ENV]?.trim();
  if (!raw) return undefined;
  const issues: string[] = [];
  const tokens: AdminToken[] = [];
  for (const [i, entry] of raw.split(",").entries()) {
    const eq = entry.indexOf("=");
    const head = eq < 0 ? "" : entry.slice(0, eq).trim();
    const token = eq < 0 ? "" : entry.slice(eq + 1).trim();
    const colon = head.indexOf(":");
    const name = colon < 0 ? head : head.slice(0, colon).trim();
    const role = colon < 0 ? DEFAULT_ROLE : head.slice(colon + 1).trim();
    // Never echo a token: only its position and what is wrong.
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) issues.push(`${ADMIN_TOKENS_ENV} entry ${i + 1}: expected name:role=token (or name=token for admin) with a name of letters, digits, '.', '_' or '-'`);
    else if (!isRole(role)) issues.push(`${ADMIN_TOKENS_ENV} entry ${i + 1} (${name}): the role must be one of ${ROLES.join(", ")}`);
    else if (token.length < ADMIN_TOKEN_MIN_CHARS) issues.push(`${ADMIN_TOKENS_ENV} entry ${i + 1} (${name}): the token must have at least ${ADMIN_TOKEN_MIN_CHARS} characters`);
    else if (tokens.some((t) => t.name === name)) issues.push(`${ADMIN_TOKENS_ENV}: the name ${name} is used twice`);
    else if (tokens.some((t) => t.token === token && t.role !== role)) issues.push(`${ADMIN_TOKENS_ENV} entry ${i + 1} (${name}): the same token as another entry with another role`);
    else tokens.push({ name, token, role });
  }
  const portText = env.PAYMASTER_ADMIN_PORT?.trim();
  const port = portText ? Number(portText) : DEFAULT_ADMIN_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) issues.push(`PAYMASTER_ADMIN_PORT: must be a port number (0-65535)`);
  const allowedHosts = (env[ADMIN_ALLOWED_HOSTS_ENV] ?? "").split(",").map((h) => h.trim()).filter((h) => h !== "");
  for (const h of allowedHosts) {
    if (!HOST_NAME.test(h)) issues.push(`${ADMIN_ALLOWED_HOSTS_ENV}: ${JSON.stringify(h.slice(0, 100))} is not a host name or address (no scheme, port or path)`);
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return { host: env.PAYMASTER_ADMIN_HOST?.trim() || "127.0.0.1", port, tokens, ...(allowedHosts.length > 0 ? { allowedHosts } : {}) };
}
