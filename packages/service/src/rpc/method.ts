/**
 * A JSON-RPC method: its wire name, the zod schema of its params, and a handler that never knows which
 * dialect called it. One file per method under src/methods/.
 */
import type { z } from "zod";
import type { NetworkChain, NetworkRuntime, ServiceContext } from "../context.ts";
import { RpcError } from "./errors.ts";
import type { ApiKey } from "../store/types.ts";
import type { Timing } from "../timing.ts";
import type { ConfigLookups } from "../store/configCache.ts";
import type { TraceSpan } from "../telemetry/trace.ts";

export interface CallContext {
  readonly service: ServiceContext;
  readonly network: NetworkRuntime;
  /** The authenticated caller (active key). */
  readonly apiKey: ApiKey;
  /** The requester's address, as keys' IP allowlists judge it (absent outside HTTP). */
  readonly clientIp?: string | undefined;
  /** The request's Timing (absent outside HTTP): chain waits are counted there. */
  readonly timing?: Timing | undefined;
  /** The request's key, strategy and approval lookups, under one config version (absent: read from the store). */
  readonly lookups?: ConfigLookups | undefined;
  /** The call's root span (absent or NO_SPAN with tracing off): the pipeline's steps are its children. */
  readonly trace?: TraceSpan | undefined;
}

export interface MethodDefinition<P = unknown> {
  readonly name: string;
  /**
   * Schema of `params`. Methods that take none use a schema accepting only an omitted field or [] (the spec:
   * "params: none (field omitted)"); anything else is INVALID_PARAMS.
   */
  readonly params: z.ZodType<P>;
  handler(params: P, ctx: CallContext): Promise<unknown>;
}

/** Keeps the param type of each definition while letting the registry hold them together. */
export function defineMethod<P>(definition: MethodDefinition<P>): MethodDefinition<P> {
  return definition;
}

/**
 * The network's chain access; while its pre-flight has not passed yet (not ready): SIGNER_UNAVAILABLE when its
 * signer could not be opened (a token refusing the PIN), else CHAIN_UNAVAILABLE (its RPC has not answered yet).
 */
export function readyChain(network: NetworkRuntime): NetworkChain {
  if (network.chain) return network.chain;
  throw network.signerUnavailable ?? new RpcError("CHAIN_UNAVAILABLE", `Network ${network.config.name} is not ready: its RPC has not answered yet`, { network: network.config.name });
}
