/**
 * Bounds on open reservations (THREAT_MODEL.md; issue 20's finding 2). The service reserves an op's maximum cost
 * before the account signs, one reservation per (sender, nonce); 2-D nonces make fresh nonces free. So:
 * - per sender (network, EntryPoint), across nonces: at most `maxOutstandingPerSender` open sponsorships
 *   (default 4, what ERC-7562's mempool rules let an unstaked sender have pending in a bundler at once);
 * - per (API key, client address) for browser keys (keys with an origins list: their users call from
 *   browsers, one wallet each; a server-side key is one trusted backend for many users and is not bounded
 *   here): at most `maxOutstandingPerClientIp` (default 8). A client is its clientBucket: an IPv6 client's
 *   whole /64 (`ipv6ClientPrefix`) counts as one, else its addresses would each be a fresh client.
 * - of a billed project's balance, per (browser key, client address) and per browser key: at most
 *   `maxBalanceShareBpsPerClient` (default 10 %) and `maxBalanceShareBpsPerKey` (default 50 %) held by their open
 *   sponsorships, so that ops nobody signs, from one address or with the public key, never hold the whole balance
 *   (service review 3, finding 2).
 * The store keeps them as running holds and checks them in the reservation's batch (TOO_MANY_OUTSTANDING,
 * HOLD_SHARE_EXCEEDED).
 */
import type { ServiceConfig } from "../config/types.ts";
import { clientBucket } from "../access/clientAddress.ts";
import type { ApiKey } from "../store/types.ts";
import type { StrategyRules } from "../policy/types.ts";

export const DEFAULT_RESERVATION_BOUNDS = Object.freeze({ maxOutstandingPerSender: 4, maxOutstandingPerClientIp: 8, maxBalanceShareBpsPerClient: 1_000, maxBalanceShareBpsPerKey: 5_000 });

/** A key used from browsers: it names the origins it serves. */
export function browserKey(key: Pick<ApiKey, "allowedOrigins">): boolean {
  return key.allowedOrigins !== null && key.allowedOrigins.length > 0;
}

/**
 * The per-client bound under a strategy: its own `maxOutstandingPerClientIp` when set; else the configuration's,
 * lowered to half the strategy's smallest op-count cap (global, daily; at least 1). Without that a script could
 * hold a whole small cap (the review's caps.daily.maxOps 3) from one address; many addresses together are
 * bounded by the cap itself, which real ops could use up just the same.
 */
export function perClientBound(configured: number, rules: StrategyRules | undefined): number {
  if (rules?.maxOutstandingPerClientIp !== undefined) return rules.maxOutstandingPerClientIp;
  const opCaps = [rules?.caps?.global?.maxOps, rules?.caps?.daily?.maxOps].filter((n): n is number => n !== undefined);
  return Math.min(configured, ...opCaps.map((n) => Math.max(1, Math.floor(n / 2))));
}

/** The store's bounds for a reservation requested with `key` from `clientIp` (under `rules`, in Sponsor mode). */
export function outstandingBounds(config: Pick<ServiceConfig, "reservations" | "ipv6ClientPrefix">, key: Pick<ApiKey, "allowedOrigins">, clientIp: string | undefined, rules?: StrategyRules) {
  const c = { ...DEFAULT_RESERVATION_BOUNDS, ...config.reservations };
  return {
    ...(clientIp === undefined ? {} : { clientBucket: clientBucket(clientIp, config.ipv6ClientPrefix) }),
    outstanding: {
      maxPerSender: c.maxOutstandingPerSender,
      ...(browserKey(key) && clientIp !== undefined ? { maxPerClientIp: perClientBound(c.maxOutstandingPerClientIp, rules) } : {}),
    },
    ...(browserKey(key)
      ? { billingShares: { ...(clientIp === undefined ? {} : { perClientBps: c.maxBalanceShareBpsPerClient }), perKeyBps: c.maxBalanceShareBpsPerKey } }
      : {}),
  };
}
