/**
 * What every handler can reach: the frozen configuration, the store, the configured networks (each with its
 * chain access and signer), a logger and a clock. Built once at start-up.
 */
import type { Logger } from "pino";
import type { EntryPointVersion } from "@paymaster/shared";
import type { EntryPointConfig, NetworkConfig, ServiceConfig } from "./config/types.ts";
import type { ApiKey, Store } from "./store/types.ts";
import type { RateLimiter } from "./rateLimit.ts";
import { RpcError } from "./errors.ts";
import type { Timing } from "./timing.ts";
import type { TraceSpan } from "./telemetry/trace.ts";
import type { ChainRpc } from "./chain/rpc.ts";
import type { Market } from "./chain/market.ts";
import type { BlockReads } from "./chain/blockReads.ts";
import type { PriceOracle } from "./sponsor/price.ts";
import type { PaymasterSigner } from "./signer/signer.ts";
import type { DepositGuard } from "./sponsor/deposit.ts";
import type { ServiceMetrics } from "./metrics/metrics.ts";
import type { Simulator, Simulators } from "./chain/entryPoint.ts";
import type { ConfigCache, ConfigLookups } from "./store/configCache.ts";

/** What sponsoring on a network needs from its chain, read or built once at start-up. */
export interface NetworkChain {
  readonly rpc: ChainRpc;
  readonly market: Market;
  /** Reads that do not depend on the op, kept per block and refreshed as the market sees blocks (src/chain/blockReads.ts). */
  readonly blockReads: BlockReads;
  readonly prices: PriceOracle;
  readonly signer: PaymasterSigner;
  /** How v0.7 and v0.8 simulations reach their simulator's code (found once at start-up). */
  readonly simulator: Simulators;
  /** How the sponsorship probe's code reaches its address (src/chain/probe.ts; found once at start-up). */
  readonly probe: Simulator;
  /**
   * Per version: the ERC-20 paymaster's postOpGas (charged), minPostOpGasLimit (the lowest postOp gas limit it
   * accepts: v0.7 paymasterPostOpGasLimit, v0.6 verificationGasLimit), read at start-up.
   */
  readonly erc20: Partial<Record<EntryPointVersion, { postOpGas: bigint; minPostOpGasLimit: bigint }>>;
  /** The paymasters' EntryPoint deposits, and the check that they cover what is signed. */
  readonly deposits: DepositGuard;
}

export interface NetworkRuntime {
  readonly config: NetworkConfig;
  /** The EntryPoint versions this network serves, in a stable order (v0.6 first). */
  readonly versions: readonly EntryPointVersion[];
  entryPoint(version: EntryPointVersion): EntryPointConfig | undefined;
  /**
   * Chain access and signer, set once the network's pre-flight passed (absent while its RPC has not answered
   * yet, and in tests of methods that never touch the chain).
   */
  chain?: NetworkChain;
  /** The network's RPC client (before the pre-flight passed too). */
  readonly rpc?: ChainRpc;
  /**
   * While the pre-flight has not passed because the signer cannot be opened (a PKCS#11 token refusing the PIN):
   * what calls get (SIGNER_UNAVAILABLE with its cause) instead of CHAIN_UNAVAILABLE.
   */
  signerUnavailable?: RpcError | undefined;
  /** What is failing now, in the operator's words (the signer's CKR code, the library's path): the admin API's status. */
  problem?(): string | undefined;
  /** The network's bundler client (networks[].bundlerUrl): the standard endpoint forwards bundler methods to it. */
  readonly bundler?: ChainRpc;
}

/** /ready's answer (health.ts readiness): ready or not, and each check's state. */
export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, string>;
}

export interface ServiceContext {
  readonly config: ServiceConfig;
  readonly store: Store;
  /** Configured networks by enum name ("local", "base-sepolia", ...): a network is supported when configured. */
  readonly networks: ReadonlyMap<string, NetworkRuntime>;
  readonly logger: Logger;
  /** Wall-clock unix seconds (injectable for tests). */
  now(): number;
  /** Per-API-key and per-project limiter (absent: no limit). */
  readonly rateLimiter?: RateLimiter;
  /** /ready's report (absent: ready whenever the process answers). */
  readonly readiness?: () => Promise<ReadinessReport>;
  /** Prometheus metrics (absent in tests that do not look). */
  readonly metrics?: ServiceMetrics;
  /** The per-request lookups kept per config version (absent: every lookup reads the store). */
  readonly configCache?: ConfigCache;
  /** Where webhooks may be sent (webhooks/destination.ts; absent: public addresses only). */
  readonly webhookDestinations?: import("./webhooks/destination.ts").DestinationPolicy;
}

/** What a method's handler gets for one call: the service, the network asked for, the caller and the call's own instruments. */
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

/**
 * The network's chain access; while its pre-flight has not passed yet (not ready): SIGNER_UNAVAILABLE when its
 * signer could not be opened (a token refusing the PIN), else CHAIN_UNAVAILABLE (its RPC has not answered yet).
 */
export function readyChain(network: NetworkRuntime): NetworkChain {
  if (network.chain) return network.chain;
  throw network.signerUnavailable ?? new RpcError("CHAIN_UNAVAILABLE", `Network ${network.config.name} is not ready: its RPC has not answered yet`, { network: network.config.name });
}
