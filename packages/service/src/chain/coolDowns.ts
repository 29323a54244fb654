/**
 * What a provider's rate limit does to an upstream of the chain client (the states in src/chain/rpc.ts's
 * comment): it is cooled down (skipped, not marked down) for the wait the provider stated or a backoff; a call
 * with no other upstream may wait for the cool-down to end within its deadline; the first answer after a quiet
 * spell ends the episode. (src/chain/providerLimit.ts reads the limit and its wait from the answer.)
 */
import type { ChainRpcState, Upstream, UpstreamError } from "./upstreams.ts";

/**
 * A rate-limited upstream's cool-down when the provider states no wait: BACKOFF.baseMs, doubled for each limit
 * in a row, at most BACKOFF.maxMs, each ±25 % (jitter, so replicas do not come back in step).
 */
export const BACKOFF = Object.freeze({ baseMs: 200, maxMs: 10_000 });
/** A wait the provider states is honoured within these bounds (a Retry-After of 0, or of a day, is not taken as is). */
export const STATED_WAIT_MS = Object.freeze({ min: 50, max: 60_000 });
/** A call waits for a cool-down only when this much of its deadline (at most its attempt timeout) is left after it. */
export const MIN_ATTEMPT_MS = 250;
/** Waiting calls wake up to this much apart (random), so they do not all fire at the provider at once. */
const WAKE_JITTER_MS = 50;
/** A rate-limit episode is over (logged) at the first answer after this long without a limit. */
export const LIMIT_QUIET_MS = 5_000;

/** The cool-down after `limits` rate limits in a row when the provider states no wait. */
function backoffMs(limits: number): number {
  return Math.min(BACKOFF.baseMs * 2 ** (limits - 1), BACKOFF.maxMs) * (0.75 + Math.random() * 0.5);
}

/** A rate limit: calls skip `u` until the wait the provider stated, or the backoff, has passed. */
export function coolDown(state: ChainRpcState, u: Upstream, limit: UpstreamError): void {
  const now = performance.now();
  const cooling = u.coolUntil > now;
  // A limit while it is cooling down already answers a call sent before the cool-down began: not one more in a row.
  if (!cooling) u.limits++;
  const waitMs = limit.waitMs === undefined ? backoffMs(Math.max(1, u.limits)) : Math.min(Math.max(limit.waitMs, STATED_WAIT_MS.min), STATED_WAIT_MS.max);
  u.coolUntil = Math.max(u.coolUntil, now + waitMs);
  u.lastLimitAt = now;
  u.episodeLimits++;
  if (u.limitedSince !== undefined) return; // the episode goes on: its line was written
  u.limitedSince = Date.now();
  const usable = state.upstreams.filter((o) => o.up && o.coolUntil <= now).length;
  state.logger?.warn(
    { upstream: u.label, cause: limit.cause, detail: limit.message, coolDownMs: Math.round(waitMs), upstreamsUsable: usable },
    usable > 0 ? `${state.kind} upstream rate-limited: cooling it down, failing over` : `${state.kind} upstream rate-limited: cooling it down; calls wait for it within their deadline`,
  );
}

/**
 * `u` answered (not a limit) during a rate-limit episode: the backoff starts over; once no limit has come for
 * limitQuietMs, the episode is over (one line), so a provider limiting every other call is not a line per call.
 */
export function answeredAfterLimit(state: ChainRpcState, u: Upstream): void {
  u.limits = 0;
  if (performance.now() - u.lastLimitAt < state.limitQuietMs) return;
  state.logger?.info({ upstream: u.label, limitedForMs: Date.now() - (u.limitedSince ?? Date.now()), rateLimits: u.episodeLimits }, `${state.kind} upstream answers again after its rate limit`);
  u.limitedSince = undefined;
  u.episodeLimits = 0;
}

/** When the soonest cool-down of an upstream that is up ends (performance.now()); undefined when none cools down. */
export function soonestCoolDownEnd(state: ChainRpcState, now: number): number | undefined {
  let soonest: number | undefined;
  for (const u of state.upstreams) if (u.up && u.coolUntil > now && (soonest === undefined || u.coolUntil < soonest)) soonest = u.coolUntil;
  return soonest;
}

/** How long a call waits for a cool-down to end (jittered), or undefined when none ends in time to leave an attempt its share of the deadline. */
export function coolDownWait(state: ChainRpcState, deadline: number, attemptLimit: number): number | undefined {
  const now = performance.now();
  const end = soonestCoolDownEnd(state, now);
  if (end === undefined) return undefined;
  const wait = end - now + Math.random() * WAKE_JITTER_MS;
  return now + wait + Math.min(attemptLimit, MIN_ATTEMPT_MS) <= deadline ? wait : undefined;
}
