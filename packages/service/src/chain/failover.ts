/**
 * One call's way through the chain client's upstreams (step 1 of "the attempt loop" in src/chain/rpc.ts's
 * comment): each upstream in order that is up and not cooling down gets an attempt within what is left of the
 * call's deadline; a failure sets it back (upstreamHealth.ts) and the call moves on at once (a failover).
 */
import type { TraceSpan } from "../telemetry/trace.ts";
import { observeFailover } from "./rpcTracing.ts";
import { exchange } from "./transport.ts";
import { setBack } from "./upstreamHealth.ts";
import { UpstreamError, type ChainRpcState, type Upstream } from "./upstreams.ts";

/** One call in progress: what it asks, its time, and what it met so far. */
export interface Call {
  readonly method: string;
  readonly params: unknown[];
  /** The most one attempt may take. */
  readonly attemptLimit: number;
  /** When (performance.now()) the call gives up: no attempt starts, no wait ends, past it. */
  readonly deadline: number;
  /** The client's call's deadline (CallOptions.waitUntil), which a wait for a cool-down must leave room in too. */
  readonly waitUntil: number | undefined;
  /** The call's client span, when traced: its upstream, attempts and last cause are set on it. */
  readonly span: TraceSpan | undefined;
  /** The upstream of the last attempt (moving to another one is a failover). */
  previous: Upstream | undefined;
  /** The last transport failure or rate limit: the cause the call fails with when nothing answers. */
  last: UpstreamError | undefined;
  /** Attempts so far (counted for the span only). */
  tries: number;
}

/** The call found no upstream to answer it in this round. */
export const NO_ANSWER = Symbol("no answer");
/** The call's deadline passed before its next attempt. */
const OUT_OF_TIME = Symbol("out of time");

/** Tries each usable upstream in order until one answers: its result (or its NodeError, thrown), else NO_ANSWER. */
export async function tryEachUpstream<T>(state: ChainRpcState, call: Call): Promise<T | typeof NO_ANSWER> {
  for (const u of state.upstreams) {
    if (!u.up) continue;
    const now = performance.now();
    if (u.coolUntil > now) continue;
    const remaining = Math.floor(call.deadline - now);
    if (remaining <= 0) break;
    if (call.previous !== undefined && call.previous !== u) observeFailover(state);
    call.previous = u;
    call.span?.set("paymaster.rpc.attempts", ++call.tries);
    call.span?.set("paymaster.upstream", u.label);
    const answer = await attempt<T>(state, u, call, remaining);
    if (!(answer instanceof UpstreamError)) return answer;
    if (!isGlitch(state, u, answer)) {
      setBack(state, u, answer);
      continue;
    }
    const retried = await retryAfterGlitch<T>(state, u, call);
    if (retried === OUT_OF_TIME) break;
    if (retried !== NO_ANSWER) return retried;
  }
  return NO_ANSWER;
}

/** A broken connection while the upstream answered something within the last timeoutMs. */
function isGlitch(state: ChainRpcState, u: Upstream, error: UpstreamError): boolean {
  return error.cause === "connection" && performance.now() - u.lastAnswerAt < state.timeoutMs;
}

/**
 * A broken connection to an upstream that is answering other calls is a glitch of that one connection (a
 * kept-alive socket the node closed as it was reused, a reset under load): one more try, on a fresh
 * connection, before anything is marked down.
 */
async function retryAfterGlitch<T>(state: ChainRpcState, u: Upstream, call: Call): Promise<T | typeof NO_ANSWER | typeof OUT_OF_TIME> {
  const left = Math.floor(call.deadline - performance.now());
  if (left <= 0) return OUT_OF_TIME;
  call.span?.set("paymaster.rpc.attempts", ++call.tries);
  const answer = await attempt<T>(state, u, call, left);
  if (!(answer instanceof UpstreamError)) return answer;
  setBack(state, u, answer);
  return NO_ANSWER;
}

/**
 * One exchange with `u` within `msLeft` of the call: its result, or the UpstreamError it failed with (kept as
 * the call's last). A node's error (NodeError) is thrown: it is the call's answer.
 */
async function attempt<T>(state: ChainRpcState, u: Upstream, call: Call, msLeft: number): Promise<T | UpstreamError> {
  try {
    return await exchange<T>(state, u, call.method, call.params, Math.min(call.attemptLimit, msLeft), call.span?.traceparent);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    call.last = error;
    call.span?.set("paymaster.rpc.cause", error.cause);
    return error;
  }
}
