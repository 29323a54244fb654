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
 */
import type { Logger } from "pino";
import { RpcError } from "../rpc/errors.ts";
import { redactUrl } from "../text/redactUrl.ts";
import { createHttpPoster, type HttpAnswer } from "./httpPost.ts";
import { NodeError, type JsonRpcErrorBody } from "./nodeError.ts";
import { providerLimitOf } from "./providerLimit.ts";
import { failureReason, type TraceSpan } from "../telemetry/trace.ts";

export { NodeError, type JsonRpcErrorBody };

/**
 * Why an upstream gave no answer to a call: a bounded set (it is a metric label). `rate_limited`: the provider
 * refused the call over its quota (the upstream is cooled down, not marked down).
 */
export type FailureCause = "refused" | "timeout" | "connection" | "dns" | "http_status" | "invalid_response" | "bad_url" | "rate_limited";

/** An upstream gave no JSON-RPC answer; `cause` says why, `detail` is safe to log (no URL). */
export class UpstreamError extends Error {
  readonly cause: FailureCause;
  /** A rate limit's stated wait (Retry-After, or in its message), in ms; undefined when it stated none. */
  readonly waitMs: number | undefined;
  constructor(cause: FailureCause, detail: string, waitMs?: number) {
    super(detail);
    this.name = "UpstreamError";
    this.cause = cause;
    this.waitMs = waitMs;
  }
}

/** The transport error of a failed exchange, by cause. */
function classify(error: unknown): UpstreamError {
  if (error instanceof UpstreamError) return error;
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === "ECONNREFUSED") return new UpstreamError("refused", "connection refused");
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return new UpstreamError("dns", `name lookup failed (${String(code)})`);
  return new UpstreamError("connection", typeof code === "string" ? `${code}: ${message}` : message);
}

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

