// Project billing in the store, on SQLite and on PostgreSQL: credits idempotent by reference, holds taken with the
// reservation and given back by release, expiry, withdrawal and replacement, settlements billed at the price the
// reservation was valued at (plus markup and fee, by mode), reorgs undone by an adjustment, periods that never
// change once ended, the balance.low event, retention, 100 reservations at once (two stores on one PostgreSQL), and
// random mixes of all of it whose ledger reconciles with the balance and with what the chain charged.
import { expect } from "chai";
import { openPostgresStore } from "../src/store/postgres.ts";
import { holdFor, settlementCharge, type BillingTerms } from "../src/billing/charge.ts";
import { nowSeconds } from "../src/store/validation.ts";
import { isStoreError } from "../src/store/errors.ts";
import type { NewSponsorship, ReserveResult, Settlement, SponsorshipRecord, Store } from "../src/store/types.ts";
import { prng } from "./helpers/prng.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";
import { storeBackends } from "./helpers/storeBackends.ts";

const PRICE = { numerator: 300_012n, denominator: 100n }; // $3000.12 per coin
const hex32 = (n: bigint | number): `0x${string}` => `0x${BigInt(n).toString(16).padStart(64, "0")}`;

function settlement(actualGasCostWei: bigint, over: Partial<Settlement> = {}): Settlement {
  return {
    actualGasCostWei,
    // Deliberately another price than the reservation's: billing must not use it.
    actualCostUsdMicros: actualGasCostWei / 10n ** 9n,
    actualTokenCost: null,
    success: true,
    txHash: hex32(0xbeefn),
    blockNumber: 7n,
    blockHash: hex32(0xb10cn),
    logIndex: 0,
    ...over,
  };
}

const ledgerSum = (entries: readonly { amountUsdMicros: bigint }[]) => entries.reduce((sum, e) => sum + e.amountUsdMicros, 0n);

async function expectStoreError(promise: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expect(isStoreError(error), String(error)).to.equal(true);
    expect((error as { code: string }).code).to.equal(code);
    if (message) expect((error as Error).message).to.match(message);
    return;
  }
  expect.fail(`expected StoreError ${code}`);
}

