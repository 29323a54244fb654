// Webhooks in a running service on a real local chain: a hanging event receiver (a TCP proxy that accepts and
// never answers) does not slow sponsorship, and the events arrive once it answers; the approval webhook allows,
// denies with its reason, and decides by the project's default when it does not answer in time.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import type { Address } from "@paymaster/shared";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { startService, type RunningService } from "../src/server.ts";
import { createApprovalWebhook, createEventWebhook, deleteWebhook } from "../src/webhooks/admin.ts";
import { verifySignature } from "../src/webhooks/signature.ts";
import { call, deployAccount, startTestStack, type Embedded } from "./helpers/stack.ts";
import { startTcpProxy } from "./helpers/tcpProxy.ts";
import { startWebhookReceiver } from "./helpers/webhookReceiver.ts";

describe("webhooks in the running service", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let running: RunningService;
  let sender: Address;
  let nonceKey = 700n;

  before(async () => {
    embedded = await startTestStack();
    sender = await deployAccount(embedded, 6);
    // A service of its own on the stack's chain, with quick delivery settings (a 500 ms attempt timeout).
    const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-hooks-svc-")), "data");
    running = await startService(
      { ...embeddedConfig(network, dataDir, 0, "silent"), webhooks: { timeoutMs: 500, baseDelayMs: 100, maxDelayMs: 400, pollMs: 50, maxAttempts: 50 } },
      { pollMs: 100, watch: false },
    );
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

  async function sponsor(p: { key: string; code: string }) {
    const op = {
      sender,
      nonce: `0x${(nonceKey++ << 64n).toString(16)}`,
      callData: executeCallData(embedded.stack.chain.accounts[6]!.address),
      signature: `0x${"aa".repeat(32)}${"55".repeat(32)}1c`,
    };
    const started = performance.now();
    const answer = await call(`${running.url}/api/v1/paymaster/local?apiKey=${p.key}`, "pm_sponsorUserOperation", [op, { strategy_code: p.code, version: "v0.7" }]);
    return { ...answer, ms: performance.now() - started, nonce: op.nonce };
  }

  it("a hanging event receiver does not slow sponsorship; its events arrive once it answers", async () => {
    const hook = await startWebhookReceiver();
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: hook.port }, "hang");
    try {
      const quiet = await project("quiet");
      const hooked = await project("hooked");
      const { secret } = await createEventWebhook(running.service.store, { projectId: hooked.projectId, url: `http://127.0.0.1:${proxy.port}/hooks`, events: ["sponsorship.signed"] });
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
      // A sponsor call that waited on the receiver would take at least one attempt's timeout (500 ms) more.
      expect(max(withHang), "sponsor latency with a hanging receiver").to.be.below(max(baseline) + 400);
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
      let approval = await createApprovalWebhook(store, { projectId: p.projectId, url: hook.url, timeoutMs: 300 });

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
      approval = await createApprovalWebhook(store, { projectId: p.projectId, url: hook.url, timeoutMs: 300, defaultDecision: "allow" });
      const allowedByDefault = await sponsor(p);
      expect(allowedByDefault.status, "default-allow signs when the endpoint does not answer").to.equal(200);
      hook.mode = "ok";
      hook.answer = () => ({ maybe: true });
      expect((await sponsor(p)).status, "a malformed answer is no decision: default-allow").to.equal(200);
    } finally {
      await hook.close();
    }
  });
});