/** What the client reports, for metrics (src/metrics). */
export interface RpcObserver {
  /** One attempt on one upstream: "ok", "jsonrpc_error" (answered with an error) or the failure cause ("rate_limited" among them). */
  attempt(upstream: string, method: string, outcome: "ok" | "jsonrpc_error" | FailureCause, seconds: number): void;
  upstreamState(upstream: string, up: boolean): void;
  /** A call moved to another upstream after one failed or was rate-limited. */
  failover(): void;
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
/** A timeout timer firing this much later than due means this process itself was stalled. */
const STALL_MS = 50;
/** The most an attempt waits on an upstream that keeps answering other calls (busy, not dead). */
export const SLOW_ANSWER_MS = 10_000;
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
const LIMIT_QUIET_MS = 5_000;

/** The cool-down after `limits` rate limits in a row when the provider states no wait. */
function backoffMs(limits: number): number {
  return Math.min(BACKOFF.baseMs * 2 ** (limits - 1), BACKOFF.maxMs) * (0.75 + Math.random() * 0.5);
}

/** Why an HTTP answer without a JSON-RPC error is no JSON-RPC answer either; undefined when it holds a result. */
function notAnAnswer(status: number, body: unknown): UpstreamError | undefined {
  if (status < 200 || status > 299) return new UpstreamError("http_status", `HTTP ${status}`);
  if (!body || typeof body !== "object" || !("result" in body)) return new UpstreamError("invalid_response", "the answer is not a JSON-RPC response");
  return undefined;
}

/** Unique redacted labels for `urls` (two URLs on one host differ only by their hidden path: number them). */
export function upstreamLabels(urls: readonly string[]): string[] {
  const redacted = urls.map(redactUrl);
  return redacted.map((label, i) => (redacted.indexOf(label) !== redacted.lastIndexOf(label) ? `${label}#${i + 1}` : label));
}

interface Upstream {
  url: string;
  label: string;
  up: boolean;
  cause?: FailureCause;
  downSince?: number;
  /** Calls skip it until then (performance.now()): a rate limit cooled it down. 0: not cooling down. */
  coolUntil: number;
  /** Rate limits in a row since its last answer that was not one (0: not limited): the backoff's exponent. */
  limits: number;
  /** When (Date.now()) its current rate-limit episode began: undefined when none is going on. */
  limitedSince?: number;
  /** The episode's last limit (performance.now()) and how many it has had. */
  lastLimitAt: number;
  episodeLimits: number;
  /** When it last completed an exchange (performance.now()), whatever the answer. */
  lastAnswerAt: number;
  post(payload: string, timeoutMs: number, traceparent?: string): Promise<HttpAnswer>;
  /** Closes its idle connections. */
  closeIdle(): void;
}

/**
 * POSTs on kept-alive connections of src/chain/httpPost.ts (a lean HTTP/1.1 client: node:http's request
 * machinery cost more CPU per chain call than a sponsorship's own work). The status and body whatever the
 * status; rejects on a transport failure or the timeout.
 */
function createPoster(url: string, lastAnswerAt: () => number, hardMs: () => number): Pick<Upstream, "post" | "closeIdle"> {
  const poster = createHttpPoster(url);
  const post: Upstream["post"] = (payload, timeoutMs, traceparent) =>
    new Promise((resolve, reject) => {
      if (!poster) throw new UpstreamError("bad_url", "not an http(s) URL");
      const pending = poster.post(payload, traceparent);
      // Timed out when the upstream has been silent (no answer to anyone) for timeoutMs since this attempt
      // began, or when the attempt has lasted hardMs (a busy upstream is waited for that long at most).
      const started = performance.now();
      const limit = Math.max(hardMs(), timeoutMs);
      let timer: NodeJS.Timeout;
      let dueAt = started + timeoutMs;
      const arm = (ms: number): void => {
        dueAt = performance.now() + ms;
        timer = setTimeout(check, ms);
        timer.unref();
      };
      const check = (): void => {
        const now = performance.now();
        // This process was stalled (CPU starved, or a synchronous task held the event loop): answers may be
        // waiting unread in the sockets. Judge only after the pending I/O has been read.
        if (now - dueAt > STALL_MS && now - started < limit) {
          arm(STALL_MS);
          return;
        }
        const silentFor = now - Math.max(started, lastAnswerAt());
        if (silentFor >= timeoutMs || now - started >= limit) {
          pending.abort(new UpstreamError("timeout", `no answer within ${Math.round(now - started)} ms`));
          return;
        }
        arm(Math.min(timeoutMs - silentFor, limit - (now - started)));
      };
      arm(timeoutMs);
      pending.answer.then(
        (answer) => {
          clearTimeout(timer);
          resolve(answer);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(classify(error));
        },
      );
    });
  return { post, closeIdle: () => poster?.close() };
}

/** The client of one network's upstreams, tried in the given order (the first is the primary). */
export function createChainRpc(urls: string | readonly string[], options: ChainRpcOptions = {}): ChainRpc {
  const list = typeof urls === "string" ? [urls] : [...urls];
  if (list.length === 0) throw new Error("createChainRpc: no URL");
  const timeoutMs = options.timeoutMs ?? RPC_DEFAULTS.timeoutMs;
  const deadlineMs = Math.max(options.deadlineMs ?? RPC_DEFAULTS.deadlineMs, 1);
  const probeIntervalMs = options.probeIntervalMs ?? RPC_DEFAULTS.probeIntervalMs;
  const network = options.network ?? "?";
  const kind = options.kind ?? "chain RPC";
  const slug = kind.replaceAll(" ", "-").toLowerCase();
  /** Span names: "chain eth_call", "bundler eth_sendUserOperation". */
  const spanPrefix = kind === "chain RPC" ? "chain" : slug;
  const probeMethod = options.probeMethod ?? "eth_blockNumber";
  const limitQuietMs = options.limitQuietMs ?? LIMIT_QUIET_MS;
  const logger = options.logger?.child({ component: slug, network });
  const observer = options.observer;
  const labels = upstreamLabels(list);
  const upstreams: Upstream[] = list.map((url, i) => {
    const u: Upstream = { url, label: labels[i]!, up: true, coolUntil: 0, limits: 0, lastLimitAt: 0, episodeLimits: 0, lastAnswerAt: 0, post: undefined as unknown as Upstream["post"], closeIdle: () => undefined };
    const poster = createPoster(url, () => u.lastAnswerAt, () => SLOW_ANSWER_MS);
    u.post = poster.post;
    u.closeIdle = poster.closeIdle;
    return u;
  });
  for (const u of upstreams) observer?.upstreamState(u.label, true);
  let nextId = 1;

  function markDown(u: Upstream, error: UpstreamError): void {
    if (!u.up) {
      u.cause = error.cause;
      return;
    }
    u.up = false;
    u.cause = error.cause;
    u.downSince = Date.now();
    observer?.upstreamState(u.label, false);
    const others = upstreams.filter((o) => o.up).length;
    logger?.warn({ upstream: u.label, cause: error.cause, detail: error.message, upstreamsUp: others }, others > 0 ? `${kind} upstream down: failing over` : `${kind} upstream down: no upstream left`);
    startProber();
  }

  function markUp(u: Upstream): void {
    if (u.up) return;
    u.up = true;
    observer?.upstreamState(u.label, true);
    logger?.info({ upstream: u.label, downForMs: Date.now() - (u.downSince ?? Date.now()) }, `${kind} upstream up again`);
    u.cause = undefined;
    u.downSince = undefined;
  }

  /** A rate limit: calls skip `u` until the wait the provider stated, or the backoff, has passed. */
  function coolDown(u: Upstream, limit: UpstreamError): void {
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
    const usable = upstreams.filter((o) => o.up && o.coolUntil <= now).length;
    logger?.warn(
      { upstream: u.label, cause: limit.cause, detail: limit.message, coolDownMs: Math.round(waitMs), upstreamsUsable: usable },
      usable > 0 ? `${kind} upstream rate-limited: cooling it down, failing over` : `${kind} upstream rate-limited: cooling it down; calls wait for it within their deadline`,
    );
  }

  /**
   * `u` answered (not a limit) during a rate-limit episode: the backoff starts over; once no limit has come for
   * limitQuietMs, the episode is over (one line), so a provider limiting every other call is not a line per call.
   */
  function answeredAfterLimit(u: Upstream): void {
    u.limits = 0;
    if (performance.now() - u.lastLimitAt < limitQuietMs) return;
    logger?.info({ upstream: u.label, limitedForMs: Date.now() - (u.limitedSince ?? Date.now()), rateLimits: u.episodeLimits }, `${kind} upstream answers again after its rate limit`);
    u.limitedSince = undefined;
    u.episodeLimits = 0;
  }

  /** What a failed attempt does to its upstream: a rate limit cools it down, anything else marks it down. */
  function setBack(u: Upstream, error: UpstreamError): void {
    if (error.cause === "rate_limited") coolDown(u, error);
    else markDown(u, error);
  }

  /** One exchange with one upstream: the parsed answer, or throws UpstreamError / NodeError. */
  async function exchange<T>(u: Upstream, method: string, params: unknown[], attemptMs: number, traceparent: string | undefined): Promise<T> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    let answer: HttpAnswer;
    try {
      answer = await u.post(JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }), attemptMs, traceparent);
      u.lastAnswerAt = performance.now();
    } catch (error) {
      const failure = classify(error);
      observer?.attempt(u.label, method, failure.cause, seconds());
      throw failure;
    }
    let body: { result?: T; error?: JsonRpcErrorBody } | undefined;
    try {
      body = JSON.parse(answer.body.toString("utf8")) as typeof body;
    } catch {
      body = undefined;
    }
    const error = body && typeof body === "object" && body.error && typeof body.error === "object" ? body.error : undefined;
    // The provider's rate limit (HTTP 429 whatever the body, -32005, …) is no answer to the call; any other
    // JSON-RPC error is one, whatever the HTTP status (nodes report reverts both ways).
    const limit = error !== undefined || answer.status === 429 ? providerLimitOf(answer.status, answer.retryAfter, error) : undefined;
    const failure = limit !== undefined ? new UpstreamError("rate_limited", limit.detail, limit.waitMs) : error === undefined ? notAnAnswer(answer.status, body) : undefined;
    if (failure) {
      observer?.attempt(u.label, method, failure.cause, seconds());
      throw failure;
    }
    // Answered: the provider took the call.
    if (u.limitedSince !== undefined) answeredAfterLimit(u);
    if (error !== undefined) {
      observer?.attempt(u.label, method, "jsonrpc_error", seconds());
      throw new NodeError(error);
    }
    observer?.attempt(u.label, method, "ok", seconds());
    return body!.result as T;
  }

  let prober: NodeJS.Timeout | undefined;
  let probing = false;
  function startProber(): void {
    if (prober !== undefined || closed) return;
    prober = setInterval(() => {
      if (probing) return;
      const down = upstreams.filter((u) => !u.up);
      if (down.length === 0) {
        clearInterval(prober);
        prober = undefined;
        return;
      }
      probing = true;
      void Promise.all(
        down.map((u) =>
          exchange<string>(u, probeMethod, [], timeoutMs, undefined).then(
            () => markUp(u),
            (error: unknown) => {
              const failure = error instanceof NodeError ? undefined : classify(error);
              // It answered: with a node's error, or with its provider's limit (then it is up, and cools down).
              if (failure === undefined || failure.cause === "rate_limited") markUp(u);
              if (failure !== undefined) setBack(u, failure);
            },
          ),
        ),
      ).finally(() => (probing = false));
    }, probeIntervalMs);
    prober.unref();
  }
  let closed = false;

  /** A broken connection while the upstream answered something within the last timeoutMs. */
  function isGlitch(u: Upstream, error: UpstreamError): boolean {
    return error.cause === "connection" && performance.now() - u.lastAnswerAt < timeoutMs;
  }

  /** When the soonest cool-down of an upstream that is up ends (performance.now()); undefined when none cools down. */
  function soonestCoolDownEnd(now: number): number | undefined {
    let soonest: number | undefined;
    for (const u of upstreams) if (u.up && u.coolUntil > now && (soonest === undefined || u.coolUntil < soonest)) soonest = u.coolUntil;
    return soonest;
  }

  /** How long a call waits for a cool-down to end (jittered), or undefined when none ends in time to leave an attempt its share of the deadline. */
  function coolDownWait(deadline: number, attemptLimit: number): number | undefined {
    const now = performance.now();
    const end = soonestCoolDownEnd(now);
    if (end === undefined) return undefined;
    const wait = end - now + Math.random() * WAKE_JITTER_MS;
    return now + wait + Math.min(attemptLimit, MIN_ATTEMPT_MS) <= deadline ? wait : undefined;
  }

  function unavailable(last: UpstreamError | undefined): RpcError {
    const now = performance.now();
    const coolEnd = soonestCoolDownEnd(now);
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

  /** One call: each usable upstream in turn (see the file's comment), recorded on `span` when traced. */
  async function attempts<T>(method: string, params: unknown[], callOptions: CallOptions, span: TraceSpan | undefined): Promise<T> {
    const attemptLimit = callOptions.timeoutMs ?? timeoutMs;
    const deadline = performance.now() + (callOptions.deadlineMs ?? Math.max(deadlineMs, callOptions.timeoutMs ?? 0));
    let last: UpstreamError | undefined;
    let previous: Upstream | undefined;
    let tries = 0;
    for (;;) {
      for (const u of upstreams) {
        if (!u.up) continue;
        const now = performance.now();
        if (u.coolUntil > now) continue;
        const remaining = Math.floor(deadline - now);
        if (remaining <= 0) break;
        if (previous !== undefined && previous !== u) observer?.failover();
        previous = u;
        try {
          span?.set("paymaster.rpc.attempts", ++tries);
          span?.set("paymaster.upstream", u.label);
          return await exchange<T>(u, method, params, Math.min(attemptLimit, remaining), span?.traceparent);
        } catch (error) {
          if (!(error instanceof UpstreamError)) throw error;
          last = error;
          span?.set("paymaster.rpc.cause", error.cause);
          if (!isGlitch(u, error)) {
            setBack(u, error);
            continue;
          }
        }
        // A broken connection to an upstream that is answering other calls is a glitch of that one connection
        // (a kept-alive socket the node closed as it was reused, a reset under load): one more try, on a fresh
        // connection, before anything is marked down.
        const left = Math.floor(deadline - performance.now());
        if (left <= 0) break;
        try {
          span?.set("paymaster.rpc.attempts", ++tries);
          return await exchange<T>(u, method, params, Math.min(attemptLimit, left), span?.traceparent);
        } catch (error) {
          if (!(error instanceof UpstreamError)) throw error;
          last = error;
          span?.set("paymaster.rpc.cause", error.cause);
          setBack(u, error);
        }
      }
      // No upstream left to try now: wait for a rate-limited one if its cool-down ends within the deadline, and
      // within the client's call's (its other chain calls may have waited already).
      const wait = coolDownWait(Math.min(deadline, callOptions.waitUntil ?? deadline), attemptLimit);
      if (wait === undefined) throw unavailable(last);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  return {
    url: list[0]!,
    request<T>(method: string, params: unknown[], callOptions: CallOptions = {}): Promise<T> {
      const parent = callOptions.trace;
      if (parent === undefined || !parent.recording) return attempts<T>(method, params, callOptions, undefined);
      // A client span per call: its upstream (redacted label), how many attempts it took, the last failure's cause.
      const span = parent.child(`${spanPrefix} ${method}`, "client");
      span.set("rpc.system", "jsonrpc");
      span.set("rpc.method", method);
      span.set("paymaster.network", network);
      return attempts<T>(method, params, callOptions, span).then(
        (result) => {
          span.set("paymaster.rpc.outcome", "ok");
          span.end();
          return result;
        },
        (error: unknown) => {
          // A node's JSON-RPC error (a revert) is an answer: the caller decides whether it is a failure.
          if (error instanceof NodeError) span.set("paymaster.rpc.outcome", "jsonrpc_error");
          else span.fail(failureReason(error));
          span.end();
          throw error;
        },
      );
    },
    healthy: () => upstreams.some((u) => u.up),
    rateLimited() {
      const now = performance.now();
      if (upstreams.some((u) => u.up && u.coolUntil <= now)) return undefined;
      return soonestCoolDownEnd(now) === undefined ? undefined : unavailable(undefined);
    },
    upstreams() {
      const now = performance.now();
      return upstreams.map((u) => ({
        label: u.label,
        up: u.up,
        ...(u.cause ? { cause: u.cause } : {}),
        ...(u.up && u.coolUntil > now ? { coolingDownMs: Math.ceil(u.coolUntil - now) } : {}),
      }));
    },
    close() {
      closed = true;
      if (prober !== undefined) clearInterval(prober);
      prober = undefined;
      for (const u of upstreams) u.closeIdle();
    },
  };
}
