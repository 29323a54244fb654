/**
 * The embedded default: with no configuration, a local chain in-process on 127.0.0.1 with everything
 * deployed, a fresh SQLite file, a demo project, API key, strategy and funded gas tank, and the service on
 * 127.0.0.1. Everything here is for local development; the keys are Hardhat's well-known dev keys.
 */
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { encodeFunctionData, getAddress, maxUint256, parseEther, type Abi } from "viem";
import { startLocalStack, writeManifest, type LocalStack } from "@paymaster/contracts";
import { SimpleAccountFactoryV06Artifact, SimpleAccountFactoryV07Artifact, SimpleAccountV06Artifact, TestTokenArtifact } from "@paymaster/contracts/artifacts";
import { ENTRY_POINT_VERSIONS, STUB_SIGNATURE, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { localNetworkConfig } from "../config/local.ts";
import type { ServiceConfig } from "../config/types.ts";
import { startService, type RunningService } from "../server.ts";

export interface EmbeddedOptions {
  chainPort?: number;
  servicePort?: number;
  /** Folder for the SQLite file and the manifest (recreated at each start: the chain is new each time). */
  dataDir?: string;
  logLevel?: ServiceConfig["logLevel"];
  pollMs?: number;
}

export interface DemoAccount {
  version: EntryPointVersion;
  /** Counterfactual SimpleAccount of the demo owner (dev account #3), salt 0. */
  sender: Address;
  initCode: Hex;
}

export interface Embedded {
  stack: LocalStack;
  running: RunningService;
  manifestPath: string;
  apiKey: string;
  strategyCode: string;
  endpoint: string;
  demoAccounts: DemoAccount[];
  close(): Promise<void>;
}

export const DEMO_STRATEGY_CODE = "DEMO";
/** What the demo accounts' gas tanks are credited with. */
export const DEMO_GAS_TANK_WEI = parseEther("1");

async function demoAccount(stack: LocalStack, version: EntryPointVersion, owner: Address): Promise<DemoAccount> {
  const factory = stack.manifest.entryPoints[version].simpleAccountFactory;
  const abi = (version === "v0.6" ? SimpleAccountFactoryV06Artifact.abi : SimpleAccountFactoryV07Artifact.abi) as Abi;
  const createAccount = encodeFunctionData({ abi, functionName: "createAccount", args: [owner, 0n] });
  const call = encodeFunctionData({ abi, functionName: "getAddress", args: [owner, 0n] });
  const result = (await stack.chain.provider.request({ method: "eth_call", params: [{ to: factory, data: call }, "latest"] })) as Hex;
  const sender = getAddress(`0x${result.slice(-40)}`);
  return { version, sender, initCode: `${factory}${createAccount.slice(2)}` as Hex };
}

export async function startEmbedded(options: EmbeddedOptions = {}): Promise<Embedded> {
  const dataDir = path.resolve(options.dataDir ?? ".data/embedded");
  await rm(dataDir, { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true });
  const stack = await startLocalStack({ port: options.chainPort ?? 8545 });
  let running: RunningService | undefined;
  try {
    const manifestPath = path.join(dataDir, "deployment.local.json");
    await writeManifest(manifestPath, stack.manifest);
    const network = localNetworkConfig({ manifest: stack.manifest, rpcUrl: stack.chain.url, signerKey: stack.signer.privateKey });
    running = await startService(
      {
        host: "127.0.0.1",
        port: options.servicePort ?? 3000,
        databasePath: path.join(dataDir, "paymaster.sqlite"),
        bodyLimitBytes: 131_072,
        signatureTtlSeconds: 300,
        logLevel: options.logLevel ?? "info",
        networks: [network],
      },
      { pollMs: options.pollMs ?? 250 },
    );
    const store = running.service.store;
    const project = await store.createProject("Demo project");
    const { plaintext: apiKey } = await store.createApiKey(project.id, "demo");
    await store.createStrategy({ projectId: project.id, code: DEMO_STRATEGY_CODE, name: "Demo: sponsor everything on local", networks: ["local"] });

    // Demo accounts: counterfactual SimpleAccounts of dev account #3, with a funded gas tank and test tokens.
    const demoOwner = stack.chain.accounts[3]!.address;
    const demoAccounts = await Promise.all(ENTRY_POINT_VERSIONS.map((v) => demoAccount(stack, v, demoOwner)));
    for (const account of demoAccounts) {
      await store.creditGasTank("local", account.sender, DEMO_GAS_TANK_WEI, `demo:${account.version}`);
      for (const token of stack.manifest.tokens) {
        const mint = encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "mint", args: [account.sender, 1_000n * 10n ** BigInt(token.decimals)] });
        await stack.chain.provider.request({ method: "eth_sendTransaction", params: [{ from: stack.owner.address, to: token.address, data: mint }] });
      }
    }
    const endpoint = `${running.url}/api/v1/paymaster/local?apiKey=${apiKey}`;
    const service = running;
    return {
      stack,
      running,
      manifestPath,
      apiKey,
      strategyCode: DEMO_STRATEGY_CODE,
      endpoint,
      demoAccounts,
      async close() {
        await service.close();
        await stack.chain.close();
      },
    };
  } catch (error) {
    await running?.close();
    await stack.chain.close();
    throw error;
  }
}

/** A demo op for `account`: deploy the account and run `calls` (default: a no-op call to the owner). */
export function demoUserOp(account: DemoAccount, callData: Hex) {
  const base = { sender: account.sender, nonce: "0x0", callData, signature: STUB_SIGNATURE };
  return account.version === "v0.6"
    ? { ...base, initCode: account.initCode }
    : { ...base, factory: `0x${account.initCode.slice(2, 42)}`, factoryData: `0x${account.initCode.slice(42)}` };
}

/** callData of SimpleAccount.execute(to, 0, data) (same selector in v0.6 and v0.7). */
export function executeCallData(to: Address, data: Hex = "0x"): Hex {
  return encodeFunctionData({ abi: SimpleAccountV06Artifact.abi as Abi, functionName: "execute", args: [to, 0n, data] });
}

/** callData approving `spender` for the maximum amount of `token`, through execute. */
export function approveCallData(token: Address, spender: Address): Hex {
  const approve = encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "approve", args: [spender, maxUint256] });
  return executeCallData(token, approve);
}
