/**
 * What the chain client (src/chain/rpc.ts) reports: a client span per call when its caller traces
 * (src/telemetry/trace.ts), and each attempt's outcome, each upstream's state and each failover to the
 * RpcObserver (src/metrics). Upstreams appear only by their redacted labels.
 */
import { failureReason, type TraceSpan } from "../telemetry/trace.ts";
import { NodeError } from "./nodeError.ts";
import type { ChainRpcState, FailureCause, Upstream } from "./upstreams.ts";

/**
 * The client span of one call under `parent` ("chain eth_call": its method and network; failover.ts adds its
 * upstream, how many attempts it took, the last failure's cause), or undefined when `parent` does not record.
 */
export function openCallSpan(state: ChainRpcState, method: string, parent: TraceSpan | undefined): TraceSpan | undefined {
  if (parent === undefined || !parent.recording) return undefined;
  const span = parent.child(`${state.spanPrefix} ${method}`, "client");
  span.set("rpc.system", "jsonrpc");
  span.set("rpc.method", method);
  span.set("paymaster.network", state.network);
  return span;
}

/** Ends the call's span with its outcome once `call` settles; the call's result or error passes through. */
export function endCallSpan<T>(span: TraceSpan, call: Promise<T>): Promise<T> {
  return call.then(
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
}

/** One attempt on `u`, begun at `started` (performance.now()), ended with `outcome`. */
export function observeAttempt(state: ChainRpcState, u: Upstream, method: string, outcome: "ok" | "jsonrpc_error" | FailureCause, started: number): void {
  state.observer?.attempt(u.label, method, outcome, (performance.now() - started) / 1000);
}

/** `u` went down or came back up. */
export function observeUpstreamState(state: ChainRpcState, u: Upstream): void {
  state.observer?.upstreamState(u.label, u.up);
}

/** A call moved on to another upstream after one failed or was rate-limited. */
export function observeFailover(state: ChainRpcState): void {
  state.observer?.failover();
}
