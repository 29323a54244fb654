/**
 * What a network deployment leaves behind, per network, in one folder:
 * - `deployment.<network>.json`: the manifest (addresses, constructor arguments, code hashes, the transaction
 *   and block that created each contract, set-up targets);
 * - `service-network.<network>.json`: the service's network entry (name, chainId, `entryPoints`, `depositContract`);
 * - `verify/<network>/<Contract>.json`: explorer verification input per contract (compiler version, fully
 *   qualified name, constructor arguments, standard JSON input), for Etherscan, Blockscout or Sourcify.
 * A re-run keeps what the previous manifest knew about contracts it did not deploy this time.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { keccak256, type Provider } from "ethers";
import type { Address, EntryPointVersion } from "../manifest.ts";
import { packageRoot } from "../packageRoot.ts";
import { writeJsonAtomically } from "./writeJson.ts";
import type { ContractTarget, DeployPlan, PaymasterKind, SentTx } from "./network.ts";

/** A contract the deployment created (or found), as the manifest records it. */
export interface NetworkContract {
  label: string;
  address: Address;
  /** Source name and contract name, e.g. contracts/v07/VerifyingPaymasterV07.sol:VerifyingPaymasterV07. */
  contract: string;
  constructorArgs: `0x${string}`;
  /** keccak256 of the runtime code on chain. */
  codeHash: `0x${string}`;
  /** The transaction that created it (null when an earlier run did and no manifest told us). */
  deployment: { txHash: `0x${string}`; blockNumber: number } | null;
}

export interface NetworkPaymaster extends NetworkContract {
  version: EntryPointVersion;
  kind: PaymasterKind;
  entryPoint: Address;
}

export interface NetworkManifest {
  schema: 1;
  kind: "network";
  network: string;
  chainId: number;
  deployedAt: string;
  deployer: Address;
  owner: Address;
  signers: Address[];
  treasury: Address;
  tokens: Address[];
  /** null: the contracts' defaults. */
  postOpGas: string | null;
  minPostOpGasLimit: string | null;
  depositTargetWei: string;
  stake: { amountWei: string; unstakeDelaySec: number };
  salt: `0x${string}`;
  paymasterDeployer: Address;
  paymasters: NetworkPaymaster[];
  /** Where gas-tank deposits are paid (absent in manifests written before it was deployed with the paymasters). */
  gasTankDeposit?: NetworkContract;
}

/** What the manifest records of one contract of the plan, with what this run (or the previous manifest) knows of its creation. */
async function recorded(provider: Provider, target: ContractTarget, sent: readonly SentTx[], previous?: NetworkManifest): Promise<NetworkContract> {
  const code = await provider.getCode(target.address);
  if (code === "0x") throw new Error(`${target.label}: no code at ${target.address} after the deployment`);
  const created = sent.find((tx) => (tx.step === "deploy-paymaster" || tx.step === "deploy-gas-tank-deposit") && tx.label === target.label);
  const known = [...(previous?.paymasters ?? []), ...(previous?.gasTankDeposit ? [previous.gasTankDeposit] : [])];
  const before = known.find((c) => c.address === target.address)?.deployment ?? null;
  return {
    label: target.label,
    address: target.address,
    contract: target.contract,
    constructorArgs: target.constructorArgs,
    codeHash: keccak256(code) as `0x${string}`,
    deployment: created ? { txHash: created.hash, blockNumber: created.blockNumber } : before,
  };
}

