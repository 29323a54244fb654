/**
 * The admin HTTP API's settings, from the environment only (its tokens are secrets):
 *
 *   PAYMASTER_ADMIN_TOKENS  comma-separated name=token pairs (token: at least 32 characters); unset = the API
 *                           is off. The name is what the audit log records ("api:<name>").
 *   PAYMASTER_ADMIN_PORT    the admin listener's port (default 3001; 0 picks a free one)
 *   PAYMASTER_ADMIN_HOST    its host: a loopback address (default 127.0.0.1), like the public listener
 */
import { ConfigError } from "../config/errors.ts";

export interface AdminToken {
  name: string;
  token: string;
}

export interface AdminApiOptions {
  host: string;
  port: number;
  tokens: readonly AdminToken[];
}

export const ADMIN_TOKENS_ENV = "PAYMASTER_ADMIN_TOKENS";
export const ADMIN_TOKEN_MIN_CHARS = 32;
export const DEFAULT_ADMIN_PORT = 3001;

/** The admin API's options, or undefined when no token is configured (the API is off). */
export function adminApiOptionsFromEnv(env: NodeJS.ProcessEnv): AdminApiOptions | undefined {
  const raw = env[ADMIN_TOKENS_ENV]?.trim();
  if (!raw) return undefined;
  const issues: string[] = [];
  const tokens: AdminToken[] = [];
  for (const [i, entry] of raw.split(",").entries()) {
    const eq = entry.indexOf("=");
    const name = eq < 0 ? "" : entry.slice(0, eq).trim();
    const token = eq < 0 ? "" : entry.slice(eq + 1).trim();
    // Never echo a token: only its position and what is wrong.
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) issues.push(`${ADMIN_TOKENS_ENV} entry ${i + 1}: expected name=token with a name of letters, digits, '.', '_' or '-'`);
    else if (token.length < ADMIN_TOKEN_MIN_CHARS) issues.push(`${ADMIN_TOKENS_ENV} entry ${i + 1} (${name}): the token must have at least ${ADMIN_TOKEN_MIN_CHARS} characters`);
    else if (tokens.some((t) => t.name === name)) issues.push(`${ADMIN_TOKENS_ENV}: the name ${name} is used twice`);
    else tokens.push({ name, token });
  }
  const portText = env.PAYMASTER_ADMIN_PORT?.trim();
  const port = portText ? Number(portText) : DEFAULT_ADMIN_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) issues.push(`PAYMASTER_ADMIN_PORT: must be a port number (0-65535)`);
  if (issues.length > 0) throw new ConfigError(issues);
  return { host: env.PAYMASTER_ADMIN_HOST?.trim() || "127.0.0.1", port, tokens };
}
