// A wallet's view, end to end through a real bundler: viem's bundler client with our standard ERC-7677
// endpoint as its paymaster, a SimpleAccount (permissionless's toSimpleSmartAccount: viem 2.57.20's
// account-abstraction module has none), and @pimlico/alto running against the embedded local chain.
// Alto binds every interface, so this file runs only inside a loopback-only network namespace
// (scripts/netns-test.sh); it refuses to start alto anywhere else.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import path from "node:path";
import { expect } from "chai";
import { createPublicClient, defineChain, encodeFunctionData, http, maxUint256, type Abi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createBundlerClient, createPaymasterClient } from "viem/account-abstraction";
import { toSimpleSmartAccount } from "permissionless/accounts";
import { createPimlicoClient } from "permissionless/clients/pimlico";
import { TestTokenArtifact } from "@paymaster/contracts/artifacts";
import type { Address, EntryPointVersion } from "@paymaster/shared";
import { ethCall, mint, startTestStack, type Embedded } from "./helpers/stack.ts";

const VERSIONS: EntryPointVersion[] = ["v0.6", "v0.7"];

/** Only the loopback interface exists (a fresh network namespace). */
function onlyLoopback(): boolean {
  const names = Object.keys(networkInterfaces());
  return names.length > 0 && names.every((name) => name === "lo");
}

async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function altoEntry(): string {
  // alto's exports hide package.json: find the package folder from its main entry.
  const require = createRequire(import.meta.url);
  let dir = path.dirname(require.resolve("@pimlico/alto"));
  const isAlto = (d: string) => existsSync(path.join(d, "package.json")) && JSON.parse(readFileSync(path.join(d, "package.json"), "utf8")).name === "@pimlico/alto";
  while (!isAlto(dir)) {
    if (path.dirname(dir) === dir) throw new Error("@pimlico/alto's package folder not found");
    dir = path.dirname(dir);
  }
  const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { bin: Record<string, string> };
  return path.join(dir, pkg.bin.alto!);
}

async function waitForAlto(url: string, alto: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (alto.exitCode !== null) throw new Error(`alto exited with ${alto.exitCode}:\n${log()}`);
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_supportedEntryPoints", params: [] }),
      });
      if (response.ok) {
        const json = (await response.json()) as { result?: string[] };
        if (Array.isArray(json.result) && json.result.length === 2) return;
      }
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`alto did not come up within 60 s:\n${log()}`);
}

