/**
 * Loading the configuration: a JSON file (`--config <path>` or PAYMASTER_CONFIG) plus environment overrides,
 * validated once at start-up into a deeply frozen `ServiceConfig`. Secrets (signer keys) come only from the
 * environment or from key files; a config file that carries them is refused. See docs/configuration.md.
 */
import type { Pkcs11Config } from "../signer/pkcs11Token.ts";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { privateKeyToAddress } from "viem/accounts";
import { findNetwork, knownNetworkNames, type Address, type NetworkDefinition } from "@paymaster/shared";

import { ConfigError } from "./errors.ts";
import { redactUrl } from "../text/redactUrl.ts";
export { redactUrl } from "../text/redactUrl.ts";
import { declaredNetworks, deepFreeze, formatPath, parseServiceConfig, type ConfigIssue, type ConfigPurpose } from "./schema.ts";
import type { EntryPointConfig, GasCaps, NetworkConfig, ServiceConfig, TokenConfig } from "./types.ts";

export { ConfigError } from "./errors.ts";

/** Environment variables for the top-level settings. */
export const ENV_OVERRIDES = Object.freeze({
  host: "PAYMASTER_HOST",
  port: "PAYMASTER_PORT",
  databasePath: "PAYMASTER_DB_PATH",
  logLevel: "PAYMASTER_LOG_LEVEL",
  bodyLimitBytes: "PAYMASTER_BODY_LIMIT_BYTES",
} as const);
const NUMERIC_OVERRIDES: ReadonlySet<string> = new Set(["port", "bodyLimitBytes"]);

export const CONFIG_PATH_ENV = "PAYMASTER_CONFIG";
/** The PostgreSQL URL (a secret: environment only). When set, the store is PostgreSQL instead of the SQLite file. */
export const DATABASE_URL_ENV = "DATABASE_URL";
const NETWORK_ENV_PREFIX = "PAYMASTER_NETWORK_";
const NETWORK_ENV_SETTINGS = ["RPC_URL", "FALLBACK_RPC_URLS", "BUNDLER_URL", "SIGNER_KEYS", "SIGNER_KEY_FILE", "PKCS11_PIN", "PKCS11_PIN_FILE"] as const;

/** "base-sepolia" -> "BASE_SEPOLIA": the <NAME> in PAYMASTER_NETWORK_<NAME>_… */
export function networkEnvName(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]+/g, "_");
}

/** The environment variable carrying `setting` for network `name`. */
export function networkEnvVar(name: string, setting: (typeof NETWORK_ENV_SETTINGS)[number]): string {
  return `${NETWORK_ENV_PREFIX}${networkEnvName(name)}_${setting}`;
}

/** The config file named by `--config <path>` / `--config=<path>`, else PAYMASTER_CONFIG, else undefined. */
export function configFilePath(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--config") {
      const value = argv[i + 1];
      if (value === undefined || value === "" || value.startsWith("--")) {
        throw new ConfigError(["--config: needs a file path (--config <path>)"]);
      }
      return path.resolve(value);
    }
    if (arg.startsWith("--config=")) {
      const value = arg.slice("--config=".length);
      if (value === "") throw new ConfigError(["--config: needs a file path (--config=<path>)"]);
      return path.resolve(value);
    }
  }
  const fromEnv = env[CONFIG_PATH_ENV];
  return fromEnv === undefined || fromEnv === "" ? undefined : path.resolve(fromEnv);
}

/**
 * The service configuration, or undefined when none is given (neither `--config` nor PAYMASTER_CONFIG): the
 * caller then starts the embedded local stack. Throws `ConfigError` listing every problem.
 */