/** The manifest after a run: the plan's contracts, with what this run (or the previous manifest) knows of their creation. */
export async function networkManifest(provider: Provider, plan: DeployPlan, sent: readonly SentTx[], previous?: NetworkManifest): Promise<NetworkManifest> {
  const paymasters: NetworkPaymaster[] = [];
  for (const target of plan.paymasters) {
    paymasters.push({ ...(await recorded(provider, target, sent, previous)), version: target.version, kind: target.kind, entryPoint: target.entryPoint });
  }
  const { config } = plan;
  return {
    schema: 1,
    kind: "network",
    network: plan.network,
    chainId: plan.chainId,
    deployedAt: new Date().toISOString(),
    deployer: plan.deployer,
    owner: config.owner,
    signers: [...config.signers],
    treasury: config.treasury,
    tokens: [...config.tokens],
    postOpGas: config.postOpGas?.toString() ?? null,
    minPostOpGasLimit: config.minPostOpGasLimit?.toString() ?? null,
    depositTargetWei: config.depositTarget.toString(),
    stake: { amountWei: config.stakeAmount.toString(), unstakeDelaySec: config.unstakeDelaySec },
    salt: config.salt,
    paymasterDeployer: plan.paymasterDeployer.address,
    paymasters,
    gasTankDeposit: await recorded(provider, plan.gasTankDeposit, sent, previous),
  };
}

/** The service's network configuration for this deployment: name, chain id, `entryPoints` and `depositContract`. */
export function serviceNetworkBlock(manifest: NetworkManifest): {
  name: string;
  chainId: number;
  entryPoints: Record<string, { entryPoint: Address; verifyingPaymaster: Address; erc20Paymaster: Address }>;
  depositContract?: Address;
} {
  const entryPoints: Record<string, { entryPoint: Address; verifyingPaymaster: Address; erc20Paymaster: Address }> = {};
  for (const version of new Set(manifest.paymasters.map((p) => p.version))) {
    const of = (kind: PaymasterKind) => manifest.paymasters.find((p) => p.version === version && p.kind === kind)!;
    entryPoints[version] = { entryPoint: of("verifying").entryPoint, verifyingPaymaster: of("verifying").address, erc20Paymaster: of("erc20").address };
  }
  return { name: manifest.network, chainId: manifest.chainId, entryPoints, ...(manifest.gasTankDeposit ? { depositContract: manifest.gasTankDeposit.address } : {}) };
}

interface BuildInfo {
  solcLongVersion: string;
  input: unknown;
}

/** Explorer verification input of one deployed contract, from Hardhat's build info of its artifact. */
export async function verificationInput(deployed: NetworkContract, chainId: number) {
  const [source, name] = deployed.contract.split(":") as [string, string];
  const root = packageRoot();
  const artifact = JSON.parse(await readFile(path.join(root, "artifacts", source, `${name}.json`), "utf8")) as { buildInfoId: string; inputSourceName: string };
  const buildInfo = JSON.parse(await readFile(path.join(root, "artifacts", "build-info", `${artifact.buildInfoId}.json`), "utf8")) as BuildInfo;
  return {
    chainId,
    address: deployed.address,
    // The name as the compiler saw it (Hardhat 3 prefixes project sources with "project/").
    contractName: `${artifact.inputSourceName}:${name}`,
    compilerVersion: `v${buildInfo.solcLongVersion}`,
    constructorArguments: deployed.constructorArgs.slice(2),
    standardJsonInput: buildInfo.input,
  };
}

/** Writes the manifest, the service block and the verification inputs under `dir`; returns the paths written. */
export async function writeNetworkOutputs(dir: string, manifest: NetworkManifest): Promise<string[]> {
  const written: string[] = [];
  const write = async (file: string, value: unknown) => {
    await writeJsonAtomically(file, value);
    written.push(file);
  };
  await write(path.join(dir, `deployment.${manifest.network}.json`), manifest);
  await write(path.join(dir, `service-network.${manifest.network}.json`), serviceNetworkBlock(manifest));
  for (const deployed of [...manifest.paymasters, ...(manifest.gasTankDeposit ? [manifest.gasTankDeposit] : [])]) {
    await write(path.join(dir, "verify", manifest.network, `${deployed.label}.json`), await verificationInput(deployed, manifest.chainId));
  }
  return written;
}

/** Reads a manifest written by writeNetworkOutputs, or undefined when there is none. */
export async function readNetworkManifest(file: string): Promise<NetworkManifest | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const parsed = JSON.parse(text) as NetworkManifest;
  if (parsed.schema !== 1 || parsed.kind !== "network" || !Array.isArray(parsed.paymasters)) throw new Error(`${file} is not a network deployment manifest`);
  return parsed;
}
