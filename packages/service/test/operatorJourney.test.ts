// The operator guide (docs/operator-guide.md), walked the way an operator walks it, against a chain in a process
// of its own with a public chain id (84532, serving as base-sepolia) where only the canonical EntryPoints exist:
// deploy --dry-run, deploy (twice: the second sends nothing), status, a key application approved and claimed,
// a strategy from a file, the service started from a configuration file, a wallet (viem + a real bundler,
// Alto) getting an op sponsored through ERC-7677, `strategy usage` showing it settled to the wei, and a
// revoked key refused on its next request. Every command is a real child process.
// Runs inside a loopback-only network namespace (scripts/netns-test.sh): Alto binds every interface.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { BrowserProvider, JsonRpcProvider } from "ethers";
import { createPublicClient, defineChain, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createBundlerClient, createPaymasterClient } from "viem/account-abstraction";
import { toSimpleSmartAccount } from "permissionless/accounts";
import { createPimlicoClient } from "permissionless/clients/pimlico";
import { deployLocalStack } from "@paymaster/contracts";
import { ENTRY_POINT_V07_ADDRESS } from "@paymaster/shared";
import { runCli, type CliResult } from "./helpers/cli.ts";
import { freeLoopbackPort, startAlto, stopAlto, stopChild } from "./helpers/alto.ts";
import { startChainProcess, startProcess } from "./helpers/serviceProcess.ts";

const HERE = path.dirname(new URL(import.meta.url).pathname);
const MAIN = path.join(HERE, "..", "src", "main.ts");