for (const backend of storeBackends("billing")) {
  describe(`project billing in the store (${backend.name})`, function () {
    this.timeout(60_000);
    let store: Store;
    let url: string | undefined;
    let close: () => Promise<void>;
    let ids: { projectId: string; apiKeyId: string };
    let counter = 0;

    beforeEach(async () => {
      ({ store, url, close } = await backend.open());
      const project = await store.createProject("hosted");
      const { apiKey } = await store.createApiKey(project.id);
      ids = { projectId: project.id, apiKeyId: apiKey.id };
    });
    afterEach(async () => {
      await close();
    });

    const terms = (over: Partial<BillingTerms> = {}): BillingTerms => ({ basis: "gas", nativeUsd: PRICE, markupBps: 1000, feeUsdMicros: 10_000n, ...over });
    /** A billed op (its own nonce and userOpHash), 1e15 wei at most unless `over` says otherwise. */
    const op = (over: Partial<NewSponsorship> = {}): NewSponsorship =>
      sponsorshipInput(ids, { nonce: BigInt(++counter), userOpHash: hex32(counter), maxCostWei: 10n ** 15n, billing: terms(), ...over });
    const reserved = async (over: Partial<NewSponsorship> = {}): Promise<SponsorshipRecord> => {
      const result = await store.reserveSponsorship(op(over));
      if (!result.ok) throw new Error(`refused: ${result.reason}`);
      return result.record;
    };
    const credit = (usdMicros: bigint, reference = `ref-${++counter}`, projectId = ids.projectId) =>
      store.addBillingEntry({ projectId, kind: "credit", amountUsdMicros: usdMicros, reference, actor: "cli:test" });
    const account = () => store.getBillingAccount(ids.projectId);
    const ledger = async (projectId = ids.projectId) => (await store.billingLedger(projectId, 0, Number.MAX_SAFE_INTEGER)).entries;
    const HOLD = holdFor(terms(), 10n ** 15n);

    it("credits are idempotent by reference: the same one twice credits once, another amount or project is refused", async () => {
      const first = await credit(5_000_000n, "invoice-42");
      expect(first.duplicate).to.equal(false);
      expect(first.account.balanceUsdMicros).to.equal(5_000_000n);
      const again = await credit(5_000_000n, "invoice-42");
      expect(again.duplicate).to.equal(true);
      expect(again.entry.seq).to.equal(first.entry.seq);
      await expectStoreError(credit(6_000_000n, "invoice-42"), "CONFLICT", /invoice-42/);
      const other = await store.createProject("other");
      await expectStoreError(credit(5_000_000n, "invoice-42", other.id), "CONFLICT");
      await expectStoreError(credit(1n, "fresh", "no-such-project"), "NOT_FOUND");
      await expectStoreError(credit(0n, "zero"), "INVALID_INPUT");
      expect((await account()).balanceUsdMicros).to.equal(5_000_000n);
      const entries = await ledger();
      expect(entries.map((e) => [e.kind, e.reference, e.amountUsdMicros, e.balanceUsdMicros, e.actor])).to.deep.equal([["credit", "invoice-42", 5_000_000n, 5_000_000n, "cli:test"]]);
      // A correction by hand: signed, idempotent the same way.
      const fix = await store.addBillingEntry({ projectId: ids.projectId, kind: "adjustment", amountUsdMicros: -1_000_000n, reference: "fix-1", actor: "cli:test" });
      expect(fix.account.balanceUsdMicros).to.equal(4_000_000n);
      expect((await store.addBillingEntry({ projectId: ids.projectId, kind: "adjustment", amountUsdMicros: -1_000_000n, reference: "fix-1", actor: "cli:test" })).duplicate).to.equal(true);
      expect((await account()).balanceUsdMicros).to.equal(4_000_000n);
    });

    it("a reservation holds its maximum bill; one that does not fit is refused and writes nothing", async () => {
      // 1e15 wei at $3000.12 = $3.00012; +10 % markup (rounded up) + $0.01 fee.
      expect(HOLD).to.equal(3_000_120n + 300_012n + 10_000n);
      await credit(5_000_000n);
      const first = await reserved();
      expect(await account()).to.deep.include({ balanceUsdMicros: 5_000_000n, heldUsdMicros: HOLD });
      const refused = await store.reserveSponsorship(op());
      expect(refused).to.deep.include({ ok: false, reason: "BALANCE_EXHAUSTED", availableUsdMicros: 5_000_000n - HOLD, requiredUsdMicros: HOLD });
      expect(await store.findActiveSponsorship({ network: "local", entryPoint: first.entryPoint, sender: first.sender, nonce: BigInt(counter) })).to.equal(undefined);
      expect((await account()).heldUsdMicros).to.equal(HOLD);
      // Unbilled ops of the same project (billing off when they were reserved) hold nothing.
      const unbilled = await store.reserveSponsorship(op({ billing: undefined }));
      expect(unbilled.ok).to.equal(true);
      expect((await account()).heldUsdMicros).to.equal(HOLD);
      // A project in debt is refused even what holds nothing (fee 0, User Sponsor mode).
      await store.addBillingEntry({ projectId: ids.projectId, kind: "adjustment", amountUsdMicros: -10_000_000n, reference: "debt", actor: "cli:test" });
      await store.creditGasTank("local", first.sender, 10n ** 18n, "tank");
      const free = await store.reserveSponsorship(op({ mode: "user", billing: terms({ basis: "fee", feeUsdMicros: 0n }) }));
      expect(free).to.deep.include({ ok: false, reason: "BALANCE_EXHAUSTED", requiredUsdMicros: 0n });
    });

    it("release, expiry and replacement give back exactly what was held", async () => {
      await credit(100_000_000n);
      const a = await reserved();
      await store.releaseSponsorship(a.id);
      expect((await account()).heldUsdMicros).to.equal(0n);
      await store.releaseSponsorship(a.id); // idempotent
      expect((await account()).heldUsdMicros).to.equal(0n);

      await reserved({ validUntil: 1_000 });
      expect((await account()).heldUsdMicros).to.equal(HOLD);
      expect(await store.releaseExpired(nowSeconds(), 0)).to.equal(1);
      expect((await account()).heldUsdMicros).to.equal(0n);

      // Asking again for the same op replaces its hold, never adds a second one — also across projects.
      const same = { nonce: 999n, userOpHash: hex32(999) };
      await reserved(same);
      await reserved({ ...same, maxCostWei: 2n * 10n ** 15n });
      expect((await account()).heldUsdMicros).to.equal(holdFor(terms(), 2n * 10n ** 15n));
      const other = await store.createProject("other");
      const { apiKey } = await store.createApiKey(other.id);
      await store.addBillingEntry({ projectId: other.id, kind: "credit", amountUsdMicros: 100_000_000n, reference: "other", actor: "cli:test" });
      const taken = await store.reserveSponsorship(sponsorshipInput({ projectId: other.id, apiKeyId: apiKey.id }, { ...same, maxCostWei: 10n ** 15n, billing: terms() }));
      expect(taken.ok).to.equal(true);
      expect((await account()).heldUsdMicros).to.equal(0n);
      expect((await store.getBillingAccount(other.id)).heldUsdMicros).to.equal(HOLD);
      expect(await ledger(), "holds are not ledger entries").to.have.length(1);
    });

    it("a settlement bills what the chain charged at the reservation's price, with markup and fee, by mode", async () => {
      await credit(100_000_000n);
      const actual = 4n * 10n ** 14n; // $1.200048 at the reservation's price
      const sponsored = await reserved();
      expect(await store.settleSponsorship(sponsored.id, settlement(actual))).to.equal(true);
      const debit = (await ledger()).at(-1)!;
      expect(debit).to.deep.include({ kind: "debit", reference: sponsored.id, amountUsdMicros: -(1_200_048n + 120_005n + 10_000n) });
      expect(debit.op).to.deep.include({
        sponsorshipId: sponsored.id,
        network: "local",
        mode: "sponsor",
        userOpHash: sponsored.userOpHash,
        txHash: hex32(0xbeefn),
        blockNumber: 7,
        gasCostWei: actual,
        gasUsdMicros: 1_200_048n,
        markupUsdMicros: 120_005n,
        feeUsdMicros: 10_000n,
      });
      expect(await account()).to.deep.include({ balanceUsdMicros: 100_000_000n - 1_330_053n, heldUsdMicros: 0n });
      expect(await store.settleSponsorship(sponsored.id, settlement(actual)), "settled once").to.equal(false);

      // User Sponsor mode: the tank paid the gas; the project pays the fee only (and holds only that).
      await store.creditGasTank("local", sponsored.sender, 10n ** 18n, "tank");
      const user = await reserved({ mode: "user", billing: terms({ basis: "fee" }) });
      expect((await account()).heldUsdMicros).to.equal(10_000n);
      await store.settleSponsorship(user.id, settlement(actual));
      expect((await ledger()).at(-1)).to.deep.include({ amountUsdMicros: -10_000n });

      // ERC-20 charged in postOp: held in full (its charge may go unpaid); billed the fee when the token charge was
      // paid, in full when it was not.
      const paid = await reserved({ mode: "erc20", billing: terms({ basis: "gasIfUnpaid" }) });
      const unpaid = await reserved({ mode: "erc20", billing: terms({ basis: "gasIfUnpaid" }) });
      expect((await account()).heldUsdMicros).to.equal(2n * HOLD);
      await store.settleSponsorship(paid.id, settlement(actual, { actualTokenCost: 1234n }));
      await store.settleSponsorship(unpaid.id, settlement(actual, { actualTokenCost: 0n }));
      expect((await ledger()).slice(-2).map((e) => e.amountUsdMicros)).to.deep.equal([-10_000n, -1_330_053n]);
      expect(await account()).to.deep.include({ heldUsdMicros: 0n, balanceUsdMicros: 100_000_000n - 2n * 1_330_053n - 2n * 10_000n });
      expect(ledgerSum(await ledger())).to.equal((await account()).balanceUsdMicros);
    });

    it("a reorg un-settles with an adjustment that reverses the debit exactly and holds again; the op lands again once", async () => {
      await credit(100_000_000n);
      const a = await reserved();
      await store.settleSponsorship(a.id, settlement(5n * 10n ** 14n));
      const debit = (await ledger()).at(-1)!;
      expect(await store.unsettleSponsorship(a.id)).to.equal(true);
      const adjustment = (await ledger()).at(-1)!;
      expect(adjustment).to.deep.include({ kind: "adjustment", reference: a.id, amountUsdMicros: -debit.amountUsdMicros, reversesSeq: debit.seq });
      expect(adjustment.op).to.deep.equal(debit.op);
      expect(await account()).to.deep.include({ balanceUsdMicros: 100_000_000n, heldUsdMicros: HOLD });
      await store.settleSponsorship(a.id, settlement(6n * 10n ** 14n, { blockHash: hex32(0xb10c2n) }));
      expect(await account()).to.deep.include({ balanceUsdMicros: 100_000_000n - settlementCharge(terms(), 6n * 10n ** 14n, false).totalUsdMicros, heldUsdMicros: 0n });

      // Un-settled after the op was reserved again (its first signature had landed): released, nothing held again.
      const b = await reserved({ nonce: 500n });
      await store.settleSponsorship(b.id, settlement(10n ** 14n));
      await reserved({ nonce: 500n });
      expect((await account()).heldUsdMicros).to.equal(HOLD);
      await store.unsettleSponsorship(b.id);
      expect((await store.getSponsorship(b.id))!.status).to.equal("released");
      expect((await account()).heldUsdMicros).to.equal(HOLD);
      expect(ledgerSum(await ledger())).to.equal((await account()).balanceUsdMicros);
    });

    it("an ended period's statement never changes: a late reorg is an adjustment of the next period", async () => {
      await credit(100_000_000n);
      const a = await reserved();
      await store.settleSponsorship(a.id, settlement(5n * 10n ** 14n));
      const end = nowSeconds() + 1;
      while (Date.now() < end * 1000) await new Promise((resolve) => setTimeout(resolve, 50));
      const closed = await store.billingLedger(ids.projectId, 0, end);
      await store.unsettleSponsorship(a.id);
      await credit(1_000_000n);
      expect(await store.billingLedger(ids.projectId, 0, end)).to.deep.equal(closed);
      const next = await store.billingLedger(ids.projectId, end, end + 3600);
      expect(next.openingUsdMicros).to.equal(closed.entries.at(-1)!.balanceUsdMicros);
      expect(next.entries.map((e) => e.kind)).to.deep.equal(["adjustment", "credit"]);
      expect(next.openingUsdMicros + ledgerSum(next.entries)).to.equal((await account()).balanceUsdMicros);
    });

    it("balance.low: one event when the balance falls below the plan's threshold, again only after it was back above", async () => {
      await store.createWebhookEndpoint({ projectId: ids.projectId, kind: "events", url: "https://hooks.example/b", events: ["balance.low"], secret: "s".repeat(32) });
      await store.setBillingPlan(ids.projectId, { enabled: true, alertBelowUsdMicros: 3_500_000n });
      await credit(5_000_000n);
      const bill = settlementCharge(terms(), 3n * 10n ** 14n, true).totalUsdMicros; // $1.00004
      const settle = async () => {
        const r = await reserved({ maxCostWei: 3n * 10n ** 14n });
        await store.settleSponsorship(r.id, settlement(3n * 10n ** 14n));
      };
      const events = async () => (await store.listWebhookDeliveries({ projectId: ids.projectId })).filter((d) => d.type === "balance.low");
      await settle(); // $3.99996: not below
      expect(await events()).to.have.length(0);
      await settle(); // $2.99992: below
      await settle(); // still below: no second event
      const first = await events();
      expect(first).to.have.length(1);
      const data = JSON.parse(first[0]!.payload).data;
      expect(data).to.include({ thresholdUsdMicros: "3500000", balanceUsdMicros: (5_000_000n - 2n * bill).toString() });
      await credit(10_000_000n); // back above: re-armed
      for (let i = 0; i < 20 && (await account()).balanceUsdMicros >= 3_500_000n; i++) await settle();
      expect(await events()).to.have.length(2);
    });

    it("retention never prunes what a statement needs", async () => {
      await credit(100_000_000n);
      for (let i = 0; i < 3; i++) {
        const r = await reserved();
        await store.settleSponsorship(r.id, settlement(BigInt(i + 1) * 10n ** 14n));
      }
      const before = await store.billingLedger(ids.projectId, 0, Number.MAX_SAFE_INTEGER);
      expect(await store.pruneSponsorships({ settledBefore: nowSeconds() + 10, releasedBefore: nowSeconds() + 10 }, 100)).to.deep.include({ settled: 3 });
      expect(await store.billingLedger(ids.projectId, 0, Number.MAX_SAFE_INTEGER)).to.deep.equal(before);
    });

    it("100 reservations at once hold exactly what the balance covers" + (backend.name === "PostgreSQL" ? " (two stores on one database)" : ""), async () => {
      const K = 7n;
      await credit(K * HOLD + HOLD - 1n);
      const second = url ? await openPostgresStore(url) : store;
      try {
        const results: ReserveResult[] = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? store : second).reserveSponsorship(op())));
        expect(results.filter((r) => r.ok)).to.have.length(Number(K));
        expect(results.filter((r) => !r.ok && r.reason === "BALANCE_EXHAUSTED")).to.have.length(100 - Number(K));
        expect((await account()).heldUsdMicros).to.equal(K * HOLD);
      } finally {
        if (second !== store) await second.close();
      }
    });

    it("random mixes of ops, refusals, expiries, reorgs and credits reconcile: the ledger sums to the balance, the debits to what the chain charged", async () => {
      for (const seed of [1, 2, 3]) {
        const random = prng(0xb111 + seed);
        const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
        const project = await store.createProject(`random ${seed}`);
        const { apiKey } = await store.createApiKey(project.id);
        const mine = { projectId: project.id, apiKeyId: apiKey.id };
        const start = await store.billingLedger(project.id, 0, Number.MAX_SAFE_INTEGER);
        expect(start.entries).to.deep.equal([]);
        const open = new Map<string, { record: SponsorshipRecord; terms: BillingTerms }>();
        const settled = new Map<string, { record: SponsorshipRecord; terms: BillingTerms; wei: bigint; paid: boolean }>();
        const released: { record: SponsorshipRecord; terms: BillingTerms }[] = [];
        let credits = 0n;
        let refusals = 0;
        const done = { reserve: 0, settle: 0, release: 0, expire: 0, reorg: 0, credit: 0, lateSettle: 0, conflicts: 0 };
        await store.creditGasTank("local", "0x1111111111111111111111111111111111111111", 10n ** 24n, `tank-${seed}`);
        for (let step = 0; step < 120; step++) {
          const action = pick(["reserve", "reserve", "reserve", "settle", "settle", "release", "expire", "reorg", "credit", "lateSettle"] as const);
          if (action === "reserve") {
            const mode = pick(["sponsor", "erc20", "user"] as const);
            const t: BillingTerms = {
              basis: mode === "sponsor" ? "gas" : mode === "erc20" ? pick(["fee", "gasIfUnpaid"] as const) : "fee",
              nativeUsd: { numerator: BigInt(1 + Math.floor(random() * 500_000)), denominator: 100n },
              markupBps: pick([0, 1, 999, 2500]),
              feeUsdMicros: BigInt(pick([0, 1, 5000])),
            };
            const maxCostWei = BigInt(1 + Math.floor(random() * 1e6)) * 10n ** 9n;
            const result = await store.reserveSponsorship(sponsorshipInput(mine, { nonce: BigInt(++counter), userOpHash: hex32(counter), mode, maxCostWei, billing: t, validUntil: random() < 0.2 ? 1_000 : 2_000_000_000 }));
            if (result.ok) open.set(result.record.id, { record: result.record, terms: t });
            else refusals++;
          } else if (action === "settle" || action === "release" || action === "expire") {
            const entry = open.size > 0 ? pick([...open.values()]) : undefined;
            if (!entry) continue;
            if (action === "settle") {
              const wei = (entry.record.maxCostWei * BigInt(Math.floor(random() * 101))) / 100n;
              const paid = random() < 0.5;
              await store.settleSponsorship(entry.record.id, settlement(wei, { actualTokenCost: paid ? 1n : 0n, blockHash: hex32(step) }));
              settled.set(entry.record.id, { ...entry, wei, paid });
            } else if (action === "release") {
              await store.releaseSponsorship(entry.record.id);
              released.push(entry);
            } else {
              await store.releaseExpired(nowSeconds(), 0);
              for (const [id, o] of open) if (o.record.validUntil < nowSeconds()) (open.delete(id), released.push(o));
            }
            if (action !== "expire") open.delete(entry.record.id);
          } else if (action === "reorg") {
            const entry = settled.size > 0 ? pick([...settled.values()]) : undefined;
            if (!entry) continue;
            await store.unsettleSponsorship(entry.record.id);
            settled.delete(entry.record.id);
            const now = (await store.getSponsorship(entry.record.id))!;
            if (now.status === "signed") open.set(entry.record.id, entry);
            else released.push(entry);
          } else if (action === "lateSettle") {
            // A signature whose reservation was released (expired) still lands: billed, nothing held.
            const entry = released.length > 0 ? released.splice(Math.floor(random() * released.length), 1)[0]! : undefined;
            if (!entry) continue;
            const wei = entry.record.maxCostWei / 2n;
            if (await store.settleSponsorship(entry.record.id, settlement(wei, { actualTokenCost: 1n, blockHash: hex32(step) }))) settled.set(entry.record.id, { ...entry, wei, paid: true });
          } else {
            const amount = BigInt(1 + Math.floor(random() * 5_000_000));
            const reference = `random-${seed}-${Math.floor(random() * 20)}`;
            try {
              if (!(await store.addBillingEntry({ projectId: project.id, kind: "credit", amountUsdMicros: amount, reference, actor: "cli:test" })).duplicate) credits += amount;
            } catch (error) {
              expect(isStoreError(error, "CONFLICT"), String(error)).to.equal(true);
              done.conflicts++;
            }
          }
          done[action]++;
        }
        const { entries } = await store.billingLedger(project.id, 0, Number.MAX_SAFE_INTEGER);
        const balance = await store.getBillingAccount(project.id);
        // The lines sum to the balance, each line's running balance follows, and numbering has no gap.
        expect(ledgerSum(entries), `seed ${seed}`).to.equal(balance.balanceUsdMicros);
        let running = 0n;
        entries.forEach((e, i) => {
          running += e.amountUsdMicros;
          expect(e.balanceUsdMicros).to.equal(running);
          expect(e.seq).to.equal(i + 1);
        });
        // Debits minus their reversals are exactly the bills of the ops that stand settled, valued as documented.
        const expected = [...settled.values()].reduce((sum, s) => sum + settlementCharge(s.terms, s.wei, s.paid).totalUsdMicros, 0n);
        const byOps = entries.filter((e) => e.kind !== "credit").reduce((sum, e) => sum - e.amountUsdMicros, 0n);
        expect(byOps, `seed ${seed}: bills`).to.equal(expected);
        expect(balance.balanceUsdMicros).to.equal(credits - expected);
        // Each op that stands settled: its latest entry is its debit, for exactly the gas the chain charged.
        for (const [id, s] of settled) {
          const last = entries.filter((e) => e.reference === id).at(-1)!;
          expect(last.kind).to.equal("debit");
          expect(last.op!.gasCostWei).to.equal(s.wei);
          expect(last.amountUsdMicros).to.equal(-settlementCharge(s.terms, s.wei, s.paid).totalUsdMicros);
        }
        // What is held is exactly the holds of the open ones.
        expect(balance.heldUsdMicros, `seed ${seed}: held`).to.equal([...open.values()].reduce((sum, o) => sum + holdFor(o.terms, o.record.maxCostWei), 0n));
        // The mix did what it is for (each seed: refusals, reorgs, late settlements, conflicting references…).
        expect(refusals, `seed ${seed}: refusals`).to.be.greaterThan(0);
        expect(Object.values(done).every((n) => n > 0), JSON.stringify(done)).to.equal(true);
      }
    });
  });
}
