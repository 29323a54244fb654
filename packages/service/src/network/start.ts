/**
 * Brings a configured network up, with pre-flight checks that fail closed: the RPC answers with the
 * configured chain id, every EntryPoint and paymaster has code, the signer is accepted by every paymaster, and
 * the ERC-20 paymasters' postOpGas and minPostOpGasLimit are read once. An RPC that does not answer yet is
 * waited for in the background (the network is not ready meanwhile); a wrong configuration fails the start.
 */
import { decodeFunctionResult, encodeFunctionData, type Abi } from "viem";
import { ERC20PaymasterV06Artifact, VerifyingPaymasterV06Artifact } from "@paymaster/contracts/artifacts";
import { type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import type { NetworkConfig } from "../config/types.ts";
import type { NetworkChain, NetworkRuntime } from "../context.ts";
import type { Logger } from "pino";
import { createChainRpc, upstreamLabels, type ChainRpc } from "../chain/rpc.ts";
import { createBundlerRpc } from "../bundler/client.ts";
import { RpcError } from "../errors.ts";
import type { ServiceMetrics } from "../metrics/metrics.ts";
import type { Store } from "../store/types.ts";
import { dependencyFailure } from "../dependencies/failure.ts";
import { createDepositGuard } from "../sponsor/deposit.ts";
import { createMarket, DEV_CHAIN_IDS, type ChainClockKind } from "../chain/market.ts";
import { createBlockReads } from "../chain/blockReads.ts";
import { createPriceOracle } from "../sponsor/price.ts";
import { openNetworkSigner } from "../signer/open.ts";
import type { PaymasterSigner } from "../signer/signer.ts";
import { CODE_OVERRIDE_SIMULATORS, findSimulator, type Simulator } from "../chain/entryPoint.ts";
import { findProbe, stateOverridesRefusal } from "../chain/probe.ts";
import { SPONSOR_VERSIONS } from "../wire/schemas.ts";

// Both versions share the admin/view ABI (PaymasterBase, TokenChargeBase).
const verifyingAbi = VerifyingPaymasterV06Artifact.abi as Abi;
const erc20Abi = ERC20PaymasterV06Artifact.abi as Abi;

/** One view call at the latest block, decoded. */
export async function view<T>(rpc: ChainRpc, to: Address, abi: Abi, functionName: string, args: unknown[] = []): Promise<T> {
  const data = encodeFunctionData({ abi, functionName, args });
  const output = await rpc.request<Hex>("eth_call", [{ to, data }, "latest"]);
  return decodeFunctionResult({ abi, functionName, data: output }) as T;
}

/** The runtime of a network without chain access (pure configuration view). */
export function configView(config: NetworkConfig): Omit<NetworkRuntime, "chain"> {
  const versions = SPONSOR_VERSIONS.filter((v) => config.entryPoints[v] !== undefined);
  return { config, versions, entryPoint: (version: EntryPointVersion) => config.entryPoints[version] };
}

/** A pre-flight verdict about the configuration (wrong chain, no code, signer not accepted): retrying will not help. */
export class PreflightError extends Error {
  override name = "PreflightError";
}

/** The RPC client of a network's configured upstreams (primary first, then the fallbacks). */
export function createNetworkRpc(config: NetworkConfig, options: { logger?: Logger; metrics?: ServiceMetrics } = {}): ChainRpc {
  return createChainRpc([config.rpcUrl, ...(config.fallbackRpcUrls ?? [])], {
    network: config.name,
    ...(config.rpcTimeoutMs === undefined ? {} : { timeoutMs: config.rpcTimeoutMs }),
    ...(config.rpcDeadlineMs === undefined ? {} : { deadlineMs: config.rpcDeadlineMs }),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.metrics ? { observer: options.metrics.rpcObserver(config.name) } : {}),
  });
}

/** Reads and checks what sponsoring needs from the chain; throws PreflightError on a verdict, RpcError when the chain does not answer. */
export async function preflight(config: NetworkConfig, rpc: ChainRpc, store: Store, { pollMs = 1000, logger }: { pollMs?: number; logger?: Logger } = {}): Promise<NetworkChain> {
  const chainId = Number(BigInt(await rpc.request<string>("eth_chainId", [])));
  if (chainId !== config.chainId) {
    throw new PreflightError(`network ${config.name}: the RPC endpoint serves chain ${chainId}, configured ${config.chainId}`);
  }
  const signer = await openNetworkSigner(config, logger);
  try {
    return await checkedChain(config, rpc, store, signer, pollMs);
  } catch (error) {
    signer.close?.();
    throw error;
  }
}