export async function loadConfig({
  argv,
  env,
  purpose = "service",
}: {
  argv: string[];
  env: NodeJS.ProcessEnv;
  /**
   * "admin" for administration (the operator CLI): it reads the same file and database but never signs, so it
   * does not need the signer keys in its environment (networks without them get an empty list), and the file
   * may configure no network yet (an operator declares a custom network, then deploys to it).
   */
  purpose?: ConfigPurpose;
}): Promise<ServiceConfig | undefined> {
  const file = configFilePath(argv, env);
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new ConfigError([`cannot read the configuration file: ${(err as Error).message}`], file);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`the configuration file is not valid JSON: ${(err as Error).message}`], file);
  }
  return buildConfig(json, env, file, { purpose });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/**
 * Validates a parsed configuration document merged with the environment. A relative `databasePath` written in
 * the file (or the default) resolves against the file's own directory, so every process reading the file (the
 * service from packages/service, the CLI from the repository root, …) opens the same database; paths from the
 * environment (PAYMASTER_DB_PATH, key files), or a document with no file, resolve against the working directory.
 * Throws `ConfigError` with every issue.
 */
export function buildConfig(
  json: unknown,
  env: NodeJS.ProcessEnv,
  source?: string,
  { purpose = "service" }: { purpose?: ConfigPurpose } = {},
): ServiceConfig {
  if (!isRecord(json)) throw new ConfigError(["(config): must be a JSON object"], source);
  const draft: Draft = { raw: structuredClone(json), env, purpose, issues: [], origins: new Map(), hints: new Map() };
  applyTopLevelEnv(draft);
  applyDatabaseUrl(draft);
  // The networks this document can name: the registry's and the custom ones it declares (well formed).
  const { declared } = declaredNetworks(draft.raw);
  if (Array.isArray(draft.raw.networks)) draft.raw.networks.forEach((network: unknown, i) => applyNetworkEnv(draft, network, i, declared));
  checkNetworkVariables(draft, declared);
  const { issues, origins, hints } = draft;
  const parsed = parseServiceConfig(draft.raw, purpose);
  if (!parsed.ok) issues.push(...parsed.issues);
  if (issues.length > 0 || !parsed.ok) {
    throw new ConfigError(
      issues.map((issue) => describe(issue, origins, hints)),
      source,
    );
  }
  const config = parsed.value;
  const base = source !== undefined && !origins.has("databasePath") ? path.dirname(path.resolve(source)) : process.cwd();
  const databasePath = config.databasePath === ":memory:" ? config.databasePath : path.resolve(base, config.databasePath);
  return deepFreeze({ ...config, databasePath });
}

/** What buildConfig gathers as it merges the environment into the document, section by section. */
interface Draft {
  /** A copy of the document, the environment's values written in. */
  readonly raw: Record<string, unknown>;
  readonly env: NodeJS.ProcessEnv;
  readonly purpose: ConfigPurpose;
  readonly issues: ConfigIssue[];
  /** Formatted field path -> where its value came from, for the messages. */
  readonly origins: Map<string, string>;
  /** Formatted field path -> what to do when it is missing. */
  readonly hints: Map<string, string>;
}

/** `target[field]` from the environment variable `variable` when it is set, as `read` makes it; `at`: the field's path in the messages. */
function fromEnv(draft: Draft, target: Record<string, unknown>, field: string, at: string, variable: string, read: (value: string) => unknown = (value) => value): void {
  const value = envValue(draft.env, variable);
  if (value === undefined) return;
  target[field] = read(value);
  draft.origins.set(at, variable);
}

/** The top-level settings the environment overrides (ENV_OVERRIDES); numbers read as numbers. */
function applyTopLevelEnv(draft: Draft): void {
  for (const [field, variable] of Object.entries(ENV_OVERRIDES)) {
    fromEnv(draft, draft.raw, field, field, variable, (value) => (NUMERIC_OVERRIDES.has(field) && /^\d+$/.test(value) ? Number(value) : value));
  }
}

/** The PostgreSQL URL: from DATABASE_URL only (refused in the file: it carries the password). */
function applyDatabaseUrl(draft: Draft): void {
  if (Object.hasOwn(draft.raw, "databaseUrl")) {
    draft.issues.push({
      path: ["databaseUrl"],
      message: `the database URL is a secret (it carries the password) and is not accepted in the configuration file: set ${DATABASE_URL_ENV}`,
      origin: "",
    });
    delete draft.raw.databaseUrl;
  }
  fromEnv(draft, draft.raw, "databaseUrl", "databaseUrl", DATABASE_URL_ENV);
}

