// A wallet's view, end to end through a real bundler: viem's bundler client with our standard ERC-7677
// endpoint as its paymaster, a SimpleAccount (permissionless's toSimpleSmartAccount: viem 2.57.20's
// account-abstraction module has none), and @pimlico/alto running against the embedded local chain.
// Alto binds every interface, so this file runs only inside a loopback-only network namespace
// (scripts/netns-test.sh); it refuses to start alto anywhere else.
import { type ChildProcess } from "node:child_process";
import { networkInterfaces } from "node:os";
import { expect } from "chai";
import { createPublicClient, defineChain, encodeFunctionData, http, maxUint256, type Abi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createBundlerClient, createPaymasterClient } from "viem/account-abstraction";
import { toSimpleSmartAccount } from "permissionless/accounts";
import { createPimlicoClient } from "permissionless/clients/pimlico";
import { TestTokenArtifact } from "@paymaster/contracts/artifacts";
import type { Address, EntryPointVersion } from "@paymaster/shared";
import { ethCall, mint, startTestStack, type Embedded } from "./helpers/stack.ts";
import { onlyLoopback, startAlto, stopAlto } from "./helpers/alto.ts";

const VERSIONS: EntryPointVersion[] = ["v0.6", "v0.7"];

describe("through a real bundler (alto) with viem's bundler + paymaster clients and a SimpleAccount", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let alto: ChildProcess | undefined;
  let altoUrl: string;
  let rpcUrl: string;

  before(async function () {
    if (!onlyLoopback()) {
      throw new Error(`bundler.test.ts must run inside a loopback-only network namespace (found interfaces: ${Object.keys(networkInterfaces()).join(", ")}); use scripts/netns-test.sh`);
    }
    embedded = await startTestStack();
    rpcUrl = embedded.endpoint.replace("/api/v1/paymaster/", "/rpc/v1/");
    const { chain, manifest } = embedded.stack;
    ({ alto, url: altoUrl } = await startAlto({
      rpcUrl: chain.url,
      entryPoints: [manifest.entryPoints["v0.6"].entryPoint, manifest.entryPoints["v0.7"].entryPoint],
      executorKey: chain.accounts[7]!.privateKey,
      utilityKey: chain.accounts[8]!.privateKey,
    }));
  });

  after(async () => {
    await stopAlto(alto);
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
