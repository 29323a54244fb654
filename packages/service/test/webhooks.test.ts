// Webhooks against the real store (SQLite and PostgreSQL) and real HTTP receivers on 127.0.0.1: the outbox rows
// each transition writes (and their content), signatures checked with the snippet docs/webhooks.md shows,
// delivery through a receiver that is down and comes back (a real refused port), backoff and dead letters,
// replay, a hanging receiver, and two replicas sharing one database delivering each event once.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { expect } from "chai";
import type { Address, Hex } from "@paymaster/shared";
import { createLogger } from "../src/log.ts";
import { ServiceMetrics } from "../src/metrics/metrics.ts";
import { openPostgresStore, openSqliteStore } from "../src/store/index.ts";
import type { NewSponsorship, Settlement, Store, WebhookDelivery } from "../src/store/types.ts";
import type { CapCheck } from "../src/policy/types.ts";
import {
  createApprovalWebhook,
  createEventWebhook,
  deleteWebhook,
  listDeadLetters,
  listDeliveries,
  listWebhooks,
  replayDelivery,
} from "../src/webhooks/admin.ts";
import { destinationPolicy } from "../src/webhooks/destination.ts";
import { verifySignature } from "../src/webhooks/signature.ts";
import { emitDepositLow } from "../src/webhooks/systemEvents.ts";
import { backoffMs, startWebhookWorker, type DeliverySettings, type WebhookWorker } from "../src/webhooks/worker.ts";
import { createTestDatabase } from "./helpers/postgres.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";
import { startTcpProxy } from "./helpers/tcpProxy.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./helpers/webhookReceiver.ts";

const NET = "base-sepolia";
const EP = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789" as Address;
const SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as Address;
const HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as Hex;
const logger = createLogger("silent");
/** The receivers here listen on 127.0.0.1, which the default refuses: allowed explicitly, as an operator would. */
const LOOPBACK_RECEIVERS = destinationPolicy({
  allowed: ["127.0.0.1/32"],
  // No test resolves a real name: the few endpoints named "x.test" are never reachable.
  resolve: async () => Promise.reject(Object.assign(new Error("no name resolution in tests"), { code: "ENOTFOUND" })),
});

/** The verify function exactly as docs/webhooks.md shows it, imported from a file of its own. */
async function documentedVerify(): Promise<(secret: string, header: string, body: string) => boolean> {
  const doc = readFileSync(new URL("../docs/webhooks.md", import.meta.url), "utf8");
  const match = /<!-- verify-snippet[^>]*-->\s*```js\n([\s\S]*?)```/.exec(doc);
  if (!match) throw new Error("docs/webhooks.md has no verify snippet");
  const file = path.join(mkdtempSync(path.join(tmpdir(), "webhook-snippet-")), "verify.mjs");
  writeFileSync(file, match[1]!);
  return (await import(pathToFileURL(file).href)).verifyWebhook;
}

interface Opened {
  store: Store;
  /** A second store on the same database: another replica. */
  another(): Promise<Store>;
  drop(): Promise<void>;
}

const DIALECTS: { name: string; open(): Promise<Opened> }[] = [
  {
    name: "SQLite",
    async open() {
      const file = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-hooks-")), "paymaster.sqlite");
      return { store: await openSqliteStore(file), another: async () => openSqliteStore(file), drop: async () => {} };
    },
  },
  {
    name: "PostgreSQL",
    async open() {
      const db = await createTestDatabase("paymaster_hooks");
      return { store: await openPostgresStore(db.url), another: () => openPostgresStore(db.url), drop: () => db.drop() };
    },
  },
];

function settlement(n: number): Settlement {
  return {
    actualGasCostWei: 40_000n + BigInt(n),
    actualCostUsdMicros: 120_000n,
    actualTokenCost: null,
    success: true,
    txHash: HASH(1000 + n),
    blockNumber: 100n + BigInt(n),
    blockHash: HASH(2000 + n),
    logIndex: n,
  };
}

const FAST: Partial<DeliverySettings> = { pollMs: 10, baseDelayMs: 30, maxDelayMs: 300, maxAttempts: 50, timeoutMs: 2_000, concurrency: 4 };

