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
 *   that is up (a failover). A JSON-RPC error is an answer: the upstream stays up.
 * - Down upstreams are skipped; a prober asks them `eth_blockNumber` every `probeIntervalMs` and marks them up
 *   when they answer. With every upstream down a call fails at once (CHAIN_UNAVAILABLE) instead of waiting.
 * - One log line per state change (down with its cause, up again), never a line per failed call; URLs in logs
 *   and metrics are redacted to scheme, host and port (providers put keys in paths and queries).
 */
import type { Logger } from "pino";
import { RpcError } from "../rpc/errors.ts";
import { redactUrl } from "../config/load.ts";
import { createHttpPoster } from "./httpPost.ts";

export interface JsonRpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

/** The node answered with a JSON-RPC error (e.g. an eth_call that reverted). */
export class NodeError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(body: JsonRpcErrorBody) {
    super(body.message);
    this.name = "NodeError";
    this.code = body.code;
    this.data = body.data;
  }

  /** Revert data of a failed eth_call, as nodes variously report it (data, data.data, data.result). */
  get revertData(): `0x${string}` | undefined {
    const candidates = [this.data, (this.data as { data?: unknown })?.data, (this.data as { result?: unknown })?.result];
    for (const candidate of candidates) {
      if (typeof candidate === "string" && /^0x([0-9a-fA-F]{2})*$/.test(candidate)) return candidate as `0x${string}`;
    }
    return undefined;
  }
}

/** Why an upstream gave no answer: a bounded set (it is a metric label). */
export type FailureCause = "refused" | "timeout" | "connection" | "dns" | "http_status" | "invalid_response" | "bad_url";

