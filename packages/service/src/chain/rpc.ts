/**
 * A minimal JSON-RPC client for a network's node URLs ("upstreams"). We call the nodes directly (not through a
 * library transport) because simulation needs the exact revert data of eth_call errors, whatever shape the
 * node gives them.
 *
 * Fault tolerance (docs/operations.md, "Chain RPC"):
 * - An attempt times out when its upstream has answered nothing at all (to any request) for `timeoutMs`
 *   (default 1000 ms): a node that hangs is given up on within that time, while a node that is merely busy
 *   (answering other calls, slower than usual) is waited for, up to `SLOW_ANSWER_MS`. Timing out on a call's age
 *   alone would mark a loaded but healthy node down and fail every request for nothing.
 * - A call moves on to another upstream only within its deadline (`deadlineMs`, default 1500 ms, counted from
 *   the call's start), and the next attempt's timeout is what is left of it: with every upstream hanging, a
 *   sponsor call fails within the deadline.
 * - An upstream that fails at the transport level (refused, timed out, broken connection, an HTTP error without
 *   a JSON-RPC answer, a body that is not JSON-RPC) is marked down, and the call moves on to the next upstream
 *   that is up (a failover). A JSON-RPC error is an answer (a revert, a node's refusal): the upstream stays up
 *   and the error goes to the caller as NodeError.
 * - A rate limit of the provider (HTTP 429, JSON-RPC -32005 and the like: src/chain/providerLimit.ts) is not
 *   the node's verdict on the call: the upstream is cooled down (skipped) for the wait the provider stated
 *   (Retry-After, or in the message) or else a backoff, and the call moves on to the next upstream at once.
 * - Down upstreams are skipped; a prober asks them `eth_blockNumber` every `probeIntervalMs` and marks them up
 *   when they answer. With every upstream down a call fails at once (CHAIN_UNAVAILABLE) instead of waiting.
 * - One log line per state change (down with its cause, up again, cooling down with the wait, answering again
 *   after its limit), never a line per failed call; URLs in logs and metrics are redacted to scheme, host and
 *   port (providers put keys in paths and queries).
 *
 * An upstream's states (`up`, `coolUntil`):
 *
 *                 transport failure                          rate limit
 *      DOWN  <-----------------------  UP (usable)  ------------------------>  COOLING DOWN (up, skipped
 *       |    ----------------------->              <------------------------   until coolUntil)
 *       |     a probe is answered                     its cool-down ends: calls use it again; its first
 *       |                                             answer that is not a limit ends the episode (logged)
 *       +--- a probe is rate-limited: UP and COOLING DOWN (it answers: the provider is there)
 *
 * A cooling-down upstream needs no probe: its cool-down just ends, and the next call is the probe. A limit in
 * a row (the first answer after a cool-down is limited again) doubles the backoff (BACKOFF.baseMs, up to
 * BACKOFF.maxMs); a limit that comes back while the upstream is already cooling down (calls sent before the
 * first limit was seen) does not, so a burst of concurrent limited calls counts as one. A cooling-down
 * upstream counts as healthy (healthy(), /ready): it answers, and other replicas share its quota, so taking
 * this one out of a load balancer would not help.
 *
 * One call (`request`), the attempt loop:
 *   1. each upstream in order that is up and not cooling down gets an attempt (`exchange`); an answer returns.
 *      A transport failure marks it down (after one more try on a fresh connection if it was a glitch), a rate
 *      limit cools it down; either way the call moves on at once.
 *   2. no upstream left to try: when one is cooling down and its cool-down ends early enough to leave an
 *      attempt MIN_ATTEMPT_MS of the deadline — and of the client's call's (`waitUntil`: the door gives all the
 *      chain calls of one client's call one deadline, src/chain/callDeadline.ts, so their waits do not add up) —
 *      the call waits for it (plus a little jitter, so waiting calls do not all fire at once) and goes back to 1.
 *   3. else it fails: CHAIN_UNAVAILABLE with the cause; `rate_limited` (with `retryAfterSeconds`, when the
 *      soonest cool-down ends) when an upstream that is up is cooling down.
 *
 * The steps, each in its own file: the state of the client and its upstreams (upstreams.ts), one exchange
 * (transport.ts), down and up again with the prober (upstreamHealth.ts), rate-limit cool-downs (coolDowns.ts),
 * the upstreams in turn (failover.ts), spans and metrics (rpcTracing.ts); `request` below composes them.
 */
