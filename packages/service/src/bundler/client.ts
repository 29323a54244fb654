/**
 * A network's ERC-4337 bundler (networks[].bundlerUrl), reached through the chain RPC client (src/chain/rpc.ts):
 * the same timeouts, down/up marking, prober, redacted log lines and metrics as the chain RPC, so a bundler
 * that refuses, hangs or answers garbage is handled like a bad node. The standard endpoint forwards the
 * bundler methods to it (src/methods/bundler.ts): one URL for bundler and paymaster, as hosted providers serve.
 */
import type { Logger } from "pino";
import type { NetworkConfig } from "../config/types.ts";
import type { CallContext } from "../rpc/method.ts";
import type { ServiceMetrics } from "../metrics/metrics.ts";
import { createChainRpc, NodeError, type ChainRpc, type RpcObserver } from "../chain/rpc.ts";
import { RpcError } from "../rpc/errors.ts";
import { truncate } from "../rpc/schemas.ts";
import { chainWait } from "../timing.ts";

/** Per call (a bundler simulates before it answers: slower than a node). */
export const BUNDLER_TIMEOUT_MS = 10_000;
/** Longest bundler error message passed on, and the largest `data` (as JSON) kept with it. */
const MESSAGE_MAX_CHARS = 1_000;
const DATA_MAX_CHARS = 4_096;

/** The bundler client of `config`, or undefined when the network has no bundlerUrl. */
export function createBundlerRpc(config: NetworkConfig, options: { logger?: Logger; metrics?: ServiceMetrics } = {}): ChainRpc | undefined {
  if (config.bundlerUrl === undefined) return undefined;
  const timeoutMs = config.bundlerTimeoutMs ?? BUNDLER_TIMEOUT_MS;
  return createChainRpc([config.bundlerUrl], {
    network: config.name,
    kind: "bundler",
    // Bundlers serve eth_chainId (not always eth_blockNumber).
    probeMethod: "eth_chainId",
    timeoutMs,
    deadlineMs: timeoutMs,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.metrics ? { observer: labelledAsBundler(options.metrics.rpcObserver(config.name)) } : {}),
  });
}

/** The chain RPC metrics with the bundler's upstream label prefixed "bundler ": a provider may serve both from one host. */
function labelledAsBundler(observer: RpcObserver): RpcObserver {
  return {
    attempt: (upstream, method, outcome, seconds) => observer.attempt(`bundler ${upstream}`, method, outcome, seconds),
    upstreamState: (upstream, up) => observer.upstreamState(`bundler ${upstream}`, up),
    failover: () => observer.failover(),
  };
}

/**
 * The bundler's JSON-RPC error, passed on with its own code (ERC-7769: -32500 validation, -32602 invalid
 * fields, …) so clients such as viem read it as they would from the bundler directly.
 */
export class BundlerRejection extends RpcError {
  readonly bundlerCode: number;
  constructor(error: NodeError) {
    const data = error.data === undefined ? undefined : JSON.stringify(error.data);
    super("BUNDLER_REJECTED", truncate(error.message || "The bundler refused the call", MESSAGE_MAX_CHARS), {
      bundlerCode: error.code,
      ...(data !== undefined && data.length <= DATA_MAX_CHARS ? { bundlerData: error.data } : {}),
    });
    this.bundlerCode = error.code;
  }

  override get jsonRpcCode(): number {
    return Number.isSafeInteger(this.bundlerCode) ? this.bundlerCode : super.jsonRpcCode;
  }
}

/** Forwards `method` with `params` as given to the call's network's bundler; its answer is returned as is. */
export async function forwardToBundler(call: CallContext, method: string, params: readonly unknown[]): Promise<unknown> {
  const { network } = call;
  const bundler = network.bundler;
  const name = network.config.name;
  if (bundler === undefined) {
    throw new RpcError("METHOD_NOT_AVAILABLE", `${method} is forwarded to the network's bundler, and ${name} has none (the operator sets bundlerUrl for the network)`);
  }
  try {
    return await chainWait(call.timing, () => bundler.request<unknown>(method, [...params]));
  } catch (error) {
    if (error instanceof NodeError) throw new BundlerRejection(error);
    if (error instanceof RpcError && error.reason === "CHAIN_UNAVAILABLE") {
      const cause = error.details["cause"];
      throw new RpcError("BUNDLER_UNAVAILABLE", `The bundler of network ${name} did not answer (${String(cause)})`, { network: name, cause });
    }
    throw error;
  }
}
