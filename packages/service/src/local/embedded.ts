/**
 * The embedded default: with no configuration, a local chain in-process on 127.0.0.1 with everything
 * deployed, a fresh SQLite file, a demo project, API key, strategy and funded gas tank, and the service on
 * 127.0.0.1. Everything here is for local development; the keys are Hardhat's well-known dev keys.
 */
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { encodeFunctionData, getAddress, maxUint256, parseEther, type Abi } from "viem";
import { startLocalStack, writeManifest, type DeploymentManifest, type LocalStack } from "@paymaster/contracts";
import { SimpleAccountFactoryV06Artifact, SimpleAccountFactoryV07Artifact, SimpleAccountV06Artifact, TestTokenArtifact } from "@paymaster/contracts/artifacts";
import { STUB_SIGNATURE, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { localNetworkConfig } from "../config/local.ts";
import type { NetworkConfig, ServiceConfig } from "../config/types.ts";
import type { Store } from "../store/types.ts";
import { DEFAULT_BODY_LIMIT_BYTES } from "../config/schema.ts";
import { startService, type RunningService } from "../server.ts";
import { SPONSOR_VERSIONS } from "../wire/schemas.ts";
import type { AdminApiOptions } from "../adminApi/options.ts";
import { startLocalBundler, type LocalBundler } from "./bundler.ts";
import { freeLoopbackPort } from "./ports.ts";

export interface EmbeddedOptions {
  chainPort?: number;
  servicePort?: number;
  /** Folder for the SQLite file and the manifest (recreated at each start: the chain is new each time). */
  dataDir?: string;
  logLevel?: ServiceConfig["logLevel"];
  pollMs?: number;
  /** Run the settlement watcher (default true; tests drive their own with `watch: false`). */
  watch?: boolean;
  /** Where the OpenTelemetry settings are read (default process.env; see StartOptions.tracingEnv). */
  tracingEnv?: NodeJS.ProcessEnv;
  /** The local chain's rules: "l1" (default) or "op" (OP Stack: an L1 data fee, priced as gas kind op-stack). */
  chainType?: "l1" | "op";
  /** Serve /metrics, /health and /ready on this loopback port (0: any free port; absent: no metrics listener). */
  metricsPort?: number;
  /** Serve the admin API and the console on their own listener (absent: off). */
  admin?: AdminApiOptions;
  /** A PostgreSQL database instead of the SQLite file (tests run the same stack on both stores). */
  databaseUrl?: string;
  /** webhooks.allowedDestinations (default none: webhooks go to public addresses only, as everywhere). */
  webhookDestinations?: readonly string[];
  /**
   * A bundler for the ERC-7677 endpoint to forward the bundler methods to: `true` or `{port}` runs alto (bound to
   * 127.0.0.1) on the local chain, on a free port or on `port` (0: a free one); `{url}` uses a bundler running
   * elsewhere (with its timeout, default BUNDLER_TIMEOUT_MS). Absent: none.
   */
  bundler?: boolean | { port: number } | { url: string; timeoutMs?: number };
}

/** Dev accounts of the local bundler: #7 sends the bundles, #8 deploys its simulation contracts. */
export const BUNDLER_EXECUTOR_ACCOUNT_INDEX = 7;
export const BUNDLER_UTILITY_ACCOUNT_INDEX = 8;

/** The embedded watcher: 1 confirmation (automine puts each transaction in its own block), a 500 ms poll. */
export const EMBEDDED_CONFIRMATIONS = 1;
export const EMBEDDED_WATCHER_POLL_MS = 500;
/** Dev account #5 is the embedded stack's gas-tank deposit address. */
export const EMBEDDED_DEPOSIT_ACCOUNT_INDEX = 5;

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
  /** The demo project (the API key's): the one the demo accounts' gas tanks allow. */
  projectId: string;
  strategyCode: string;
  /** The spec dialect (v1 envelope). */
  endpoint: string;
  /**
   * The standard JSON-RPC 2.0 dialect: what ERC-7677 clients (viem's paymaster client) call; with a bundler, also
   * the bundler's methods (one URL for bundler and paymaster).
   */
  erc7677Endpoint: string;
  /** The local bundler (alto) itself, when it runs. */
  bundler?: LocalBundler;
  demoAccounts: DemoAccount[];
  close(): Promise<void>;
}