import type { Logger } from "pino";
import { RpcError } from "../errors.ts";
import type { TraceSpan } from "../telemetry/trace.ts";
import { coolDownWait, LIMIT_QUIET_MS, soonestCoolDownEnd } from "./coolDowns.ts";
import { NO_ANSWER, tryEachUpstream, type Call } from "./failover.ts";
import { NodeError, type JsonRpcErrorBody } from "./nodeError.ts";
import { endCallSpan, observeUpstreamState, openCallSpan } from "./rpcTracing.ts";
import { createUpstream } from "./transport.ts";
import { stopProber } from "./upstreamHealth.ts";
import { upstreamLabels, type ChainRpcState, type FailureCause, type RpcObserver, type UpstreamError } from "./upstreams.ts";

export { NodeError, type JsonRpcErrorBody };
export { UpstreamError, upstreamLabels, type FailureCause, type RpcObserver } from "./upstreams.ts";

export interface CallOptions {
  /** Per attempt (overrides the client's). */
  timeoutMs?: number;
  /** All attempts of this call together (overrides the client's). */
  deadlineMs?: number;
  /** The span this call is a child of (a pipeline step's, a settlement pass's): the call gets its own client span. */
  trace?: TraceSpan | undefined;
  /**
   * The deadline of the client's call this one serves (performance.now() time; src/chain/callDeadline.ts): a
   * rate-limited upstream's cool-down is waited for only when the attempt after it fits before this as well.
   */
  waitUntil?: number;
}

export interface UpstreamStatus {
  /** Redacted (scheme, host, port), unique within the network: the metric label. */
  label: string;
  up: boolean;
  /** The cause of the last failure while down. */
  cause?: FailureCause;
  /** While it is cooling down after a rate limit: how long until calls use it again. */
  coolingDownMs?: number;
}

export interface ChainRpc {
  /** The first upstream's URL (unredacted: never log it). */
  readonly url: string;
  request<T>(method: string, params: unknown[], options?: CallOptions): Promise<T>;
  /** Whether some upstream is up (last exchange or probe answered; a rate-limited one answers too). */
  healthy(): boolean;
  /**
   * When no upstream is usable now because every one that is up is cooling down after a rate limit: the error a
   * call gets (CHAIN_UNAVAILABLE, rate_limited, with the wait); else undefined.
   */
  rateLimited(): RpcError | undefined;
  upstreams(): UpstreamStatus[];
  /** Stops the prober. */
  close(): void;
}

export interface ChainRpcOptions {
  /** Network name, for logs and errors. */
  network?: string;
  timeoutMs?: number;
  deadlineMs?: number;
  probeIntervalMs?: number;
  logger?: Logger;
  observer?: RpcObserver;
  /** What the upstreams are, for log lines and the logger's component (default "chain RPC"; the bundler client says "bundler"). */
  kind?: string;
  /** What the prober asks a down upstream (default eth_blockNumber; a bundler answers eth_chainId). */
  probeMethod?: string;
  /** A rate-limit episode ends (one log line) at the first answer after this long without a limit (default 5 s). */
  limitQuietMs?: number;
}

export const RPC_DEFAULTS = Object.freeze({ timeoutMs: 1_000, deadlineMs: 1_500, probeIntervalMs: 1_000 });

/** The client of one network's upstreams, tried in the given order (the first is the primary). */
export function createChainRpc(urls: string | readonly string[], options: ChainRpcOptions = {}): ChainRpc {
  const list = typeof urls === "string" ? [urls] : [...urls];
  if (list.length === 0) throw new Error("createChainRpc: no URL");
  const state = clientState(list, options);
  return {
    url: list[0]!,
    request: <T>(method: string, params: unknown[], callOptions: CallOptions = {}) => request<T>(state, method, params, callOptions),
    healthy: () => state.upstreams.some((u) => u.up),
    rateLimited: () => rateLimited(state),
    upstreams: () => upstreamStatuses(state),
    close() {
      stopProber(state);
      for (const u of state.upstreams) u.closeIdle();
    },
  };
}