/** An upstream gave no JSON-RPC answer; `cause` says why, `detail` is safe to log (no URL). */
export class UpstreamError extends Error {
  readonly cause: FailureCause;
  constructor(cause: FailureCause, detail: string) {
    super(detail);
    this.name = "UpstreamError";
    this.cause = cause;
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
}

export interface UpstreamStatus {
  /** Redacted (scheme, host, port), unique within the network: the metric label. */
  label: string;
  up: boolean;
  /** The cause of the last failure while down. */
  cause?: FailureCause;
}

export interface ChainRpc {
  /** The first upstream's URL (unredacted: never log it). */
  readonly url: string;
  request<T>(method: string, params: unknown[], options?: CallOptions): Promise<T>;
  /** Whether some upstream is up (last exchange or probe answered). */
  healthy(): boolean;
  upstreams(): UpstreamStatus[];
  /** Stops the prober. */
  close(): void;
}

/** What the client reports, for metrics (src/metrics). */
export interface RpcObserver {
  /** One attempt on one upstream: "ok", "jsonrpc_error" (answered with an error) or the failure cause. */
  attempt(upstream: string, method: string, outcome: "ok" | "jsonrpc_error" | FailureCause, seconds: number): void;
  upstreamState(upstream: string, up: boolean): void;
  /** A call moved to another upstream after one failed. */
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
}

export const RPC_DEFAULTS = Object.freeze({ timeoutMs: 1_000, deadlineMs: 1_500, probeIntervalMs: 1_000 });
/** A timeout timer firing this much later than due means this process itself was stalled. */
const STALL_MS = 50;
/** The most an attempt waits on an upstream that keeps answering other calls (busy, not dead). */
export const SLOW_ANSWER_MS = 10_000;

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
  /** When it last completed an exchange (performance.now()), whatever the answer. */
  lastAnswerAt: number;
  post(payload: string, timeoutMs: number): Promise<{ status: number; body: Buffer }>;
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
  const post: Upstream["post"] = (payload, timeoutMs) =>
    new Promise((resolve, reject) => {
      if (!poster) throw new UpstreamError("bad_url", "not an http(s) URL");
      const pending = poster.post(payload);
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
  const probeMethod = options.probeMethod ?? "eth_blockNumber";
  const logger = options.logger?.child({ component: kind.replaceAll(" ", "-").toLowerCase(), network });
  const observer = options.observer;
  const labels = upstreamLabels(list);
  const upstreams: Upstream[] = list.map((url, i) => {
    const u: Upstream = { url, label: labels[i]!, up: true, lastAnswerAt: 0, post: undefined as unknown as Upstream["post"], closeIdle: () => undefined };
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

  /** One exchange with one upstream: the parsed answer, or throws UpstreamError / NodeError. */
  async function exchange<T>(u: Upstream, method: string, params: unknown[], attemptMs: number): Promise<T> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    let answer: { status: number; body: Buffer };
    try {
      answer = await u.post(JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }), attemptMs);
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
    // A JSON-RPC error is an answer whatever the HTTP status (nodes report reverts and rate limits both ways).
    if (body && typeof body === "object" && body.error && typeof body.error === "object") {
      observer?.attempt(u.label, method, "jsonrpc_error", seconds());
      throw new NodeError(body.error);
    }
    const failure =
      answer.status < 200 || answer.status > 299
        ? new UpstreamError("http_status", `HTTP ${answer.status}`)
        : !body || typeof body !== "object" || !("result" in body)
          ? new UpstreamError("invalid_response", "the answer is not a JSON-RPC response")
          : undefined;
    if (failure) {
      observer?.attempt(u.label, method, failure.cause, seconds());
      throw failure;
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
          exchange<string>(u, probeMethod, [], timeoutMs).then(
            () => markUp(u),
            (error: unknown) => {
              if (error instanceof NodeError) markUp(u); // it answered
              else markDown(u, classify(error));
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

  function unavailable(last: UpstreamError | undefined): RpcError {
    const causes = [...new Set(upstreams.map((u) => u.cause).filter((c) => c !== undefined))];
    const cause = last?.cause ?? causes[0] ?? "unavailable";
    return new RpcError("CHAIN_UNAVAILABLE", `No RPC endpoint of network ${network} answered (${cause})`, { network, cause });
  }

  return {
    url: list[0]!,
    async request<T>(method: string, params: unknown[], callOptions: CallOptions = {}): Promise<T> {
      const attemptLimit = callOptions.timeoutMs ?? timeoutMs;
      const deadline = performance.now() + (callOptions.deadlineMs ?? Math.max(deadlineMs, callOptions.timeoutMs ?? 0));
      let last: UpstreamError | undefined;
      let tried = 0;
      for (const u of upstreams) {
        if (!u.up) continue;
        const remaining = Math.floor(deadline - performance.now());
        if (remaining <= 0) break;
        if (tried++ > 0) observer?.failover();
        try {
          return await exchange<T>(u, method, params, Math.min(attemptLimit, remaining));
        } catch (error) {
          if (!(error instanceof UpstreamError)) throw error;
          last = error;
          if (!isGlitch(u, error)) {
            markDown(u, error);
            continue;
          }
        }
        // A broken connection to an upstream that is answering other calls is a glitch of that one connection
        // (a kept-alive socket the node closed as it was reused, a reset under load): one more try, on a fresh
        // connection, before anything is marked down.
        const left = Math.floor(deadline - performance.now());
        if (left <= 0) break;
        try {
          return await exchange<T>(u, method, params, Math.min(attemptLimit, left));
        } catch (error) {
          if (!(error instanceof UpstreamError)) throw error;
          last = error;
          markDown(u, error);
        }
      }
      throw unavailable(last);
    },
    healthy: () => upstreams.some((u) => u.up),
    upstreams: () => upstreams.map((u) => ({ label: u.label, up: u.up, ...(u.cause ? { cause: u.cause } : {}) })),
    close() {
      closed = true;
      if (prober !== undefined) clearInterval(prober);
      prober = undefined;
      for (const u of upstreams) u.closeIdle();
    },
  };
}
