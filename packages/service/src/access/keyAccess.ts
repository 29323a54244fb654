/**
 * Per-key access from browsers and networks: a key may carry allowed origins and client IP ranges
 * (ApiKey.allowedOrigins / allowedIps). Pure functions: the validation used by administration and the check
 * made on every request (rpc/dispatch.ts).
 *
 * Default (no list): any origin, and requests without one — the key works server-side and from any page.
 * [] origins: server-side only — a request that carries an Origin header (every browser fetch does) is
 * refused. Origins are compared exactly (scheme, host, port), after lowercasing: "https://app.example.com".
 * IP ranges are CIDR ("203.0.113.0/24", "2001:db8::/32") or single addresses, checked against the request's
 * client address (clientAddress.ts: the connection's, or behind a configured trusted proxy the forwarded one).
 */
import { isIP } from "node:net";
import { inList, plainIp, rangeList } from "./clientAddress.ts";

/** An origin as browsers send it: scheme://host[:port], no path. Null origins ("null") are not allowed. */
export function validOrigin(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length > 255) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.origin !== value.toLowerCase().replace(/\/$/, "")) return undefined;
  return url.origin;
}

/** A CIDR range or one address, normalised ("10.0.0.1" -> "10.0.0.1/32"); undefined when malformed. */
export function validIpRange(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const [address, prefixText, extra] = value.trim().split("/");
  const family = isIP(address ?? "");
  if (family === 0 || extra !== undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return undefined;
  return `${address}/${prefix}`;
}

/** Why a request may not use the key (a message naming what is wrong), or undefined when it may. */
export function accessRefusal(
  key: { allowedOrigins: readonly string[] | null; allowedIps: readonly string[] | null },
  request: { origin?: string | undefined; clientIp?: string | undefined },
): { reason: "ORIGIN_NOT_ALLOWED" | "CLIENT_IP_NOT_ALLOWED"; message: string } | undefined {
  const origin = request.origin === undefined || request.origin === "" ? undefined : request.origin.toLowerCase();
  if (key.allowedOrigins !== null && origin !== undefined && !key.allowedOrigins.includes(origin)) {
    return {
      reason: "ORIGIN_NOT_ALLOWED",
      message:
        key.allowedOrigins.length === 0
          ? "This API key is for server-side use only: requests from a browser origin are refused"
          : `This API key is not allowed from origin ${JSON.stringify(origin.slice(0, 255))}`,
    };
  }
  if (key.allowedIps !== null) {
    const ip = plainIp(request.clientIp ?? "");
    if (ip === undefined || !inList(rangeList(key.allowedIps), ip)) {
      return { reason: "CLIENT_IP_NOT_ALLOWED", message: `This API key is not allowed from client address ${ip ?? "(unknown)"}` };
    }
  }
  return undefined;
}