describe("the operator journey: zero to a sponsored op on a network of your own (guide, CLI, service, Alto)", function () {
  this.timeout(300_000);
  const children: ChildProcess[] = [];
  let alto: ChildProcess | undefined;
  let chainUrl: string;
  const dir = mkdtempSync(path.join(tmpdir(), "paymaster-journey-"));
  const deployments = path.join(dir, "deployments");
  const signerKey = generatePrivateKey();
  const adminToken = `ops=${"a".repeat(40)}`;
  let env: Record<string, string>;
  let cli: (...args: string[]) => Promise<CliResult>;
  // Hardhat's well-known dev keys: #0 deploys the paymasters, #1 is the treasury, #7/#8 are the bundler's, #9
  // put the EntryPoints there beforehand.
  const DEV = [
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  ] as const;

  before(async () => {
    const chain = await startChainProcess(84532, await freeLoopbackPort());
    children.push(chain.child);
    chainUrl = chain.url;
    // What base-sepolia has before we come: the canonical EntryPoints (the local deployment puts them there; its
    // own paymasters are elsewhere and play no part), deployed by a key that is not the operator's.
    const provider = new JsonRpcProvider(chainUrl, 84532, { staticNetwork: true, cacheTimeout: -1 });
    const other = await new BrowserProvider({ request: ({ method, params }) => provider.send(method, (params as unknown[]) ?? []) }, 84532).getSigner("0xa0Ee7A142d267C1f36714E4a8F75612F20a79720");
    await deployLocalStack(other, { signers: ["0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"], treasury: "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720", allowNonLocalChain: true });
    provider.destroy();
    env = {
      PAYMASTER_NETWORK_BASE_SEPOLIA_RPC_URL: chainUrl,
      PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: signerKey,
      PAYMASTER_DEPLOYER_KEY: DEV[0],
    };
    cli = (...args) => runCli([...args], env);
  });
  after(async () => {
    await stopAlto(alto);
    for (const child of children.reverse()) await stopChild(child, 10_000);
  });

  const deploy = ["deploy", "--network", "base-sepolia", "--treasury", privateKeyToAccount(DEV[1]).address, "--stake", "0.1eth", "--deposit", "1eth", "--versions", "v0.7", "--deployments", deployments];

  it("walks the guide", async () => {
    // 1. Dry run: the plan, nothing sent.
    const dry = await cli(...deploy, "--dry-run", "--json");
    expect(dry.code, dry.stderr).to.equal(0);
    expect(dry.json.transactions.length).to.be.greaterThan(0);
    // 2. Deploy, and again: the second run sends nothing.
    const first = await cli(...deploy, "--json");
    expect(first.code, first.stderr).to.equal(0);
    expect(first.json.sent.length).to.equal(dry.json.transactions.length);
    const second = await cli(...deploy, "--json");
    expect(second.json.transactions).to.deep.equal([]);
    // 3. Status: staked, funded, our signer accepted, no warning.
    const status = await cli("status", "--network", "base-sepolia", "--deployments", deployments, "--json");
    expect(status.code, status.stderr).to.equal(0);
    for (const p of status.json) expect([p.staked, p.depositWei, p.serviceSigners[0].accepted, p.warnings], p.label).to.deep.equal([true, "1000000000000000000", true, []]);

    // 4. The service's configuration: the deployment's entryPoints block, the chain's rules (this test chain runs
    //    L1 rules, hence gasKind l1), a database file; signer keys and RPC URL from the environment.
    const block = JSON.parse(readFileSync(path.join(deployments, "service-network.base-sepolia.json"), "utf8"));
    const servicePort = await freeLoopbackPort();
    const configFile = path.join(dir, "paymaster.json");
    writeFileSync(
      configFile,
      JSON.stringify({
        host: "127.0.0.1",
        port: servicePort,
        databasePath: path.join(dir, "paymaster.sqlite"),
        networks: [{ ...block, gasKind: "l1", nativeUsdPrice: { type: "fixed", usd: "3000" }, confirmations: 1, pollMs: 250 }],
      }),
    );
    const serviceEnv = { ...process.env, ...env, PAYMASTER_ADMIN_TOKENS: adminToken, PAYMASTER_ADMIN_PORT: "0" };
    const service = await startProcess([MAIN, "--config", configFile], serviceEnv, /"msg":"configuration"/);
    children.push(service.child);
    const base = `http://127.0.0.1:${servicePort}`;
    const admin = (...args: string[]) => runCli(["--config", configFile, ...args], env);

    // 5. A team applies for a key; the operator approves; the team claims it once.
    const applied = await fetch(`${base}/api/v1/applications`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contact: "dev@team.example", project: "Team dapp", networks: ["base-sepolia"], use: "free mints" }),
    });
    expect(applied.status).to.equal(202);
    const { id: applicationId } = (await applied.json()) as { id: string };
    const pending = await admin("key", "applications", "--json");
    expect(pending.json.map((a: { id: string }) => a.id)).to.include(applicationId);
    const approved = await admin("key", "approve", applicationId, "--json");
    expect(approved.code, approved.stderr).to.equal(0);
    const claimed = await fetch(`${base}/api/v1/applications/claim`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ claimToken: approved.json.claimToken }) });
    expect(claimed.status).to.equal(200);
    const { apiKey, apiKeyId, projectId } = (await claimed.json()) as { apiKey: string; apiKeyId: string; projectId: string };

    // 6. A strategy from a file.
    const strategyFile = path.join(dir, "strategy.yaml");
    writeFileSync(strategyFile, `code: team-free\nname: Team free ops\nproject: ${projectId}\nnetworks: [base-sepolia]\nrules:\n  caps:\n    global: { maxOps: 10 }\n`);
    const created = await admin("strategy", "create", "-f", strategyFile, "--json");
    expect(created.code, created.stderr).to.equal(0);

    // 7. A wallet sends an op through Alto with our ERC-7677 endpoint as its paymaster.
    const chain = defineChain({ id: 84532, name: "base-sepolia (test)", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [chainUrl] } } });
    const client = createPublicClient({ chain, transport: http(chainUrl) });
    const started = await startAlto({
      rpcUrl: chainUrl,
      entryPoints: [ENTRY_POINT_V07_ADDRESS],
      executorKey: "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356", // dev account #7
      utilityKey: "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97", // dev account #8
    });
    alto = started.alto;
    const altoEndpoint = started.url;
    const entryPoint = { address: ENTRY_POINT_V07_ADDRESS, version: "0.7" as const };
    const account = await toSimpleSmartAccount({ client, owner: privateKeyToAccount(generatePrivateKey()), entryPoint, factoryAddress: await factoryOf(chainUrl) });
    const pimlico = createPimlicoClient({ chain, transport: http(altoEndpoint), entryPoint });
    const bundler = createBundlerClient({
      account,
      client,
      chain,
      transport: http(altoEndpoint),
      pollingInterval: 200, // viem's default 4 s would dominate the wait for the receipt
      paymaster: createPaymasterClient({ transport: http(`${base}/rpc/v1/base-sepolia?apiKey=${apiKey}`) }),
      paymasterContext: { strategy_code: "team-free" },
      userOperation: { estimateFeesPerGas: async () => (await pimlico.getUserOperationGasPrice()).fast },
    });
    const hash = await bundler.sendUserOperation({ calls: [{ to: privateKeyToAccount(generatePrivateKey()).address, data: "0x" }] });
    const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 60_000 });
    expect(receipt.success).to.equal(true);
    const paymaster = status.json.find((p: { label: string }) => p.label === "VerifyingPaymasterV07").address;
    expect(receipt.paymaster?.toLowerCase()).to.equal(paymaster.toLowerCase());

    // 8. strategy usage shows it settled to the wei (once the service's watcher saw it under 1 confirmation: this
    //    chain mines only on transactions, so blocks are mined here as a real chain would produce them).
    let usage: CliResult | undefined;
    for (let i = 0; i < 60; i++) {
      await fetch(chainUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "evm_mine", params: [] }) });
      usage = await admin("strategy", "usage", "team-free", "--json");
      if (usage.json?.totals?.spentWei !== "0" && usage.json?.totals?.spentWei !== undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(usage!.json.totals.spentWei, `${JSON.stringify(usage!.json)}\n${service.output().slice(-3000)}`).to.equal(receipt.actualGasCost.toString());
    expect(usage!.json.totals.reservedWei).to.equal("0");

    // 9. The operator revokes the key: the next request is refused.
    const revoked = await admin("key", "revoke", apiKeyId, "--json");
    expect(revoked.code, revoked.stderr).to.equal(0);
    const refused = await fetch(`${base}/rpc/v1/base-sepolia?apiKey=${apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "pm_getPaymasterStubData", params: [{}, ENTRY_POINT_V07_ADDRESS, "0x14a34", { strategy_code: "team-free" }] }),
    });
    const body = (await refused.json()) as { error?: { data?: { reason?: string } } };
    expect(body.error?.data?.reason).to.equal("API_KEY_REVOKED");
  });

  /** The v0.7 SimpleAccountFactory the local deployment put on the chain (its manifest is not ours: ask CREATE2). */
  async function factoryOf(url: string): Promise<`0x${string}`> {
    const { predictCreate2Address, saltFor } = await import("@paymaster/contracts/deploy");
    const { ContractFactory } = await import("ethers");
    const { SimpleAccountFactoryV07Artifact } = await import("@paymaster/contracts/artifacts");
    const tx = await new ContractFactory(SimpleAccountFactoryV07Artifact.abi as never, SimpleAccountFactoryV07Artifact.bytecode).getDeployTransaction(ENTRY_POINT_V07_ADDRESS);
    const address = predictCreate2Address(saltFor("SimpleAccountFactory"), tx.data) as `0x${string}`;
    const code = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getCode", params: [address, "latest"] }) });
    expect(((await code.json()) as { result: string }).result).to.not.equal("0x");
    return address;
  }
});
