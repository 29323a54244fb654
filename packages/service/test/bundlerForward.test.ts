// One URL for bundler and paymaster: the standard endpoint forwards the ERC-4337 bundler methods to the
// network's bundler (bundlerUrl), here a real alto behind a TCP proxy (test/helpers/tcpProxy.ts) for real faults.
// viem's bundler client gets that single URL with `paymaster: true`. Runs inside a loopback-only network
// namespace with the other alto tests (scripts/netns-test.sh).
import type { ChildProcess } from "node:child_process";
import { expect } from "chai";
import { createPublicClient, defineChain, http, type Chain, type PublicClient } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createBundlerClient, toSimple7702SmartAccount, type SmartAccount } from "viem/account-abstraction";
import { toSimpleSmartAccount } from "permissionless/accounts";
import { SPONSOR_VERSIONS } from "../src/wire/schemas.ts";
import { freeLoopbackPort, startAlto, stopAlto } from "./helpers/alto.ts";
import { startTcpProxy, type TcpProxy } from "./helpers/tcpProxy.ts";
import { startTestStack, type Embedded } from "./helpers/stack.ts";

/** The bundler timeout the tests configure (the default, 10 s, would make the hang test slow). */
const BUNDLER_TIMEOUT_MS = 5_000;

async function rpc(url: string, method: string, params: unknown[] = []): Promise<any> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return response.json();
}