describe("through a real bundler (alto) with viem's bundler + paymaster clients and a SimpleAccount", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let alto: ChildProcess | undefined;
  let altoUrl: string;
  let rpcUrl: string;
  let altoLog = "";

  before(async function () {
    if (!onlyLoopback()) {
      throw new Error(`bundler.test.ts must run inside a loopback-only network namespace (found interfaces: ${Object.keys(networkInterfaces()).join(", ")}); use scripts/netns-test.sh`);
    }
    embedded = await startTestStack();
    rpcUrl = embedded.endpoint.replace("/api/v1/paymaster/", "/rpc/v1/");
    const { chain, manifest } = embedded.stack;
    const port = await freeLoopbackPort();
    altoUrl = `http://127.0.0.1:${port}`;
    const args = [
      altoEntry(),
      "--entrypoints", `${manifest.entryPoints["v0.6"].entryPoint},${manifest.entryPoints["v0.7"].entryPoint}`,
      "--executor-private-keys", chain.accounts[7]!.privateKey,
      "--utility-private-key", chain.accounts[8]!.privateKey,
      "--rpc-url", chain.url,
      "--port", String(port),
      "--safe-mode", "false",
      "--block-time", "250",
      "--min-bundle-interval", "100",
      "--max-bundle-interval", "250",
      "--utility-wallet-monitor", "false",
      "--refilling-wallets", "false",
      "--log-level", process.env.ALTO_LOG_LEVEL ?? "warn",
    ];
    alto = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: "" } });
    const append = (chunk: Buffer) => {
      altoLog = (altoLog + chunk.toString()).slice(-20_000);
      if (process.env.ALTO_LOG_LEVEL) process.stderr.write(chunk);
    };
    alto.stdout!.on("data", append);
    alto.stderr!.on("data", append);
    await waitForAlto(altoUrl, alto, () => altoLog);
  });

  after(async () => {
    if (alto && alto.exitCode === null) {
      const exited = new Promise((resolve) => alto!.once("exit", resolve));
      alto.kill("SIGTERM");
      const timer = setTimeout(() => alto!.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    await embedded?.close();
  });

  function clients(version: EntryPointVersion) {
    const { chain, manifest } = embedded.stack;
    const localChain = defineChain({
      id: chain.chainId,
      name: "local",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [chain.url] } },
    });
    const client = createPublicClient({ chain: localChain, transport: http(chain.url) });
    const entryPoint = { address: manifest.entryPoints[version].entryPoint, version: version === "v0.6" ? ("0.6" as const) : ("0.7" as const) };
    const pimlico = createPimlicoClient({ chain: localChain, transport: http(altoUrl), entryPoint });
    return { localChain, client, entryPoint, pimlico };
  }

  async function sendThroughAlto(version: EntryPointVersion, context: Record<string, unknown>, calls: (sender: Address) => { to: Address; data?: `0x${string}`; value?: bigint }[], beforeSend?: (sender: Address) => Promise<void>) {
    const { localChain, client, entryPoint, pimlico } = clients(version);
    const account = await toSimpleSmartAccount({
      client,
      owner: privateKeyToAccount(generatePrivateKey()),
      entryPoint,
      factoryAddress: embedded.stack.manifest.entryPoints[version].simpleAccountFactory,
    });
    await beforeSend?.(account.address);
    const bundler = createBundlerClient({
      account,
      client,
      chain: localChain,
      transport: http(altoUrl),
      paymaster: createPaymasterClient({ transport: http(rpcUrl) }),
      paymasterContext: context,
      userOperation: { estimateFeesPerGas: async () => (await pimlico.getUserOperationGasPrice()).fast },
    });
    const hash = await bundler.sendUserOperation({ calls: calls(account.address) });
    const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 60_000 });
    return { account, receipt, hash };
  }

  for (const version of VERSIONS) {
    it(`${version}: a sponsored op (strategy_code) deploys the account and runs its call, paid by our verifying paymaster`, async () => {
      const target = privateKeyToAccount(generatePrivateKey()).address;
      const { receipt, hash, account } = await sendThroughAlto(version, { strategy_code: embedded.strategyCode }, () => [{ to: target, data: "0x" }]);
      expect(receipt.success, JSON.stringify(receipt, (_k, v) => (typeof v === "bigint" ? v.toString() : v))).to.equal(true);
      expect(receipt.sender).to.equal(account.address);
      expect(receipt.paymaster?.toLowerCase()).to.equal(embedded.stack.manifest.entryPoints[version].verifyingPaymaster.toLowerCase());
      expect(receipt.receipt.from.toLowerCase()).to.equal(embedded.stack.chain.accounts[7]!.address.toLowerCase()); // alto's executor
      const record = await embedded.running.service.store.findSponsorshipByUserOpHash(hash);
      expect(record?.mode).to.equal("sponsor");
    });
  }

  for (const version of VERSIONS) {
    it(`${version}: an ERC-20 op (token USDC) whose own call approves the ERC-20 paymaster, which charges the account in USDC`, async () => {
      const { manifest } = embedded.stack;
      const usdc = manifest.tokens.find((t) => t.symbol === "USDC")!;
      const erc20Paymaster = manifest.entryPoints[version].erc20Paymaster;
      const minted = 1_000n * 10n ** 6n;
      const { receipt, account } = await sendThroughAlto(
        version,
        { token: "USDC" },
        () => [{ to: usdc.address, data: encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "approve", args: [erc20Paymaster, maxUint256] }) }],
        async (sender) => {
          await mint(embedded, "USDC", sender, minted);
          await new Promise((resolve) => setTimeout(resolve, 300)); // let the service's market see the new block
        },
      );
      expect(receipt.success, JSON.stringify(receipt, (_k, v) => (typeof v === "bigint" ? v.toString() : v))).to.equal(true);
      expect(receipt.paymaster?.toLowerCase()).to.equal(erc20Paymaster.toLowerCase());
      const balance = (await ethCall(embedded, usdc.address, TestTokenArtifact.abi as Abi, "balanceOf", [account.address])) as bigint;
      expect(balance < minted && balance > 0n, `balance ${balance}`).to.equal(true);
    });
  }
});