/**
 * One entry of `networks`: signer keys written in the file refused; for a network the document can name, its
 * URLs, signer keys and PKCS#11 PIN from the environment (PAYMASTER_NETWORK_<NAME>_…).
 */
function applyNetworkEnv(draft: Draft, network: unknown, i: number, declared: readonly NetworkDefinition[]): void {
  if (!isRecord(network)) return;
  const name = typeof network.name === "string" ? network.name : undefined;
  refuseFileSignerKeys(draft, network, i, name);
  if (name === undefined || findNetwork(name, declared) === undefined) {
    network.signerKeys = []; // the name is reported; keys cannot be looked up without it
    return;
  }
  applyNetworkUrls(draft, network, i, name);
  const signerKeys = signerKeysFromEnv(draft, i, name);
  checkSigner(draft, network, i, name, signerKeys);
  network.signerKeys = signerKeys;
}

/** Signer keys are secrets: written in the file, they are refused, naming the variables that carry them. */
function refuseFileSignerKeys(draft: Draft, network: Record<string, unknown>, i: number, name: string | undefined): void {
  if (!Object.hasOwn(network, "signerKeys")) return;
  const hint =
    name === undefined
      ? `PAYMASTER_NETWORK_<NAME>_SIGNER_KEYS or PAYMASTER_NETWORK_<NAME>_SIGNER_KEY_FILE`
      : `${networkEnvVar(name, "SIGNER_KEYS")} (comma-separated) or ${networkEnvVar(name, "SIGNER_KEY_FILE")} (one key per line)`;
  draft.issues.push({
    path: ["networks", i, "signerKeys"],
    message: `signer keys are secrets and are not accepted in the configuration file: set ${hint}`,
    origin: "", // the file itself: no "(from …)"
  });
  delete network.signerKeys;
}

/** The network's RPC, fallback and bundler URLs from the environment, where set there. */
function applyNetworkUrls(draft: Draft, network: Record<string, unknown>, i: number, name: string): void {
  const where = `networks[${i}]`;
  const rpcVar = networkEnvVar(name, "RPC_URL");
  draft.hints.set(`${where}.rpcUrl`, `set it in the file or in ${rpcVar}`);
  fromEnv(draft, network, "rpcUrl", `${where}.rpcUrl`, rpcVar);
  // A hosted bundler's URL carries its key, like an RPC URL: the environment may hold it instead of the file.
  fromEnv(draft, network, "bundlerUrl", `${where}.bundlerUrl`, networkEnvVar(name, "BUNDLER_URL"));
  fromEnv(draft, network, "fallbackRpcUrls", `${where}.fallbackRpcUrls`, networkEnvVar(name, "FALLBACK_RPC_URLS"), (value) => value.split(",").map((u) => u.trim()).filter((u) => u !== ""));
}

/** The network's signer keys: from …_SIGNER_KEYS (comma-separated) or …_SIGNER_KEY_FILE, not both; none when neither is set. */
function signerKeysFromEnv(draft: Draft, i: number, name: string): string[] {
  const keysVar = networkEnvVar(name, "SIGNER_KEYS");
  const fileVar = networkEnvVar(name, "SIGNER_KEY_FILE");
  const keys = envValue(draft.env, keysVar);
  const keyFile = envValue(draft.env, fileVar);
  if (keys !== undefined && keyFile !== undefined) {
    draft.issues.push({ path: ["networks", i, "signerKeys"], message: `set ${keysVar} or ${fileVar}, not both` });
    return [];
  }
  if (keys !== undefined) {
    draft.origins.set(`networks[${i}].signerKeys`, keysVar);
    return keys.split(",").map((k) => k.trim()).filter((k) => k !== "");
  }
  return keyFile === undefined ? [] : readKeyFile(draft, i, fileVar, keyFile);
}

