/**
 * A network's chain access as seen from a traced piece of work (a pipeline step, a settlement pass): every
 * JSON-RPC call it makes through `rpc` is a client span under `span` (src/chain/rpc.ts records the method,
 * the upstream's redacted label, the attempts and the last cause). With tracing off it is the very same object.
 */
import type { NetworkChain } from "../context.ts";
import type { ChainRpc } from "../chain/rpc.ts";
import type { TraceSpan } from "../telemetry/trace.ts";

export function tracedRpc(rpc: ChainRpc, span: TraceSpan): ChainRpc {
  if (!span.recording) return rpc;
  return { ...rpc, request: (method, params, options) => rpc.request(method, params, { ...options, trace: span }) };
}

export function tracedChain(chain: NetworkChain, span: TraceSpan): NetworkChain {
  if (!span.recording) return chain;
  return { ...chain, rpc: tracedRpc(chain.rpc, span) };
}
