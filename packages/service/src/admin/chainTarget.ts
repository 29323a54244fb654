/**
 * What the on-chain operator commands (deploy, status, deposit, withdraw, stake, unstake, signer) act on: one
 * network (of the registry, or a custom one the configuration declares), its RPC (from the configuration or
 * PAYMASTER_NETWORK_<NAME>_RPC_URL, as the service reads it), its paymasters and gas-tank deposit contract (from
 * the configuration, else from the deployment manifest), and keys taken only from the
 * environment or key files, never from the command line:
 * - PAYMASTER_DEPLOYER_KEY / PAYMASTER_DEPLOYER_KEY_FILE: the key that deploys and funds;
 * - PAYMASTER_OWNER_KEY / PAYMASTER_OWNER_KEY_FILE: the paymasters' owner (withdraw, stake, signers);
 *   default: the deployer key.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { FetchRequest, JsonRpcProvider, Wallet, getAddress, isAddress, type JsonRpcApiProvider } from "ethers";
import { privateKeyToAddress } from "viem/accounts";
import { findNetwork, knownNetworkNames, type Address, type EntryPointVersion } from "@paymaster/shared";
import { paymasterLabel, readNetworkManifest, type NetworkManifest } from "@paymaster/contracts/deploy";
import { loadConfig, networkEnvVar, redactUrl } from "../config/load.ts";
import type { NetworkConfig, ServiceConfig } from "../config/types.ts";
import { configuredSignerAddresses } from "../signer/open.ts";
import { AdminError } from "./context.ts";
import { DEFAULT_DEPLOYMENTS_DIR } from "./deployments.ts";

export interface PaymasterRef {
  label: string;
  version: EntryPointVersion;
  kind: "verifying" | "erc20";
  entryPoint: Address;
  address: Address;
}

export interface ChainTarget {
  network: string;
  chainId: number;
  provider: JsonRpcApiProvider;
  /** The paymasters known for the network (configuration first, else the manifest); empty before a deployment. */
  paymasters: PaymasterRef[];
  /** The GasTankDeposit contract (the configuration's depositContract, else the manifest's), if any. */
  gasTankDeposit?: Address;
  /** The service's signer addresses for the network (from its signer keys, when the environment has them). */
  serviceSigners: Address[];
  /** The network's configuration, when the configuration file names it. */
  config?: NetworkConfig;
  manifest?: NetworkManifest;
  close(): void;
}

/** The paymasters of a network's entryPoints block (the service configuration's, or a deployment manifest's). */
export function paymastersOf(entryPoints: Partial<Record<EntryPointVersion, { entryPoint: Address; verifyingPaymaster: Address; erc20Paymaster: Address }>>): PaymasterRef[] {
  return (Object.entries(entryPoints) as [EntryPointVersion, { entryPoint: Address; verifyingPaymaster: Address; erc20Paymaster: Address }][]).flatMap(([version, ep]) => [
    { label: paymasterLabel("verifying", version), version, kind: "verifying" as const, entryPoint: ep.entryPoint, address: ep.verifyingPaymaster },
    { label: paymasterLabel("erc20", version), version, kind: "erc20" as const, entryPoint: ep.entryPoint, address: ep.erc20Paymaster },
  ]);
}


export async function chainTarget(
  options: { network: string; config?: string; deployments?: string },
  env: NodeJS.ProcessEnv,
): Promise<ChainTarget> {
  const service: ServiceConfig | undefined = await loadConfig({ argv: options.config === undefined ? [] : ["--config", options.config], env, purpose: "admin" });
  const definition = findNetwork(options.network, service?.customNetworks);
  if (definition === undefined) {
    throw new AdminError(
      "INVALID_INPUT",
      `unknown network "${options.network}": one of ${knownNetworkNames(service?.customNetworks).join(", ")} (a chain the registry does not list is declared in the configuration's customNetworks)`,
    );
  }
  const name = definition.name;
  const config = service?.networks.find((n) => n.name === name);
  const rpcVar = networkEnvVar(name, "RPC_URL");
  const rpcUrl = config?.rpcUrl ?? env[rpcVar];
  if (rpcUrl === undefined || rpcUrl === "") {
    throw new AdminError("INVALID_INPUT", `no RPC URL for ${name}: configure the network in the configuration file or set ${rpcVar}`);
  }
  const chainId = config?.chainId ?? definition.chainId;
  const manifest = await readNetworkManifest(path.join(options.deployments ?? DEFAULT_DEPLOYMENTS_DIR, `deployment.${name}.json`));
  const paymasters: PaymasterRef[] = [];
  if (config) {
    paymasters.push(...paymastersOf(config.entryPoints));
  } else if (manifest) {
    for (const p of manifest.paymasters) paymasters.push({ label: p.label, version: p.version, kind: p.kind, entryPoint: p.entryPoint, address: p.address });
  }
  const gasTankDeposit = config?.depositContract ?? manifest?.gasTankDeposit?.address;
  const provider = new JsonRpcProvider(rpcUrl, chainId, { staticNetwork: true, cacheTimeout: -1 });
  try {
    const actual = Number(await provider.send("eth_chainId", []));
    if (actual !== chainId) throw new AdminError("INVALID_INPUT", `the RPC of ${name} serves chain ${actual}, not ${chainId}`);
  } catch (error) {
    provider.destroy();
    if (error instanceof AdminError) throw error;
    // The URL may carry an API key: the message names it redacted only.
    throw new AdminError("INVALID_INPUT", `the RPC of ${name} (${redactUrl(rpcUrl)}) does not answer (${oneLine(error).split(rpcUrl).join(redactUrl(rpcUrl))})`);
  }
  return {
    network: name,
    chainId,
    provider,
    paymasters,
    ...(gasTankDeposit === undefined ? {} : { gasTankDeposit }),
    serviceSigners: config ? configuredSignerAddresses(config) : envSignerKeys(env, name).map((key) => privateKeyToAddress(key as `0x${string}`) as Address),
    ...(config ? { config } : {}),
    ...(manifest ? { manifest } : {}),
    close: () => provider.destroy(),
  };
}