describe("one URL for bundler and paymaster: the standard endpoint forwards the bundler methods to alto", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let alto: ChildProcess | undefined;
  let proxy: TcpProxy;
  let localChain: Chain;
  let client: PublicClient;
  let url: string;

  before(async () => {
    const altoPort = await freeLoopbackPort();
    proxy = await startTcpProxy({ host: "127.0.0.1", port: altoPort });
    embedded = await startTestStack({ bundler: { url: proxy.url, timeoutMs: BUNDLER_TIMEOUT_MS } });
    const { chain, manifest } = embedded.stack;
    ({ alto } = await startAlto({
      rpcUrl: chain.url,
      port: altoPort,
      entryPoints: SPONSOR_VERSIONS.map((v) => manifest.entryPoints[v].entryPoint),
      executorKey: chain.accounts[7]!.privateKey,
      utilityKey: chain.accounts[8]!.privateKey,
    }));
    url = embedded.erc7677Endpoint;
    localChain = defineChain({ id: chain.chainId, name: "local", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [chain.url] } } });
    client = createPublicClient({ chain: localChain, transport: http(chain.url), pollingInterval: 200 });
  });

  after(async () => {
    await stopAlto(alto);
    await embedded?.close();
    await proxy?.close();
  });

  /** Our URL as viem's bundler and paymaster at once. */
  function bundlerClient(account: SmartAccount) {
    return createBundlerClient({ account, client, transport: http(url), pollingInterval: 200, paymaster: true, paymasterContext: { strategy_code: embedded.strategyCode } });
  }

  async function requestsCounted(method: string): Promise<number> {
    const metric = await embedded.running.service.metrics!.requests.get();
    return metric.values.filter((v) => v.labels["method"] === method && v.labels["dialect"] === "standard" && v.labels["outcome"] === "ok").reduce((sum, v) => sum + v.value, 0);
  }

  it("viem's bundler client with one URL and paymaster: true: a SimpleAccount (v0.7) and a fresh EIP-7702 EOA (v0.8) each land a sponsored op, read back through the same URL", async () => {
    const sentBefore = await requestsCounted("eth_sendUserOperation");
    const { manifest } = embedded.stack;
    const simple = await toSimpleSmartAccount({
      client,
      owner: privateKeyToAccount(generatePrivateKey()),
      entryPoint: { address: manifest.entryPoints["v0.7"].entryPoint, version: "0.7" },
      factoryAddress: manifest.entryPoints["v0.7"].simpleAccountFactory,
    });
    const owner = privateKeyToAccount(generatePrivateKey());
    const eoa = await toSimple7702SmartAccount({ client, owner, implementation: manifest.entryPoints["v0.8"].simple7702Account! });
    const authorization = await owner.signAuthorization({ address: manifest.entryPoints["v0.8"].simple7702Account!, chainId: localChain.id, nonce: 0 });
    for (const [account, version, extra] of [[simple, "v0.7", {}], [eoa, "v0.8", { authorization }]] as const) {
      const bundler = bundlerClient(account);
      const hash = await bundler.sendUserOperation({ calls: [{ to: privateKeyToAccount(generatePrivateKey()).address, value: 0n }], ...extra } as Parameters<typeof bundler.sendUserOperation>[0]);
      const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 60_000 });
      expect(receipt.success, version).to.equal(true);
      expect(receipt.paymaster?.toLowerCase(), version).to.equal(manifest.entryPoints[version].verifyingPaymaster.toLowerCase());
      expect(receipt.sender, version).to.equal(account.address);
      // What the bundler answers about the op, the same through our URL as from the bundler itself.
      for (const method of ["eth_getUserOperationByHash", "eth_getUserOperationReceipt"]) {
        const direct = await rpc(proxy.url, method, [hash]);
        expect(direct.result, `${version} ${method}`).to.not.equal(undefined);
        expect((await rpc(url, method, [hash])).result, `${version} ${method}`).to.deep.equal(direct.result);
      }
    }
    expect(await bundlerClient(simple).getSupportedEntryPoints()).to.deep.equal(SPONSOR_VERSIONS.map((v) => manifest.entryPoints[v].entryPoint));
    // Counted in the service's own metrics, like every call of the endpoint; the bundler's attempts under its own label.
    expect((await requestsCounted("eth_sendUserOperation")) - sentBefore).to.equal(2);
    const attempts = (await embedded.running.service.metrics!.rpcRequests.get()).values.filter((v) => v.labels["upstream"] === `bundler ${proxy.url}` && v.labels["method"] === "eth_sendUserOperation");
    expect(attempts.reduce((sum, v) => sum + v.value, 0)).to.be.at.least(2);
  });

  it("the bundler's JSON-RPC error comes back with its own code and message; the API key gates the bundler methods like the others", async () => {
    const op = { sender: privateKeyToAccount(generatePrivateKey()).address, nonce: "0x0", callData: "0x", callGasLimit: "0x1", verificationGasLimit: "0x1", preVerificationGas: "0x1", maxFeePerGas: "0x1", maxPriorityFeePerGas: "0x1", signature: "0x" };
    const rejected = await rpc(url, "eth_sendUserOperation", [op, embedded.stack.manifest.entryPoints["v0.7"].entryPoint]);
    expect(rejected.error.data.reason).to.equal("BUNDLER_REJECTED");
    expect(rejected.error.code).to.equal(rejected.error.data.bundlerCode);
    expect(rejected.error.code).to.not.equal(-32000); // alto's own code, not the catalogue's placeholder
    expect(rejected.error.message).to.be.a("string").and.not.equal("");
    const noKey = await rpc(url.replace(/\?.*$/, ""), "eth_supportedEntryPoints");
    expect(noKey.error.data.reason).to.equal("API_KEY_MISSING");
  });

  it("a bundler that hangs: BUNDLER_UNAVAILABLE (timeout) within its timeout, then at once while it is down; refused: at once; the paymaster methods keep working; forwarded again once it answers", async () => {
    const stub = () => rpc(url, "pm_supportEntrypoint");
    try {
      await proxy.setMode("hang");
      let started = performance.now();
      const hung = await rpc(url, "eth_supportedEntryPoints");
      const hungMs = performance.now() - started;
      expect(hung.error.data, JSON.stringify(hung)).to.deep.include({ reason: "BUNDLER_UNAVAILABLE", cause: "timeout" });
      expect(hung.error.code).to.equal(-32002);
      expect(hungMs).to.be.within(BUNDLER_TIMEOUT_MS - 100, BUNDLER_TIMEOUT_MS + 1_500);
      started = performance.now();
      const down = await rpc(url, "eth_getUserOperationReceipt", [`0x${"11".repeat(32)}`]);
      expect(down.error.data.reason).to.equal("BUNDLER_UNAVAILABLE");
      expect(performance.now() - started).to.be.below(500);
      expect((await stub()).result).to.have.length(3);

      await proxy.setMode("refuse");
      // The prober finds it refusing; a call gets the cause once the prober has looked.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      started = performance.now();
      const refused = await rpc(url, "eth_supportedEntryPoints");
      expect(refused.error.data).to.deep.include({ reason: "BUNDLER_UNAVAILABLE", cause: "refused" });
      expect(performance.now() - started).to.be.below(500);
    } finally {
      await proxy.setMode("pass");
    }
    const deadline = Date.now() + 10_000;
    for (;;) {
      const answer = await rpc(url, "eth_supportedEntryPoints");
      if (answer.result) {
        expect(answer.result).to.have.length(3);
        break;
      }
      if (Date.now() > deadline) throw new Error(`still not forwarded 10 s after the bundler came back: ${JSON.stringify(answer)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
});
