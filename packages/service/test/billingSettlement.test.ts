// Project billing against a real chain and the real settlement watcher (embedded local chain, SQLite, tick() by
// hand): a billed project's ops in every mode land, are settled at the EntryPoint's actualGasCost and billed at the
// native price their reservation was valued at (plus markup and fee, by mode); a reorg (evm_snapshot / evm_revert)
// undoes a bill with an adjustment and the op's second landing bills it once; an expired signature gives its hold
// back. The month's statement then reconciles: its lines sum to the balance's change, and its operation lines are
// exactly the chain's actualGasCost valued as documented.
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { EntryPointVersion, Hex } from "@paymaster/shared";
import { billingStatement } from "../src/admin/billing.ts";
import { holdFor, settlementCharge, type BillingTerms } from "../src/billing/charge.ts";
import { statementCsv } from "../src/billing/statement.ts";
import { startEmbedded } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { usdToMicros } from "../src/policy/rules.ts";
import { startWatcher, type Watcher } from "../src/settlement/watcher.ts";
import { parseUsd } from "../src/sponsor/price.ts";
import type { SponsorshipRecord, Store } from "../src/store/types.ts";
import { chainRequest, handleOps, sponsorAndSign, type Embedded } from "./helpers/stack.ts";

type Mode = "sponsor" | "erc20" | "user";

