// A chain the registry does not list, run the way an operator runs it: a chain process of its own with chain id
// 80002, declared in the configuration as polygon-amoy (customNetworks), where only the canonical EntryPoints
// exist beforehand. The operator deploys to it through the configuration (dry run first), checks the status,
// writes the deployment's network block into the configuration and starts the service from it; the service
// sponsors an op through polygon-amoy's endpoints, the op lands (handleOps), `strategy usage` shows it settled.
// The operator's mistakes about such a network are each refused with a message naming them. One chain process
// serves the whole file.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { BrowserProvider, JsonRpcProvider } from "ethers";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { deployLocalStack, type DeploymentManifest } from "@paymaster/contracts";
import { ENTRY_POINT_V07_ADDRESS } from "@paymaster/shared";
import { executeCallData } from "../src/local/embedded.ts";
import { runCliInProcess, type CliResult } from "./helpers/cli.ts";
import { stopChild } from "./helpers/alto.ts";
import { spawnService, startChainProcess, type ServiceProcess } from "./helpers/serviceProcess.ts";
import { call, handleOps, newWallet, opFromResponse, signAsOwner, wireOp, type Embedded } from "./helpers/stack.ts";

const NETWORK = "polygon-amoy";
const CHAIN_ID = 80002;
/** Hardhat's well-known dev key #0 deploys; #19 put the EntryPoints there beforehand. */
const DEPLOYER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const TREASURY = "0x000000000000000000000000000000000000dEaD";

