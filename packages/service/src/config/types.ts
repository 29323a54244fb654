/**
 * The validated, frozen configuration the service runs on. Built by `loadConfig` (file + environment
 * overrides, secrets only from the environment or files) or, with no configuration at all, by the embedded
 * local stack.
 */
import type { Pkcs11Config } from "../signer/pkcs11Token.ts";
import type { Address, EntryPointVersion, GasKind, Hex, NetworkDefinition } from "@paymaster/shared";
import type { PriceSource } from "../store/types.ts";
import type { DatabaseSettings } from "../store/settings.ts";

export interface EntryPointConfig {
  entryPoint: Address;
  verifyingPaymaster: Address;
  erc20Paymaster: Address;
}

export interface TokenConfig {
  symbol: string;
  address: Address;
  decimals: number;
  priceSource: PriceSource;
  /** Markup on the exchange rate in basis points (100 = 1%). */
  markupBps: number;
}

/** What the service refuses to sign above (security.md: caps on every gas limit and on fees). */
export interface GasCaps {
  maxVerificationGasLimit: bigint;
  maxCallGasLimit: bigint;
  maxPreVerificationGas: bigint;
  maxPaymasterVerificationGasLimit: bigint;
  maxPaymasterPostOpGasLimit: bigint;
  /** A client's maxFeePerGas may be at most this many times the market's (basis points: 30000 = 3x). */
  maxFeeMultiplierBps: number;
}

export interface NetworkConfig {
  /** A network of the registry or one the configuration declares (customNetworks): a lowercase slug. */
  name: string;
  /** The chain id the RPC must serve (checked at start-up): the registry's or the declared one. */
  chainId: number;
  /** The primary RPC URL (secret-ish: providers put keys in it; logs show it redacted). */
  rpcUrl: string;
  /** How the chain charges for L1 data, which preVerificationGas must carry (the registry's, or the config's). */
  gasKind: GasKind;
  /** Tried in order when the primary (and the fallbacks before) give no answer (src/chain/rpc.ts). */
  fallbackRpcUrls?: readonly string[];
  /** Per RPC attempt (default 1000 ms) and per call over all attempts (default 1500 ms). */
  rpcTimeoutMs?: number;
  rpcDeadlineMs?: number;
  /**
   * An ERC-4337 bundler's URL (secret-ish, like rpcUrl): the standard endpoint forwards eth_sendUserOperation and
   * the other bundler methods to it, so one URL serves as bundler and paymaster (src/bundler/).
   */
  bundlerUrl?: string;
  /** Per bundler call (default 10000 ms): the bundler simulates, so it answers slower than a node. */
  bundlerTimeoutMs?: number;
  /** Below this EntryPoint deposit a paymaster is reported low (log line + paymaster_deposit_low metric). */
  depositAlertWei?: bigint;
  entryPoints: Partial<Record<EntryPointVersion, EntryPointConfig>>;
  /** Paymaster signer private keys (secret: from the environment or a file only). The first one signs. */
  signerKeys: readonly Hex[];
  /** The signer's key in a PKCS#11 token instead (then signerKeys is empty): src/signer/pkcs11Token.ts. */
  pkcs11?: Pkcs11Config;
  tokens: readonly TokenConfig[];
  /** USD price of the network's native currency. */
  nativeUsdPrice: PriceSource;
  caps: GasCaps;
  /**
   * Sign without simulating the final op (default false): an operator's explicit choice of speed over the
   * check that the op lands as signed (see "Simulation" in the README for the risk).
   */
  skipFinalSimulation?: boolean;
  /**
   * Whose clock the chain keeps (default "auto"): "auto" takes a development chain id (31337, 1337) to keep one of
   * its own (time moved with evm_increaseTime), so each signing request reads the chain's fresh clocks beside its
   * chain call (src/sponsor/chainClock.ts), as it does once a block is seen 15 s ahead of ours on any chain;
   * "wall" is the operator's word that the chain follows the wall clock, as public chains do: the poller's snapshot
   * (at most a poll and a block old) dates every signature, and the fresh clocks are never read (src/chain/market.ts).
   */
  chainClock?: "auto" | "wall";
  // ---- settlement watcher (src/settlement/watcher.ts); absent = the watcher's defaults (WATCHER_DEFAULTS)
  /** Blocks an event must be buried under before it settles or credits (default 2). */
  confirmations?: number;
  /** Blocks below the watcher's cursor re-verified and rescanned after a reorg (default 64). */
  reorgDepth?: number;
  /** An unused signature's reservation is released this many seconds after its validUntil (default 120). */
  expiryGraceSeconds?: number;
  /** ETH sent here in a top-level transaction is credited to the sending address's gas tank. */
  depositAddress?: Address;
  /**
   * The GasTankDeposit contract (deployed with the paymasters): each of its Deposited events, internal calls
   * included, is credited to the event's sender's gas tank.
   */
  depositContract?: Address;
  /** The watcher's poll interval in milliseconds (default 5000). */
  pollMs?: number;
  /** Most blocks per eth_getLogs request (default 2000; some providers allow fewer). */
  logBlockRange?: number;
}

