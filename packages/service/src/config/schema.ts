/**
 * The configuration schema (zod): field by field shapes, ranges, normalisation (checksummed addresses, bigint
 * caps, defaults) and the cross-field checks (network names against the registry and the declared custom
 * networks, chain ids, duplicate networks, token symbols and addresses). `parseServiceConfig` collects every
 * issue and resolves each network's chain id and gas kind; `load.ts` adds the environment and formats them.
 */
import { BlockList, isIPv4, isIPv6 } from "node:net";
import { z } from "zod";
import { getAddress, isAddress } from "viem/utils";
import { privateKeyToAddress } from "viem/accounts";
import {
  ENTRY_POINT_ADDRESSES,
  GAS_KINDS,
  NETWORK_NAMES,
  NETWORK_NAME_MAX_LENGTH,
  NETWORKS,
  findNetwork,
  isNetworkName,
  isNetworkSlug,
  type Address,
  type EntryPointVersion,
  type GasKind,
  type Hex,
  type NetworkDefinition,
} from "@paymaster/shared";

import { validIpRange } from "../access/keyAccess.ts";
import { DEFAULT_IPV6_CLIENT_PREFIX } from "../access/clientAddress.ts";
import { DATABASE_RANGES } from "../store/settings.ts";
import type { PriceSource } from "../store/types.ts";
import { DEFAULT_GAS_CAPS, type GasCaps, type NetworkConfig, type ServiceConfig } from "./types.ts";

// ---- defaults and limits (documented in docs/configuration.md)

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 3000;
export const DEFAULT_DATABASE_PATH = ".data/paymaster.sqlite";
export const DEFAULT_BODY_LIMIT_BYTES = 262_144; // the largest valid user operation is ~132 KiB of hex
export const DEFAULT_SIGNATURE_TTL_SECONDS = 300;
export const DEFAULT_LOG_LEVEL = "info";
/** Pending key applications older than this are rejected by "expiry" (store/applicationExpiry.ts). */
export const DEFAULT_APPLICATION_EXPIRY_DAYS = 14;
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
/** What a caller's traceparent is to our spans (ServiceConfig.traceContext; default link). */
export const TRACE_CONTEXT_MODES = ["link", "trusted-proxies", "parent"] as const satisfies readonly NonNullable<ServiceConfig["traceContext"]>[];

export const BODY_LIMIT_RANGE = { min: 1024, max: 16 * 1024 * 1024 } as const;
/** Bundlers want validUntil >= now + 30 s; a long window holds reservations (and funds) that long. */
export const SIGNATURE_TTL_RANGE = { min: 30, max: 3600 } as const;
export const TOKEN_DECIMALS_MAX = 36;
export const MARKUP_BPS_MAX = 10_000;
/** A fee multiplier below 1x would refuse every op priced at the market. */
export const FEE_MULTIPLIER_BPS_RANGE = { min: 10_000, max: 1_000_000 } as const;
/** Settlement watcher settings (defaults in src/settlement/options.ts WATCHER_DEFAULTS). */
export const CONFIRMATIONS_RANGE = { min: 0, max: 1_000 } as const;
export const REORG_DEPTH_RANGE = { min: 1, max: 10_000 } as const;
export const EXPIRY_GRACE_SECONDS_RANGE = { min: 0, max: 86_400 } as const;
export const WATCHER_POLL_MS_RANGE = { min: 100, max: 3_600_000 } as const;
export const LOG_BLOCK_RANGE_RANGE = { min: 1, max: 100_000 } as const;
export const RPC_TIMEOUT_MS_RANGE = { min: 50, max: 120_000 } as const;
export const RPC_FALLBACKS_MAX = 8;
export const CAP_WARN_PERCENT_RANGE = { min: 1, max: 100 } as const;
export const LEADER_RETRY_MS_RANGE = { min: 100, max: 600_000 } as const;
/** Webhook delivery settings (src/webhooks/worker.ts; docs/webhooks.md). */
/** A USD amount as a decimal string: "25", "0.50" (at most 6 decimals). */
const usdAmount = z.string({ error: 'must be a USD amount as a decimal string, e.g. "25.50"' }).regex(/^\d{1,12}(\.\d{1,6})?$/, { error: 'must be a USD amount as a decimal string, e.g. "25.50"' });

export const WEBHOOK_RANGES = {
  maxAttempts: { min: 1, max: 50 },
  baseDelayMs: { min: 10, max: 3_600_000 },
  maxDelayMs: { min: 10, max: 86_400_000 },
  timeoutMs: { min: 100, max: 60_000 },
  pollMs: { min: 10, max: 60_000 },
  concurrency: { min: 1, max: 100 },
  perEndpointConcurrency: { min: 1, max: 100 },
  retentionDays: { min: 0, max: 3650 },
} as const;
/** Sponsorship retention (src/retention.ts; docs/operations.md "Sizing and retention"). */
export const RETENTION_RANGES = {
  releasedDays: { min: 0, max: 3650 },
  settledDays: { min: 0, max: 36_500 },
  intervalMinutes: { min: 1, max: 1440 },
  batchSize: { min: 1, max: 10_000 },
} as const;
const UINT128_MAX = (1n << 128n) - 1n;
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

// ---- shared pieces

