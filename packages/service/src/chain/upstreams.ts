/**
 * The state of one chain client (src/chain/rpc.ts): its upstreams, their health and rate-limit cool-downs, and
 * the settings its steps read. One object per client, built by createChainRpc and passed to every step
 * (transport.ts, coolDowns.ts, upstreamHealth.ts, failover.ts, rpcTracing.ts).
 */
import type { Logger } from "pino";
import { redactUrl } from "../text/redactUrl.ts";
import type { HttpAnswer } from "./httpPost.ts";

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

/** What the client reports, for metrics (src/metrics). */
export interface RpcObserver {
  /** One attempt on one upstream: "ok", "jsonrpc_error" (answered with an error) or the failure cause ("rate_limited" among them). */
  attempt(upstream: string, method: string, outcome: "ok" | "jsonrpc_error" | FailureCause, seconds: number): void;
  upstreamState(upstream: string, up: boolean): void;
  /** A call moved to another upstream after one failed or was rate-limited. */
  failover(): void;
}

export interface Upstream {
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

/** One client: its upstreams in order (the first is the primary), its settings, its prober. */
export interface ChainRpcState {
  readonly upstreams: readonly Upstream[];
  /** Network name, for logs and errors. */
  readonly network: string;
  /** What the upstreams are, for log lines ("chain RPC", "bundler"). */
  readonly kind: string;
  /** Span names: "chain eth_call", "bundler eth_sendUserOperation". */
  readonly spanPrefix: string;
  /** Per attempt: how long an upstream that answers nothing at all is waited for. */
  readonly timeoutMs: number;
  /** All attempts of one call together. */
  readonly deadlineMs: number;
  readonly probeIntervalMs: number;
  /** What the prober asks a down upstream. */
  readonly probeMethod: string;
  /** A rate-limit episode ends (one log line) at the first answer after this long without a limit. */
  readonly limitQuietMs: number;
  readonly logger: Logger | undefined;
  readonly observer: RpcObserver | undefined;
  /** The next JSON-RPC request id. */
  nextId: number;
  /** Probes the down upstreams while there are any. */
  prober: NodeJS.Timeout | undefined;
  /** A round of probes is under way (the next tick skips). */
  probing: boolean;
  /** close() was called: no prober starts again. */
  closed: boolean;
}

/** Unique redacted labels for `urls` (two URLs on one host differ only by their hidden path: number them). */
export function upstreamLabels(urls: readonly string[]): string[] {
  const redacted = urls.map(redactUrl);
  return redacted.map((label, i) => (redacted.indexOf(label) !== redacted.lastIndexOf(label) ? `${label}#${i + 1}` : label));
}
