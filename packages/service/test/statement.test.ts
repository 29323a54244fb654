// A project's statement as pure functions (src/billing/statement.ts) on ledger slices written here, the shape the
// store answers (billingSettlement.test.ts has the same on a real chain and watcher):
// - issue 46, item 12: what `totals` counts when an op was reorganised away and landed again — `operations` counts
//   debit lines (one per landing), the gas, markup and fee totals are net of the period's reversals;
// - issue 46, item 4: a CSV cell someone typed (a reference, an actor) that a spreadsheet would run as a formula is
//   neutralised even when whitespace comes before its = + - @ (or their full-width forms).
import { expect } from "chai";
import { buildStatement, monthPeriod, statementCsv } from "../src/billing/statement.ts";
import type { BilledOperation, BillingEntry } from "../src/billing/ledger.ts";

const PROJECT = { id: "p1", name: "Billed" };
const JANUARY = monthPeriod("2026-01")!;
const FEBRUARY = monthPeriod("2026-02")!;
const AFTER = FEBRUARY.until + 1;

/** An operation's figures: `gas` wei at 1 µUSD per 1e6 wei, a 10% markup and a 0.01 USD fee. */
function op(id: string, gas: bigint, block: number): BilledOperation {
  const gasUsd = gas / 1_000_000n;
  return { sponsorshipId: id, network: "local", mode: "sponsor", userOpHash: null, txHash: null, blockNumber: block, gasCostWei: gas, gasUsdMicros: gasUsd, markupUsdMicros: gasUsd / 10n, feeUsdMicros: 10_000n };
}
const bill = (o: BilledOperation) => o.gasUsdMicros + o.markupUsdMicros + o.feeUsdMicros;

/** A ledger written entry by entry, each with its balance after, as the store keeps it. */
function ledger(opening: bigint) {
  const entries: BillingEntry[] = [];
  let balance = opening;
  const add = (at: number, kind: BillingEntry["kind"], reference: string, amount: bigint, operation: BilledOperation | null, reverses: number | null) => {
    balance += amount;
    entries.push({ projectId: PROJECT.id, seq: entries.length + 1, at, kind, reference, amountUsdMicros: amount, balanceUsdMicros: balance, actor: null, op: operation, reversesSeq: reverses });
    return entries.length;
  };
  return {
    entries,
    debit: (at: number, o: BilledOperation) => add(at, "debit", o.sponsorshipId, -bill(o), o, null),
    /** The watcher's reversal of the debit `seq` (a reorg removed its block): the same figures, given back. */
    reverse: (at: number, seq: number) => add(at, "adjustment", entries[seq - 1]!.reference, bill(entries[seq - 1]!.op!), entries[seq - 1]!.op, seq),
    slice: (period: { since: number; until: number }) => {
      const inside = entries.filter((e) => e.at >= period.since && e.at < period.until);
      const before = entries.filter((e) => e.at < period.since).at(-1);
      return { openingUsdMicros: before?.balanceUsdMicros ?? opening, entries: inside };
    },
  };
}

