/**
 * `paymaster deploy`: the paymasters of a network deployed with @paymaster/contracts' deployToNetwork (one
 * address on every chain, set up and handed over in the same transaction, resumable; see
 * packages/contracts/docs/deploy.md), from the service's own configuration: the signers are the addresses of
 * the network's signer keys (when the environment has them) plus any given, the tokens those configured for
 * the network.
 */
import { deployToNetwork, type DeployPlan, type NetworkDeployConfig } from "@paymaster/contracts/deploy";
import { ENTRY_POINT_VERSIONS, type Address, type EntryPointVersion } from "@paymaster/shared";
import type { Wallet } from "ethers";
import { AdminError } from "./context.ts";
import { oneLine, type ChainTarget } from "./chainTarget.ts";

export interface DeployOptions {
  versions?: readonly EntryPointVersion[];
  owner?: Address;
  treasury: Address;
  /** Signers besides the service's own signer keys. */
  signers?: readonly Address[];
  depositWei: bigint;
  stakeWei: bigint;
  unstakeDelaySec?: number;
  dryRun: boolean;
  outDir: string;
  log?: (line: string) => void;
}

export interface DeployResult {
  plan: DeployPlan;
  sent: { step: string; label: string; hash: string; blockNumber: number; gasUsed: bigint }[];
  written: string[];
}

export async function deployPaymasters(target: ChainTarget, deployer: Wallet, options: DeployOptions): Promise<DeployResult> {
  const signers = [...new Set([...target.serviceSigners, ...(options.signers ?? [])])];
  if (signers.length === 0) {
    throw new AdminError("INVALID_INPUT", `no signer: set the network's signer keys (as for the service) or give --signer <address>`);
  }
  const config: NetworkDeployConfig = {
    network: target.network,
    versions: options.versions ?? (target.config ? (Object.keys(target.config.entryPoints) as EntryPointVersion[]) : ENTRY_POINT_VERSIONS),
    owner: options.owner ?? (deployer.address as Address),
    signers,
    treasury: options.treasury,
    tokens: (target.config?.tokens ?? []).map((t) => t.address),
    depositTarget: options.depositWei,
    stakeAmount: options.stakeWei,
    ...(options.unstakeDelaySec === undefined ? {} : { unstakeDelaySec: options.unstakeDelaySec }),
  };
  try {
    const result = await deployToNetwork(deployer, config, { dryRun: options.dryRun, outDir: options.outDir, ...(options.log ? { log: options.log } : {}) });
    return { plan: result.plan, sent: result.sent, written: result.written };
  } catch (error) {
    if (error instanceof AdminError) throw error;
    // Planning refuses a bad field with "<field>: ..." (a usage mistake); the rest (funds, the chain, a failed
    // transaction) is a failure. Both name what is wrong.
    const message = oneLine(error);
    throw new AdminError(/^[a-zA-Z]+(\[\d+\])?: /.test(message) ? "INVALID_INPUT" : "CONFLICT", message);
  }
}
