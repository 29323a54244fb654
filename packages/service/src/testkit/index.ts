/**
 * The testkit (`@paymaster/service/testkit`): a whole local ERC-4337 stack for a project's own tests, as `prool`
 * gives for Pimlico's: a local chain with the EntryPoints (v0.6, v0.7, v0.8) and our paymasters deployed, a
 * bundler (alto, bound to 127.0.0.1), and the paymaster service with a funded demo key. Everything on free
 * loopback ports and in its own temporary folder, so parallel test workers never collide.
 *
 *   const stack = await startLocalStack();
 *   const account = await toLocalSimpleAccount({ client, owner, stack, version: "v0.7" }); // simpleAccount.ts
 *   const bundlerClient = createBundlerClient({ account, client, transport: http(stack.rpcUrl), paymaster: true,
 *     paymasterContext: { strategy_code: stack.strategyCode } });
 *   ...
 *   await stack.stop();
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Address, Hex } from "@paymaster/shared";
import type { DeploymentManifest } from "@paymaster/contracts/manifest";
import { startEmbedded, type DemoAccount } from "../local/embedded.ts";

export interface LocalStackOptions {
  /** Start the bundler (default true). Without it the ERC-7677 URL serves the paymaster methods only. */
  bundler?: boolean;
  /** The local chain's rules: "l1" (default) or "op" (OP Stack's L1 data fee). */
  chainType?: "l1" | "op";
  /** The service's log level (default "silent"). */
  logLevel?: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
}

export interface DevAccount {
  address: Address;
  privateKey: Hex;
}

export interface LocalStack {
  chain: { url: string; chainId: number };
  /**
   * One URL for bundler and paymaster (standard JSON-RPC 2.0): the ERC-7677 methods and, with the bundler, the
   * ERC-4337 bundler methods. `createBundlerClient({ transport: http(rpcUrl), paymaster: true })`.
   */
  rpcUrl: string;
  /** The bundler itself (alto), when it runs. */
  bundlerUrl?: string;
  /** The spec's v1 dialect (pm_sponsorUserOperation, pm_getTokenQuotes, …). */
  v1Url: string;
  /** The admin API (/admin/v1) and console (/console/), with a token made for this stack. */
  adminUrl: string;
  adminToken: string;
  /** The demo project's API key (in the URLs above) and its strategy, which sponsors everything on the local chain. */
  apiKey: string;
  strategyCode: string;
  /**
   * The demo project's id. User Sponsor mode draws only from gas tanks that allowed the key's project: the demo
   * accounts' tanks do; for another sender, POST {project: projectId} to `${adminUrl}/admin/v1/tanks/local/<sender>/allow`.
   */
  projectId: string;
  /** Funded dev accounts (10000 ETH each) nothing of the stack uses: free for the tests. */
  accounts: DevAccount[];
  /** Counterfactual SimpleAccounts (v0.6, v0.7, v0.8) with a funded gas tank and 1000 of each test token. */
  demoAccounts: DemoAccount[];
  /** Every deployed address (EntryPoints, paymasters, factories, Simple7702Account, test tokens). */
  manifest: DeploymentManifest;
  /** How long the start took (ms). */
  startMs: number;
  stop(): Promise<void>;
}

/** Dev accounts the stack itself uses: #0 deployer, #1-#2 signers, #3 demo owner, #5 deposit address, #7-#8 bundler. */
const RESERVED_ACCOUNTS = new Set([0, 1, 2, 3, 5, 7, 8]);

export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const started = performance.now();
  const dir = await mkdtemp(path.join(tmpdir(), "paymaster-stack-"));
  const adminToken = randomBytes(24).toString("hex");
  try {
    const embedded = await startEmbedded({
      chainPort: 0,
      servicePort: 0,
      dataDir: path.join(dir, "data"),
      logLevel: options.logLevel ?? "silent",
      ...(options.chainType ? { chainType: options.chainType } : {}),
      admin: { host: "127.0.0.1", port: 0, tokens: [{ name: "testkit", token: adminToken }] },
      ...(options.bundler === false ? {} : { bundler: true }),
    });
    const { chain, manifest } = embedded.stack;
    return {
      chain: { url: chain.url, chainId: chain.chainId },
      rpcUrl: embedded.erc7677Endpoint,
      ...(embedded.bundler ? { bundlerUrl: embedded.bundler.url } : {}),
      v1Url: embedded.endpoint,
      adminUrl: embedded.running.adminUrl!,
      adminToken,
      apiKey: embedded.apiKey,
      projectId: embedded.projectId,
      strategyCode: embedded.strategyCode,
      accounts: chain.accounts.filter((_, i) => !RESERVED_ACCOUNTS.has(i)).map(({ address, privateKey }) => ({ address, privateKey })),
      demoAccounts: embedded.demoAccounts,
      manifest,
      startMs: Math.round(performance.now() - started),
      async stop() {
        await embedded.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

// A viem SmartAccount for the stack's SimpleAccount on every EntryPoint version it serves (v0.6, v0.7, v0.8).
export { simpleAccountCallData, toLocalSimpleAccount, type LocalSimpleAccount, type LocalSimpleAccountOptions } from "./simpleAccount.ts";