/** Error text for a wrong type that says "is required" when the field is simply missing. */
function expected(what: string) {
  return (issue: { input?: unknown }) => (issue.input === undefined ? "is required" : `must be ${what}`);
}

/** Addresses or CIDR ranges, normalised to CIDR ("10.0.0.5" -> "10.0.0.5/32"); at most 100. */
function ipRanges() {
  return z
    .array(
      z.string({ error: expected("an address or CIDR range") }).transform((value, ctx) => {
        const range = validIpRange(value);
        if (range === undefined) ctx.addIssue({ code: "custom", message: 'must be an IP address or CIDR range ("10.0.0.5", "10.0.0.0/8", "fd00::/8")' });
        return range ?? z.NEVER;
      }),
      { error: expected("an array of addresses or CIDR ranges") },
    )
    .max(100, { error: "at most 100 entries" });
}

function integer(what: string, min: number, max: number) {
  const message = `must be ${what} from ${min} to ${max}`;
  return z
    .number({ error: expected(`an integer (${what} from ${min} to ${max})`) })
    .int({ error: `must be an integer (${what} from ${min} to ${max})` })
    .min(min, { error: message })
    .max(max, { error: message });
}

/** An address in any case (mixed case must be a correct EIP-55 checksum), not zero; normalised to checksummed. */
export const addressSchema = z
  .string({ error: expected("an address (0x + 40 hex digits)") })
  .refine((v) => isAddress(v, { strict: false }), { error: "must be an address (0x + 40 hex digits)", abort: true })
  .refine((v) => isAddress(v, { strict: true }), {
    error: "has a wrong EIP-55 checksum (write it all lowercase or correctly checksummed)",
    abort: true,
  })
  .refine((v) => v.toLowerCase() !== ZERO_ADDRESS, { error: "must not be the zero address" })
  .transform((v) => getAddress(v) as Address);

const USD_DECIMAL_RE = /^(?:0|[1-9]\d*)(?:\.\d+)?$/;

export const priceSourceSchema = z.discriminatedUnion(
  "type",
  [
    z.strictObject({
      type: z.literal("fixed"),
      usd: z
        .string({ error: expected('a decimal string such as "1.00"') })
        .regex(USD_DECIMAL_RE, { error: 'must be a decimal string such as "1.00" (no sign, no exponent)', abort: true })
        .refine((v) => /[1-9]/.test(v), { error: "must be greater than 0" }),
    }),
    z.strictObject({
      type: z.literal("chainlink"),
      feed: addressSchema,
      maxAgeSeconds: integer("a number of seconds", 1, 7 * 24 * 3600).optional(),
    }),
  ],
  {
    error: expected('{"type":"fixed","usd":"<decimal>"} or {"type":"chainlink","feed":"<address>","maxAgeSeconds"?:<n>}'),
  },
) satisfies z.ZodType<PriceSource>;

/** A gas amount: a decimal string (any size) or a JSON number (safe integers only). */
const gasAmount = z.unknown().transform((value, ctx): bigint => {
  let amount: bigint | undefined;
  if (typeof value === "number" && Number.isSafeInteger(value)) amount = BigInt(value);
  else if (typeof value === "string" && /^\d+$/.test(value)) amount = BigInt(value);
  if (amount === undefined) {
    const message =
      typeof value === "number"
        ? "must be a non-negative integer; write numbers above 2^53 as decimal strings"
        : "must be a positive integer (a JSON number or a decimal string)";
    ctx.issues.push({ code: "custom", message, input: value });
    return z.NEVER;
  }
  if (amount <= 0n || amount > UINT128_MAX) {
    ctx.issues.push({ code: "custom", message: "must be greater than 0 and fit in 128 bits", input: value });
    return z.NEVER;
  }
  return amount;
});

export const gasCapsSchema = z
  .strictObject({
    maxVerificationGasLimit: gasAmount.optional(),
    maxCallGasLimit: gasAmount.optional(),
    maxPreVerificationGas: gasAmount.optional(),
    maxPaymasterVerificationGasLimit: gasAmount.optional(),
    maxPaymasterPostOpGasLimit: gasAmount.optional(),
    maxFeeMultiplierBps: integer("basis points", FEE_MULTIPLIER_BPS_RANGE.min, FEE_MULTIPLIER_BPS_RANGE.max).optional(),
  })
  .optional()
  .transform(
    (caps): GasCaps => ({
      maxVerificationGasLimit: caps?.maxVerificationGasLimit ?? DEFAULT_GAS_CAPS.maxVerificationGasLimit,
      maxCallGasLimit: caps?.maxCallGasLimit ?? DEFAULT_GAS_CAPS.maxCallGasLimit,
      maxPreVerificationGas: caps?.maxPreVerificationGas ?? DEFAULT_GAS_CAPS.maxPreVerificationGas,
      maxPaymasterVerificationGasLimit:
        caps?.maxPaymasterVerificationGasLimit ?? DEFAULT_GAS_CAPS.maxPaymasterVerificationGasLimit,
      maxPaymasterPostOpGasLimit: caps?.maxPaymasterPostOpGasLimit ?? DEFAULT_GAS_CAPS.maxPaymasterPostOpGasLimit,
      maxFeeMultiplierBps: caps?.maxFeeMultiplierBps ?? DEFAULT_GAS_CAPS.maxFeeMultiplierBps,
    }),
  );