export const DEMO_STRATEGY_CODE = "DEMO";
/** What the demo accounts' gas tanks are credited with. */
export const DEMO_GAS_TANK_WEI = parseEther("1");

/** JSON-RPC to the local chain, in-process or over HTTP. */
export type ChainRequest = (method: string, params: unknown[]) => Promise<unknown>;

async function demoAccount(request: ChainRequest, manifest: DeploymentManifest, version: EntryPointVersion, owner: Address): Promise<DemoAccount> {
  const factory = manifest.entryPoints[version].simpleAccountFactory;
  const abi = (version === "v0.6" ? SimpleAccountFactoryV06Artifact.abi : SimpleAccountFactoryV07Artifact.abi) as Abi;
  const createAccount = encodeFunctionData({ abi, functionName: "createAccount", args: [owner, 0n] });
  const call = encodeFunctionData({ abi, functionName: "getAddress", args: [owner, 0n] });
  const result = (await request("eth_call", [{ to: factory, data: call }, "latest"])) as Hex;
  const sender = getAddress(`0x${result.slice(-40)}`);
  return { version, sender, initCode: `${factory}${createAccount.slice(2)}` as Hex };
}

export interface Demo {
  apiKey: string;
  projectId: string;
  strategyCode: string;
  demoAccounts: DemoAccount[];
}

/**
 * Seeds the demo: a project, an API key, the DEMO strategy, and for the counterfactual SimpleAccounts of
 * `demoOwner` a funded gas tank and 1000 of each test token (minted by the deployer `minter`, an unlocked
 * dev account).
 */
export async function seedDemo(store: Store, request: ChainRequest, manifest: DeploymentManifest, minter: Address, demoOwner: Address): Promise<Demo> {
  const project = await store.createProject("Demo project");
  const { plaintext: apiKey } = await store.createApiKey(project.id, "demo");
  await store.createStrategy({ projectId: project.id, code: DEMO_STRATEGY_CODE, name: "Demo: sponsor everything on local", networks: ["local"] });
  const demoAccounts = await Promise.all(SPONSOR_VERSIONS.map((v) => demoAccount(request, manifest, v, demoOwner)));
  for (const account of demoAccounts) {
    await store.creditGasTank("local", account.sender, DEMO_GAS_TANK_WEI, `demo:${account.version}`);
    // The demo accounts' tanks allow the demo project, as their owner would (User Sponsor mode denies by default).
    await store.setGasTankConsent({ network: "local", sender: account.sender, projectId: project.id, allowed: true, changedBy: "demo" });
    for (const token of manifest.tokens) {
      const mint = encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "mint", args: [account.sender, 1_000n * 10n ** BigInt(token.decimals)] });
      await request("eth_sendTransaction", [{ from: minter, to: token.address, data: mint }]);
    }
  }
  return { apiKey, projectId: project.id, strategyCode: DEMO_STRATEGY_CODE, demoAccounts };
}

/** The service configuration of the embedded default for a local chain at `rpcUrl`. */
export function embeddedConfig(network: NetworkConfig, dataDir: string, servicePort: number, logLevel: ServiceConfig["logLevel"]): ServiceConfig {
  return {
    host: "127.0.0.1",
    port: servicePort,
    databasePath: path.join(dataDir, "paymaster.sqlite"),
    bodyLimitBytes: DEFAULT_BODY_LIMIT_BYTES,
    signatureTtlSeconds: 300,
    // Local development and its tests fire bursts on one demo key.
    rateLimit: { perSecond: 1_000, burst: 2_000 },
    logLevel,
    networks: [network],
  };
}

