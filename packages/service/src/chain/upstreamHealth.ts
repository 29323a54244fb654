/**
 * An upstream of the chain client going down and coming back (the states in src/chain/rpc.ts's comment): a
 * transport failure marks it down, a rate limit cools it down (coolDowns.ts); while any is down, a prober asks
 * the down ones `probeMethod` every probeIntervalMs and marks up each one that answers. One log line per change.
 */
import { coolDown } from "./coolDowns.ts";
import { NodeError } from "./nodeError.ts";
import { observeUpstreamState } from "./rpcTracing.ts";
import { classify, exchange } from "./transport.ts";
import type { ChainRpcState, Upstream, UpstreamError } from "./upstreams.ts";

/** A transport failure: calls skip `u` until a probe is answered (its cause is kept for /ready and the error). */
function markDown(state: ChainRpcState, u: Upstream, error: UpstreamError): void {
  if (!u.up) {
    u.cause = error.cause;
    return;
  }
  u.up = false;
  u.cause = error.cause;
  u.downSince = Date.now();
  observeUpstreamState(state, u);
  const others = state.upstreams.filter((o) => o.up).length;
  state.logger?.warn(
    { upstream: u.label, cause: error.cause, detail: error.message, upstreamsUp: others },
    others > 0 ? `${state.kind} upstream down: failing over` : `${state.kind} upstream down: no upstream left`,
  );
  startProber(state);
}

function markUp(state: ChainRpcState, u: Upstream): void {
  if (u.up) return;
  u.up = true;
  observeUpstreamState(state, u);
  state.logger?.info({ upstream: u.label, downForMs: Date.now() - (u.downSince ?? Date.now()) }, `${state.kind} upstream up again`);
  u.cause = undefined;
  u.downSince = undefined;
}

/** What a failed attempt does to its upstream: a rate limit cools it down, anything else marks it down. */
export function setBack(state: ChainRpcState, u: Upstream, error: UpstreamError): void {
  if (error.cause === "rate_limited") coolDown(state, u, error);
  else markDown(state, u, error);
}

/** Probes the down upstreams every probeIntervalMs, until none is down or the client is closed. */
function startProber(state: ChainRpcState): void {
  if (state.prober !== undefined || state.closed) return;
  state.prober = setInterval(() => probeRound(state), state.probeIntervalMs);
  state.prober.unref();
}

/** One tick of the prober: every down upstream asked at once (a round still under way skips it); none down stops it. */
function probeRound(state: ChainRpcState): void {
  if (state.probing) return;
  const down = state.upstreams.filter((u) => !u.up);
  if (down.length === 0) {
    clearInterval(state.prober);
    state.prober = undefined;
    return;
  }
  state.probing = true;
  void Promise.all(down.map((u) => probe(state, u))).finally(() => (state.probing = false));
}

/** Asks one down upstream: any answer marks it up. */
function probe(state: ChainRpcState, u: Upstream): Promise<void> {
  return exchange<string>(state, u, state.probeMethod, [], state.timeoutMs, undefined).then(
    () => markUp(state, u),
    (error: unknown) => {
      const failure = error instanceof NodeError ? undefined : classify(error);
      // It answered: with a node's error, or with its provider's limit (then it is up, and cools down).
      if (failure === undefined || failure.cause === "rate_limited") markUp(state, u);
      if (failure !== undefined) setBack(state, u, failure);
    },
  );
}

/** Stops the prober for good (the client is closed). */
export function stopProber(state: ChainRpcState): void {
  state.closed = true;
  if (state.prober !== undefined) clearInterval(state.prober);
  state.prober = undefined;
}