async function checkedChain(config: NetworkConfig, rpc: ChainRpc, store: Store, signer: PaymasterSigner, pollMs: number): Promise<NetworkChain> {
  const base = configView(config);
  const erc20: NetworkChain["erc20"] = {};
  for (const version of base.versions) {
    const entry = config.entryPoints[version]!;
    for (const [label, address] of Object.entries(entry)) {
      const code = await rpc.request<string>("eth_getCode", [address, "latest"]);
      if (code === "0x") throw new PreflightError(`network ${config.name} ${version}: ${label} ${address} has no code`);
    }
    for (const paymaster of [entry.verifyingPaymaster, entry.erc20Paymaster]) {
      if (!(await view<boolean>(rpc, paymaster, verifyingAbi, "isSigner", [signer.address]))) {
        throw new PreflightError(`network ${config.name} ${version}: signer ${signer.address} is not accepted by paymaster ${paymaster}`);
      }
    }
    erc20[version] = {
      postOpGas: await view<bigint>(rpc, entry.erc20Paymaster, erc20Abi, "postOpGas"),
      minPostOpGasLimit: await view<bigint>(rpc, entry.erc20Paymaster, erc20Abi, "minPostOpGasLimit"),
    };
  }
  const simulator = Object.freeze({
    "v0.7": base.versions.includes("v0.7") ? await findSimulator(rpc, "v0.7") : CODE_OVERRIDE_SIMULATORS["v0.7"],
    "v0.8": base.versions.includes("v0.8") ? await findSimulator(rpc, "v0.8") : CODE_OVERRIDE_SIMULATORS["v0.8"],
  });
  const probe = await withStateOverrides(config, rpc, base.versions, await findProbe(rpc));
  // Last, once every read passed: the market polls the chain from here on (a check failing after it would leave
  // a poller behind at every retry).
  const market = createMarket(rpc, { pollMs, maxAgeMs: pollMs * 2, clock: chainClockKind(config) });
  const blockReads = createBlockReads();
  market.onBlock((block) => blockReads.refresh(block));
  return { rpc, market, blockReads, prices: createPriceOracle(rpc), signer, erc20, deposits: createDepositGuard(rpc, store, config.name, blockReads), simulator, probe };
}

/**
 * The probe's code, once the node is known to take eth_call state overrides where the network's versions need them
 * (v0.7 and v0.8 simulate through one: without them every sponsorship would be refused as a failed simulation).
 * A v0.6 network runs without them (the probe's refusals switch it off: src/sponsor/probe.ts).
 */
async function withStateOverrides(config: NetworkConfig, rpc: ChainRpc, versions: readonly EntryPointVersion[], probe: Simulator): Promise<Simulator> {
  const needing = versions.filter((v) => v !== "v0.6");
  if (needing.length === 0) return probe;
  const refusal = await stateOverridesRefusal(rpc, probe);
  if (refusal === undefined) return probe;
  throw new PreflightError(
    `network ${config.name}: the RPC endpoint does not take eth_call state overrides (${refusal}), which EntryPoint ${needing.join(" and ")} simulations need: use a node or provider that takes them (geth, Reth, Erigon, Nethermind and the major providers do), or serve v0.6 alone on this endpoint`,
  );
}

/** Whether `isSigner(signer)` holds on `paymaster` (the alert "signer key not in the contract's signer set"). */
export async function isSignerAccepted(rpc: ChainRpc, paymaster: Address, signer: Address): Promise<boolean> {
  return view<boolean>(rpc, paymaster, verifyingAbi, "isSigner", [signer]);
}

/** A network being brought up: its runtime (chain access once the pre-flight passed), its readiness. */
export interface StartedNetwork {
  readonly runtime: NetworkRuntime;
  readonly rpc: ChainRpc;
  /** Resolves once the pre-flight passed (never, if it never does). */
  readonly initialised: Promise<NetworkChain>;
  /** Initialised and some RPC upstream up (one cooling down after a rate limit is up: the network is degraded, not down). */
  ready(): boolean;
  /** What is failing, for /ready; undefined when ready. */
  failing(): string | undefined;
  stop(): void;
}

/** Retry delay of a pre-flight that found the chain unreachable / that got a verdict. */
const PREFLIGHT_RETRY_MS = 2_000;
const PREFLIGHT_VERDICT_RETRY_MS = 30_000;

/**
 * Starts a network. The first pre-flight runs now: a verdict (wrong chain, missing contract, signer not
 * accepted) fails the start; an RPC that does not answer does not: the network is then "not ready" (one log
 * line naming the network and its redacted URLs), the pre-flight is retried in the background, and the network
 * becomes ready when it passes. The pre-flight's calls go through the network's RPC client like any other: a
 * primary that refuses, hangs or is rate-limited is failed over to a fallback (src/chain/rpc.ts).
 */