/** How long a read through primaryProvider may wait for the RPC (a service context without a chain client of its own). */
export const SERVICE_TARGET_TIMEOUT_MS = 10_000;

/**
 * The chain target of a network the running service serves (the admin API's network status): its configured
 * RPC (the primary), paymasters and signer keys, as `chainTarget` reads them from a configuration file. The
 * service's pre-flight has already checked the chain id.
 */
export function serviceChainTarget(
  config: NetworkConfig,
  provider: JsonRpcApiProvider = primaryProvider(config),
  /** The signers' addresses when the caller knows them (a running token signer's: no second look into the token). */
  signers: Address[] = configuredSignerAddresses(config),
): ChainTarget {
  return {
    network: config.name,
    chainId: config.chainId,
    provider,
    paymasters: paymastersOf(config.entryPoints),
    serviceSigners: signers,
    config,
    close: () => provider.destroy(),
  };
}

/** A provider of its own on the network's primary RPC URL (for when no chain client of the service is at hand). */
function primaryProvider(config: NetworkConfig): JsonRpcProvider {
  const request = new FetchRequest(config.rpcUrl);
  request.timeout = SERVICE_TARGET_TIMEOUT_MS;
  return new JsonRpcProvider(request, config.chainId, { staticNetwork: true, cacheTimeout: -1 });
}

/** Without a configuration: the network's signer keys from PAYMASTER_NETWORK_<NAME>_SIGNER_KEYS, as the service reads them. */
function envSignerKeys(env: NodeJS.ProcessEnv, name: string): string[] {
  const variable = networkEnvVar(name, "SIGNER_KEYS");
  const keys = (env[variable] ?? "").split(",").map((k) => k.trim()).filter(Boolean);
  for (const key of keys) if (!/^0x[0-9a-fA-F]{64}$/.test(key)) throw new AdminError("INVALID_INPUT", `${variable}: not a comma-separated list of 32-byte hex private keys`);
  return keys;
}

/** A key from `<NAME>` or the file named by `<NAME>_FILE` (never from argv), or undefined when neither is set. */
export function keyFromEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const direct = env[name];
  const file = env[`${name}_FILE`];
  if (direct && file) throw new AdminError("INVALID_INPUT", `set ${name} or ${name}_FILE, not both`);
  let key = direct;
  if (file) {
    try {
      key = readFileSync(file, "utf8").trim();
    } catch (error) {
      throw new AdminError("INVALID_INPUT", `${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? "error"})`);
    }
  }
  if (key === undefined || key === "") return undefined;
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) throw new AdminError("INVALID_INPUT", `${name}${file ? "_FILE" : ""}: not a 32-byte hex private key`);
  return key;
}

/** The deploying key as a signer on the target's provider. */
export function deployerWallet(target: ChainTarget, env: NodeJS.ProcessEnv): Wallet {
  const key = keyFromEnv(env, "PAYMASTER_DEPLOYER_KEY");
  if (key === undefined) throw new AdminError("INVALID_INPUT", "no deploying key: set PAYMASTER_DEPLOYER_KEY or PAYMASTER_DEPLOYER_KEY_FILE");
  return new Wallet(key, target.provider);
}

/** The owner's key (PAYMASTER_OWNER_KEY[_FILE], else the deploying key) as a signer. */
export function ownerWallet(target: ChainTarget, env: NodeJS.ProcessEnv): Wallet {
  const key = keyFromEnv(env, "PAYMASTER_OWNER_KEY") ?? keyFromEnv(env, "PAYMASTER_DEPLOYER_KEY");
  if (key === undefined) throw new AdminError("INVALID_INPUT", "no owner key: set PAYMASTER_OWNER_KEY or PAYMASTER_OWNER_KEY_FILE (or the deployer's)");
  return new Wallet(key, target.provider);
}

/** An address argument, checksummed, or an INVALID_INPUT naming the option. */
export function addressOption(value: string, option: string): Address {
  if (!isAddress(value)) throw new AdminError("INVALID_INPUT", `${option}: "${value}" is not an address`);
  return getAddress(value) as Address;
}

/** Paymasters of the target, filtered by --paymaster (an address or a label) when given. */
export function selectPaymasters(target: ChainTarget, which?: string): PaymasterRef[] {
  if (target.paymasters.length === 0) {
    throw new AdminError("NOT_FOUND", `no paymasters known for ${target.network}: configure its entryPoints or deploy first (paymaster deploy)`);
  }
  if (which === undefined) return target.paymasters;
  const found = target.paymasters.filter((p) => p.label === which || p.address.toLowerCase() === which.toLowerCase());
  if (found.length === 0) throw new AdminError("NOT_FOUND", `--paymaster ${which}: not one of ${target.paymasters.map((p) => p.label).join(", ")}`);
  return found;
}

export function oneLine(error: unknown): string {
  const text = error instanceof Error ? ((error as { shortMessage?: string }).shortMessage ?? error.message) : String(error);
  return text.split("\n")[0]!.slice(0, 300);
}