export async function startEmbedded(options: EmbeddedOptions = {}): Promise<Embedded> {
  const dataDir = path.resolve(options.dataDir ?? ".data/embedded");
  await rm(dataDir, { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true });
  const chainType = options.chainType ?? "l1";
  const stack = await startLocalStack({ port: options.chainPort ?? 8545, chainType });
  let running: RunningService | undefined;
  let bundlerStart: Promise<LocalBundler> | undefined;
  try {
    const wanted = options.bundler;
    const external = typeof wanted === "object" && "url" in wanted ? wanted.url : undefined;
    const ownPort = wanted === true ? 0 : typeof wanted === "object" && "port" in wanted ? wanted.port : undefined;
    const bundlerPort = ownPort === undefined ? undefined : ownPort || (await freeLoopbackPort());
    const bundlerUrl = external ?? (bundlerPort === undefined ? undefined : `http://127.0.0.1:${bundlerPort}`);
    const manifestPath = path.join(dataDir, "deployment.local.json");
    await writeManifest(manifestPath, stack.manifest);
    const network: NetworkConfig = {
      ...localNetworkConfig({ manifest: stack.manifest, rpcUrl: stack.chain.url, signerKey: stack.signer.privateKey }),
      confirmations: EMBEDDED_CONFIRMATIONS,
      pollMs: EMBEDDED_WATCHER_POLL_MS,
      depositAddress: stack.chain.accounts[EMBEDDED_DEPOSIT_ACCOUNT_INDEX]!.address,
      gasKind: chainType === "op" ? "op-stack" : "l1",
      ...(bundlerUrl === undefined ? {} : { bundlerUrl }),
      ...(typeof wanted === "object" && "timeoutMs" in wanted && wanted.timeoutMs !== undefined ? { bundlerTimeoutMs: wanted.timeoutMs } : {}),
    };
    // The bundler starts while the service does (its URL is known: the port is chosen above).
    bundlerStart =
      bundlerPort === undefined
        ? undefined
        : startLocalBundler({
            rpcUrl: stack.chain.url,
            port: bundlerPort,
            entryPoints: SPONSOR_VERSIONS.map((version) => stack.manifest.entryPoints[version].entryPoint),
            executorKey: stack.chain.accounts[BUNDLER_EXECUTOR_ACCOUNT_INDEX]!.privateKey,
            utilityKey: stack.chain.accounts[BUNDLER_UTILITY_ACCOUNT_INDEX]!.privateKey,
          });
    bundlerStart?.catch(() => undefined); // awaited below; a failure meanwhile is not an unhandled rejection
    const config = {
      ...embeddedConfig(network, dataDir, options.servicePort ?? 3000, options.logLevel ?? "info"),
      ...(options.databaseUrl === undefined ? {} : { databaseUrl: options.databaseUrl }),
      ...(options.webhookDestinations === undefined ? {} : { webhooks: { allowedDestinations: options.webhookDestinations } }),
    };
    running = await startService(options.metricsPort === undefined ? config : { ...config, metrics: { host: "127.0.0.1", port: options.metricsPort } }, {
      pollMs: options.pollMs ?? 250,
      watch: options.watch ?? true,
      ...(options.admin ? { admin: options.admin } : {}),
      ...(options.tracingEnv ? { tracingEnv: options.tracingEnv } : {}),
    });
    const request: ChainRequest = (method, params) => stack.chain.provider.request({ method, params });
    const { apiKey, projectId, demoAccounts } = await seedDemo(running.service.store, request, stack.manifest, stack.owner.address, stack.chain.accounts[3]!.address);
    const bundler = await bundlerStart;
    const endpoint = `${running.url}/api/v1/paymaster/local?apiKey=${apiKey}`;
    const erc7677Endpoint = `${running.url}/rpc/v1/local?apiKey=${apiKey}`;
    const service = running;
    return {
      stack,
      running,
      manifestPath,
      apiKey,
      projectId,
      strategyCode: DEMO_STRATEGY_CODE,
      endpoint,
      erc7677Endpoint,
      ...(bundler ? { bundler } : {}),
      demoAccounts,
      async close() {
        await bundler?.stop();
        await service.close();
        await stack.chain.close();
      },
    };
  } catch (error) {
    await bundlerStart?.then((bundler) => bundler.stop(), () => undefined);
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
