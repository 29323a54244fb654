// A development chain whose clock runs ahead of the wall clock (blocks mined faster than one a second, time moved
// with evm_increaseTime — mined or not yet —, evm_setNextBlockTimestamp, a burst of blocks hours apart): every op
// the service signs right after the clock moved lands through handleOps on the real EVM, never "AA32 paymaster
// expired or not due". The signature's window follows the chain's time at signing, not a snapshot taken before the
// move (src/chain/market.ts chainTime).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { startService } from "../src/server.ts";
import { startForwarder } from "../bench/forwarder.ts";
import { criticalPath, type ChainCall } from "../bench/criticalPath.ts";
import { call, chainRequest, clientGasFields, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, projectEndpoints, type Embedded } from "./helpers/stack.ts";

describe("a development chain whose clock runs ahead: every op signed lands", function () {
  this.timeout(120_000);
  let embedded: Embedded;

  before(async () => {
    embedded = await startTestStack();
  });
  after(async () => {
    await embedded?.close();
  });

  const latestTimestamp = async () => Number(BigInt((await chainRequest<{ timestamp: string }>(embedded, "eth_getBlockByNumber", ["latest", false])).timestamp));
  const wallNow = () => Math.floor(Date.now() / 1000);

  /** Ways a development chain's clock moves, each done right before a signing call. */
  const moves: { what: string; move(): Promise<unknown> }[] = [
    { what: "120 blocks mined at once (one second apart each, far faster than one a second)", move: () => chainRequest(embedded, "hardhat_mine", ["0x78"]) },
    { what: "evm_increaseTime by an hour, then a block mined", move: async () => (await chainRequest(embedded, "evm_increaseTime", [3600]), chainRequest(embedded, "evm_mine", [])) },
    { what: "evm_increaseTime by half an hour, no block mined yet (the op's block carries it)", move: () => chainRequest(embedded, "evm_increaseTime", [1800]) },
    { what: "evm_setNextBlockTimestamp a day ahead of the latest block, then a block mined", move: async () => (await chainRequest(embedded, "evm_setNextBlockTimestamp", [(await latestTimestamp()) + 86_400]), chainRequest(embedded, "evm_mine", [])) },
    { what: "10 blocks mined an hour apart each", move: () => chainRequest(embedded, "hardhat_mine", ["0xa", "0xe10"]) },
  ];

  /** Each signing request's chain calls (sequential, after one warm-up), through a forwarder adding 80 ms per round trip. */
  async function signingCalls(chainClock: "auto" | "wall"): Promise<{ method: string; inWindow: string[]; path: string }[]> {
    const calls: ChainCall[] = [];
    const forwarder = await startForwarder(embedded.stack.chain.url, { delayMs: 80, calls });
    const network = { ...localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: forwarder.url, signerKey: embedded.stack.signer.privateKey }), chainClock };
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-clockpath-")), "data");
    const running = await startService(embeddedConfig(network, dataDir, 0, "silent"), { pollMs: 60_000, watch: false });
    try {
      const { v1, standard } = await projectEndpoints(running.service.store, running.url, "clock path", "CLOCKPATH");
      const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
      const seen: { method: string; inWindow: string[]; path: string }[] = [];
      // The first request finds the per-block reads (fees, deposits) cold: it warms them and is not counted.
      for (const [i, method] of (["pm_sponsorUserOperation", "pm_getPaymasterData", "pm_sponsorUserOperation", "pm_getPaymasterData", "pm_sponsorUserOperation"] as const).entries()) {
        const wallet = await newWallet(embedded, "v0.7");
        const window = { start: 0, end: 0 };
        if (method === "pm_getPaymasterData") {
          const op = { ...wireOp(wallet, executeCallData(wallet.owner.address)), ...(await clientGasFields(embedded)) };
          window.start = performance.now();
          const response = await fetch(standard, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: 1, jsonrpc: "2.0", method, params: [op, entryPoint, "0x7a69", { strategy_code: "CLOCKPATH" }] }) });
          const body = (await response.json()) as { result?: unknown; error?: unknown };
          window.end = performance.now();
          expect(body.result, JSON.stringify(body.error)).to.not.equal(undefined);
        } else {
          const wire = wireOp(wallet, executeCallData(wallet.owner.address));
          window.start = performance.now();
          const { status, body } = await call(v1, method, [wire, { strategy_code: "CLOCKPATH", version: "v0.7" }]);
          window.end = performance.now();
          expect(status, JSON.stringify(body)).to.equal(200);
        }
        const path = criticalPath(calls, window);
        const inWindow = calls.filter((c) => c.start >= window.start && c.end <= window.end).map((c) => c.method);
        if (i > 0) seen.push({ method, inWindow, path: `${method}: ${path.sequential} (${path.methods.join(" -> ")})` });
      }
      return seen;
    } finally {
      await running.close();
      await forwarder.close();
    }
  }

  it('chainClock "wall" (the operator says the chain keeps the wall clock, as public chains do) on the same chain: no clock read at all, one round trip', async () => {
    const seen = await signingCalls("wall");
    expect(seen.flatMap((s) => s.inWindow.filter((m) => m === "eth_getBlockByNumber").map(() => s.method)), "clock reads inside a request").to.deep.equal([]);
    expect(seen.map((s) => s.path).filter((p) => !/: 1 \(/.test(p)), "requests that waited for more than one chain round trip").to.deep.equal([]);
  });

  it("moves its clock ahead in five ways; each op signed right after (v0.6 and v0.7, twice round) lands via handleOps", async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 2; round++) {
      for (const { what, move } of moves) {
        await move();
        for (const version of ["v0.6", "v0.7"] as const) {
          const wallet = await newWallet(embedded, version);
          const wire = wireOp(wallet, executeCallData(wallet.owner.address));
          const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version }]);
          if (answer.status !== 200) {
            outcomes.push(`${what} (${version}): not signed: ${answer.body.message}`);
            continue;
          }
          const landed = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, answer.body.data)));
          outcomes.push(`${what} (${version}): ${landed.reverted ? `reverted ${landed.failedOp}` : landed.event?.success ? "landed" : "no UserOperationEvent"}`);
        }
      }
    }
    expect(outcomes.filter((o) => !o.endsWith(": landed")), "ops that did not land").to.deep.equal([]);
    expect((await latestTimestamp()) - wallNow(), "the chain's clock ran days ahead").to.be.above(2 * 86_400);
  });

  it("the fresh clocks are read beside the request's chain call: pm_getPaymasterData and pm_sponsorUserOperation each wait for ONE chain round trip (a delaying forwarder in front of the chain)", async () => {
    const seen = await signingCalls("auto");
    for (const { method, inWindow } of seen) expect(inWindow, `${method}: the chain's fresh clocks were read inside the request`).to.include("eth_getBlockByNumber");
    expect(seen.map((s) => s.path).filter((p) => !/: 1 \(/.test(p)), "requests that waited for more than one chain round trip").to.deep.equal([]);
  });
});