describe("project billing on a real chain: settlement, reorgs and expiry reconcile with the statement", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let store: Store;
  let watcher: Watcher;
  const PLAN = { markupBps: 1234, feeUsdMicros: 5_000n };
  const price = parseUsd("3000.00");
  const termsOf = (mode: Mode, postOpCharge: boolean): BillingTerms => ({
    basis: mode === "sponsor" ? "gas" : mode === "erc20" && postOpCharge ? "gasIfUnpaid" : "fee",
    nativeUsd: price,
    ...PLAN,
  });

  before(async () => {
    embedded = await startEmbedded({ chainPort: 0, servicePort: 0, dataDir: path.join(mkdtempSync(path.join(tmpdir(), "paymaster-billing-chain-")), "data"), logLevel: "silent", pollMs: 100, watch: false });
    store = embedded.running.service.store;
    watcher = startWatcher({ network: embedded.running.service.networks.get("local")!, store, logger: createLogger("silent"), options: { poll: false } });
    await watcher.tick();
    await store.setBillingPlan(embedded.projectId, { enabled: true, markupBps: PLAN.markupBps, feeUsdMicros: PLAN.feeUsdMicros });
    await store.addBillingEntry({ projectId: embedded.projectId, kind: "credit", amountUsdMicros: usdToMicros("50"), reference: "chain-credit", actor: "cli:test" });
  });
  after(async () => {
    await watcher?.stop();
    await embedded?.close();
  });

  const mine = async (blocks = 1) => {
    for (let i = 0; i < blocks; i++) await chainRequest(embedded, "evm_mine", []);
  };
  const account = () => store.getBillingAccount(embedded.projectId);

  const sponsored = (version: EntryPointVersion, mode: Mode) => sponsorAndSign(embedded, version, mode);

  async function land(op: Awaited<ReturnType<typeof sponsored>>["op"]) {
    const outcome = await handleOps(embedded, op);
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    await mine();
    return outcome.event!;
  }

  it("every mode, a reorg and an expiry: the statement's lines sum to the balance's change and bill exactly what the chain charged", async () => {
    const month = new Date().toISOString().slice(0, 7);
    const ctx = { store, networks: ["local"], actor: "cli:test", role: "admin" as const };
    const opening = (await account()).balanceUsdMicros;
    const expected: { record: SponsorshipRecord; terms: BillingTerms; actualGasCost: bigint; tokenPaid: boolean }[] = [];

    // Sponsor mode (v0.6 and v0.7), User Sponsor mode and ERC-20 mode (charged in postOp: the op approves in its own calls).
    for (const [version, mode] of [["v0.6", "sponsor"], ["v0.7", "sponsor"], ["v0.7", "user"], ["v0.7", "erc20"]] as const) {
      const s = await sponsored(version, mode);
      const terms = termsOf(mode, mode === "erc20");
      expect((await account()).heldUsdMicros, `${mode} ${version} holds`).to.equal(holdFor(terms, s.record.maxCostWei));
      const event = await land(s.op);
      const result = await watcher.tick();
      expect(result.settled).to.equal(1);
      const settled = (await store.findSponsorshipByUserOpHash(s.userOpHash))!;
      expect(settled.settlement!.actualGasCostWei).to.equal(event.actualGasCost);
      expect((await account()).heldUsdMicros, `${mode} ${version}: nothing held once settled`).to.equal(0n);
      expected.push({ record: s.record, terms, actualGasCost: event.actualGasCost, tokenPaid: (settled.settlement!.actualTokenCost ?? 0n) > 0n });
    }
    expect(expected.at(-1)!.tokenPaid, "the ERC-20 op's token charge was paid: billed the fee only").to.equal(true);

    // A reorg removes a settled op's block: the bill is undone by an adjustment, the hold comes back; the op lands
    // again on the new chain and is billed once more, at its new actualGasCost.
    const reorged = await sponsored("v0.7", "sponsor");
    const snapshot = await chainRequest<Hex>(embedded, "evm_snapshot", []);
    await land(reorged.op);
    expect((await watcher.tick()).settled).to.equal(1);
    const billedOnce = (await account()).balanceUsdMicros;
    expect(await chainRequest<boolean>(embedded, "evm_revert", [snapshot])).to.equal(true);
    await mine(3);
    expect((await watcher.tick()).unsettled).to.equal(1);
    expect((await account()).heldUsdMicros, "held again").to.equal(holdFor(termsOf("sponsor", false), reorged.record.maxCostWei));
    expect((await account()).balanceUsdMicros > billedOnce, "the bill was given back").to.equal(true);
    const again = await land(reorged.op);
    expect((await watcher.tick()).settled).to.equal(1);
    expected.push({ record: reorged.record, terms: termsOf("sponsor", false), actualGasCost: again.actualGasCost, tokenPaid: false });

    // A signature nobody sends expires: its hold is given back and nothing is billed.
    const unused = await sponsored("v0.7", "sponsor");
    expect((await account()).heldUsdMicros).to.equal(holdFor(termsOf("sponsor", false), unused.record.maxCostWei));
    await chainRequest(embedded, "evm_setNextBlockTimestamp", [`0x${(unused.record.validUntil + watcher.options.expiryGraceSeconds + 1).toString(16)}`]);
    await mine();
    expect((await watcher.tick()).released).to.be.greaterThan(0);
    expect((await account()).heldUsdMicros).to.equal(0n);

    const bills = expected.map((e) => settlementCharge(e.terms, e.actualGasCost, e.tokenPaid).totalUsdMicros);
    const closing = (await account()).balanceUsdMicros;
    expect(opening - closing, "the balance moved by exactly the bills").to.equal(bills.reduce((a, b) => a + b, 0n));

    const statement = await billingStatement(ctx, embedded.projectId, { month });
    const micros = (usd: string | null) => usdToMicros((usd ?? "0").replace("-", "")) * (usd?.startsWith("-") ? -1n : 1n);
    const lines = statement.lines;
    expect(micros(statement.closingBalanceUsd) - micros(statement.openingBalanceUsd)).to.equal(lines.reduce((sum, l) => sum + micros(l.amountUsd), 0n));
    expect(micros(statement.closingBalanceUsd)).to.equal(closing);
    // The operation lines that stand (the reorganised one: debit, adjustment, debit): the chain's actualGasCost,
    // valued at the reservation's price, with markup and fee.
    for (const e of expected) {
      const mine = lines.filter((l) => l.reference === e.record.id);
      const last = mine.at(-1)!;
      expect(last.kind).to.equal("debit");
      expect(last.gasCostWei).to.equal(e.actualGasCost.toString());
      const bill = settlementCharge(e.terms, e.actualGasCost, e.tokenPaid);
      expect([micros(last.gasUsd), micros(last.markupUsd), micros(last.feeUsd), micros(last.amountUsd)]).to.deep.equal([bill.gasUsdMicros, bill.markupUsdMicros, bill.feeUsdMicros, -bill.totalUsdMicros]);
      expect(last.userOpHash).to.equal(e.record.userOpHash);
      expect(last.txHash).to.match(/^0x[0-9a-f]{64}$/);
      expect(last.network).to.equal("local");
    }
    const reorgLines = lines.filter((l) => l.reference === reorged.record.id).map((l) => l.kind);
    expect(reorgLines).to.deep.equal(["debit", "adjustment", "debit"]);
    expect(statement.totals.operations).to.equal(expected.length + 1);
    // What the chain charged for the period's ops, billed or not (User Sponsor and paid ERC-20 ops bill the fee only), net of the reorganised bill.
    expect(BigInt(statement.totals.gasCostWei)).to.equal(expected.reduce((a, e) => a + e.actualGasCost, 0n));
    expect(statementCsv(statement).split("\r\n").filter((r) => r !== "")).to.have.length(lines.length + 3);
  });
});
