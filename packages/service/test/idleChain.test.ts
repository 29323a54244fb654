// Signatures on an idle dev chain: the embedded chain mines only on demand, so its latest block can be minutes
// older than the wall clock. The service's wall clock is set 120 s past the chain's latest block (what a chain
// with no block for 120 s looks like to it; no test waits 120 real seconds), and an op is sponsored: the
// service's own final simulation at the latest block, and then the EntryPoint, must find the signature due.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { decodeVerifyingPaymasterData } from "@paymaster/shared";
import { embeddedConfig, executeCallData, seedDemo } from "../src/local/embedded.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { startService, type RunningService } from "../src/server.ts";
import { validityWindow, VALID_AFTER_SLACK_SECONDS } from "../src/sponsor/validityWindow.ts";
import { call, chainRequest, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const IDLE_SECONDS = 120;

describe("signatures on an idle chain (the latest block older than the wall clock)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let running: RunningService;
  let endpoint: string;

  before(async () => {
    embedded = await startTestStack();
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-idle-")), "data");
    const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    let offset = 0;
    running = await startService(embeddedConfig(network, dataDir, 0, "silent"), { watch: false, now: () => Math.floor(Date.now() / 1000) + offset });
    const request = (method: string, params: unknown[]) => embedded.stack.chain.provider.request({ method, params });
    const demo = await seedDemo(running.service.store, request, embedded.stack.manifest, embedded.stack.owner.address, embedded.stack.chain.accounts[3]!.address);
    endpoint = `${running.url}/api/v1/paymaster/local?apiKey=${demo.apiKey}`;
    // From here the service's "now" is the latest block's time plus the idle time (seeding mined blocks before).
    const latest = await chainRequest<{ timestamp: string }>(embedded, "eth_getBlockByNumber", ["latest", false]);
    offset = Number(BigInt(latest.timestamp)) + IDLE_SECONDS - Math.floor(Date.now() / 1000);
  });
  after(async () => {
    await running?.close();
    await embedded?.close();
  });

  it("the window: validAfter from the earlier clock, validUntil from the later one", () => {
    expect(validityWindow({ wallNow: 10_000, chainNow: 9_800, ttlSeconds: 300 })).to.deep.equal({ validAfter: 9_800 - VALID_AFTER_SLACK_SECONDS, validUntil: 10_300 });
    expect(validityWindow({ wallNow: 9_800, chainNow: 10_000, ttlSeconds: 300 })).to.deep.equal({ validAfter: 9_800 - VALID_AFTER_SLACK_SECONDS, validUntil: 10_300 });
    expect(validityWindow({ wallNow: 30, chainNow: 30, ttlSeconds: 300 }).validAfter).to.equal(0);
  });

  it(`an op sponsored ${IDLE_SECONDS} s after the latest block is due at that block and lands`, async () => {
    const latest = await chainRequest<{ timestamp: string }>(embedded, "eth_getBlockByNumber", ["latest", false]);
    const chainNow = Number(BigInt(latest.timestamp));
    expect(running.service.now() - chainNow, "the service's clock runs past the chain's").to.be.at.least(IDLE_SECONDS - 5);
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const answer = await call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: "DEMO", version: "v0.7" }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const { paymasterAndData } = answer.body.data.userOpResponse;
    // v0.7: address (20 bytes), the two gas limits (32 bytes), then the paymaster data.
    const window = decodeVerifyingPaymasterData(`0x${paymasterAndData.slice(2 + 40 + 64)}`);
    expect(window.validAfter, "due at the latest block").to.be.at.most(chainNow);
    expect(window.validUntil, "valid for the TTL from the later clock").to.be.at.least(running.service.now() + 290);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, answer.body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    expect(outcome.event!.success).to.equal(true);
  });
});