const SYMBOL_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/;

export const tokenSchema = z.strictObject({
  symbol: z
    .string({ error: expected("a token symbol") })
    .regex(SYMBOL_RE, { error: "must be 1-32 letters, digits, '.', '_' or '-'", abort: true })
    .refine((v) => !isAddress(v, { strict: false }), { error: "must not look like an address" }),
  address: addressSchema,
  decimals: integer("an integer", 0, TOKEN_DECIMALS_MAX),
  priceSource: priceSourceSchema,
  markupBps: integer("basis points", 0, MARKUP_BPS_MAX),
});

function entryPointSchema(version: EntryPointVersion) {
  return z.strictObject({
    /** Defaults to the canonical EntryPoint address of the version. */
    entryPoint: addressSchema.optional().transform((a) => a ?? ENTRY_POINT_ADDRESSES[version]),
    verifyingPaymaster: addressSchema,
    erc20Paymaster: addressSchema,
  });
}

export const entryPointsSchema = z
  .strictObject(
    { "v0.6": entryPointSchema("v0.6").optional(), "v0.7": entryPointSchema("v0.7").optional(), "v0.8": entryPointSchema("v0.8").optional() },
    { error: expected('an object keyed by EntryPoint version ("v0.6", "v0.7", "v0.8")') },
  )
  .refine((eps) => eps["v0.6"] !== undefined || eps["v0.7"] !== undefined || eps["v0.8"] !== undefined, {
    error: 'configure at least one EntryPoint version ("v0.6", "v0.7" or "v0.8")',
  });

/** Whether `key` is a usable secp256k1 private key (non-zero, below the curve order). */
function isPrivateKey(key: string): boolean {
  try {
    privateKeyToAddress(key as Hex);
    return true;
  } catch {
    return false;
  }
}

/** A signer private key. Error texts never contain the key. */
export const signerKeySchema = z
  .string({ error: "must be a 32-byte hex private key (0x + 64 hex digits)" })
  .regex(/^0x[0-9a-fA-F]{64}$/, { error: "must be a 32-byte hex private key (0x + 64 hex digits)", abort: true })
  .refine(isPrivateKey, { error: "is not a valid secp256k1 private key" })
  .transform((k) => k.toLowerCase() as Hex);

/**
 * A network's PKCS#11 signer (the key in a token): where the library, the token and the key are. The PIN is a
 * secret: config/load.ts takes it from the environment or a file and refuses it in the file.
 */
export const pkcs11Schema = z
  .strictObject(
    {
      module: z.string({ error: expected("the path of the PKCS#11 library (.so)") }).min(1, { error: "must be the path of the PKCS#11 library (.so)" }),
      tokenLabel: z.string({ error: expected("a token label") }).min(1, { error: "must not be empty" }).max(32, { error: "a token label has at most 32 characters" }).optional(),
      slot: z.number({ error: expected("a slot id") }).int({ error: "must be a slot id (an integer)" }).nonnegative({ error: "must be a slot id (an integer)" }).optional(),
      keyLabel: z.string({ error: expected("the key's label (CKA_LABEL)") }).min(1, { error: "must not be empty" }),
      sessions: z.number({ error: expected("a number of sessions") }).int({ error: "must be an integer from 1 to 64" }).min(1, { error: "must be an integer from 1 to 64" }).max(64, { error: "must be an integer from 1 to 64" }).optional(),
      // Set by config/load.ts from the environment, never from the file.
      pin: z.union([z.strictObject({ env: z.string(), value: z.string() }), z.strictObject({ file: z.string() })]).optional(),
    },
    { error: expected('{"module", "tokenLabel" or "slot", "keyLabel"}') },
  )
  .refine((p) => (p.tokenLabel === undefined) !== (p.slot === undefined), { error: "give the token by tokenLabel or by slot (exactly one)" });

const RPC_PROTOCOLS = new Set(["http:", "https:", "ws:", "wss:"]);

