/**
 * One deployment run against a network: plan from the chain, then (unless a dry run) send the plan, and
 * write the manifest, the service's network block and the verification inputs.
 */
import path from "node:path";
import { getAddress, type Signer } from "ethers";
import { executeNetworkDeploy, planNetworkDeploy, type DeployPlan, type NetworkDeployConfig, type SentTx } from "./network.ts";
import { networkManifest, readNetworkManifest, writeNetworkOutputs, type NetworkManifest } from "./networkOutputs.ts";

export interface DeployToNetworkOptions {
  /** Plan only: send nothing, write nothing. */
  dryRun?: boolean;
  /** Folder for the manifest, the service block and verify/ (written unless dryRun). */
  outDir: string;
  log?: (line: string) => void;
}

export interface DeployToNetworkResult {
  plan: DeployPlan;
  sent: SentTx[];
  /** Undefined in a dry run. */
  manifest?: NetworkManifest;
  written: string[];
}

export async function deployToNetwork(signer: Signer, config: NetworkDeployConfig, options: DeployToNetworkOptions): Promise<DeployToNetworkResult> {
  const provider = signer.provider;
  if (provider === null) throw new Error("deployToNetwork: the signer has no provider");
  const deployer = getAddress(await signer.getAddress()) as `0x${string}`;
  const plan = await planNetworkDeploy(provider, deployer, config);
  if (options.dryRun === true) return { plan, sent: [], written: [] };
  const sent = await executeNetworkDeploy(signer, plan, options.log);
  const previous = await readNetworkManifest(path.join(options.outDir, `deployment.${plan.network}.json`));
  const manifest = await networkManifest(provider, plan, sent, previous?.chainId === plan.chainId ? previous : undefined);
  const written = await writeNetworkOutputs(options.outDir, manifest);
  return { plan, sent, manifest, written };
}
