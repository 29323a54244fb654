// Sponsorship retention on SQLite and PostgreSQL: a mix of settled, released (expired, replaced) and open
// sponsorships of a strategy with caps; pruning deletes the old final ones in batches, and everything read from
// them — strategy usage and caps, the daily history, the console's activity, the records-by-status counts — is
// exactly what it was before. The dry run counts without deleting; open ones and young ones are never touched.
import { expect } from "chai";
import type { Address, Hex } from "@paymaster/shared";
import { activity } from "../src/admin/activity.ts";
import type { AdminContext } from "../src/admin/context.ts";
import { pruneSponsorships } from "../src/admin/retention.ts";
import { strategyUsage, strategyUsageHistory } from "../src/admin/strategies.ts";
import { createLogger } from "../src/log.ts";
import { startRetention } from "../src/retention.ts";
import { ServiceMetrics } from "../src/metrics/metrics.ts";
import { capChecks } from "../src/policy/rules.ts";
import type { StrategyRules } from "../src/policy/types.ts";
import type { NewSponsorship, Settlement, Store } from "../src/store/types.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";
import { storeBackends } from "./helpers/storeBackends.ts";

const EP = "0x0000000071727De22E5E9d8BAf0edAc6f37da032" as Address;
const SENDERS = ["0x1111111111111111111111111111111111111111", "0x2222222222222222222222222222222222222222"] as Address[];
const DAY = 86_400;

const backends = storeBackends("retention");

const settlement = (n: number): Settlement => ({
  actualGasCostWei: 10n ** 17n + BigInt(n) * 999_999_937n, // large and odd: the sums' parts must carry
  actualCostUsdMicros: 250_000n + BigInt(n),
  actualTokenCost: null,
  success: true,
  txHash: `0x${n.toString(16).padStart(64, "0")}` as Hex,
  blockNumber: 10n + BigInt(n),
  blockHash: `0x${"ef".repeat(32)}`,
  logIndex: n,
});

const RULES: StrategyRules = {
  caps: { global: { maxOps: 1000, maxWei: 10n ** 21n }, daily: { maxOps: 500, maxUsd: "5000" }, perSender: { maxOps: 200 } },
};

