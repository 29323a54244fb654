/**
 * The chain client's transport (src/chain/rpc.ts): one HTTP JSON-RPC exchange with one upstream, timed out when
 * the upstream falls silent, and its answer sorted into a result, a node's error (NodeError: an answer) or no
 * answer at all (UpstreamError: a transport failure, or the provider's rate limit).
 */
import { createHttpPoster, type HttpAnswer, type PendingPost } from "./httpPost.ts";
import { answeredAfterLimit } from "./coolDowns.ts";
import { NodeError, type JsonRpcErrorBody } from "./nodeError.ts";
import { providerLimitOf } from "./providerLimit.ts";
import { observeAttempt } from "./rpcTracing.ts";
import { UpstreamError, type ChainRpcState, type Upstream } from "./upstreams.ts";

/** A timeout timer firing this much later than due means this process itself was stalled. */
const STALL_MS = 50;
/** The most an attempt waits on an upstream that keeps answering other calls (busy, not dead). */
export const SLOW_ANSWER_MS = 10_000;

/** A JSON-RPC response as parsed (not checked yet). */
interface JsonRpcBody<T> {
  result?: T;
  error?: JsonRpcErrorBody;
}

/** The transport error of a failed exchange, by cause. */
export function classify(error: unknown): UpstreamError {
  if (error instanceof UpstreamError) return error;
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === "ECONNREFUSED") return new UpstreamError("refused", "connection refused");
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return new UpstreamError("dns", `name lookup failed (${String(code)})`);
  return new UpstreamError("connection", typeof code === "string" ? `${code}: ${message}` : message);
}

/** Why an HTTP answer without a JSON-RPC error is no JSON-RPC answer either; undefined when it holds a result. */
function notAnAnswer(status: number, body: unknown): UpstreamError | undefined {
  if (status < 200 || status > 299) return new UpstreamError("http_status", `HTTP ${status}`);
  if (!body || typeof body !== "object" || !("result" in body)) return new UpstreamError("invalid_response", "the answer is not a JSON-RPC response");
  return undefined;
}

/**
 * Aborts `pending` (UpstreamError "timeout") when its upstream has been silent (no answer to anyone) for
 * `timeoutMs` since this attempt began, or when the attempt has lasted `limitMs` (a busy upstream is waited for
 * that long at most). Returns the function that stops watching.
 */
function watchSilence(pending: PendingPost, timeoutMs: number, limitMs: number, lastAnswerAt: () => number): () => void {
  const started = performance.now();
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
    if (now - dueAt > STALL_MS && now - started < limitMs) {
      arm(STALL_MS);
      return;
    }
    const silentFor = now - Math.max(started, lastAnswerAt());
    if (silentFor >= timeoutMs || now - started >= limitMs) {
      pending.abort(new UpstreamError("timeout", `no answer within ${Math.round(now - started)} ms`));
      return;
    }
    arm(Math.min(timeoutMs - silentFor, limitMs - (now - started)));
  };
  arm(timeoutMs);
  return () => clearTimeout(timer);
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
      const stopWatching = watchSilence(pending, timeoutMs, Math.max(hardMs(), timeoutMs), lastAnswerAt);
      pending.answer.then(
        (answer) => {
          stopWatching();
          resolve(answer);
        },
        (error: unknown) => {
          stopWatching();
          reject(classify(error));
        },
      );
    });
  return { post, closeIdle: () => poster?.close() };
}

/** An upstream for `url`, up, with its own kept-alive connections. */
export function createUpstream(url: string, label: string): Upstream {
  const u: Upstream = { url, label, up: true, coolUntil: 0, limits: 0, lastLimitAt: 0, episodeLimits: 0, lastAnswerAt: 0, post: undefined as unknown as Upstream["post"], closeIdle: () => undefined };
  const poster = createPoster(url, () => u.lastAnswerAt, () => SLOW_ANSWER_MS);
  u.post = poster.post;
  u.closeIdle = poster.closeIdle;
  return u;
}

/** The JSON-RPC error a parsed body holds, if any. */
function errorOf(body: JsonRpcBody<unknown> | undefined): JsonRpcErrorBody | undefined {
  return body && typeof body === "object" && body.error && typeof body.error === "object" ? body.error : undefined;
}

/** The JSON-RPC body of an HTTP answer that answers the call (a result or a node's error), or why it does not. */
function readAnswer<T>(answer: HttpAnswer): JsonRpcBody<T> | UpstreamError {
  let body: JsonRpcBody<T> | undefined;
  try {
    body = JSON.parse(answer.body.toString("utf8")) as typeof body;
  } catch {
    body = undefined;
  }
  const error = errorOf(body);
  // The provider's rate limit (HTTP 429 whatever the body, -32005, …) is no answer to the call; any other
  // JSON-RPC error is one, whatever the HTTP status (nodes report reverts both ways).
  const limit = error !== undefined || answer.status === 429 ? providerLimitOf(answer.status, answer.retryAfter, error) : undefined;
  if (limit !== undefined) return new UpstreamError("rate_limited", limit.detail, limit.waitMs);
  return (error === undefined ? notAnAnswer(answer.status, body) : undefined) ?? body!;
}

/** One exchange with one upstream: the parsed answer, or throws UpstreamError / NodeError. */
export async function exchange<T>(state: ChainRpcState, u: Upstream, method: string, params: unknown[], attemptMs: number, traceparent: string | undefined): Promise<T> {
  const started = performance.now();
  let answer: HttpAnswer;
  try {
    answer = await u.post(JSON.stringify({ jsonrpc: "2.0", id: state.nextId++, method, params }), attemptMs, traceparent);
    u.lastAnswerAt = performance.now();
  } catch (error) {
    const failure = classify(error);
    observeAttempt(state, u, method, failure.cause, started);
    throw failure;
  }
  const body = readAnswer<T>(answer);
  if (body instanceof UpstreamError) {
    observeAttempt(state, u, method, body.cause, started);
    throw body;
  }
  // Answered: the provider took the call.
  if (u.limitedSince !== undefined) answeredAfterLimit(state, u);
  const error = errorOf(body);
  if (error !== undefined) {
    observeAttempt(state, u, method, "jsonrpc_error", started);
    throw new NodeError(error);
  }
  observeAttempt(state, u, method, "ok", started);
  return body.result as T;
}
