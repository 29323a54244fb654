// The networks the service knows by name (the registry; a configuration may declare more, see
// NetworkDefinition) and the canonical EntryPoint addresses (deployed at the same address on every chain by
// deterministic deployment).
import type { Address, EntryPointVersion } from "./types.ts";

/**
 * How a chain charges for the data a transaction posts to L1, which decides how preVerificationGas is priced:
 * - "l1": no L1 data fee (Ethereum itself, and local chains);
 * - "op-stack": an L1 fee in wei deducted outside gas, quoted by the GasPriceOracle predeploy (OP, Base);
 * - "arbitrum": L1 cost charged as extra L2 gas, quoted by the NodeInterface precompile;
 * - "scroll": an L1 fee in wei quoted by Scroll's L1GasPriceOracle predeploy (same call as OP's).
 */
export type GasKind = "l1" | "op-stack" | "arbitrum" | "scroll";

/** Every gas kind (for config validation and help texts). */
export const GAS_KINDS: readonly GasKind[] = Object.freeze(["l1", "op-stack", "arbitrum", "scroll"]);

/** Network name -> chain id and gas kind. Frozen: the registry is configuration, never mutated at runtime. */
export const NETWORKS = Object.freeze({
  "ethereum-mainnet": { chainId: 1, gasKind: "l1" },
  "ethereum-sepolia": { chainId: 11155111, gasKind: "l1" },
  "optimism-mainnet": { chainId: 10, gasKind: "op-stack" },
  "optimism-sepolia": { chainId: 11155420, gasKind: "op-stack" },
  "arbitrum-one": { chainId: 42161, gasKind: "arbitrum" },
  "arbitrum-nova": { chainId: 42170, gasKind: "arbitrum" },
  "arbitrum-sepolia": { chainId: 421614, gasKind: "arbitrum" },
  "scroll-mainnet": { chainId: 534352, gasKind: "scroll" },
  "scroll-sepolia": { chainId: 534351, gasKind: "scroll" },
  "base-mainnet": { chainId: 8453, gasKind: "op-stack" },
  "base-sepolia": { chainId: 84532, gasKind: "op-stack" },
  /** Hardhat / anvil node started by the contracts package. */
  local: { chainId: 31337, gasKind: "l1" },
} as const satisfies Record<string, { chainId: number; gasKind: GasKind }>);

/** A supported network's name. */
export type NetworkName = keyof typeof NETWORKS;

/** Every supported network name (for config validation and help texts). */
export const NETWORK_NAMES = Object.freeze(Object.keys(NETWORKS) as NetworkName[]);

/** Whether `value` names a supported network (own keys only, so "toString" is not a network). */
export function isNetworkName(value: unknown): value is NetworkName {
  return typeof value === "string" && Object.hasOwn(NETWORKS, value);
}

/** Chain id of a supported network. */
export function chainIdOf(name: NetworkName): number {
  return NETWORKS[name].chainId;
}

/** How a supported network charges for L1 data (see GasKind). */
export function gasKindOf(name: NetworkName): GasKind {
  return NETWORKS[name].gasKind;
}

/**
 * A network as the service uses it: its name (in URL paths, metrics, the database), its chain id and how it
 * charges for L1 data. The registry's networks are definitions; a configuration may declare more (custom
 * networks: a chain the registry does not list).
 */
export interface NetworkDefinition {
  readonly name: string;
  readonly chainId: number;
  readonly gasKind: GasKind;
}

/**
 * What every network name looks like, the registry's and custom ones: a lowercase slug (a-z, 0-9, single
 * hyphens inside), so it goes into URL paths (/rpc/v1/<name>) and environment variable names
 * (PAYMASTER_NETWORK_<NAME>_…) unescaped, and two names never map to the same variable.
 */
export const NETWORK_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const NETWORK_NAME_MAX_LENGTH = 64;

/** Whether `value` has the shape of a network name (NETWORK_NAME_PATTERN, at most NETWORK_NAME_MAX_LENGTH characters). */
export function isNetworkSlug(value: unknown): value is string {
  return typeof value === "string" && value.length <= NETWORK_NAME_MAX_LENGTH && NETWORK_NAME_PATTERN.test(value);
}

/** The network named `name`: the registry's, else one of `custom` (declared by a configuration), else undefined. */
export function findNetwork(name: string, custom: readonly NetworkDefinition[] = []): NetworkDefinition | undefined {
  if (isNetworkName(name)) return { name, ...NETWORKS[name] };
  return custom.find((n) => n.name === name);
}

/** Every network name known with `custom` declared: the registry's, then the custom ones. */
export function knownNetworkNames(custom: readonly NetworkDefinition[] = []): string[] {
  return [...NETWORK_NAMES, ...custom.map((n) => n.name)];
}

/** Whether `value` is a gas kind. */
export function isGasKind(value: unknown): value is GasKind {
  return typeof value === "string" && (GAS_KINDS as readonly string[]).includes(value);
}

/** The network with `chainId`, or undefined when none is supported. */
export function networkOfChainId(chainId: number | bigint): NetworkName | undefined {
  return NETWORK_NAMES.find((name) => BigInt(NETWORKS[name].chainId) === BigInt(chainId));
}

/** Canonical EntryPoint v0.6 address. */
export const ENTRY_POINT_V06_ADDRESS: Address = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789";
/** Canonical EntryPoint v0.7 address. */
export const ENTRY_POINT_V07_ADDRESS: Address = "0x0000000071727De22E5E9d8BAf0edAc6f37da032";
/** Canonical EntryPoint v0.8 address (@account-abstraction/contracts@0.8.0 artifact, CREATE2 salt 0x0a59dbff…5e9). */
export const ENTRY_POINT_V08_ADDRESS: Address = "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108";

/** Canonical EntryPoint address per version. */
export const ENTRY_POINT_ADDRESSES: Readonly<Record<EntryPointVersion, Address>> = Object.freeze({
  "v0.6": ENTRY_POINT_V06_ADDRESS,
  "v0.7": ENTRY_POINT_V07_ADDRESS,
  "v0.8": ENTRY_POINT_V08_ADDRESS,
});

/** Every supported EntryPoint version. */
export const ENTRY_POINT_VERSIONS: readonly EntryPointVersion[] = Object.freeze(["v0.6", "v0.7", "v0.8"]);

/** Whether `value` is a supported EntryPoint version. */
export function isEntryPointVersion(value: unknown): value is EntryPointVersion {
  return value === "v0.6" || value === "v0.7" || value === "v0.8";
}
