/**
 * What a network deployment leaves behind, per network, in one folder:
 * - `deployment.<network>.json`: the manifest (addresses, constructor arguments, code hashes, the transaction
 *   and block that created each contract, set-up targets);
 * - `service-network.<network>.json`: the `entryPoints` block of the service's network configuration;
 * - `verify/<network>/<Contract>.json`: explorer verification input per paymaster (compiler version, fully
 *   qualified name, constructor arguments, standard JSON input), for Etherscan, Blockscout or Sourcify.
 * A re-run keeps what the previous manifest knew about contracts it did not deploy this time.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { keccak256, type Provider } from "ethers";
import type { Address, EntryPointVersion } from "../manifest.ts";
import { packageRoot } from "../packageRoot.ts";
import { writeJsonAtomically } from "./writeJson.ts";
import type { DeployPlan, PaymasterKind, SentTx } from "./network.ts";

export interface NetworkPaymaster {
  label: string;
  version: EntryPointVersion;
  kind: PaymasterKind;
  entryPoint: Address;
  address: Address;
  /** Source name and contract name, e.g. contracts/v07/VerifyingPaymasterV07.sol:VerifyingPaymasterV07. */
  contract: string;
  constructorArgs: `0x${string}`;
  /** keccak256 of the runtime code on chain. */
  codeHash: `0x${string}`;
  /** The transaction that created it (null when an earlier run did and no manifest told us). */
  deployment: { txHash: `0x${string}`; blockNumber: number } | null;
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
}

/** The manifest after a run: the plan's contracts, with what this run (or the previous manifest) knows of their creation. */
export async function networkManifest(provider: Provider, plan: DeployPlan, sent: readonly SentTx[], previous?: NetworkManifest): Promise<NetworkManifest> {
  const paymasters: NetworkPaymaster[] = [];
  for (const target of plan.paymasters) {
    const code = await provider.getCode(target.address);
    if (code === "0x") throw new Error(`${target.label}: no code at ${target.address} after the deployment`);
    const created = sent.find((tx) => tx.step === "deploy-paymaster" && tx.label === target.label);
    const before = previous?.paymasters.find((p) => p.address === target.address)?.deployment ?? null;
    paymasters.push({
      label: target.label,
      version: target.version,
      kind: target.kind,
      entryPoint: target.entryPoint,
      address: target.address,
      contract: target.contract,
      constructorArgs: target.constructorArgs,
      codeHash: keccak256(code) as `0x${string}`,
      deployment: created ? { txHash: created.hash, blockNumber: created.blockNumber } : before,
    });
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
  };
}

/** The `entryPoints` block of the service's network configuration for this deployment. */
export function serviceNetworkBlock(manifest: NetworkManifest): { name: string; chainId: number; entryPoints: Record<string, { entryPoint: Address; verifyingPaymaster: Address; erc20Paymaster: Address }> } {
  const entryPoints: Record<string, { entryPoint: Address; verifyingPaymaster: Address; erc20Paymaster: Address }> = {};
  for (const version of new Set(manifest.paymasters.map((p) => p.version))) {
    const of = (kind: PaymasterKind) => manifest.paymasters.find((p) => p.version === version && p.kind === kind)!;
    entryPoints[version] = { entryPoint: of("verifying").entryPoint, verifyingPaymaster: of("verifying").address, erc20Paymaster: of("erc20").address };
  }
  return { name: manifest.network, chainId: manifest.chainId, entryPoints };
}

interface BuildInfo {
  solcLongVersion: string;
  input: unknown;
}

/** Explorer verification input of one deployed paymaster, from Hardhat's build info of its artifact. */
export async function verificationInput(paymaster: NetworkPaymaster, chainId: number) {
  const [source, name] = paymaster.contract.split(":") as [string, string];
  const root = packageRoot();
  const artifact = JSON.parse(await readFile(path.join(root, "artifacts", source, `${name}.json`), "utf8")) as { buildInfoId: string; inputSourceName: string };
  const buildInfo = JSON.parse(await readFile(path.join(root, "artifacts", "build-info", `${artifact.buildInfoId}.json`), "utf8")) as BuildInfo;
  return {
    chainId,
    address: paymaster.address,
    // The name as the compiler saw it (Hardhat 3 prefixes project sources with "project/").
    contractName: `${artifact.inputSourceName}:${name}`,
    compilerVersion: `v${buildInfo.solcLongVersion}`,
    constructorArguments: paymaster.constructorArgs.slice(2),
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
  for (const paymaster of manifest.paymasters) {
    await write(path.join(dir, "verify", manifest.network, `${paymaster.label}.json`), await verificationInput(paymaster, manifest.chainId));
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