/** The keys in a key file (one per line; blank lines and # comments skipped); an issue when it cannot be read. */
function readKeyFile(draft: Draft, i: number, fileVar: string, keyFile: string): string[] {
  const file = path.resolve(keyFile);
  draft.origins.set(`networks[${i}].signerKeys`, `${fileVar} (${file})`);
  try {
    return readFileSync(file, "utf8")
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("#"));
  } catch (err) {
    draft.issues.push({
      path: ["networks", i, "signerKeys"],
      message: `cannot read the key file: ${(err as Error).message}`,
    });
    return [];
  }
}

/**
 * How the network signs: with its PKCS#11 key (its PIN from the environment, no signer keys beside it), or with
 * signer keys, which the service (not the operator CLI) must have.
 */
function checkSigner(draft: Draft, network: Record<string, unknown>, i: number, name: string, signerKeys: readonly string[]): void {
  const keysVar = networkEnvVar(name, "SIGNER_KEYS");
  const fileVar = networkEnvVar(name, "SIGNER_KEY_FILE");
  const pkcs11 = isRecord(network.pkcs11) ? network.pkcs11 : undefined;
  if (pkcs11 !== undefined) {
    resolvePkcs11Pin(draft, pkcs11, name, ["networks", i, "pkcs11"]);
    if (signerKeys.length > 0) {
      draft.issues.push({ path: ["networks", i, "signerKeys"], message: `the network signs with its PKCS#11 key (pkcs11): unset ${keysVar} / ${fileVar}` });
    }
  }
  if (signerKeys.length === 0 && pkcs11 === undefined && draft.purpose === "service" && !draft.issues.some((x) => formatPath(x.path) === `networks[${i}].signerKeys`)) {
    draft.issues.push({
      path: ["networks", i, "signerKeys"],
      message: `no signer key: set ${keysVar} (comma-separated 0x keys) or ${fileVar} (one key per line)`,
    });
  }
}

/**
 * A PAYMASTER_NETWORK_… variable that names no known network (or no known setting) is a typo: say so.
 * Variables for known networks that this file does not configure are ignored.
 */
function checkNetworkVariables(draft: Draft, declared: readonly NetworkDefinition[]): void {
  const known = new Map(knownNetworkNames(declared).map((n): [string, string] => [networkEnvName(n), n]));
  for (const variable of Object.keys(draft.env)) {
    if (!variable.startsWith(NETWORK_ENV_PREFIX)) continue;
    const rest = variable.slice(NETWORK_ENV_PREFIX.length);
    const setting = NETWORK_ENV_SETTINGS.find((s) => rest.endsWith(`_${s}`));
    const name = setting === undefined ? undefined : rest.slice(0, -(setting.length + 1));
    if (setting === undefined || name === undefined) {
      draft.issues.push({ path: [variable], message: `is not a known setting (…_${NETWORK_ENV_SETTINGS.join(", …_")})` });
    } else if (!known.has(name)) {
      draft.issues.push({ path: [variable], message: `names no known network (known: ${[...known.keys()].join(", ")})` });
    }
  }
}

/**
 * The PKCS#11 PIN of network `name` into `pkcs11.pin`: from PAYMASTER_NETWORK_<NAME>_PKCS11_PIN (its value) or
 * _PKCS11_PIN_FILE (the path: the signer reads it at each login); never from the file, where it is refused.
 */
