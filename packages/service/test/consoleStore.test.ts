// The store reads behind the operator console, on SQLite and on PostgreSQL: per-minute request counts (added up
// across flushes, bucketed, pruned), sponsorship activity per bucket with exact bigint sums, gas tank listings
// and ledgers (credits, debits, settled User Sponsor ops), and a sponsorship's timeline.
import { expect } from "chai";
import type { Address, Hex } from "@paymaster/shared";
import type { NewSponsorship, Settlement, Store } from "../src/store/types.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";
import { ServiceMetrics } from "../src/metrics/metrics.ts";
import { startRequestCountFlusher } from "../src/metrics/requestCounts.ts";
import { createLogger } from "../src/log.ts";
import { storeBackends } from "./helpers/storeBackends.ts";

const EP = "0x0000000071727De22E5E9d8BAf0edAc6f37da032" as Address;
const SENDER = "0x1111111111111111111111111111111111111111" as Address;
const OTHER = "0x2222222222222222222222222222222222222222" as Address;
const TX = `0x${"cd".repeat(32)}` as Hex;

const backends = storeBackends("console_store");

const settlement = (wei: bigint, usdMicros = 0n): Settlement => ({
  actualGasCostWei: wei,
  actualCostUsdMicros: usdMicros,
  actualTokenCost: null,
  success: true,
  txHash: TX,
  blockNumber: 7n,
  blockHash: `0x${"ef".repeat(32)}`,
  logIndex: 0,
});

