/**
 * The whole local stack in one call: the in-process chain on loopback and everything deployed on it, with
 * the well-known dev accounts in fixed roles (#0 deployer and owner, #1 paymaster signer, #2 treasury).
 * Used by `pnpm start` here and by the service's embedded default.
 */
import { BrowserProvider } from "ethers";
import { deployLocalStack } from "./deploy/index.ts";
import type { DeploymentManifest } from "./manifest.ts";
import { startLocalChain, type LocalAccount, type LocalChain, type LocalChainOptions } from "./localChain.ts";

export interface LocalStack {
  chain: LocalChain;
  manifest: DeploymentManifest;
  owner: LocalAccount;
  signer: LocalAccount;
  treasury: LocalAccount;
  /** Milliseconds the deployment took. */
  deployMs: number;
}

export async function startLocalStack(options: LocalChainOptions = {}): Promise<LocalStack> {
  const chain = await startLocalChain(options);
  try {
    const [owner, signer, treasury] = chain.accounts;
    if (owner === undefined || signer === undefined || treasury === undefined) {
      throw new Error("the local chain has fewer than 3 dev accounts");
    }
    const provider = new BrowserProvider(chain.provider, chain.chainId, { cacheTimeout: -1 });
    const started = performance.now();
    const manifest = await deployLocalStack(await provider.getSigner(owner.address), {
      signers: [signer.address],
      treasury: treasury.address,
    });
    return { chain, manifest, owner, signer, treasury, deployMs: performance.now() - started };
  } catch (error) {
    await chain.close();
    throw error;
  }
}