for (const backend of backends) {
  describe(`sponsorship retention (${backend.name})`, function () {
    this.timeout(60_000);
    let store: Store;
    let close: () => Promise<void>;
    let ctx: AdminContext;
    let ids: { projectId: string; apiKeyId: string };
    let strategyId: string;
    let nonce = 0n;

    const op = (sender: Address, over: Partial<NewSponsorship> = {}): NewSponsorship => {
      const n = nonce++;
      return sponsorshipInput(ids, {
        nonce: n,
        sender,
        entryPoint: EP,
        strategyId,
        maxCostWei: 3n * 10n ** 17n + n * 123_456_789n,
        maxCostUsdMicros: 900_000n + n,
        validUntil: Math.floor(Date.now() / 1000) + 300,
        userOpHash: `0x${(n + 1000n).toString(16).padStart(64, "0")}` as Hex,
        ...over,
      });
    };
    const reserve = async (sender: Address, over: Partial<NewSponsorship> = {}) => {
      const r = await store.reserveSponsorship(op(sender, over), capChecks(RULES, { now: Math.floor(Date.now() / 1000), sender }));
      if (!r.ok) throw new Error(`refused: ${r.reason}`);
      return r.record;
    };

    beforeEach(async () => {
      ({ store, close } = await backend.open());
      const project = await store.createProject("retention");
      const { apiKey } = await store.createApiKey(project.id);
      ids = { projectId: project.id, apiKeyId: apiKey.id };
      strategyId = (await store.createStrategy({ projectId: project.id, code: "KEEP", name: "keep", rules: RULES })).id;
      ctx = { store, networks: ["local"], actor: "cli:test", role: "admin" };
    });
    afterEach(async () => {
      await close();
    });

    /** 12 settled, 9 released as expired, 4 released as replaced, 5 open (signed): 30 rows over two senders. */
    async function history(): Promise<void> {
      for (let i = 0; i < 12; i++) {
        const r = await reserve(SENDERS[i % 2]!);
        await store.settleSponsorship(r.id, settlement(i));
      }
      for (let i = 0; i < 9; i++) await reserve(SENDERS[i % 2]!, { validUntil: Math.floor(Date.now() / 1000) - 10 });
      expect(await store.releaseExpired(Math.floor(Date.now() / 1000), 0)).to.equal(9);
      for (let i = 0; i < 4; i++) {
        const first = await reserve(SENDERS[0]!);
        await reserve(SENDERS[0]!, { nonce: BigInt(first.nonce) }); // the same op again: the first is replaced
      }
      await reserve(SENDERS[1]!); // and one more open one (4 replacements + 1 = 5 open)
    }

    /** Everything read from the rows, as the operator sees it. */
    async function readings() {
      const counts = (await store.sponsorshipCounts()).map((c) => `${c.network} ${c.mode} ${c.version} ${c.status} ${c.count}`).sort();
      const usage = await strategyUsage(ctx, "KEEP");
      const perSender = await Promise.all(SENDERS.map((s) => strategyUsage(ctx, "KEEP", { sender: s })));
      const days = await strategyUsageHistory(ctx, "KEEP", { days: 3 });
      const now = Math.floor(Date.now() / 1000);
      const windows = [
        { bucket: "60", since: String(now - 3600) },
        { bucket: "900", since: String(now - 2 * DAY) },
        { bucket: "86400", since: String(now - 30 * DAY) },
      ];
      const charts = await Promise.all(windows.map((w) => activity(ctx, w)));
      const raw = await store.sponsorshipActivity({ since: 0, until: Math.floor(Date.now() / 1000) + 60, bucketSeconds: 60, strategyId });
      return { counts, usage, perSender, days, charts: charts.map((c) => c.sponsorships), raw };
    }

    it("deletes old released and settled rows in batches; usage, caps, history, charts and counts stay exactly the same", async () => {
      await history();
      const before = await readings();
      expect(before.counts.join("; ")).to.match(/settled 12/).and.match(/released 13/).and.match(/signed 5/);
      const total = async () => (await store.listSponsorships({ limit: 1000 })).length;
      expect(await total()).to.equal(30);

      // Seen from 8 days on: the dry run counts, deletes nothing.
      const later = { ...ctx, now: () => Math.floor(Date.now() / 1000) + 8 * DAY };
      const dry = await pruneSponsorships(later, { dryRun: true, settledDays: 7 });
      expect(dry).to.include({ dryRun: true, releasedDays: 7, settledDays: 7, released: 13, settled: 12 });
      expect(await total(), "a dry run deletes nothing").to.equal(30);
      // Only released ones by default (settled rows are money records: kept unless a retention is set).
      const onlyReleased = await pruneSponsorships(later, {});
      expect(onlyReleased).to.include({ released: 13, settled: 0 });
      expect(await total()).to.equal(17);
      expect(await readings()).to.deep.equal(before);

      // Small batches (the leader's loop), settled ones too.
      const metrics = new ServiceMetrics({ store, defaultMetrics: false });
      const loop = startRetention({
        store,
        logger: createLogger("silent"),
        metrics,
        settings: { settledDays: 7, batchSize: 5, pauseMs: 1 },
        autoStart: false,
        now: later.now,
      });
      const pass = await loop.runOnce();
      await loop.stop();
      expect(pass).to.include({ released: 0, settled: 12, batches: 3 });
      expect(await total(), "the open ones stay").to.equal(5);
      expect((await store.listSponsorships({ limit: 1000 })).every((s) => s.status === "signed")).to.equal(true);
      expect(await readings()).to.deep.equal(before);
      const text = (await metrics.exposition()).body;
      expect(text).to.match(/^paymaster_sponsorships_pruned_total\{status="settled"\} 12$/m);
      expect(text).to.match(/^paymaster_sponsorships\{network="local",mode="sponsor",version="v0.7",status="settled"\} 12$/m);

      // Caps still hold what the deleted rows spent: 200 ops per sender, 12 + 13 counted… the usage rows decide.
      const usage = await store.getUsage(strategyId, "global", "");
      expect(usage.ops, "settled + open ops still counted").to.equal(17);
      expect(await store.countPrunableSponsorships({ releasedBefore: later.now(), settledBefore: later.now() })).to.deep.include({ released: 0, settled: 0 });
    });

    it("an unpaid token charge outlives any retention: its sender stays on pre-charge only and the at-risk budget reads the same (second review, finding 4)", async () => {
      // The attacker: an ERC-20 op charged in postOp whose charge it defeated (approve, then revoke), settled and
      // found unpaid by the watcher; it then waits for settledDays to pass before the next fresh sender.
      const USDC = "0x3333333333333333333333333333333333333333" as Address;
      const now = Math.floor(Date.now() / 1000);
      const risk = { maxUsdMicrosPerProject: 3_000_000n, maxUsdMicrosPerKey: 2_000_000n, sinceSeconds: now - DAY };
      const erc20 = (sender: Address, usdMicros: bigint) =>
        op(sender, { mode: "erc20", strategyId: null, token: USDC, exchangeRate: 1n, maxTokenCost: 1n, maxCostUsdMicros: usdMicros, postOpCharge: true, postOpChargeRisk: risk });
      const unpaid = await store.reserveSponsorship(erc20(SENDERS[0]!, 1_500_000n));
      if (!unpaid.ok) throw new Error(`refused: ${unpaid.reason}`);
      await store.settleSponsorship(unpaid.record.id, settlement(1));
      await store.setTokenChargeUnpaid(unpaid.record.id, true);
      // A paid one (its flag is no debt) and a plain settled one, for the prune to take.
      const paid = await store.reserveSponsorship(erc20(SENDERS[1]!, 100n));
      if (!paid.ok) throw new Error(`refused: ${paid.reason}`);
      await store.settleSponsorship(paid.record.id, settlement(2));
      await store.settleSponsorship((await reserve(SENDERS[1]!)).id, settlement(3));

      const fresh = "0x4444444444444444444444444444444444444444" as Address;
      const defences = async () => ({
        preChargeOnly: await store.hasUnpaidTokenCharge("local", SENDERS[0]!),
        atRisk: await store.reserveSponsorship(erc20(fresh, 600_000n)),
      });
      const before = await defences();
      expect(before.preChargeOnly).to.equal(true);
      expect(before.atRisk).to.deep.equal({ ok: false, reason: "POSTOP_CHARGE_AT_RISK", scope: "apiKey", limit: "2000000", value: "2100000" });

      // Settled rows kept 7 days, seen 8 days on: everything settled goes but the unpaid one, in the dry run too.
      const later = { ...ctx, now: () => now + 8 * DAY };
      const dry = await pruneSponsorships(later, { dryRun: true, settledDays: 7 });
      const pruned = await pruneSponsorships(later, { settledDays: 7 });
      expect(await defences()).to.deep.equal(before);
      expect(dry.settled, "the dry run counts the same").to.equal(2);
      expect(pruned.settled).to.equal(2);
      expect((await store.getSponsorship(unpaid.record.id))?.status, "the debt's record").to.equal("settled");
      expect(await store.getSponsorship(paid.record.id)).to.equal(undefined);
      expect(await store.countPrunableSponsorships({ settledBefore: later.now() })).to.deep.include({ settled: 0 });
    });

    it("young rows, and released rows whose signature is still valid, are kept", async () => {
      await history();
      const now = Math.floor(Date.now() / 1000);
      expect(await pruneSponsorships(ctx, { settledDays: 1 })).to.include({ released: 0, settled: 0 });
      // Cutoff past their creation but not past the replaced ones' validUntil (now + 300): only the expired go.
      expect(await store.pruneSponsorships({ releasedBefore: now + 100 }, 100)).to.deep.equal({ released: 9, settled: 0 });
      await pruneSponsorships(ctx, { releasedDays: "x" }).then(
        () => expect.fail("accepted"),
        (e: Error) => expect(e.message).to.match(/releasedDays: an integer from 0 to 3650/),
      );
    });
  });
}