describe("a statement's totals when an op was reorganised away and landed again (issue 46, item 12)", () => {
  const steady = op("s-steady", 3_000_000_000_000n, 10);
  const first = op("s-reorged", 2_000_000_000_000n, 11);
  const again = op("s-reorged", 2_500_000_000_000n, 13);

  it("in one period: operations counts both debit lines; gas, markup and fees are the standing landing's only", () => {
    const l = ledger(100_000_000n);
    l.debit(JANUARY.since + 10, steady);
    const reorged = l.debit(JANUARY.since + 20, first);
    l.reverse(JANUARY.since + 30, reorged);
    l.debit(JANUARY.since + 40, again);
    const totals = buildStatement(PROJECT, JANUARY, l.slice(JANUARY), AFTER).totals;
    expect(totals.operations, "debit lines: the steady op and both landings").to.equal(3);
    expect(totals.gasCostWei, "net: the first landing's gas given back").to.equal((steady.gasCostWei + again.gasCostWei).toString());
    expect(totals.gasUsd).to.equal("5.50");
    expect(totals.markupUsd).to.equal("0.55");
    expect(totals.feeUsd, "one fee per standing landing").to.equal("0.02");
    // operations goes with debitsUsd (both debit lines); the reversal is in adjustmentsUsd.
    expect(totals.debitsUsd).to.equal("-8.28");
    expect(totals.adjustmentsUsd).to.equal("2.21");
  });

  it("across periods: the debit stays counted in its closed period; the later one counts the new landing and nets the reversal", () => {
    const l = ledger(100_000_000n);
    const reorged = l.debit(JANUARY.until - 5, first);
    l.reverse(FEBRUARY.since + 5, reorged);
    l.debit(FEBRUARY.since + 6, again);
    const january = buildStatement(PROJECT, JANUARY, l.slice(JANUARY), AFTER).totals;
    expect([january.operations, january.gasCostWei]).to.deep.equal([1, first.gasCostWei.toString()]);
    const february = buildStatement(PROJECT, FEBRUARY, l.slice(FEBRUARY), AFTER).totals;
    expect(february.operations, "one debit line in February").to.equal(1);
    expect(february.gasCostWei, "the new landing less January's given back").to.equal((again.gasCostWei - first.gasCostWei).toString());
    expect(february.feeUsd, "a fee billed and one given back").to.equal("0.00");
    // Over both periods: one operation standing, at the new landing's gas.
    expect(BigInt(january.gasCostWei) + BigInt(february.gasCostWei)).to.equal(again.gasCostWei);
  });

  it("a reversal whose op did not land again: the period's gas totals are negative, its operations count none", () => {
    const l = ledger(100_000_000n);
    const reorged = l.debit(JANUARY.until - 5, first);
    l.reverse(FEBRUARY.since + 5, reorged);
    const february = buildStatement(PROJECT, FEBRUARY, l.slice(FEBRUARY), AFTER).totals;
    expect([february.operations, february.gasCostWei, february.gasUsd, february.feeUsd]).to.deep.equal([0, (-first.gasCostWei).toString(), "-2.00", "-0.01"]);
  });
});

describe("a statement's CSV: typed text never runs as a formula (issue 46, item 4)", () => {
  /** The CSV of one credit line with `reference` and `actor`, as a spreadsheet reads its cells (RFC 4180). */
  function cells(reference: string, actor: string): Record<string, string> {
    const entry: BillingEntry = { projectId: PROJECT.id, seq: 1, at: JANUARY.since, kind: "credit", reference, amountUsdMicros: 1_000_000n, balanceUsdMicros: 1_000_000n, actor, op: null, reversesSeq: null };
    const csv = statementCsv(buildStatement(PROJECT, JANUARY, { openingUsdMicros: 0n, entries: [entry] }, AFTER));
    const rows: string[][] = [];
    let row: string[] = [];
    let cell = "";
    for (let i = 0, quoted = false; i < csv.length; i++) {
      const c = csv[i]!;
      if (quoted) {
        if (c === '"' && csv[i + 1] === '"') (cell += '"'), i++;
        else if (c === '"') quoted = false;
        else cell += c;
      } else if (c === '"') quoted = true;
      else if (c === ",") row.push(cell), (cell = "");
      else if (c === "\r" && csv[i + 1] === "\n") row.push(cell), rows.push(row), (row = []), (cell = ""), i++;
      else cell += c;
    }
    const [header, , line] = rows;
    return Object.fromEntries(header!.map((name, i) => [name, line![i]!]));
  }

  const FORMULAS = ["=1+1", "+1+1", "-1+1", "@SUM(A1)", " =HYPERLINK(\"http://x.invalid\")", "  +1", "\t=1", "\u00a0=1", "\u3000@x", " \r\n=1", "\uff1d1+1", " \uff0b1", "\u200b=1"];

  it("a leading = + - @ is prefixed with ', after any whitespace too", () => {
    for (const text of FORMULAS) {
      const line = cells(text, `api:${text}`);
      expect(line.reference, JSON.stringify(text)).to.equal(`'${text}`);
      expect(line.actor!.startsWith("api:"), "an actor's name starts with its door").to.equal(true);
    }
    for (const text of FORMULAS) expect(cells("INV-1", text).actor, JSON.stringify(text)).to.equal(`'${text}`);
  });

  it("plain text, and text with = + - @ further in, is left as it is", () => {
    for (const text of ["INV-2026-11", "a=b", "wire 2026-11-03", "x @ y", "  spaced out  "]) expect(cells(text, "api:ops").reference, text).to.equal(text);
  });
});