export async function startNetwork(
  config: NetworkConfig,
  { store, logger, metrics, pollMs }: { store: Store; logger: Logger; metrics?: ServiceMetrics; pollMs?: number },
): Promise<StartedNetwork> {
  const log = logger.child({ component: "network", network: config.name });
  const rpc = createNetworkRpc(config, { logger, ...(metrics ? { metrics } : {}) });
  const bundler = createBundlerRpc(config, { logger, ...(metrics ? { metrics } : {}) });
  const runtime: NetworkRuntime = { ...configView(config), rpc, ...(bundler ? { bundler } : {}) };
  let lastProblem: string | undefined = "starting";
  /** The signer's failure at start-up in the operator's words (for the admin API). */
  let lastDetail: string | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let resolveInitialised!: (chain: NetworkChain) => void;
  const initialised = new Promise<NetworkChain>((resolve) => (resolveInitialised = resolve));
  const upstreams = () => upstreamLabels([config.rpcUrl, ...(config.fallbackRpcUrls ?? [])]);

  const attempt = async (first: boolean): Promise<void> => {
    try {
      const chain = await preflight(config, rpc, store, { pollMs, logger: log });
      if (stopped) {
        chain.market.stop();
        chain.prices.stop();
        return;
      }
      runtime.chain = chain;
      runtime.signerUnavailable = undefined;
      if (!first) log.info({ upstreams: upstreams() }, "network ready: the RPC answers and the pre-flight passed");
      lastProblem = undefined;
      lastDetail = undefined;
      resolveInitialised(chain);
    } catch (error) {
      if (error instanceof PreflightError && first) throw error;
      const signer = error instanceof RpcError && error.reason === "SIGNER_UNAVAILABLE" ? error : undefined;
      // Calls get the signer's failure while it is what keeps the network from being ready (SIGNER_UNAVAILABLE, not CHAIN_UNAVAILABLE).
      runtime.signerUnavailable = signer;
      const cause = error instanceof RpcError ? String(error.details["cause"] ?? error.message) : (error as Error).message;
      const rateLimited = !signer && cause === "rate_limited";
      const problem =
        error instanceof PreflightError || signer
          ? (error as Error).message
          : rateLimited
            ? `the RPC provider rate-limits this service (${cause})`
            : `the RPC does not answer (${cause})`;
      const signerDetail = signer ? dependencyFailure(signer)?.detail : undefined;
      // One line per distinct problem, not one per retry; the signer's line has the operator's detail (CKR code, library).
      if (problem !== lastProblem) {
        const line = { upstreams: upstreams(), problem };
        if (error instanceof PreflightError) log.error(line, "network not ready: the pre-flight check failed; retrying");
        else if (signer) log.error({ ...line, detail: signerDetail }, "network not ready: its signing key is unavailable; retrying");
        else if (rateLimited) log.warn(line, "network not ready: its RPC provider rate-limits this service; retrying when the limit lifts");
        else log.warn(line, "network not ready: its RPC does not answer; retrying until it does");
      }
      lastProblem = problem;
      lastDetail = signerDetail;
      if (stopped) return;
      // Rate-limited: back when the provider's limit is due to lift (sooner than the usual retry, never later).
      const retryAfterMs = rateLimited ? Number((error as RpcError).details["retryAfterSeconds"] ?? 0) * 1000 : 0;
      timer = setTimeout(
        () => void attempt(false),
        error instanceof PreflightError ? PREFLIGHT_VERDICT_RETRY_MS : retryAfterMs > 0 ? Math.min(retryAfterMs, PREFLIGHT_RETRY_MS) : PREFLIGHT_RETRY_MS,
      );
      timer.unref();
    }
  };
  /** What is failing, for /ready (public: the signer's cause only) or, with `detail`, for the operator. */
  const failing = (detail: boolean): string | undefined => {
    if (runtime.chain === undefined) return detail && lastDetail ? `${lastProblem}: ${lastDetail}` : (lastProblem ?? "starting");
    if (!rpc.healthy()) {
      const causes = rpc.upstreams().map((u) => `${u.label}: ${u.cause ?? "down"}`);
      return `no RPC upstream answers (${causes.join(", ")})`;
    }
    // A signer that fails at run time (a token lost): sponsorships get SIGNER_UNAVAILABLE until it signs again.
    const signer = runtime.chain.signer.failing?.();
    if (signer) return `the paymaster's signing key is unavailable (${signer.cause})${detail ? `: ${signer.detail}` : ""}`;
    return undefined;
  };
  runtime.problem = () => failing(true);
  await closedOnFailure(attempt(true), () => {
    rpc.close();
    bundler?.close();
  });
  return {
    runtime,
    rpc,
    initialised,
    ready: () => failing(false) === undefined,
    failing: () => failing(false),
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      runtime.chain?.market.stop();
      runtime.chain?.prices.stop();
      runtime.chain?.signer.close?.();
      rpc.close();
      bundler?.close();
    },
  };
}

/** `first` awaited; when it fails (a verdict stops the start), `close` first: nothing of the network stays open (its connections, the bundler's). */
async function closedOnFailure(first: Promise<void>, close: () => void): Promise<void> {
  try {
    await first;
  } catch (error) {
    close();
    throw error;
  }
}

/** The market's clock for the network's `chainClock` setting (src/chain/market.ts). */
function chainClockKind(config: NetworkConfig): ChainClockKind {
  if (config.chainClock === "wall") return "wall";
  return DEV_CHAIN_IDS.has(config.chainId) ? "moves" : "detect";
}
