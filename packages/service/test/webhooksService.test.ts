// Webhooks in a running service on a real local chain: a hanging event receiver (a TCP proxy that accepts and
// never answers) does not slow sponsorship, and the events arrive once it answers; the approval webhook allows,
// denies with its reason, and decides by the project's default when it does not answer in time.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import type { Address, Hex } from "@paymaster/shared";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { startService, type RunningService } from "../src/server.ts";
import { createApprovalWebhook, createEventWebhook, deleteWebhook } from "../src/webhooks/admin.ts";
import { destinationPolicy } from "../src/webhooks/destination.ts";
import { verifySignature } from "../src/webhooks/signature.ts";
import { call, chainRequest, deployAccount, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";
import { createTestDatabase } from "./helpers/postgres.ts";
import { startTcpProxy } from "./helpers/tcpProxy.ts";
import { startWebhookReceiver } from "./helpers/webhookReceiver.ts";

/** The receivers listen on 127.0.0.1, which the default refuses: allowed explicitly, as an operator would. */
const QUICK = { timeoutMs: 2_000, baseDelayMs: 100, maxDelayMs: 400, pollMs: 50, maxAttempts: 50, allowedDestinations: ["127.0.0.1/32"] };
const LOOPBACK_RECEIVERS = destinationPolicy({ allowed: QUICK.allowedDestinations });

const MANY_OPEN = { maxOutstandingPerSender: 1000 };

describe("webhooks in the running service", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let running: RunningService;
  let sender: Address;
  let nonceKey = 700n;

  before(async () => {
    embedded = await startTestStack();
    sender = await deployAccount(embedded, 6);
    // A service of its own on the stack's chain, with quick delivery settings (a 2 s attempt timeout).
    // The embedded stack's network settings (1 confirmation, a 500 ms watcher poll).
    const network = embedded.running.service.config.networks[0]!;
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-hooks-svc-")), "data");
    // One deployed sender on many nonce keys makes this file's ops: the per-sender bound on open reservations (4) is
    // lifted, as the webhooks, not the bound, are under test here.
    running = await startService({ ...embeddedConfig(network, dataDir, 0, "silent"), webhooks: QUICK, reservations: MANY_OPEN }, { pollMs: 100, watch: true });
    await running.initialised;
  });
  after(async () => {
    await running?.close();
    await embedded?.close();
  });

  async function project(name: string) {
    const store = running.service.store;
    const p = await store.createProject(name);
    const { plaintext } = await store.createApiKey(p.id);
    const code = `HOOK${name.toUpperCase()}`;
    await store.createStrategy({ projectId: p.id, code, name: code });
    return { projectId: p.id, key: plaintext, code };
  }

  async function sponsor(p: { key: string; code: string }, url = running.url) {
    const op = {
      sender,
      nonce: `0x${(nonceKey++ << 64n).toString(16)}`,
      callData: executeCallData(embedded.stack.chain.accounts[6]!.address),
      signature: `0x${"aa".repeat(32)}${"55".repeat(32)}1c`,
    };
    const started = performance.now();
    const answer = await call(`${url}/api/v1/paymaster/local?apiKey=${p.key}`, "pm_sponsorUserOperation", [op, { strategy_code: p.code, version: "v0.7" }]);
    return { ...answer, ms: performance.now() - started, nonce: op.nonce };
  }

  it("a hanging event receiver does not slow sponsorship; its events arrive once it answers", async () => {
    const hook = await startWebhookReceiver();
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: hook.port }, "hang");
    try {
      const quiet = await project("quiet");
      const hooked = await project("hooked");
      const { secret } = await createEventWebhook(running.service.store, { projectId: hooked.projectId, url: `http://127.0.0.1:${proxy.port}/hooks`, events: ["sponsorship.signed"] }, LOOPBACK_RECEIVERS);
      await sponsor(quiet); // warm-up
      const baseline: number[] = [];
      const withHang: number[] = [];
      for (let i = 0; i < 4; i++) {
        const a = await sponsor(quiet);
        const b = await sponsor(hooked);
        expect([a.status, b.status]).to.deep.equal([200, 200]);
        baseline.push(a.ms);
        withHang.push(b.ms);
      }
      const max = (xs: number[]) => Math.max(...xs);
      console.log(`      sponsor latency, ms: no webhook ${baseline.map((x) => x.toFixed(0)).join(" ")}; hanging receiver ${withHang.map((x) => x.toFixed(0)).join(" ")}`);
      // A sponsor call that waited on the receiver would take at least one attempt's timeout (2 s) more.
      expect(max(withHang), "sponsor latency with a hanging receiver").to.be.below(max(baseline) + 1_000);
      const outbox = await running.service.store.listWebhookDeliveries({ projectId: hooked.projectId });
      expect(outbox.length).to.equal(4);
      expect(proxy.mode()).to.equal("hang");
      await proxy.setMode("pass");
      await hook.waitFor(() => hook.delivered().length >= 4, 20_000);
      await new Promise((r) => setTimeout(r, 200));
      expect(hook.delivered().map((r) => r.id).sort()).to.deep.equal(outbox.map((d) => d.id).sort());
      for (const r of hook.delivered()) expect(verifySignature(secret, r.signature, r.body, Math.floor(Date.now() / 1000))).to.equal(true);
      expect(hook.delivered().map((r) => r.json.data.sender)).to.deep.equal(Array(4).fill(sender));
    } finally {
      await proxy.close();
      await hook.close();
    }
  });

  it("approval webhook: allow, deny with its reason, and no answer decided by default-deny or default-allow", async () => {
    const hook = await startWebhookReceiver();
    const store = running.service.store;
    try {
      const p = await project("approved");
      let approval = await createApprovalWebhook(store, { projectId: p.projectId, url: hook.url, timeoutMs: 300 }, LOOPBACK_RECEIVERS);

      hook.answer = () => ({ approve: true });
      const allowed = await sponsor(p);
      expect(allowed.status).to.equal(200);
      const asked = hook.requests.at(-1)!;
      expect(asked.type).to.equal("sponsorship.approval");
      expect(verifySignature(approval.secret, asked.signature, asked.body, Math.floor(Date.now() / 1000)), "signed with the approval secret").to.equal(true);
      expect(asked.json.data).to.include({ sender, nonce: BigInt(allowed.nonce).toString(), mode: "sponsor", strategyCode: p.code, network: "local", version: "v0.7" });

      hook.answer = () => ({ approve: false, reason: "sender is not a player" });
      const denied = await sponsor(p);
      expect(denied.status).to.equal(403);
      expect(denied.body.data).to.include({ reason: "APPROVAL_DENIED" });
      expect(denied.body.message).to.include("sender is not a player");
      const pending = await store.listWebhookDeliveries({ projectId: p.projectId });
      expect(pending, "nothing signed, no event").to.deep.equal([]);

      hook.mode = "hang";
      const timedOut = await sponsor(p);
      expect(timedOut.status).to.equal(403);
      expect(timedOut.body.message).to.match(/timed out after 300 ms.*denies by default/);
      expect(timedOut.ms, "bounded by the approval timeout").to.be.below(allowed.ms + 1_500);

      await deleteWebhook(store, approval.endpoint.id);
      approval = await createApprovalWebhook(store, { projectId: p.projectId, url: hook.url, timeoutMs: 300, defaultDecision: "allow" }, LOOPBACK_RECEIVERS);
      const allowedByDefault = await sponsor(p);
      expect(allowedByDefault.status, "default-allow signs when the endpoint does not answer").to.equal(200);
      hook.mode = "ok";
      hook.answer = () => ({ maybe: true });
      expect((await sponsor(p)).status, "a malformed answer is no decision: default-allow").to.equal(200);
    } finally {
      await hook.close();
    }
  });

  it("sponsorship.settled carries what the chain charged, from the settlement watcher", async () => {
    const hook = await startWebhookReceiver();
    try {
      const p = await project("landed");
      await createEventWebhook(running.service.store, { projectId: p.projectId, url: hook.url, events: ["sponsorship.signed", "sponsorship.settled"] }, LOOPBACK_RECEIVERS);
      const wallet = await newWallet(embedded, "v0.7");
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const { status, body } = await call(`${running.url}/api/v1/paymaster/local?apiKey=${p.key}`, "pm_sponsorUserOperation", [wire, { strategy_code: p.code, version: "v0.7" }]);
      expect(status, JSON.stringify(body)).to.equal(200);
      const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
      expect(outcome.event, outcome.failedOp).to.not.equal(undefined);
      await chainRequest(embedded, "evm_mine", []); // the one confirmation the local network waits for
      await hook.waitFor(() => hook.delivered().some((r) => r.type === "sponsorship.settled"), 30_000);
      const [signed, settled] = hook.delivered();
      expect([signed!.type, settled!.type], "signed, then settled").to.deep.equal(["sponsorship.signed", "sponsorship.settled"]);
      const receipt = await chainRequest<{ transactionHash: Hex; blockNumber: Hex }>(embedded, "eth_getTransactionReceipt", [settled!.json.data.txHash]);
      expect(settled!.json.data).to.include({
        sender: wallet.sender,
        userOpHash: outcome.event!.userOpHash,
        actualGasCostWei: outcome.event!.actualGasCost.toString(),
        success: true,
        blockNumber: BigInt(receipt.blockNumber).toString(),
      });
    } finally {
      await hook.close();
    }
  });

  it("two replicas on PostgreSQL deliver each event once", async () => {
    const database = await createTestDatabase("paymaster_hooks");
    const hook = await startWebhookReceiver();
    const replicas: RunningService[] = [];
    try {
      const network = embedded.running.service.config.networks[0]!;
      const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-hooks-pg-")), "data");
      for (let i = 0; i < 2; i++) {
        replicas.push(await startService({ ...embeddedConfig(network, dataDir, 0, "silent"), databaseUrl: database.url, webhooks: { ...QUICK, pollMs: 20 }, reservations: MANY_OPEN }, { pollMs: 100, watch: false }));
      }
      await Promise.all(replicas.map((r) => r.initialised));
      const store = replicas[0]!.service.store;
      const created = await store.createProject("replicas");
      const { plaintext } = await store.createApiKey(created.id);
      await store.createStrategy({ projectId: created.id, code: "HOOKPG", name: "HOOKPG" });
      await createEventWebhook(store, { projectId: created.id, url: hook.url, events: ["sponsorship.signed"] }, LOOPBACK_RECEIVERS);
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => sponsor({ key: plaintext, code: "HOOKPG" }, replicas[i % 2]!.url)));
      expect(answers.map((a) => a.status)).to.deep.equal(Array(8).fill(200));
      await hook.waitFor(() => hook.requests.length >= 8, 20_000);
      await new Promise((r) => setTimeout(r, 500)); // a second send of any event would arrive by now
      expect(hook.requests.length, "each event once").to.equal(8);
      expect(new Set(hook.requests.map((r) => r.id)).size).to.equal(8);
      expect((await store.listWebhookDeliveries({ status: "delivered" })).length).to.equal(8);
    } finally {
      for (const r of replicas) await r.close();
      await hook.close();
      await database.drop();
    }
  });
});