for (const dialect of DIALECTS) {
  describe(`webhooks on ${dialect.name}`, function () {
    this.timeout(60_000);
    let opened: Opened;
    let store: Store;
    const cleanups: (() => Promise<unknown> | unknown)[] = [];

    beforeEach(async () => {
      opened = await dialect.open();
      store = opened.store;
    });
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
      await store.close();
      await opened.drop();
    });

    async function project(name = "p") {
      const p = await store.createProject(name);
      const { apiKey } = await store.createApiKey(p.id);
      return { projectId: p.id, apiKeyId: apiKey.id };
    }

    function op(ids: { projectId: string; apiKeyId: string }, nonce: bigint, over: Partial<NewSponsorship> = {}): NewSponsorship {
      return sponsorshipInput(ids, {
        network: NET,
        entryPoint: EP,
        sender: SENDER,
        nonce,
        maxCostWei: 1_000n,
        maxCostUsdMicros: 10n,
        userOpHash: HASH(Number(nonce) + 1),
        ...over,
      });
    }

    async function signed(ids: { projectId: string; apiKeyId: string }, nonce: bigint, over: Partial<NewSponsorship> = {}): Promise<string> {
      // Reserving is signing: the row is inserted signed, with its sponsorship.signed event.
      const r = await store.reserveSponsorship(op(ids, nonce, over));
      if (!r.ok) throw new Error("reservation refused");
      return r.record.id;
    }

    async function receiver(mode: "ok" | "fail" | "hang" = "ok"): Promise<WebhookReceiver> {
      const r = await startWebhookReceiver(mode);
      cleanups.push(() => r.close());
      return r;
    }

    function worker(settings: Partial<DeliverySettings>, on: Store = store, autoStart = true): WebhookWorker {
      const w = startWebhookWorker({ store: on, logger, settings, autoStart, destinations: LOOPBACK_RECEIVERS });
      cleanups.push(() => w.stop());
      return w;
    }

    const payload = (d: WebhookDelivery) => JSON.parse(d.payload);
    const oldestFirst = async (projectId: string) => (await listDeliveries(store, { projectId })).reverse();

    it("each transition writes its event with the transition, with the sponsorship's content", async () => {
      const ids = await project();
      const other = await project("other");
      const all = await createEventWebhook(store, { projectId: ids.projectId, url: "http://127.0.0.1:9/all" }, LOOPBACK_RECEIVERS);
      const settledOnly = await createEventWebhook(store, { projectId: ids.projectId, url: "http://127.0.0.1:9/settled", events: ["sponsorship.settled"] }, LOOPBACK_RECEIVERS);
      await createEventWebhook(store, { projectId: other.projectId, url: "http://127.0.0.1:9/other" }, LOOPBACK_RECEIVERS);

      // signed (reserved and signed in one transaction): sponsorship.signed; then settled
      const id1 = await signed(ids, 1n);
      await store.settleSponsorship(id1, settlement(1));

      const id2 = await signed(ids, 2n);
      await store.releaseSponsorship(id2);
      const id4 = await signed(ids, 4n);
      const id4b = await signed(ids, 4n); // the same op asked again: the first is replaced
      const id5 = await signed(ids, 5n, { validUntil: 1_800_000_000 });
      expect(await store.releaseExpired(1_900_000_000, 0)).to.equal(1);

      const rows = await oldestFirst(ids.projectId);
      const forAll = rows.filter((d) => d.endpointId === all.endpoint.id);
      expect(forAll.map((d) => [d.type, d.sponsorshipId, d.seq])).to.have.deep.members([
        ["sponsorship.signed", id1, 1],
        ["sponsorship.settled", id1, 2],
        ["sponsorship.signed", id2, 1],
        ["sponsorship.released", id2, 2],
        ["sponsorship.signed", id4, 1],
        ["sponsorship.released", id4, 2],
        ["sponsorship.signed", id4b, 1],
        ["sponsorship.signed", id5, 1],
        ["sponsorship.released", id5, 2],
      ]);
      expect(rows.filter((d) => d.endpointId === settledOnly.endpoint.id).map((d) => d.type)).to.deep.equal(["sponsorship.settled"]);
      expect(await listDeliveries(store, { projectId: other.projectId }), "another project's endpoint hears nothing").to.deep.equal([]);
      expect(new Set(rows.map((d) => d.id)).size, "one id per event and endpoint").to.equal(rows.length);
      expect(rows.every((d) => d.status === "pending" && d.attempts === 0)).to.equal(true);

      const find = (type: string, id: string) => payload(forAll.find((d) => d.type === type && d.sponsorshipId === id)!);
      const signedBody = find("sponsorship.signed", id1);
      const settledBody = find("sponsorship.settled", id1);
      expect(signedBody).to.include({ id: forAll.find((d) => d.type === "sponsorship.signed" && d.sponsorshipId === id1)!.id, type: "sponsorship.signed", projectId: ids.projectId });
      expect(signedBody.data).to.include({ sponsorshipId: id1, network: NET, sender: SENDER, nonce: "1", mode: "sponsor", userOpHash: HASH(2), maxCostWei: "1000" });
      expect(settledBody.data).to.include({ sponsorshipId: id1, actualGasCostWei: "40001", txHash: HASH(1001), blockNumber: "101", success: true, userOpHash: HASH(2) });
      expect(find("sponsorship.released", id2).data.reason).to.equal("released");
      expect(find("sponsorship.released", id4).data.reason).to.equal("replaced");
      expect(find("sponsorship.released", id5).data.reason).to.equal("expired");

      // A transition that does not happen writes nothing: releasing twice and settling twice are no-ops.
      const before = rows.length;
      await store.releaseSponsorship(id2);
      expect(await store.settleSponsorship(id1, settlement(1))).to.equal(false);
      expect((await oldestFirst(ids.projectId)).length).to.equal(before);
    });

    it("cap.reached: once per cap, window and limit, with the refusal; the refusal still reserves nothing", async () => {
      const ids = await project();
      const strategy = await store.createStrategy({ projectId: ids.projectId, code: "CAPPED", name: "capped" });
      await createEventWebhook(store, { projectId: ids.projectId, url: "http://127.0.0.1:9/h", events: ["cap.reached"] }, LOOPBACK_RECEIVERS);
      const caps: CapCheck[] = [{ scope: "global", key: "", maxOps: 1, rulePrefix: "caps.global" }];
      const withStrategy = (n: bigint) => op(ids, n, { strategyId: strategy.id });
      expect((await store.reserveSponsorship(withStrategy(1n), caps)).ok).to.equal(true);
      for (const n of [2n, 3n, 4n]) expect(await store.reserveSponsorship(withStrategy(n), caps)).to.include({ ok: false, reason: "CAP_EXCEEDED" });
      let rows = await oldestFirst(ids.projectId);
      expect(rows.map((d) => d.type)).to.deep.equal(["cap.reached"]);
      expect(payload(rows[0]!).data).to.include({ strategyId: strategy.id, rule: "caps.global.maxOps", scope: "global", key: "", limit: "1", attempted: "2" });
      expect((await store.getUsage(strategy.id, "global", "")).ops, "refusals reserve nothing").to.equal(1);
      // A raised limit reached again is news again.
      const raised: CapCheck[] = [{ scope: "global", key: "", maxOps: 2, rulePrefix: "caps.global" }];
      expect((await store.reserveSponsorship(withStrategy(5n), raised)).ok).to.equal(true);
      expect((await store.reserveSponsorship(withStrategy(6n), raised)).ok).to.equal(false);
      rows = await oldestFirst(ids.projectId);
      // Both may carry the same millisecond (the listing's order within one is arbitrary): compare as a set.
      expect(rows.map((d) => payload(d).data.limit)).to.have.members(["1", "2"]);
    });

    it("deposit.low reaches every project's subscribers, once per paymaster and hour", async () => {
      const a = await project("a");
      const b = await project("b");
      await createEventWebhook(store, { projectId: a.projectId, url: "http://127.0.0.1:9/a", events: ["deposit.low"] }, LOOPBACK_RECEIVERS);
      await createEventWebhook(store, { projectId: b.projectId, url: "http://127.0.0.1:9/b" }, LOOPBACK_RECEIVERS);
      await createEventWebhook(store, { projectId: b.projectId, url: "http://127.0.0.1:9/b2", events: ["sponsorship.signed"] }, LOOPBACK_RECEIVERS);
      const data = { network: NET, version: "v0.7", kind: "verifying", paymaster: SENDER, depositWei: "5", thresholdWei: "10" };
      const at = Date.UTC(2026, 10, 23, 12, 5);
      expect(await emitDepositLow(store, data, at)).to.equal(2);
      expect(await emitDepositLow(store, data, at + 60_000), "another replica in the same hour").to.equal(0);
      expect(await emitDepositLow(store, data, at + 3_600_000), "the next hour").to.equal(2);
      const rows = await listDeliveries(store, {});
      expect(rows.map((d) => d.type)).to.deep.equal(Array(4).fill("deposit.low"));
      expect(payload(rows[0]!).data).to.deep.equal(data);
    });

    it("delivers signed requests that the documented snippet verifies; a changed body or another secret does not", async () => {
      const ids = await project();
      const hook = await receiver();
      const { secret } = await createEventWebhook(store, { projectId: ids.projectId, url: hook.url }, LOOPBACK_RECEIVERS);
      await signed(ids, 1n);
      const w = worker(FAST, store, false);
      expect(await w.runOnce()).to.equal(1);
      const [request] = hook.delivered();
      expect(request, "one request").to.not.equal(undefined);
      const verify = await documentedVerify();
      expect(verify(secret, request!.signature, request!.body), "the docs' snippet").to.equal(true);
      expect(verifySignature(secret, request!.signature, request!.body, Math.floor(Date.now() / 1000))).to.equal(true);
      expect(verify(secret, request!.signature, request!.body.replace('"nonce":"1"', '"nonce":"2"'))).to.equal(false);
      expect(verify(`${secret}x`, request!.signature, request!.body)).to.equal(false);
      expect(request!.signature).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(request!.id).to.equal(request!.json.id);
      expect(request!.type).to.equal("sponsorship.signed");
      const stored = await store.getWebhookDelivery(request!.id);
      expect(stored).to.include({ status: "delivered", attempts: 1 });
      expect(await w.runOnce(), "nothing left").to.equal(0);
    });

    it("a receiver down for a while, then up: every event delivered exactly once by id, in order per sponsorship", async () => {
      const ids = await project();
      const hook = await receiver();
      const proxy = await startTcpProxy({ host: "127.0.0.1", port: hook.port }, "refuse");
      cleanups.push(() => proxy.close());
      await createEventWebhook(store, { projectId: ids.projectId, url: `http://127.0.0.1:${proxy.port}/hooks` }, LOOPBACK_RECEIVERS);
      const sponsorships: string[] = [];
      for (let n = 1; n <= 8; n++) {
        const id = await signed(ids, BigInt(n));
        sponsorships.push(id);
        if (n % 2 === 0) await store.settleSponsorship(id, settlement(n));
        else await store.releaseSponsorship(id);
      }
      worker(FAST);
      // Down: attempts fail with the refusal as their error, nothing is delivered.
      const deadline = Date.now() + 10_000;
      while (!(await listDeliveries(store, {})).some((d) => d.attempts >= 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const down = await listDeliveries(store, {});
      expect(down.filter((d) => d.attempts > 0).map((d) => d.lastError)).to.satisfy((errors: string[]) => errors.length > 0 && errors.every((e) => /refused|reset|closed/.test(e)));
      expect(hook.requests.length).to.equal(0);
      // Up again.
      await proxy.setMode("pass");
      await hook.waitFor(() => hook.delivered().length >= 16);
      await new Promise((r) => setTimeout(r, 300)); // a duplicate, if any, would arrive now
      const events = await listDeliveries(store, {});
      expect(events.length).to.equal(16);
      expect(events.every((d) => d.status === "delivered")).to.equal(true);
      const received = hook.requests.map((r) => r.id);
      expect([...received].sort(), "each event exactly once").to.deep.equal(events.map((d) => d.id).sort());
      for (const id of sponsorships) {
        const types = hook.requests.filter((r) => r.json.data.sponsorshipId === id).map((r) => r.type);
        expect(types[0], `sponsorship ${id}: signed first`).to.equal("sponsorship.signed");
        expect(types.length).to.equal(2);
      }
    });

    it("retries back off exponentially, dead-letter after maxAttempts, and replay delivers the same id", async () => {
      const ids = await project();
      const hook = await receiver("fail");
      await createEventWebhook(store, { projectId: ids.projectId, url: hook.url }, LOOPBACK_RECEIVERS);
      await signed(ids, 1n);
      const settings = { ...FAST, baseDelayMs: 100, maxDelayMs: 10_000, maxAttempts: 4 };
      worker(settings);
      await hook.waitFor(() => hook.requests.length >= 4, 10_000);
      await new Promise((r) => setTimeout(r, 1_000)); // a fifth attempt would come within 800 ms (+10%)
      expect(hook.requests.length, "no attempt after the last").to.equal(4);
      const gaps = hook.requests.slice(1).map((r, i) => r.at - hook.requests[i]!.at);
      gaps.forEach((gap, i) => expect(gap, `gap ${i + 1}`).to.be.at.least(100 * 2 ** i - 15).and.below(100 * 2 ** i * 1.1 + 400));
      const [dead] = await listDeadLetters(store, ids.projectId);
      expect(dead).to.include({ status: "dead", attempts: 4, lastError: "HTTP 500", id: hook.requests[0]!.id });
      expect(new Set(hook.requests.map((r) => r.id)).size, "every retry carries the same id").to.equal(1);

      hook.mode = "ok";
      await replayDelivery(store, dead!.id);
      await hook.waitFor(() => hook.delivered().length === 1, 5_000);
      expect(hook.delivered()[0]!.id).to.equal(dead!.id);
      expect(hook.delivered()[0]!.body, "the same bytes").to.equal(hook.requests[0]!.body);
      // The receiver's answer is in before the worker writes it down: wait for the row, bounded.
      for (let i = 0; i < 100 && (await store.getWebhookDelivery(dead!.id))?.status !== "delivered"; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await store.getWebhookDelivery(dead!.id)).to.include({ status: "delivered", attempts: 1, lastError: null });
      expect(await listDeadLetters(store, ids.projectId)).to.deep.equal([]);
      await replayDelivery(store, "evt_unknown").then(() => expect.fail("replayed an unknown id"), (e) => expect(e.code).to.equal("NOT_FOUND"));
    });

    it("a hanging receiver costs one timeout per attempt and is dead-lettered; backoff is capped", async () => {
      const ids = await project();
      const hook = await receiver("hang");
      await createEventWebhook(store, { projectId: ids.projectId, url: hook.url }, LOOPBACK_RECEIVERS);
      await signed(ids, 1n);
      const started = Date.now();
      worker({ ...FAST, timeoutMs: 300, baseDelayMs: 20, maxAttempts: 2 });
      let row: WebhookDelivery | undefined;
      while (Date.now() - started < 10_000) {
        [row] = await listDeadLetters(store, ids.projectId);
        if (row) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(row).to.include({ status: "dead", attempts: 2, lastError: "timed out after 300 ms" });
      expect(Date.now() - started, "two bounded attempts").to.be.below(5_000);
      expect(hook.requests.length).to.equal(2);
      expect(backoffMs(30, { baseDelayMs: 1_000, maxDelayMs: 60_000 }, () => 0)).to.equal(60_000);
      expect(backoffMs(3, { baseDelayMs: 1_000, maxDelayMs: 60_000 }, () => 0)).to.equal(4_000);
    });

    it("a hanging receiver of one project holds only its own slots: another project's events still arrive at once", async function () {
      this.timeout(20_000);
      const hanging = await project("hanging");
      const healthy = await project("healthy");
      const hookA = await receiver("hang");
      const hookB = await receiver();
      const endpointA = await createEventWebhook(store, { projectId: hanging.projectId, url: hookA.url }, LOOPBACK_RECEIVERS);
      const endpointB = await createEventWebhook(store, { projectId: healthy.projectId, url: hookB.url }, LOOPBACK_RECEIVERS);
      for (let n = 1; n <= 6; n++) await signed(hanging, BigInt(n)); // a backlog of 6 sponsorships, all due
      const metrics = new ServiceMetrics({ store, defaultMetrics: false });
      const timeoutMs = 3_000;
      const w = startWebhookWorker({
        store,
        logger,
        settings: { ...FAST, timeoutMs, concurrency: 4, perEndpointConcurrency: 2 },
        destinations: LOOPBACK_RECEIVERS,
        observer: metrics.webhookObserver(),
      });
      cleanups.push(() => w.stop());
      await hookA.waitFor(() => hookA.requests.length >= 2, 5_000);
      const hangingSince = Date.now();
      const latencies: number[] = [];
      for (let n = 1; n <= 5; n++) {
        const before = Date.now();
        await signed(healthy, BigInt(100 + n));
        await hookB.waitFor(() => hookB.delivered().length === n, timeoutMs * 3);
        latencies.push(Date.now() - before);
      }
      expect(Math.max(...latencies), `B's latencies ${latencies.join(", ")} ms`).to.be.below(500);
      expect(Date.now() - hangingSince, "all of B's events arrived while A's first attempts still hang").to.be.below(timeoutMs);
      expect(hookA.requests.length, "A never had more than its share in flight").to.equal(2);
      // A's attempts time out; after that A is down to one probe at a time while B's slots stay free.
      await hookA.waitFor(() => hookA.requests.length >= 3, timeoutMs * 3);
      await new Promise((r) => setTimeout(r, 300));
      expect(hookA.requests.length, "a failing endpoint: one attempt in flight").to.equal(3);
      const text = (await metrics.exposition()).body;
      const line = (name: string, endpoint: string, extra = "") =>
        new RegExp(`^${name}\\{endpoint="${endpoint}",project="[^"]+"${extra}\\} (\\S+)$`, "m").exec(text)?.[1];
      expect(line("paymaster_webhook_deliveries_total", endpointB.endpoint.id, ',outcome="delivered"'), "B delivered").to.equal("5");
      expect(line("paymaster_webhook_deliveries_total", endpointA.endpoint.id, ',outcome="retry"'), "A's timeouts").to.equal("2");
      expect(line("paymaster_webhook_backlog", endpointA.endpoint.id), "A's backlog").to.equal("6");
      expect(Number(line("paymaster_webhook_oldest_pending_seconds", endpointA.endpoint.id))).to.be.above(timeoutMs / 1000);
      expect(line("paymaster_webhook_backlog", endpointB.endpoint.id), "B has none waiting").to.equal(undefined);
      expect(text).to.match(/^paymaster_webhook_delivery_duration_seconds_count\{endpoint="[^"]+",project="[^"]+"\} 2$/m);
    });

    it("stopping a worker cancels a hanging attempt at once and hands the event back to any replica", async () => {
      const ids = await project();
      const hook = await receiver("hang");
      await createEventWebhook(store, { projectId: ids.projectId, url: hook.url }, LOOPBACK_RECEIVERS);
      await signed(ids, 1n);
      const w = worker({ ...FAST, timeoutMs: 30_000 }, store, false);
      const round = w.runOnce();
      await hook.waitFor(() => hook.requests.length === 1, 5_000);
      const started = Date.now();
      await w.stop();
      await round;
      expect(Date.now() - started, "no wait for the 30 s timeout").to.be.below(2_000);
      const [row] = await listDeliveries(store, {});
      expect(row).to.include({ status: "pending", lastError: "cancelled: the service is stopping" });
      hook.mode = "ok";
      expect(await worker(FAST, store, false).runOnce(), "claimable again at once").to.equal(1);
      expect(hook.delivered().map((r) => r.id)).to.deep.equal([row!.id]);
    });

    it("retention: delivered events before the cutoff are deleted, never pending ones or dead letters", async () => {
      const ids = await project();
      const hook = await receiver();
      await createEventWebhook(store, { projectId: ids.projectId, url: hook.url }, LOOPBACK_RECEIVERS);
      await signed(ids, 1n);
      expect(await worker({ ...FAST, retentionDays: 0 }, store, false).runOnce()).to.equal(1);
      hook.mode = "fail";
      await signed(ids, 2n);
      expect(await worker({ ...FAST, maxAttempts: 1, retentionDays: 0 }, store, false).runOnce()).to.equal(1); // dead at once
      await signed(ids, 3n); // pending
      expect((await listDeliveries(store, {})).map((d) => d.status).sort()).to.deep.equal(["dead", "delivered", "pending"]);
      await worker({ ...FAST, retentionDays: 1 }, store, false).runOnce(); // prunes at its first round: nothing is a day old
      expect((await listDeliveries(store, {})).length).to.equal(3);
      expect(await store.pruneWebhookDeliveries(Date.now() - 60_000), "delivered a minute ago or later: kept").to.equal(0);
      expect(await store.pruneWebhookDeliveries(Date.now() + 1), "past the cutoff").to.equal(1);
      expect((await listDeliveries(store, {})).map((d) => d.status).sort()).to.deep.equal(["dead", "pending"]);
    });

    it("two replicas sharing the database deliver each event once", async () => {
      const ids = await project();
      const hook = await receiver();
      await createEventWebhook(store, { projectId: ids.projectId, url: hook.url }, LOOPBACK_RECEIVERS);
      for (let n = 1; n <= 20; n++) {
        const id = await signed(ids, BigInt(n));
        await store.settleSponsorship(id, settlement(n));
      }
      const second = await opened.another();
      cleanups.push(() => second.close());
      worker({ ...FAST, concurrency: 3 }, store);
      worker({ ...FAST, concurrency: 3 }, second);
      await hook.waitFor(() => hook.requests.length >= 40, 30_000);
      await new Promise((r) => setTimeout(r, 300));
      expect(hook.requests.length, "no event sent twice").to.equal(40);
      expect(new Set(hook.requests.map((r) => r.id)).size).to.equal(40);
      expect((await listDeliveries(store, { status: "delivered" })).length).to.equal(40);
    });

    it("administration: clear refusals, one approval endpoint per project, no secret in listings, delete removes the outbox rows", async () => {
      const ids = await project();
      const bad = async (p: Promise<unknown>, words: RegExp) =>
        p.then(() => expect.fail("accepted"), (e) => {
          expect(e.code).to.equal("INVALID_INPUT");
          expect(e.message).to.match(words);
        });
      await bad(createEventWebhook(store, { projectId: ids.projectId, url: "ftp://x" }, LOOPBACK_RECEIVERS), /http/);
      await bad(createEventWebhook(store, { projectId: ids.projectId, url: "not a url" }, LOOPBACK_RECEIVERS), /absolute/);
      await bad(createEventWebhook(store, { projectId: ids.projectId, url: "https://u:p@x.test/" }, LOOPBACK_RECEIVERS), /password/);
      await bad(createEventWebhook(store, { projectId: ids.projectId, url: "https://x.test/", events: ["sponsorship.mined"] }, LOOPBACK_RECEIVERS), /sponsorship\.mined/);
      await bad(createApprovalWebhook(store, { projectId: ids.projectId, url: "https://x.test/", timeoutMs: 99_999 }, LOOPBACK_RECEIVERS), /timeoutMs/);
      await createEventWebhook(store, { projectId: "nope", url: "https://x.test/" }, LOOPBACK_RECEIVERS).then(() => expect.fail("accepted"), (e) => expect(e.code).to.equal("NOT_FOUND"));

      const events = await createEventWebhook(store, { projectId: ids.projectId, url: "https://x.test/hooks?token=abc" }, LOOPBACK_RECEIVERS);
      const approval = await createApprovalWebhook(store, { projectId: ids.projectId, url: "https://x.test/approve" }, LOOPBACK_RECEIVERS);
      expect(events.secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);
      expect(approval.secret).to.not.equal(events.secret);
      await createApprovalWebhook(store, { projectId: ids.projectId, url: "https://x.test/2" }, LOOPBACK_RECEIVERS).then(() => expect.fail("accepted"), (e) => expect(e.code).to.equal("DUPLICATE"));
      const listed = await listWebhooks(store, ids.projectId);
      expect(listed.map((e) => e.kind)).to.have.members(["events", "approval"]);
      expect(JSON.stringify(listed)).to.not.include(events.secret).and.not.include(approval.secret);
      expect(listed.find((e) => e.kind === "approval")).to.include({ timeoutMs: 2000, defaultDecision: "deny" });
      expect((await store.getApprovalEndpoint(ids.projectId))?.secret).to.equal(approval.secret);

      await signed(ids, 1n);
      expect((await listDeliveries(store, { projectId: ids.projectId })).length).to.equal(1);
      await listDeliveries(store, { status: "lost" }).then(() => expect.fail("accepted"), (e) => expect(e.message).to.match(/pending, delivered, dead/));
      await deleteWebhook(store, events.endpoint.id);
      expect(await listDeliveries(store, { projectId: ids.projectId })).to.deep.equal([]);
      await deleteWebhook(store, events.endpoint.id).then(() => expect.fail("deleted twice"), (e) => expect(e.code).to.equal("NOT_FOUND"));
    });
  });
}
