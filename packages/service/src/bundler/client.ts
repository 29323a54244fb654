/**
 * A network's ERC-4337 bundler (networks[].bundlerUrl), reached through the chain RPC client (src/chain/rpc.ts):
 * the same timeouts, down/up marking, prober, redacted log lines and metrics as the chain RPC, so a bundler
 * that refuses, hangs or answers garbage is handled like a bad node, and one that rate-limits (HTTP 429,
 * -32005, …) is cooled down and retried within the call's timeout like a rate-limited node; its own JSON-RPC
 * errors (an op it rejects: ERC-7769's codes, -32504 "throttled" among them) are its answers and pass through.
 * The standard endpoint forwards the bundler methods to it (src/methods/bundler.ts): one URL for bundler and
 * paymaster, as hosted providers serve.
 */
import type { Logger } from "pino";
import type { NetworkConfig } from "../config/types.ts";
import type { CallContext } from "../context.ts";
import type { ServiceMetrics } from "../metrics/metrics.ts";
import { createChainRpc, NodeError, type ChainRpc, type RpcObserver } from "../chain/rpc.ts";
import { RpcError } from "../errors.ts";
import { chainWait } from "../timing.ts";
import { BundlerRejection } from "./rejection.ts";
import { loggedText } from "../text/loggedText.ts";

/** Per call (a bundler simulates before it answers: slower than a node). */
export const BUNDLER_TIMEOUT_MS = 10_000;

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
 * Forwards `method` with `params` as given to the call's network's bundler; its answer is returned as is, its
 * error as a BundlerRejection (what a wallet needs of it: rejection.ts), the rest of the error to the log.
 */
export async function forwardToBundler(call: CallContext, method: string, params: readonly unknown[]): Promise<unknown> {
  const { network } = call;
  const bundler = network.bundler;
  const name = network.config.name;
  if (bundler === undefined) {
    throw new RpcError("METHOD_NOT_AVAILABLE", `${method} is forwarded to the network's bundler, and ${name} has none (the operator sets bundlerUrl for the network)`);
  }
  try {
    // With tracing on, a client span "bundler <method>" under the call's (the bundler client's kind names it).
    return await chainWait(call.timing, () => bundler.request<unknown>(method, [...params], call.trace?.recording ? { trace: call.trace } : undefined));
  } catch (error) {
    if (error instanceof NodeError) {
      const rejection = new BundlerRejection(error);
      if (rejection.trimmed) {
        call.service.logger.info(
          {
            component: "bundler",
            network: name,
            method,
            bundlerCode: error.code,
            bundlerMessage: loggedText(error.message),
            ...(error.data === undefined ? {} : { bundlerData: loggedText(JSON.stringify(error.data) ?? "") }),
          },
          "bundler refusal: passed on trimmed (URLs, paths, stack frames and unknown data left out)",
        );
      }
      throw rejection;
    }
    if (error instanceof RpcError && error.reason === "CHAIN_UNAVAILABLE") {
      const { cause, retryAfterSeconds } = error.details;
      if (cause === "rate_limited") {
        throw new RpcError("BUNDLER_UNAVAILABLE", `The bundler of network ${name} is rate-limiting this service (rate limited): retry in ${String(retryAfterSeconds)} s`, { network: name, cause, retryAfterSeconds });
      }
      throw new RpcError("BUNDLER_UNAVAILABLE", `The bundler of network ${name} did not answer (${String(cause)})`, { network: name, cause });
    }
    throw error;
  }
}
