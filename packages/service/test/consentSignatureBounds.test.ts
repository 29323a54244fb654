// Second review, finding 6: an ERC-6492 consent signature makes the service run the caller's factory calldata in
// an eth_call, bounded only by the node's own gas cap. The attack: a "factory" whose code loops until its gas is
// gone, wrapped around a counterfactual sender's consent. A service whose network RPC is a recording HTTP front
// on 127.0.0.1 (forwarding to the embedded chain) refuses it with INVALID_CONSENT in bounded time, and every
// eth_call the node was asked carried a gas limit of at most the network's maxVerificationGasLimit.
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { gasTankConsentTypedData, type Address } from "@paymaster/shared";
import { serializeErc6492Signature, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { withGasCap } from "../src/methods/gasTankConsent.ts";
import { startService, type RunningService } from "../src/server.ts";
import { chainRequest, startTestStack, type Embedded } from "./helpers/stack.ts";

/** JUMPDEST; PUSH1 0; JUMP: a loop that burns every unit of gas it is given. */
const BURN_FOREVER = "0x5b600056";

/** An HTTP front on 127.0.0.1 that forwards JSON-RPC to `target` and records every request it forwarded. */
async function startRecordingFront(target: string): Promise<{ url: string; requests: { method: string; params: unknown[] }[]; close(): Promise<void> }> {
  const requests: { method: string; params: unknown[] }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const parsed = JSON.parse(body) as { method: string; params: unknown[] } | { method: string; params: unknown[] }[];
      requests.push(...(Array.isArray(parsed) ? parsed : [parsed]));
      const answer = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
      res.setHeader("content-type", "application/json");
      res.end(await answer.text());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("ERC-6492 consent signatures are checked within bounds (second review, finding 6)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let front: Awaited<ReturnType<typeof startRecordingFront>>;
  let running: RunningService;
  let endpoint: string;
  let projectId: string;

  before(async () => {
    embedded = await startTestStack();
    front = await startRecordingFront(embedded.stack.chain.url);
    const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: front.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-6492-")), "data");
    running = await startService(embeddedConfig(network, dataDir, 0, "silent"), { logger: createLogger("silent"), pollMs: 100, watch: false });
    const project = await running.service.store.createProject("consents");
    projectId = project.id;
    endpoint = `${running.url}/rpc/v1/local?apiKey=${(await running.service.store.createApiKey(project.id)).plaintext}`;
  });
  after(async () => {
    await running?.close();
    await front?.close();
    await embedded?.close();
  });

  it("a factory that burns gas in a loop: INVALID_CONSENT in bounded time; the node was never asked for more than the bound", async () => {
    const factory = privateKeyToAccount(generatePrivateKey()).address;
    await chainRequest(embedded, "hardhat_setCode", [factory, BURN_FOREVER]);
    const owner = privateKeyToAccount(generatePrivateKey());
    const sender = privateKeyToAccount(generatePrivateKey()).address as Address; // counterfactual: no code
    const issuedAt = Math.floor(Date.now() / 1000);
    const inner = await owner.signTypedData(gasTankConsentTypedData(embedded.stack.chain.chainId, { sender, project: projectId, allowed: true, issuedAt: BigInt(issuedAt) }));
    const signature = serializeErc6492Signature({ address: factory, data: `0x${"ab".repeat(64)}` as Hex, signature: inner });
    const cap = running.service.config.networks[0]!.caps.maxVerificationGasLimit;

    front.requests.length = 0;
    const started = performance.now();
    const response = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "pm_setGasTankConsent", params: [{ sender, allowed: true, issuedAt, signature }] }),
    });
    const elapsed = performance.now() - started;
    const answer = (await response.json()) as { error?: { message: string; data: { reason: string } } };
    expect(answer.error?.data.reason, JSON.stringify(answer)).to.equal("INVALID_CONSENT");
    expect(answer.error!.message).to.include(`its on-chain check failed within the ${cap} gas it may use`);
    // Bounded: ~0.2 s of the chain's time here (plus its first run's warm-up); without the bound the node burnt its
    // own cap (16.7M gas on this chain) for ~30 s.
    expect(elapsed, "bounded in time").to.be.below(10_000);

    // The service's own calls (deposit checks…) go through the front too: these are the ones carrying the signature.
    const calls = front.requests.filter((r) => r.method === "eth_call" && JSON.stringify(r.params).toLowerCase().includes(factory.slice(2).toLowerCase()));
    expect(calls, JSON.stringify(front.requests.map((r) => r.method))).to.have.length.of.at.least(1);
    for (const c of calls) {
      const gas = (c.params[0] as { gas?: string }).gas;
      expect(gas, "every eth_call carries a gas limit").to.be.a("string");
      expect(BigInt(gas!) <= cap, `${gas} <= ${cap}`).to.equal(true);
    }
    expect(await running.service.store.gasTankAllows("local", sender, projectId)).to.equal(false);
  });

  it("the gas of an eth_call is the cap when absent or larger, and kept when smaller (pure)", () => {
    expect(withGasCap([{ data: "0x00" }, "latest"], 1_000_000n)).to.deep.equal([{ data: "0x00", gas: "0xf4240" }, "latest"]);
    expect(withGasCap([{ data: "0x00", gas: "0x3b9aca00" }], 1_000_000n)).to.deep.equal([{ data: "0x00", gas: "0xf4240" }]);
    expect(withGasCap([{ data: "0x00", gas: "0x5208" }], 1_000_000n)).to.deep.equal([{ data: "0x00", gas: "0x5208" }]);
  });
});