function resolvePkcs11Pin(draft: Draft, pkcs11: Record<string, unknown>, name: string, at: (string | number)[]): void {
  const { env, purpose, issues, origins } = draft;
  const pinVar = networkEnvVar(name, "PKCS11_PIN");
  const fileVar = networkEnvVar(name, "PKCS11_PIN_FILE");
  if (Object.hasOwn(pkcs11, "pin")) {
    issues.push({ path: [...at, "pin"], message: `the PIN is a secret and is not accepted in the configuration file: set ${pinVar} or ${fileVar}`, origin: "" });
    delete pkcs11.pin;
  }
  const value = envValue(env, pinVar);
  const file = envValue(env, fileVar);
  if (value !== undefined && file !== undefined) {
    issues.push({ path: [...at, "pin"], message: `set ${pinVar} or ${fileVar}, not both` });
  } else if (value !== undefined) {
    pkcs11.pin = { env: pinVar, value };
    origins.set(formatPath([...at, "pin"]), pinVar);
  } else if (file !== undefined) {
    const resolved = path.resolve(file);
    origins.set(formatPath([...at, "pin"]), `${fileVar} (${resolved})`);
    try {
      readFileSync(resolved, "utf8");
      pkcs11.pin = { file: resolved };
    } catch (err) {
      issues.push({ path: [...at, "pin"], message: `cannot read the PIN file: ${(err as Error).message}` });
    }
  } else if (purpose === "service") {
    issues.push({ path: [...at, "pin"], message: `no PIN for the token: set ${pinVar} or ${fileVar} (a file holding the PIN)` });
  }
}

function describe(issue: ConfigIssue, origins: ReadonlyMap<string, string>, hints: ReadonlyMap<string, string>): string {
  const where = formatPath(issue.path);
  let origin = issue.origin;
  for (let n = issue.path.length; n > 0 && origin === undefined; n--) origin = origins.get(formatPath(issue.path.slice(0, n)));
  const hint = issue.message === "is required" ? hints.get(where) : undefined;
  return `${where}${origin === undefined || origin === "" ? "" : ` (from ${origin})`}: ${issue.message}${hint === undefined ? "" : `: ${hint}`}`;
}

// ---- redaction

export interface RedactedNetworkConfig {
  name: string;
  chainId: number;
  gasKind: NetworkConfig["gasKind"];
  /** Scheme and host only: query, userinfo and path often carry a provider key. */
  rpcUrl: string;
  fallbackRpcUrls?: string[];
  rpcTimeoutMs?: number;
  rpcDeadlineMs?: number;
  /** Redacted like rpcUrl. */
  bundlerUrl?: string;
  bundlerTimeoutMs?: number;
  depositAlertWei?: string;
  entryPoints: NetworkConfig["entryPoints"];
  /** The signers' addresses (never the keys). */
  signerAddresses: Address[];
  /** Where the PKCS#11 key is; the PIN only as where it comes from (never its value). */
  pkcs11?: Omit<Pkcs11Config, "pin"> & { pinFrom?: string };
  depositAddress?: Address;
  depositContract?: Address;
  tokens: readonly TokenConfig[];
  nativeUsdPrice: NetworkConfig["nativeUsdPrice"];
  /** Gas amounts as decimal strings (JSON has no bigint). */
  caps: { [K in keyof GasCaps]: GasCaps[K] extends bigint ? string : GasCaps[K] };
}

export interface RedactedServiceConfig extends Omit<ServiceConfig, "networks" | "rateLimit"> {
  rateLimit?: ServiceConfig["rateLimit"];
  networks: RedactedNetworkConfig[];
}

function redactPkcs11({ pin, ...where }: Pkcs11Config): NonNullable<RedactedNetworkConfig["pkcs11"]> {
  return { ...where, ...(pin === undefined ? {} : { pinFrom: "file" in pin ? pin.file : pin.env }) };
}

/**
 * A copy of `config` that is safe to log and to JSON.stringify: no signer key, no provider key, no database password.
 * `tokenSigners`: the address each PKCS#11 network signs as, read from its token by the running service (the
 * configuration holds no key to derive it from).
 */