for (const backend of backends) {
  describe(`console store reads (${backend.name})`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let ids: { projectId: string; apiKeyId: string };
    let nonce = 0n;

    const op = (over: Partial<NewSponsorship> = {}): NewSponsorship => {
      const n = nonce++;
      return sponsorshipInput(ids, { nonce: n, sender: SENDER, entryPoint: EP, userOpHash: `0x${n.toString(16).padStart(64, "0")}` as Hex, ...over });
    };
    const reserve = async (over: Partial<NewSponsorship> = {}) => {
      const r = await store.reserveSponsorship(op(over));
      if (!r.ok) throw new Error(`refused: ${r.reason}`);
      return r.record;
    };

    beforeEach(async () => {
      ({ store, close } = await backend.open());
      const project = await store.createProject("console");
      const { apiKey } = await store.createApiKey(project.id);
      ids = { projectId: project.id, apiKeyId: apiKey.id };
    });
    afterEach(async () => {
      await close();
    });

    it("request counts: flushes add up per (minute, network, method, outcome), bucketed and filtered; old minutes pruned", async () => {
      const m = 1_800_000_000 - (1_800_000_000 % 3600); // an hour's first minute
      await store.addRequestCounts([
        { minute: m, network: "local", method: "pm_getPaymasterData", outcome: "ok", count: 3 },
        { minute: m, network: "local", method: "pm_getPaymasterData", outcome: "GAS_TANK_INSUFFICIENT", count: 1 },
        { minute: m + 60, network: "base", method: "pm_getPaymasterData", outcome: "ok", count: 2 },
        { minute: m + 60, network: "local", method: "pm_getPaymasterData", outcome: "ok", count: 0 }, // nothing to add: no row
      ]);
      // A second flush (another replica, or the next interval) adds to the same row.
      await store.addRequestCounts([{ minute: m, network: "local", method: "pm_getPaymasterData", outcome: "ok", count: 4 }]);
      await store.addRequestCounts([]);

      const perMinute = await store.requestCounts({ since: m, until: m + 3600, bucketSeconds: 60 });
      expect(perMinute).to.deep.equal([
        { bucket: m, network: "local", method: "pm_getPaymasterData", outcome: "GAS_TANK_INSUFFICIENT", count: 1 },
        { bucket: m, network: "local", method: "pm_getPaymasterData", outcome: "ok", count: 7 },
        { bucket: m + 60, network: "base", method: "pm_getPaymasterData", outcome: "ok", count: 2 },
      ]);
      const hourly = await store.requestCounts({ since: m, until: m + 3600, bucketSeconds: 3600, network: "local" });
      expect(hourly.map((r) => [r.bucket, r.outcome, r.count])).to.deep.equal([
        [m, "GAS_TANK_INSUFFICIENT", 1],
        [m, "ok", 7],
      ]);
      expect(await store.requestCounts({ since: m + 120, until: m + 3600, bucketSeconds: 60 })).to.deep.equal([]);
      for (const bad of [0, 30, 90]) {
        const err = await store.requestCounts({ since: m, until: m + 60, bucketSeconds: bad }).catch((e: Error) => e);
        expect(err, String(bad)).to.be.instanceOf(Error);
      }
      expect(await store.pruneRequestCounts(m + 60)).to.equal(2);
      expect((await store.requestCounts({ since: 0, until: m + 3600, bucketSeconds: 60 })).map((r) => r.bucket)).to.deep.equal([m + 60]);
    });

    it("the flusher writes what the requests counter gained since its last flush, summed over dialects, into the flush's minute", async () => {
      const metrics = new ServiceMetrics({ defaultMetrics: false });
      let now = 1_800_000_030_000; // ms, 30 s into a minute
      const flusher = startRequestCountFlusher({ metrics, store, logger: createLogger("silent"), intervalMs: 3_600_000, nowMs: () => now });
      const ok = { method: "pm_getPaymasterData", network: "local", outcome: "ok" };
      metrics.requests.inc({ ...ok, dialect: "v1" }, 2);
      metrics.requests.inc({ ...ok, dialect: "standard" }, 3);
      metrics.requests.inc({ ...ok, outcome: "RATE_LIMITED", dialect: "v1" });
      await flusher.flush();
      await flusher.flush(); // nothing new: nothing added
      now += 60_000;
      metrics.requests.inc({ ...ok, dialect: "v1" }, 4);
      await flusher.stop(); // the last flush
      const minute = 1_800_000_000 - (1_800_000_000 % 60);
      const rows = await store.requestCounts({ since: minute, until: minute + 120, bucketSeconds: 60 });
      expect(rows.map((r) => [r.bucket - minute, r.outcome, r.count])).to.deep.equal([
        [0, "RATE_LIMITED", 1],
        [0, "ok", 5],
        [60, "ok", 4],
      ]);
    });

    it("sponsorship activity: per bucket and status, max and actual costs summed exactly, filtered by strategy", async () => {
      const strategy = await store.createStrategy({ projectId: ids.projectId, code: "S", name: "s" });
      const big = 10n ** 30n; // beyond 64 bits
      const settled = await reserve({ maxCostWei: big, maxCostUsdMicros: 5_000_000n, strategyId: strategy.id });
      expect(await store.settleSponsorship(settled.id, settlement(big - 1n, 4_000_000n))).to.equal(true);
      await reserve({ maxCostWei: 7n, strategyId: strategy.id });
      const released = await reserve({ maxCostWei: 9n });
      await store.releaseSponsorship(released.id);

      const now = Math.floor(Date.now() / 1000);
      const all = await store.sponsorshipActivity({ since: now - 3600, until: now + 60, bucketSeconds: 86_400 });
      expect(all.truncated).to.equal(false);
      const day = now - (now % 86_400);
      expect(all.buckets).to.deep.equal([
        { bucket: day, network: "local", status: "released", count: 1, maxCostWei: 9n, maxCostUsdMicros: 0n, actualCostWei: 0n, actualCostUsdMicros: 0n },
        { bucket: day, network: "local", status: "settled", count: 1, maxCostWei: big, maxCostUsdMicros: 5_000_000n, actualCostWei: big - 1n, actualCostUsdMicros: 4_000_000n },
        { bucket: day, network: "local", status: "signed", count: 1, maxCostWei: 7n, maxCostUsdMicros: 0n, actualCostWei: 0n, actualCostUsdMicros: 0n },
      ]);
      const ofStrategy = await store.sponsorshipActivity({ since: now - 3600, until: now + 60, bucketSeconds: 86_400, strategyId: strategy.id });
      expect(ofStrategy.buckets.map((b) => b.status)).to.deep.equal(["settled", "signed"]);
      expect((await store.sponsorshipActivity({ since: now - 3600, until: now + 60, bucketSeconds: 60, network: "base" })).buckets).to.deep.equal([]);
      expect((await store.sponsorshipActivity({ since: now + 3600, until: now + 7200, bucketSeconds: 60 })).buckets).to.deep.equal([]);
    });

    it("gas tanks: listed newest change first; a ledger of credits, debits and the settled ops the tank paid for", async () => {
      await store.creditGasTank("local", OTHER, 5n, "other-1");
      await store.creditGasTank("local", SENDER, 1000n, "deposit-1");
      await store.debitGasTank("local", SENDER, 100n, "refund-1");
      const spent = await reserve({ mode: "user", maxCostWei: 300n });
      await reserve({ mode: "sponsor", maxCostWei: 1n }); // not the tank's
      expect(await store.settleSponsorship(spent.id, settlement(250n))).to.equal(true);

      const tanks = await store.listGasTanks({});
      expect(tanks.map((t) => t.sender).sort()).to.deep.equal([SENDER, OTHER].sort());
      const mine = tanks.find((t) => t.sender === SENDER)!;
      expect(mine).to.include({ network: "local", balanceWei: 650n, reservedWei: 0n });
      expect(mine.updatedAt).to.be.a("number");
      expect(await store.listGasTanks({ network: "base" })).to.deep.equal([]);
      expect(await store.listGasTanks({ limit: 1 })).to.have.length(1);

      const ledger = await store.gasTankLedger("local", SENDER);
      expect(ledger.map((e) => [e.kind, e.amountWei, e.reference]).sort()).to.deep.equal(
        [
          ["credit", 1000n, "deposit-1"],
          ["debit", 100n, "refund-1"],
          ["spend", 250n, spent.id],
        ].sort(),
      );
      const spend = ledger.find((e) => e.kind === "spend")!;
      expect(spend).to.include({ txHash: TX, userOpHash: spent.userOpHash });
      for (let i = 1; i < ledger.length; i++) expect(ledger[i - 1]!.at).to.be.at.least(ledger[i]!.at);
      expect(await store.gasTankLedger("local", OTHER, 1)).to.have.length(1);
      expect(await store.gasTankLedger("base", SENDER)).to.deep.equal([]);
    });

    it("a sponsorship's timeline: signed, then settled; or released with its reason", async () => {
      const a = await reserve();
      expect(await store.sponsorshipTimeline(a.id)).to.deep.equal({ createdAt: a.createdAt, releasedAt: null, releaseReason: null, settledAt: null });
      expect(await store.settleSponsorship(a.id, settlement(1n))).to.equal(true);
      const settled = await store.sponsorshipTimeline(a.id);
      expect(settled!.settledAt).to.be.at.least(a.createdAt);
      const b = await reserve({ validUntil: 1_700_000_001 });
      expect(await store.releaseExpired(Math.floor(Date.now() / 1000), 0, "local")).to.equal(1);
      const expired = await store.sponsorshipTimeline(b.id);
      expect(expired).to.include({ releaseReason: "expired", settledAt: null });
      expect(expired!.releasedAt).to.be.at.least(b.createdAt);
      expect(await store.sponsorshipTimeline("nope")).to.equal(undefined);
    });
  });
}