function isRpcUrl(value: string): boolean {
  try {
    return RPC_PROTOCOLS.has(new URL(value).protocol);
  } catch {
    return false;
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}

const NETWORK_NAME_RULE = `must be a lowercase network name (a-z, 0-9 and single hyphens, at most ${NETWORK_NAME_MAX_LENGTH} characters, e.g. polygon-amoy): it goes into URL paths and environment variable names`;

/** A network name: a lowercase slug (registry or custom; which one is checked in crossCheck). */
const networkNameSchema = z.string({ error: expected("a network name") }).refine(isNetworkSlug, { error: NETWORK_NAME_RULE });

/** A positive safe integer chain id. */
const chainIdSchema = (required = "is required") =>
  z
    .number({ error: (issue) => (issue.input === undefined ? required : "must be a positive integer") })
    .refine((v) => Number.isSafeInteger(v) && v > 0, { error: "must be a positive integer (at most 2^53 - 1)" });

const gasKindSchema = z.enum(GAS_KINDS as [GasKind, ...GasKind[]], {
  error: (issue) =>
    issue.input === undefined
      ? `is required for a custom network: how the chain charges for L1 data, one of ${GAS_KINDS.join(", ")}`
      : `must be one of: ${GAS_KINDS.join(", ")}`,
});

/** A chain the registry does not list, declared by the configuration (name, chain id, gas kind: all required). */
export const customNetworkSchema = z.strictObject(
  { name: networkNameSchema, chainId: chainIdSchema("is required for a custom network: the chain id its RPC serves (eth_chainId)"), gasKind: gasKindSchema },
  { error: expected('{"name", "chainId", "gasKind"}') },
) satisfies z.ZodType<NetworkDefinition>;

/** One network's settings as written; `resolveNetwork` adds the chain id and gas kind of its definition. */
export const networkSchema = z
  .strictObject({
    name: networkNameSchema,
    /** Optional: defaults to the definition's chain id, and must equal it when given (checked in crossCheck). */
    chainId: chainIdSchema().optional(),
    rpcUrl: z
      .string({ error: expected("a URL") })
      .refine(isRpcUrl, { error: "must be an http(s):// or ws(s):// URL" }),
    /** Optional: how the chain charges for L1 data; defaults to the definition's kind. */
    gasKind: z.enum(GAS_KINDS as [GasKind, ...GasKind[]], { error: `must be one of: ${GAS_KINDS.join(", ")}` }).optional(),
    fallbackRpcUrls: z
      .array(z.string({ error: expected("a URL") }).refine(isRpcUrl, { error: "must be an http(s):// or ws(s):// URL" }), {
        error: expected("a list of URLs"),
      })
      .max(RPC_FALLBACKS_MAX, { error: `at most ${RPC_FALLBACKS_MAX} fallback URLs` })
      .optional(),
    rpcTimeoutMs: integer("milliseconds", RPC_TIMEOUT_MS_RANGE.min, RPC_TIMEOUT_MS_RANGE.max).optional(),
    rpcDeadlineMs: integer("milliseconds", RPC_TIMEOUT_MS_RANGE.min, RPC_TIMEOUT_MS_RANGE.max).optional(),
    /** An ERC-4337 bundler: the standard endpoint forwards the eth_*UserOperation* methods to it (src/bundler/). */
    bundlerUrl: z
      .string({ error: expected("a URL") })
      .refine(isHttpUrl, { error: "must be an http(s):// URL" })
      .optional(),
    bundlerTimeoutMs: integer("milliseconds", RPC_TIMEOUT_MS_RANGE.min, RPC_TIMEOUT_MS_RANGE.max).optional(),
    depositAlertWei: z
      .string({ error: expected("a decimal amount of wei as a string") })
      .regex(/^\d{1,78}$/, { error: "must be a decimal amount of wei as a string" })
      .optional(),
    entryPoints: entryPointsSchema,
    signerKeys: z
      .array(signerKeySchema, { error: expected("a list of private keys") })
      .refine((keys) => new Set(keys).size === keys.length, { error: "lists the same key twice" }),
    pkcs11: pkcs11Schema.optional(),
    tokens: z.array(tokenSchema, { error: expected("an array of tokens") }).default([]),
    nativeUsdPrice: priceSourceSchema,
    caps: gasCapsSchema,
    confirmations: integer("a number of blocks", CONFIRMATIONS_RANGE.min, CONFIRMATIONS_RANGE.max).optional(),
    reorgDepth: integer("a number of blocks", REORG_DEPTH_RANGE.min, REORG_DEPTH_RANGE.max).optional(),
    expiryGraceSeconds: integer("a number of seconds", EXPIRY_GRACE_SECONDS_RANGE.min, EXPIRY_GRACE_SECONDS_RANGE.max).optional(),
    depositAddress: addressSchema.optional(),
    depositContract: addressSchema.optional(),
    pollMs: integer("milliseconds", WATCHER_POLL_MS_RANGE.min, WATCHER_POLL_MS_RANGE.max).optional(),
    logBlockRange: integer("a number of blocks", LOG_BLOCK_RANGE_RANGE.min, LOG_BLOCK_RANGE_RANGE.max).optional(),
    skipFinalSimulation: z.boolean({ error: expected("true or false") }).optional(),
    chainClock: z.enum(["auto", "wall"], { error: expected('"auto" or "wall"') }).optional(),
  })
  .transform(
    (n): NetworkInput => ({
      name: n.name,
      ...(n.chainId === undefined ? {} : { chainId: n.chainId }),
      rpcUrl: n.rpcUrl,
      ...(n.gasKind === undefined ? {} : { gasKind: n.gasKind }),
      ...(n.fallbackRpcUrls === undefined || n.fallbackRpcUrls.length === 0 ? {} : { fallbackRpcUrls: n.fallbackRpcUrls }),
      ...(n.rpcTimeoutMs === undefined ? {} : { rpcTimeoutMs: n.rpcTimeoutMs }),
      ...(n.rpcDeadlineMs === undefined ? {} : { rpcDeadlineMs: n.rpcDeadlineMs }),
      ...(n.bundlerUrl === undefined ? {} : { bundlerUrl: n.bundlerUrl }),
      ...(n.bundlerTimeoutMs === undefined ? {} : { bundlerTimeoutMs: n.bundlerTimeoutMs }),
      ...(n.depositAlertWei === undefined ? {} : { depositAlertWei: BigInt(n.depositAlertWei) }),
      entryPoints: n.entryPoints,
      signerKeys: n.signerKeys,
      ...(n.pkcs11 === undefined ? {} : { pkcs11: n.pkcs11 }),
      tokens: n.tokens,
      nativeUsdPrice: n.nativeUsdPrice,
      caps: n.caps,
      ...(n.skipFinalSimulation === true ? { skipFinalSimulation: true } : {}),
      ...(n.chainClock === undefined ? {} : { chainClock: n.chainClock }),
      // Settlement watcher settings: present only when given (the watcher applies its defaults).
      ...(n.confirmations === undefined ? {} : { confirmations: n.confirmations }),
      ...(n.reorgDepth === undefined ? {} : { reorgDepth: n.reorgDepth }),
      ...(n.expiryGraceSeconds === undefined ? {} : { expiryGraceSeconds: n.expiryGraceSeconds }),
      ...(n.depositAddress === undefined ? {} : { depositAddress: n.depositAddress }),
      ...(n.depositContract === undefined ? {} : { depositContract: n.depositContract }),
      ...(n.pollMs === undefined ? {} : { pollMs: n.pollMs }),
      ...(n.logBlockRange === undefined ? {} : { logBlockRange: n.logBlockRange }),
    }),
  );

/** A network as written: its chain id and gas kind may be left to its definition (the registry's or a declared one). */
type NetworkInput = Omit<NetworkConfig, "chainId" | "gasKind"> & { chainId?: number; gasKind?: GasKind };

/** The network with its definition's chain id and gas kind where the file leaves them out (crossCheck vouched for `definition`). */
function resolveNetwork(n: NetworkInput, definition: NetworkDefinition): NetworkConfig {
  const { chainId, gasKind, ...rest } = n;
  return { ...rest, chainId: chainId ?? definition.chainId, gasKind: gasKind ?? definition.gasKind };
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

/** Loopback: 127.0.0.0/8, ::1 (any spelling), or the name "localhost". */
export function isLoopbackHost(host: string): boolean {
  if (host === "localhost") return true;
  if (isIPv4(host)) return LOOPBACK.check(host, "ipv4");
  if (isIPv6(host)) return LOOPBACK.check(host, "ipv6");
  return false;
}

const POSTGRES_PROTOCOLS = new Set(["postgres:", "postgresql:"]);

/** A PostgreSQL connection URL (postgres://user:password@host:port/database?…). */
export function isPostgresUrl(value: string): boolean {
  try {
    return POSTGRES_PROTOCOLS.has(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** One limit: requests per second with a burst, and sponsorships (signatures) per minute. */
const limitSchema = z.strictObject(
  {
    perSecond: integer("requests per second", 1, 1_000_000).optional(),
    burst: integer("a number of requests", 1, 10_000_000).optional(),
    sponsorshipsPerMinute: integer("sponsorships per minute", 1, 100_000_000).optional(),
  },
  { error: "must be {perSecond?, burst?, sponsorshipsPerMinute?}" },
);

const rateLimitSchema = z.strictObject(
  {
    perSecond: integer("requests per second", 1, 1_000_000).optional(),
    burst: integer("a number of requests", 1, 10_000_000).optional(),
    sponsorshipsPerMinute: integer("sponsorships per minute", 1, 100_000_000).optional(),
    /** Per project (by project id), the whole project's traffic together. */
    projects: z.record(z.string(), limitSchema, { error: "must map project ids to limits" }).optional(),
    /** Per API key (by API key id), overriding the defaults above. */
    keys: z.record(z.string(), limitSchema, { error: "must map API key ids to limits" }).optional(),
  },
  { error: "must be {perSecond?, burst?, sponsorshipsPerMinute?, projects?, keys?}" },
);

export const serviceConfigSchema = z
  .strictObject(
    {
      host: z
        .string({ error: expected("a host") })
        .refine(isLoopbackHost, {
          error:
            "must be a loopback address (127.0.0.0/8, ::1 or localhost): the service is meant to sit behind a reverse proxy",
        })
        .default(DEFAULT_HOST),
      port: integer("a port", 0, 65_535).default(DEFAULT_PORT),
      databasePath: z.string({ error: expected("a file path") }).min(1, { error: "must not be empty" }).default(DEFAULT_DATABASE_PATH),
      /** From DATABASE_URL only (load.ts refuses it in the file). Messages never contain the value. */
      databaseUrl: z
        .string({ error: "must be a postgres:// or postgresql:// URL" })
        .refine(isPostgresUrl, { error: "must be a postgres:// or postgresql:// URL" })
        .optional(),
      /** How long the PostgreSQL store waits on its database (src/store/settings.ts). */
      database: z
        .strictObject(
          {
            connectTimeoutMs: integer("milliseconds", DATABASE_RANGES.connectTimeoutMs.min, DATABASE_RANGES.connectTimeoutMs.max).optional(),
            queryTimeoutMs: integer("milliseconds", DATABASE_RANGES.queryTimeoutMs.min, DATABASE_RANGES.queryTimeoutMs.max).optional(),
            statementTimeoutMs: integer("milliseconds", DATABASE_RANGES.statementTimeoutMs.min, DATABASE_RANGES.statementTimeoutMs.max).optional(),
            configMaxAgeMs: integer("milliseconds", DATABASE_RANGES.configMaxAgeMs.min, DATABASE_RANGES.configMaxAgeMs.max).optional(),
          },
          { error: "must be {connectTimeoutMs?, queryTimeoutMs?, statementTimeoutMs?, configMaxAgeMs?}" },
        )
        .optional(),
      bodyLimitBytes: integer("a number of bytes", BODY_LIMIT_RANGE.min, BODY_LIMIT_RANGE.max).default(
        DEFAULT_BODY_LIMIT_BYTES,
      ),
      rateLimit: rateLimitSchema.optional(),
      /**
       * Reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For is believed: the client address of the
       * public doors (application and claim limits, keys' IP allowlists) is then the nearest address in that
       * header that is not one of them (access/clientAddress.ts). Absent: the connection's address, always.
       */
      trustedProxies: ipRanges().optional(),
      /** A caller's traceparent: linked (default), continued from trustedProxies only, or always continued (rpc/dispatch.ts callerTrace). */
      traceContext: z.enum(TRACE_CONTEXT_MODES, { error: `must be one of: ${TRACE_CONTEXT_MODES.join(", ")}` }).optional(),
      /** IPv6 clients are counted per network of this many bits by every per-client bound (access/clientAddress.ts). */
      ipv6ClientPrefix: integer("a prefix length", 32, 128).default(DEFAULT_IPV6_CLIENT_PREFIX),
      applicationExpiryDays: integer("a number of days", 1, 365).default(DEFAULT_APPLICATION_EXPIRY_DAYS),
      metrics: z
        .strictObject(
          {
            host: z
              .string({ error: expected("a host") })
              .refine(isLoopbackHost, { error: "must be a loopback address (127.0.0.0/8, ::1 or localhost)" })
              .default(DEFAULT_HOST),
            port: integer("a port", 0, 65_535),
          },
          { error: "must be {host, port}" },
        )
        .optional(),
      watch: z.boolean({ error: "must be true or false" }).default(true),
      leaderRetryMs: integer("milliseconds", LEADER_RETRY_MS_RANGE.min, LEADER_RETRY_MS_RANGE.max).optional(),
      alerts: z
        .strictObject(
          {
            capWarnPercent: integer("a percentage", CAP_WARN_PERCENT_RANGE.min, CAP_WARN_PERCENT_RANGE.max).optional(),
            watcherLagBlocks: integer("a number of blocks", 1, 1_000_000).optional(),
          },
          { error: "must be {capWarnPercent?, watcherLagBlocks?}" },
        )
        .optional(),
      webhooks: z
        .strictObject(
          {
            enabled: z.boolean({ error: "must be true or false" }).optional(),
            maxAttempts: integer("a number of attempts", WEBHOOK_RANGES.maxAttempts.min, WEBHOOK_RANGES.maxAttempts.max).optional(),
            baseDelayMs: integer("milliseconds", WEBHOOK_RANGES.baseDelayMs.min, WEBHOOK_RANGES.baseDelayMs.max).optional(),
            maxDelayMs: integer("milliseconds", WEBHOOK_RANGES.maxDelayMs.min, WEBHOOK_RANGES.maxDelayMs.max).optional(),
            timeoutMs: integer("milliseconds", WEBHOOK_RANGES.timeoutMs.min, WEBHOOK_RANGES.timeoutMs.max).optional(),
            pollMs: integer("milliseconds", WEBHOOK_RANGES.pollMs.min, WEBHOOK_RANGES.pollMs.max).optional(),
            concurrency: integer("a number of requests", WEBHOOK_RANGES.concurrency.min, WEBHOOK_RANGES.concurrency.max).optional(),
            perEndpointConcurrency: integer(
              "a number of requests",
              WEBHOOK_RANGES.perEndpointConcurrency.min,
              WEBHOOK_RANGES.perEndpointConcurrency.max,
            ).optional(),
            retentionDays: integer("a number of days", WEBHOOK_RANGES.retentionDays.min, WEBHOOK_RANGES.retentionDays.max).optional(),
            allowedDestinations: ipRanges().optional(),
          },
          { error: "must be {enabled, maxAttempts, baseDelayMs, maxDelayMs, timeoutMs, pollMs, concurrency, perEndpointConcurrency, retentionDays, allowedDestinations}" },
        )
        .optional(),
      retention: z
        .strictObject(
          {
            releasedDays: integer("a number of days", RETENTION_RANGES.releasedDays.min, RETENTION_RANGES.releasedDays.max).optional(),
            settledDays: integer("a number of days", RETENTION_RANGES.settledDays.min, RETENTION_RANGES.settledDays.max).optional(),
            intervalMinutes: integer("a number of minutes", RETENTION_RANGES.intervalMinutes.min, RETENTION_RANGES.intervalMinutes.max).optional(),
            batchSize: integer("a number of rows", RETENTION_RANGES.batchSize.min, RETENTION_RANGES.batchSize.max).optional(),
          },
          { error: "must be {releasedDays, settledDays, intervalMinutes, batchSize}" },
        )
        .optional(),
      /** Bounds on open reservations per sender and per browser key's client address (src/sponsor/outstanding.ts). */
      reservations: z
        .strictObject(
          {
            maxOutstandingPerSender: integer("a number of sponsorships", 1, 1000).optional(),
            maxOutstandingPerClientIp: integer("a number of sponsorships", 1, 100_000).optional(),
            maxBalanceShareBpsPerClient: integer("basis points of the balance", 1, 10_000).optional(),
            maxBalanceShareBpsPerKey: integer("basis points of the balance", 1, 10_000).optional(),
          },
          { error: "must be {maxOutstandingPerSender?, maxOutstandingPerClientIp?, maxBalanceShareBpsPerClient?, maxBalanceShareBpsPerKey?}" },
        )
        .optional(),
      /** ERC-20 postOp-charge mode: the USD at risk per project and per API key (src/sponsor/postOpRisk.ts). */
      postOpChargeRisk: z
        .strictObject(
          {
            maxUsdPerProject: usdAmount.optional(),
            maxUsdPerKey: usdAmount.optional(),
            windowSeconds: integer("a number of seconds", 60, 30 * 86_400).optional(),
          },
          { error: "must be {maxUsdPerProject?, maxUsdPerKey?, windowSeconds?}" },
        )
        .optional(),
      signatureTtlSeconds: integer("a number of seconds", SIGNATURE_TTL_RANGE.min, SIGNATURE_TTL_RANGE.max).default(
        DEFAULT_SIGNATURE_TTL_SECONDS,
      ),
      logLevel: z.enum(LOG_LEVELS, { error: `must be one of: ${LOG_LEVELS.join(", ")}` }).default(DEFAULT_LOG_LEVEL),
      /** Chains the registry does not list (name, chainId, gasKind), usable in `networks` and by the CLI. */
      customNetworks: z.array(customNetworkSchema, { error: expected("an array of custom networks") }).optional(),
      /** At least one for the service (checked in crossCheck); administration may read a file with none yet. */
      networks: z.array(networkSchema, { error: expected("an array of networks") }).default([]),
    },
    { error: "must be a JSON object" },
  );

// ---- issues

export interface ConfigIssue {
  path: readonly (string | number)[];
  message: string;
  /** Where the offending value came from, when that is not what the path suggests (e.g. "the configuration file"). */
  origin?: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether the configuration is read to serve (at least one network needed) or to administer (none yet is fine). */
export type ConfigPurpose = "service" | "admin";

/**
 * The custom networks a raw document declares (each well formed and not shadowing the registry), with the
 * issues of those that are not: a registry name, a name or chain id declared twice.
 */
export function declaredNetworks(raw: unknown): { declared: NetworkDefinition[]; issues: ConfigIssue[] } {
  const declared: NetworkDefinition[] = [];
  const issues: ConfigIssue[] = [];
  if (!isRecord(raw) || !Array.isArray(raw.customNetworks)) return { declared, issues };
  raw.customNetworks.forEach((entry: unknown, i) => {
    if (!isRecord(entry)) return;
    const { name, chainId, gasKind } = entry;
    if (isNetworkName(name)) {
      issues.push({
        path: ["customNetworks", i, "name"],
        message: `"${name}" is a network of the registry (chain ${NETWORKS[name].chainId}): use it in networks without declaring it, or give the custom network another name`,
      });
      return;
    }
    const first = declared.findIndex((n) => n.name === name);
    if (isNetworkSlug(name) && first !== -1) {
      issues.push({ path: ["customNetworks", i, "name"], message: `"${name}" is already declared by customNetworks[${first}]` });
      return;
    }
    const sameChain = declared.findIndex((n) => n.chainId === chainId);
    if (typeof chainId === "number" && sameChain !== -1) {
      issues.push({ path: ["customNetworks", i, "chainId"], message: `chain ${chainId} is already declared as "${declared[sameChain]!.name}" by customNetworks[${sameChain}]: one name per chain` });
      return;
    }
    const parsed = customNetworkSchema.safeParse({ name, chainId, gasKind });
    if (parsed.success) declared.push(parsed.data);
  });
  return { declared, issues };
}

/**
 * The checks that span fields, run on the raw input (so they report even when other fields are wrong): the
 * custom network declarations (declaredNetworks), each network's name known (the registry or declared) and its
 * chainId equal to its definition's, no network (nor chain) twice, a deposit address that is not the deposit
 * contract, token symbols (case-insensitive) and addresses unique per network; for the service, at least one
 * network.
 */
export function crossCheck(raw: unknown, purpose: ConfigPurpose = "service"): ConfigIssue[] {
  const { declared, issues } = declaredNetworks(raw);
  if (!isRecord(raw)) return issues;
  if (raw.traceContext === "trusted-proxies" && (!Array.isArray(raw.trustedProxies) || raw.trustedProxies.length === 0)) {
    issues.push({ path: ["traceContext"], message: `"trusted-proxies" continues the traces of the addresses in trustedProxies: list your reverse proxy there, or use "link"` });
  }
  if (purpose === "service" && (raw.networks === undefined || (Array.isArray(raw.networks) && raw.networks.length === 0))) {
    issues.push({ path: ["networks"], message: "configure at least one network" });
  }
  if (!Array.isArray(raw.networks)) return issues;
  const seenNetworks = new Map<string, number>();
  const seenChains = new Map<number, number>();
  raw.networks.forEach((network: unknown, i) => {
    if (!isRecord(network)) return;
    const { name, chainId } = network;
    const definition = typeof name === "string" ? findNetwork(name, declared) : undefined;
    if (definition === undefined && isNetworkSlug(name)) {
      const custom = declared.length === 0 ? "" : `; declared: ${declared.map((n) => n.name).join(", ")}`;
      issues.push({
        path: ["networks", i, "name"],
        message: `"${name}" is not a network of the registry (${NETWORK_NAMES.join(", ")})${custom}: declare a chain the registry does not list in customNetworks ({name, chainId, gasKind})`,
      });
    }
    if (definition !== undefined) {
      const origin = isNetworkName(definition.name) ? "the network registry's chain id" : `as declared in customNetworks[${declared.indexOf(definition)}]`;
      if (typeof chainId === "number" && chainId !== definition.chainId) {
        issues.push({ path: ["networks", i, "chainId"], message: `must be ${definition.chainId} for ${definition.name} (${origin}), not ${chainId}` });
      }
      const first = seenNetworks.get(definition.name);
      if (first !== undefined) {
        issues.push({ path: ["networks", i, "name"], message: `"${definition.name}" is already configured by networks[${first}]` });
      } else {
        seenNetworks.set(definition.name, i);
        const sameChain = seenChains.get(definition.chainId);
        if (sameChain !== undefined) {
          issues.push({ path: ["networks", i, "name"], message: `serves chain ${definition.chainId}, as networks[${sameChain}] does: one network per chain` });
        } else seenChains.set(definition.chainId, i);
      }
    }
    if (typeof network.depositAddress === "string" && typeof network.depositContract === "string" && network.depositAddress.toLowerCase() === network.depositContract.toLowerCase()) {
      issues.push({
        path: ["networks", i, "depositAddress"],
        message: "is the depositContract: a transfer to the contract already emits Deposited (it would be credited twice); leave depositAddress out or use another address",
      });
    }
    if (!Array.isArray(network.tokens)) return;
    const symbols = new Map<string, number>();
    const addresses = new Map<string, number>();
    network.tokens.forEach((token: unknown, k) => {
      if (!isRecord(token)) return;
      if (typeof token.symbol === "string") {
        const key = token.symbol.toLowerCase();
        const first = symbols.get(key);
        if (first !== undefined) {
          issues.push({
            path: ["networks", i, "tokens", k, "symbol"],
            message: `"${token.symbol}" is already used by tokens[${first}] (symbols are unique per network, ignoring case)`,
          });
        } else symbols.set(key, k);
      }
      if (typeof token.address === "string" && isAddress(token.address, { strict: false })) {
        const key = token.address.toLowerCase();
        const first = addresses.get(key);
        if (first !== undefined) {
          issues.push({
            path: ["networks", i, "tokens", k, "address"],
            message: `is already listed as tokens[${first}]`,
          });
        } else addresses.set(key, k);
      }
    });
  });
  return issues;
}

/** Zod's issues as ours: one per unrecognised key, with the key in the path. */
function fromZod(issues: readonly z.core.$ZodIssue[]): ConfigIssue[] {
  return issues.flatMap((issue): ConfigIssue[] => {
    const path = issue.path.map((p) => (typeof p === "number" ? p : String(p)));
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ path: [...path, key], message: "is not a known setting" }));
    }
    return [{ path, message: issue.message }];
  });
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: ConfigIssue[] };

/**
 * Validates and normalises a whole configuration (secrets already merged in), collecting every issue, and
 * gives each network the chain id and gas kind of its definition where the file leaves them out.
 */
export function parseServiceConfig(raw: unknown, purpose: ConfigPurpose = "service"): ParseResult<ServiceConfig> {
  const result = serviceConfigSchema.safeParse(raw);
  const issues = [...(result.success ? [] : fromZod(result.error.issues)), ...crossCheck(raw, purpose)];
  if (issues.length > 0 || !result.success) return { ok: false, issues };
  const { networks, customNetworks, ...rest } = result.data;
  const declared = customNetworks ?? [];
  return {
    ok: true,
    value: {
      ...rest,
      ...(customNetworks === undefined ? {} : { customNetworks }),
      networks: networks.map((n) => resolveNetwork(n, findNetwork(n.name, declared)!)),
    },
  };
}

/** Validates and normalises one network of the registry (the embedded local network). */
export function parseNetworkConfig(raw: unknown): ParseResult<NetworkConfig> {
  const result = networkSchema.safeParse(raw);
  const issues = [
    ...(result.success ? [] : fromZod(result.error.issues)),
    ...crossCheck({ networks: [raw] }, "admin").map((issue) => ({ ...issue, path: issue.path.slice(2) })),
  ];
  if (issues.length > 0 || !result.success) return { ok: false, issues };
  return { ok: true, value: resolveNetwork(result.data, findNetwork(result.data.name)!) };
}

/** `networks[0].entryPoints["v0.6"].verifyingPaymaster` */
export function formatPath(path: readonly (string | number)[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) out += out === "" ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out === "" ? "(config)" : out;
}

/** Freezes `value` and everything reachable from it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
  }
  return value;
}