/** A new client's state: its settings (the defaults where `options` is silent) and its upstreams, all up. */
function clientState(urls: readonly string[], options: ChainRpcOptions): ChainRpcState {
  const network = options.network ?? "?";
  const kind = options.kind ?? "chain RPC";
  const slug = kind.replaceAll(" ", "-").toLowerCase();
  const labels = upstreamLabels(urls);
  const state: ChainRpcState = {
    upstreams: urls.map((url, i) => createUpstream(url, labels[i]!)),
    network,
    kind,
    spanPrefix: kind === "chain RPC" ? "chain" : slug,
    timeoutMs: options.timeoutMs ?? RPC_DEFAULTS.timeoutMs,
    deadlineMs: Math.max(options.deadlineMs ?? RPC_DEFAULTS.deadlineMs, 1),
    probeIntervalMs: options.probeIntervalMs ?? RPC_DEFAULTS.probeIntervalMs,
    probeMethod: options.probeMethod ?? "eth_blockNumber",
    limitQuietMs: options.limitQuietMs ?? LIMIT_QUIET_MS,
    logger: options.logger?.child({ component: slug, network }),
    observer: options.observer,
    nextId: 1,
    prober: undefined,
    probing: false,
    closed: false,
  };
  for (const u of state.upstreams) observeUpstreamState(state, u);
  return state;
}

/** One call (see the file's comment), recorded on a client span of its own when its caller traces. */
function request<T>(state: ChainRpcState, method: string, params: unknown[], options: CallOptions): Promise<T> {
  const span = openCallSpan(state, method, options.trace);
  const call: Call = {
    method,
    params,
    attemptLimit: options.timeoutMs ?? state.timeoutMs,
    deadline: performance.now() + (options.deadlineMs ?? Math.max(state.deadlineMs, options.timeoutMs ?? 0)),
    waitUntil: options.waitUntil,
    span,
    previous: undefined,
    last: undefined,
    tries: 0,
  };
  const answer = callUpstreams<T>(state, call);
  return span === undefined ? answer : endCallSpan(span, answer);
}

/** The attempt loop: the upstreams in turn (failover.ts), waiting for a cool-down that ends in time, else CHAIN_UNAVAILABLE. */
async function callUpstreams<T>(state: ChainRpcState, call: Call): Promise<T> {
  for (;;) {
    const answer = await tryEachUpstream<T>(state, call);
    if (answer !== NO_ANSWER) return answer;
    // No upstream left to try now: wait for a rate-limited one if its cool-down ends within the deadline, and
    // within the client's call's (its other chain calls may have waited already).
    const wait = coolDownWait(state, Math.min(call.deadline, call.waitUntil ?? call.deadline), call.attemptLimit);
    if (wait === undefined) throw unavailable(state, call.last);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** The error of a call no upstream answered: rate_limited while one that is up cools down, else the last failure's cause. */
function unavailable(state: ChainRpcState, last: UpstreamError | undefined): RpcError {
  const { network, upstreams } = state;
  const now = performance.now();
  const coolEnd = soonestCoolDownEnd(state, now);
  if (coolEnd !== undefined) {
    // The upstreams that answer are rate-limited: the client may come back when the soonest cool-down ends.
    const retryAfterSeconds = Math.max(1, Math.ceil((coolEnd - now) / 1000));
    return new RpcError("CHAIN_UNAVAILABLE", `The RPC provider of network ${network} is rate-limiting this service (rate limited): retry in ${retryAfterSeconds} s`, {
      network,
      cause: "rate_limited",
      retryAfterSeconds,
    });
  }
  const causes = [...new Set(upstreams.map((u) => u.cause).filter((c) => c !== undefined))];
  const cause = last?.cause ?? causes[0] ?? "unavailable";
  return new RpcError("CHAIN_UNAVAILABLE", `No RPC endpoint of network ${network} answered (${cause})`, { network, cause });
}

/** ChainRpc.rateLimited: the error a call gets now when every upstream that is up cools down. */
function rateLimited(state: ChainRpcState): RpcError | undefined {
  const now = performance.now();
  if (state.upstreams.some((u) => u.up && u.coolUntil <= now)) return undefined;
  return soonestCoolDownEnd(state, now) === undefined ? undefined : unavailable(state, undefined);
}

/** ChainRpc.upstreams: each upstream's state, by its redacted label. */
function upstreamStatuses(state: ChainRpcState): UpstreamStatus[] {
  const now = performance.now();
  return state.upstreams.map((u) => ({
    label: u.label,
    up: u.up,
    ...(u.cause ? { cause: u.cause } : {}),
    ...(u.up && u.coolUntil > now ? { coolingDownMs: Math.ceil(u.coolUntil - now) } : {}),
  }));
}