describe("a custom network declared in the configuration (polygon-amoy, chain 80002, a chain process of its own)", function () {
  this.timeout(180_000);
  let chain: { child: ChildProcess; url: string };
  /** What the chain has before we come (its own paymasters play no part): the EntryPoints and a v0.7 account factory. */
  let existing: DeploymentManifest;
  let service: ServiceProcess | undefined;
  const dir = mkdtempSync(path.join(tmpdir(), "paymaster-custom-network-"));
  const deployments = path.join(dir, "deployments");
  const configFile = path.join(dir, "paymaster.json");
  const signerKey = generatePrivateKey();
  const declared = { name: NETWORK, chainId: CHAIN_ID, gasKind: "l1" };
  let env: Record<string, string>;
  /** The configuration: polygon-amoy declared, the database, and the networks given. */
  const writeConfig = (networks: unknown[], customNetworks: unknown[] = [declared]) =>
    writeFileSync(configFile, JSON.stringify({ host: "127.0.0.1", port: 0, databasePath: path.join(dir, "paymaster.sqlite"), metrics: { host: "127.0.0.1", port: 0 }, customNetworks, networks }));
  const cli = (...args: string[]): Promise<CliResult> => runCliInProcess(["--config", configFile, ...args], env);
  const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const response = await fetch(chain.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
    const body = (await response.json()) as { result?: T; error?: { message: string; data?: unknown } };
    if (body.error) throw Object.assign(new Error(body.error.message), { data: body.error.data });
    return body.result as T;
  };
  const deploy = ["deploy", "--network", NETWORK, "--treasury", TREASURY, "--stake", "0.1eth", "--deposit", "1eth", "--versions", "v0.7", "--deployments", deployments];

  before(async () => {
    chain = await startChainProcess(CHAIN_ID);
    const provider = new JsonRpcProvider(chain.url, CHAIN_ID, { staticNetwork: true, cacheTimeout: -1 });
    const [other] = (await provider.send("eth_accounts", [])).slice(19) as string[];
    const signer = await new BrowserProvider({ request: ({ method, params }) => provider.send(method, (params as unknown[]) ?? []) }, CHAIN_ID).getSigner(other!);
    existing = await deployLocalStack(signer, { signers: [other!], treasury: other!, allowNonLocalChain: true });
    provider.destroy();
    env = {
      PAYMASTER_NETWORK_POLYGON_AMOY_RPC_URL: chain.url,
      PAYMASTER_NETWORK_POLYGON_AMOY_SIGNER_KEYS: signerKey,
      PAYMASTER_DEPLOYER_KEY: DEPLOYER_KEY,
    };
    // Declared, not configured yet: the operator deploys first, then configures the network from the deployment.
    writeConfig([]);
  });
  after(async () => {
    await service?.kill("SIGTERM");
    await stopChild(chain?.child, 10_000);
  });

  it("refuses the operator's mistakes about it, each with a message naming it", async () => {
    // Not declared anywhere: the CLI does not know the name.
    const bare = await runCliInProcess(["status", "--network", NETWORK], env);
    expect(bare.code).to.equal(2);
    expect(bare.stderr).to.match(/unknown network "polygon-amoy": one of ethereum-mainnet, .*local \(a chain the registry does not list is declared in the configuration's customNetworks\)/);
    // Declared with a chain id the RPC does not serve.
    writeConfig([], [{ ...declared, chainId: 80001 }]);
    const wrongChain = await cli(...deploy, "--dry-run");
    expect(wrongChain.code).to.equal(2);
    expect(wrongChain.stderr).to.match(/the RPC of polygon-amoy serves chain 80002, not 80001/);
    // Declared under a registry name, or without its gas kind: the configuration is refused as a whole.
    writeConfig([], [{ ...declared, name: "base-sepolia" }]);
    const shadow = await cli("status", "--network", NETWORK);
    expect(shadow.code).to.equal(2);
    expect(shadow.stderr).to.match(/customNetworks\[0\]\.name: "base-sepolia" is a network of the registry \(chain 84532\)/);
    writeConfig([], [{ name: NETWORK, chainId: CHAIN_ID }]);
    const noKind = await cli("status", "--network", NETWORK);
    expect(noKind.stderr).to.match(/customNetworks\[0\]\.gasKind: is required for a custom network: how the chain charges for L1 data, one of l1, op-stack, arbitrum, scroll/);
    writeConfig([]);
  });

  it("deploy --dry-run and deploy through the configuration that declares it (twice: the second sends nothing), then status and signer list", async () => {
    const dry = await cli(...deploy, "--dry-run", "--json");
    expect(dry.code, dry.stderr).to.equal(0);
    expect([dry.json.network, dry.json.chainId, dry.json.dryRun]).to.deep.equal([NETWORK, CHAIN_ID, true]);
    expect(dry.json.transactions.map((t: { step: string }) => t.step)).to.include.members(["deploy-paymaster-deployer", "deploy-paymaster", "deploy-gas-tank-deposit", "accept-ownership"]);
    const first = await cli(...deploy, "--json");
    expect(first.code, first.stderr).to.equal(0);
    expect(first.json.sent.length).to.equal(dry.json.transactions.length);
    expect(first.json.paymasters.map((p: { address: string }) => p.address)).to.deep.equal(dry.json.paymasters.map((p: { address: string }) => p.address));
    expect((await cli(...deploy, "--json")).json.transactions).to.deep.equal([]);

    const status = await cli("status", "--network", NETWORK, "--deployments", deployments, "--json");
    expect(status.code, status.stderr).to.equal(0);
    expect(status.json.map((p: { label: string }) => p.label)).to.deep.equal(["VerifyingPaymasterV07", "ERC20PaymasterV07"]);
    for (const p of status.json) expect([p.staked, p.depositWei, p.serviceSigners[0].accepted, p.warnings], p.label).to.deep.equal([true, "1000000000000000000", true, []]);
    const signers = await cli("signer", "list", "--network", NETWORK, "--deployments", deployments, "--json");
    expect(signers.json.map((r: { signer: string; accepted: boolean }) => [r.signer, r.accepted])).to.deep.equal([[privateKeyToAddress(signerKey), true], [privateKeyToAddress(signerKey), true]]);
    const block = JSON.parse(readFileSync(path.join(deployments, `service-network.${NETWORK}.json`), "utf8"));
    expect(block).to.deep.include({ name: NETWORK, chainId: CHAIN_ID, depositContract: first.json.gasTankDeposit.address });
    // The deposit contract, before the configuration names it: deployed, owned by the deploying key, not watched yet.
    const contract = await cli("deposit-contract", "show", "--network", NETWORK, "--deployments", deployments, "--json");
    expect(contract.code, contract.stderr).to.equal(0);
    expect(contract.json).to.deep.include({ address: first.json.gasTankDeposit.address, balanceWei: "0", owner: privateKeyToAddress(DEPLOYER_KEY), watched: false });
  });

  it("the service started from the configuration sponsors an op through polygon-amoy's endpoints; it lands and `strategy usage` shows it settled", async () => {
    const block = JSON.parse(readFileSync(path.join(deployments, `service-network.${NETWORK}.json`), "utf8"));
    // The deployment's block, the RPC in the file this time, no gasKind (the declaration's), a fast watcher.
    writeConfig([{ ...block, rpcUrl: chain.url, nativeUsdPrice: { type: "fixed", usd: "0.50" }, confirmations: 1, pollMs: 250 }]);
    const adminToken = `ops=${"a".repeat(40)}`;
    service = await spawnService(configFile, { signerKey, network: NETWORK, extra: { PAYMASTER_ADMIN_TOKENS: adminToken, PAYMASTER_ADMIN_PORT: "0" } });
    const configured = await service.waitFor((l) => l.msg === "configuration");
    expect(configured.config.customNetworks).to.deep.equal([declared]);
    expect(configured.config.networks[0]).to.deep.include({ name: NETWORK, chainId: CHAIN_ID, gasKind: "l1", depositContract: block.depositContract });

    const project = await cli("project", "create", "Amoy dapp", "--json");
    const key = await cli("key", "create", "--project", project.json.id, "--json");
    const strategyFile = path.join(dir, "strategy.yaml");
    writeFileSync(strategyFile, `code: amoy-free\nname: Free ops on Amoy\nproject: ${project.json.id}\nnetworks: [${NETWORK}]\nrules:\n  caps:\n    global: { maxOps: 5 }\n`);
    const created = await cli("strategy", "create", "-f", strategyFile, "--json");
    expect(created.code, created.stderr).to.equal(0);
    const apiKey: string = key.json.key;

    // A wallet on this chain: the helpers over its HTTP RPC (they need its id, EntryPoints and factory, dev accounts).
    const accounts = await rpc<string[]>("eth_accounts");
    const onChain = {
      stack: { manifest: existing, chain: { chainId: CHAIN_ID, provider: { request: ({ method, params }: { method: string; params?: unknown[] }) => rpc(method, params) }, accounts: accounts.map((address) => ({ address })) }, owner: { address: accounts[0] } },
    } as unknown as Embedded;
    const wallet = await newWallet(onChain, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    // ERC-7677 on /rpc/v1/polygon-amoy answers for its chain id, and refuses another.
    const standard = `${service.url}/rpc/v1/${NETWORK}?apiKey=${apiKey}`;
    const stubOf = async (chainIdHex: string) => {
      const response = await fetch(standard, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "pm_getPaymasterStubData", params: [wire, ENTRY_POINT_V07_ADDRESS, chainIdHex, { strategy_code: "amoy-free" }] }) });
      return (await response.json()) as { result?: { paymaster: string }; error?: { data?: { reason?: string } } };
    };
    const deployed = JSON.parse(readFileSync(path.join(deployments, `deployment.${NETWORK}.json`), "utf8")) as { paymasters: { label: string; address: string }[] };
    const verifying = deployed.paymasters.find((p) => p.label === "VerifyingPaymasterV07")!.address;
    const stub = await stubOf("0x13882");
    expect(stub.result?.paymaster, JSON.stringify(stub)).to.equal(verifying);
    expect((await stubOf("0x14a34")).error?.data?.reason).to.equal("CHAIN_ID_MISMATCH");

    // The spec dialect on /api/v1/paymaster/polygon-amoy signs the op; it lands with handleOps.
    const { status, body } = await call(`${service.url}/api/v1/paymaster/${NETWORK}?apiKey=${apiKey}`, "pm_sponsorUserOperation", [wire, { strategy_code: "amoy-free", version: "v0.7" }]);
    expect(status, JSON.stringify(body)).to.equal(200);
    const outcome = await handleOps(onChain, await signAsOwner(onChain, wallet, opFromResponse(wallet, wire, body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    expect([outcome.event!.success, outcome.event!.paymaster]).to.deep.equal([true, verifying]);

    // Settled by the service's watcher under 1 confirmation (this chain mines only on transactions: blocks are
    // mined here as a real chain would produce them).
    let usage: CliResult | undefined;
    for (let i = 0; i < 60; i++) {
      await rpc("evm_mine");
      usage = await cli("strategy", "usage", "amoy-free", "--json");
      if (usage.json?.totals?.spentWei !== undefined && usage.json.totals.spentWei !== "0") break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(usage!.json.totals.spentWei, JSON.stringify(usage!.json)).to.equal(outcome.event!.actualGasCost.toString());
    expect(usage!.json.totals.reservedWei).to.equal("0");

    // Gas tanks on it, by the CLI and by the admin API (the same operations).
    const credited = await cli("tank", "credit", "--network", NETWORK, "--sender", wallet.sender, "--wei", "1000");
    expect(credited.code, credited.stderr).to.equal(0);
    const tank = await fetch(`${configured.adminApi}/admin/v1/tanks/${NETWORK}/${wallet.sender}`, { headers: { authorization: `Bearer ${adminToken.split("=")[1]}` } });
    expect(tank.status).to.equal(200);
    expect(await tank.json()).to.deep.include({ network: NETWORK, sender: wallet.sender, balanceWei: "1000" });

    // Its metrics carry its name; a network neither configured nor declared is unknown to the endpoints.
    const metrics = await (await fetch(`${service.metricsUrl}/metrics`)).text();
    expect(metrics).to.match(/paymaster_sponsorships_signed_total\{network="polygon-amoy",mode="sponsor",version="v0.7"\} 1/);
    expect(metrics).to.match(/paymaster_watcher_leader\{network="polygon-amoy"\} 1/);
    const unknown = await call(`${service.url}/api/v1/paymaster/polygon-zkevm?apiKey=${apiKey}`, "pm_supportEntrypoint", []);
    expect(unknown.status).to.equal(404);
    expect(unknown.body.message).to.match(/Unknown network "polygon-zkevm"; supported networks: polygon-amoy/);
  });

  it("the service does not start when the RPC serves another chain than the one declared", async () => {
    const block = JSON.parse(readFileSync(path.join(deployments, `service-network.${NETWORK}.json`), "utf8"));
    const { chainId: _serving, ...rest } = block;
    writeConfig([{ ...rest, rpcUrl: chain.url, nativeUsdPrice: { type: "fixed", usd: "0.50" } }], [{ ...declared, chainId: 80001 }]);
    await service?.kill("SIGTERM");
    service = undefined;
    const failed = await spawnService(configFile, { signerKey, network: NETWORK }).then(
      () => "started",
      (error: Error) => error.message,
    );
    expect(failed).to.match(/network polygon-amoy: the RPC endpoint serves chain 80002, configured 80001/);
  });
});