export function redactConfig(config: ServiceConfig, tokenSigners: ReadonlyMap<string, Address> = new Map()): RedactedServiceConfig {
  return {
    host: config.host,
    port: config.port,
    databasePath: config.databasePath,
    // scheme, host and port only: never the user, password, database name or parameters
    ...(config.databaseUrl === undefined ? {} : { databaseUrl: redactUrl(config.databaseUrl) }),
    ...(config.database === undefined ? {} : { database: { ...config.database } }),
    bodyLimitBytes: config.bodyLimitBytes,
    signatureTtlSeconds: config.signatureTtlSeconds,
    logLevel: config.logLevel,
    ...(config.rateLimit === undefined ? {} : { rateLimit: config.rateLimit }),
    ...(config.trustedProxies === undefined ? {} : { trustedProxies: [...config.trustedProxies] }),
    ...(config.traceContext === undefined ? {} : { traceContext: config.traceContext }),
    ...(config.ipv6ClientPrefix === undefined ? {} : { ipv6ClientPrefix: config.ipv6ClientPrefix }),
    ...(config.applicationExpiryDays === undefined ? {} : { applicationExpiryDays: config.applicationExpiryDays }),
    ...(config.metrics === undefined ? {} : { metrics: { ...config.metrics } }),
    ...(config.watch === undefined ? {} : { watch: config.watch }),
    ...(config.leaderRetryMs === undefined ? {} : { leaderRetryMs: config.leaderRetryMs }),
    ...(config.alerts === undefined ? {} : { alerts: { ...config.alerts } }),
    ...(config.postOpChargeRisk === undefined ? {} : { postOpChargeRisk: { ...config.postOpChargeRisk } }),
    ...(config.reservations === undefined ? {} : { reservations: { ...config.reservations } }),
    ...(config.customNetworks === undefined ? {} : { customNetworks: config.customNetworks.map((n) => ({ ...n })) }),
    networks: config.networks.map(
      (n): RedactedNetworkConfig => ({
        name: n.name,
        chainId: n.chainId,
        gasKind: n.gasKind,
        rpcUrl: redactUrl(n.rpcUrl),
        ...(n.fallbackRpcUrls === undefined ? {} : { fallbackRpcUrls: n.fallbackRpcUrls.map(redactUrl) }),
        ...(n.rpcTimeoutMs === undefined ? {} : { rpcTimeoutMs: n.rpcTimeoutMs }),
        ...(n.rpcDeadlineMs === undefined ? {} : { rpcDeadlineMs: n.rpcDeadlineMs }),
        ...(n.bundlerUrl === undefined ? {} : { bundlerUrl: redactUrl(n.bundlerUrl) }),
        ...(n.bundlerTimeoutMs === undefined ? {} : { bundlerTimeoutMs: n.bundlerTimeoutMs }),
        ...(n.depositAlertWei === undefined ? {} : { depositAlertWei: n.depositAlertWei.toString() }),
        entryPoints: Object.fromEntries(
          Object.entries(n.entryPoints).map(([v, ep]) => [v, { ...(ep as EntryPointConfig) }]),
        ),
        signerAddresses: n.pkcs11 ? [tokenSigners.get(n.name)].filter((a): a is Address => a !== undefined) : n.signerKeys.map((key) => privateKeyToAddress(key)),
        ...(n.pkcs11 === undefined ? {} : { pkcs11: redactPkcs11(n.pkcs11) }),
        ...(n.depositAddress === undefined ? {} : { depositAddress: n.depositAddress }),
        ...(n.depositContract === undefined ? {} : { depositContract: n.depositContract }),
        tokens: n.tokens.map((t) => ({ ...t, priceSource: { ...t.priceSource } })),
        nativeUsdPrice: { ...n.nativeUsdPrice },
        caps: {
          maxVerificationGasLimit: n.caps.maxVerificationGasLimit.toString(),
          maxCallGasLimit: n.caps.maxCallGasLimit.toString(),
          maxPreVerificationGas: n.caps.maxPreVerificationGas.toString(),
          maxPaymasterVerificationGasLimit: n.caps.maxPaymasterVerificationGasLimit.toString(),
          maxPaymasterPostOpGasLimit: n.caps.maxPaymasterPostOpGasLimit.toString(),
          maxFeeMultiplierBps: n.caps.maxFeeMultiplierBps,
        },
      }),
    ),
  };
}