export interface ServiceConfig {
  /** Loopback only (127.0.0.1 or ::1). */
  host: string;
  port: number;
  /** SQLite file path (embedded default). */
  databasePath: string;
  /**
   * PostgreSQL connection URL (secret: from DATABASE_URL only, never logged). When set, the store is PostgreSQL
   * (several replicas can share it) and `databasePath` is unused.
   */
  databaseUrl?: string;
  /** How long the PostgreSQL store waits on its database (src/store/settings.ts); every field optional, defaults there. */
  database?: Partial<DatabaseSettings>;
  /** Request bodies above this many bytes get BODY_TOO_LARGE. */
  bodyLimitBytes: number;
  /** Rate limits per API key and per project (src/rateLimit.ts, docs/operations.md). */
  rateLimit?: RateLimitConfig;
  /** Reverse proxies whose X-Forwarded-For is believed, as CIDR ranges (src/access/clientAddress.ts); absent: none. */
  trustedProxies?: readonly string[];
  /**
   * A caller's W3C `traceparent` on the public listener (src/rpc/dispatch.ts callerTrace): "link" (default: a
   * trace of ours, linked to the caller's), "trusted-proxies" (continued from a `trustedProxies` address, linked
   * otherwise) or "parent" (always continued: a listener only one's own services reach).
   */
  traceContext?: "link" | "trusted-proxies" | "parent";
  /** Per-client bounds count an IPv6 client per network of this many bits (default 64: clientAddress.ts clientBucket). */
  ipv6ClientPrefix?: number;
  /** Pending key applications expire after this many days (default 14). */
  applicationExpiryDays?: number;
  /** The Prometheus /metrics listener (loopback only); absent: no metrics listener. */
  metrics?: { host: string; port: number };
  /** Run the settlement watchers (with leader election: one replica settles each network). Default true. */
  watch?: boolean;
  /** How often a replica that is not the leader tries to become it (ms, default 2000). */
  leaderRetryMs?: number;
  /** Alert levels: a cap is "nearly reached" at capWarnPercent (default 80); the watcher "lags" beyond watcherLagBlocks (default 100). */
  alerts?: { capWarnPercent?: number; watcherLagBlocks?: number };
  /** Webhook delivery (src/webhooks/worker.ts; docs/webhooks.md): every field optional, defaults there. */
  webhooks?: {
    /** Run the delivery worker in this replica (default true; events are still written to the outbox). */
    enabled?: boolean;
    maxAttempts?: number;
    baseDelayMs?: number;
    maxDelayMs?: number;
    timeoutMs?: number;
    pollMs?: number;
    concurrency?: number;
    perEndpointConcurrency?: number;
    retentionDays?: number;
    /** Internal receivers allowed as webhook destinations, as CIDR ranges (webhooks/destination.ts); default none. */
    allowedDestinations?: readonly string[];
  };
  /** Open reservations per sender and per browser key's client address (defaults: src/sponsor/outstanding.ts). */
  reservations?: { maxOutstandingPerSender?: number; maxOutstandingPerClientIp?: number; maxBalanceShareBpsPerClient?: number; maxBalanceShareBpsPerKey?: number };
  /** ERC-20 postOp-charge mode's USD at risk per project and per key (defaults: src/sponsor/postOpRisk.ts). */
  postOpChargeRisk?: { maxUsdPerProject?: string; maxUsdPerKey?: string; windowSeconds?: number };
  /** Sponsorship retention (src/retention.ts): every field optional, defaults there. */
  retention?: { releasedDays?: number; settledDays?: number; intervalMinutes?: number; batchSize?: number };
  /** Lifetime of a paymaster signature (the spec: 5 minutes). */
  signatureTtlSeconds: number;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** Chains the registry does not list, declared with their chain id and gas kind (usable in `networks`). */
  customNetworks?: readonly NetworkDefinition[];
  networks: readonly NetworkConfig[];
}

export interface RateLimitValues {
  perSecond?: number;
  burst?: number;
  sponsorshipsPerMinute?: number;
}

export interface RateLimitConfig extends RateLimitValues {
  /** By project id: the project's whole traffic shares these. */
  projects?: Readonly<Record<string, RateLimitValues>>;
  /** By API key id: override the defaults for that key. */
  keys?: Readonly<Record<string, RateLimitValues>>;
}

export const DEFAULT_GAS_CAPS: GasCaps = Object.freeze({
  maxVerificationGasLimit: 1_000_000n,
  maxCallGasLimit: 5_000_000n,
  maxPreVerificationGas: 1_000_000n,
  maxPaymasterVerificationGasLimit: 300_000n,
  maxPaymasterPostOpGasLimit: 200_000n,
  maxFeeMultiplierBps: 30_000,
});
