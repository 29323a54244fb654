/**
 * A project's statement (pure): the period asked for, the ledger's entries in it (store.billingLedger) and the
 * balance before them, as the JSON the admin API and the CLI answer and as CSV. Derived from the append-only
 * ledger only, so it reconciles by construction — opening + the sum of the lines' amounts = closing — and a
 * period that has ended (`closed`) reads the same forever.
 */
import { formatUsdMicros } from "../policy/rules.ts";
import type { BillingEntry, BillingLedgerSlice } from "./ledger.ts";

/** A statement's period: [since, until) in unix seconds, and its name. */
export interface StatementPeriod {
  since: number;
  until: number;
  /** "2026-11" for a calendar month, else "<since ISO>/<until ISO>". */
  label: string;
}

const MONTH_RE = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** The calendar month (UTC) "YYYY-MM" as a period. */
export function monthPeriod(month: string): StatementPeriod | undefined {
  const match = MONTH_RE.exec(month);
  if (!match) return undefined;
  const year = Number(match[1]);
  const index = Number(match[2]) - 1;
  return { since: Date.UTC(year, index, 1) / 1000, until: Date.UTC(year, index + 1, 1) / 1000, label: month };
}

/** The calendar month (UTC) that holds `now` (unix seconds). */
export function currentMonth(now: number): string {
  return new Date(now * 1000).toISOString().slice(0, 7);
}

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString().replace(".000Z", "Z");

/** A period of any range (validated by the caller: since < until). */
export function rangePeriod(since: number, until: number): StatementPeriod {
  return { since, until, label: `${iso(since)}/${iso(until)}` };
}

/** One line of a statement: an entry of the ledger, amounts in dollars ("1.25"), wei as decimal strings. */
export interface StatementLine {
  seq: number;
  time: string;
  kind: BillingEntry["kind"];
  reference: string;
  network: string | null;
  mode: string | null;
  userOpHash: string | null;
  txHash: string | null;
  blockNumber: number | null;
  gasCostWei: string | null;
  gasUsd: string | null;
  markupUsd: string | null;
  feeUsd: string | null;
  /** Signed: what the line adds to the balance (a debit is negative). */
  amountUsd: string;
  balanceUsd: string;
  /** An adjustment reversing an earlier line (a reorganised settlement): that line's seq. */
  reverses: number | null;
  actor: string | null;
}

export interface Statement {
  project: { id: string; name: string };
  period: { since: string; until: string; label: string; closed: boolean };
  currency: "USD";
  openingBalanceUsd: string;
  closingBalanceUsd: string;
  totals: {
    creditsUsd: string;
    /** The period's debit lines summed: every landing billed, a debit a reorg later reversed included. */
    debitsUsd: string;
    /** Corrections by hand and reversals of debits (a reorganised settlement), summed. */
    adjustmentsUsd: string;
    /**
     * The period's debit lines, counted: one per landing billed (what `debitsUsd` sums). An op reorganised away
     * and landed again has two debit lines and counts twice in a period that holds both; its reversal (an
     * adjustment) is not subtracted.
     */
    operations: number;
    /**
     * Net of the period's reversals: the figures of its debit lines minus those of its adjustments that reverse a
     * debit (of this period or an earlier one, so negative when a period's reversals outweigh its debits). An op
     * reorganised away and landed again within the period counts here at its second landing's figures only.
     */
    gasCostWei: string;
    gasUsd: string;
    markupUsd: string;
    feeUsd: string;
  };
  lines: StatementLine[];
}

function line(e: BillingEntry): StatementLine {
  const op = e.op;
  // An adjustment of an operation shows the figures it reverses as negatives of the debit's (it gives them back).
  const sign = e.kind === "adjustment" && op ? -1n : 1n;
  const usd = (micros: bigint | undefined) => (micros === undefined ? null : formatUsdMicros(sign * micros));
  return {
    seq: e.seq,
    time: iso(e.at),
    kind: e.kind,
    reference: e.reference,
    network: op?.network ?? null,
    mode: op?.mode ?? null,
    userOpHash: op?.userOpHash ?? null,
    txHash: op?.txHash ?? null,
    blockNumber: op?.blockNumber ?? null,
    gasCostWei: op ? (sign * op.gasCostWei).toString() : null,
    gasUsd: usd(op?.gasUsdMicros),
    markupUsd: usd(op?.markupUsdMicros),
    feeUsd: usd(op?.feeUsdMicros),
    amountUsd: formatUsdMicros(e.amountUsdMicros),
    balanceUsd: formatUsdMicros(e.balanceUsdMicros),
    reverses: e.reversesSeq,
    actor: e.actor,
  };
}

/** The statement of `period` from the ledger's slice of it; `now` decides whether the period has ended. */
export function buildStatement(project: { id: string; name: string }, period: StatementPeriod, slice: BillingLedgerSlice, now: number): Statement {
  const sum = (entries: readonly BillingEntry[]) => entries.reduce((total, e) => total + e.amountUsdMicros, 0n);
  const of = (kind: BillingEntry["kind"]) => slice.entries.filter((e) => e.kind === kind);
  const debits = of("debit");
  const opSum = (pick: (op: NonNullable<BillingEntry["op"]>) => bigint) =>
    slice.entries.reduce((total, e) => (e.op ? total + (e.kind === "debit" ? 1n : -1n) * pick(e.op) : total), 0n);
  const closing = slice.entries.at(-1)?.balanceUsdMicros ?? slice.openingUsdMicros;
  return {
    project,
    period: { since: iso(period.since), until: iso(period.until), label: period.label, closed: period.until <= now },
    currency: "USD",
    openingBalanceUsd: formatUsdMicros(slice.openingUsdMicros),
    closingBalanceUsd: formatUsdMicros(closing),
    totals: {
      creditsUsd: formatUsdMicros(sum(of("credit"))),
      debitsUsd: formatUsdMicros(sum(debits)),
      adjustmentsUsd: formatUsdMicros(sum(of("adjustment"))),
      operations: debits.length,
      // Net: the debit lines' figures minus the reversals' (the adjustments that carry an op).
      gasCostWei: opSum((op) => op.gasCostWei).toString(),
      gasUsd: formatUsdMicros(opSum((op) => op.gasUsdMicros)),
      markupUsd: formatUsdMicros(opSum((op) => op.markupUsdMicros)),
      feeUsd: formatUsdMicros(opSum((op) => op.feeUsdMicros)),
    },
    lines: slice.entries.map(line),
  };
}

export const STATEMENT_CSV_COLUMNS = [
  "seq",
  "time",
  "kind",
  "reference",
  "network",
  "mode",
  "userOpHash",
  "txHash",
  "blockNumber",
  "gasCostWei",
  "gasUsd",
  "markupUsd",
  "feeUsd",
  "amountUsd",
  "balanceUsd",
  "reverses",
  "actor",
] as const satisfies readonly (keyof StatementLine)[];

/** Columns of text someone typed (a reference, an actor): a leading = + - @ would make a spreadsheet run a formula. */
const FREE_TEXT = new Set<string>(["reference", "actor"]);
/**
 * What a spreadsheet may read as a formula: = + - @ (or their full-width forms, which some locales take too) after
 * any whitespace or zero-width characters (spreadsheets trim them), or a cell that starts with a tab or a line break.
 */
const FORMULA_START = /^(?:[\t\r\n]|[\s\u200b-\u200d\u2060]*[=+\-@\uff1d\uff0b\uff0d\uff20])/u;

function csvCell(column: string, value: unknown): string {
  if (value === null || value === undefined) return "";
  let text = String(value);
  if (FREE_TEXT.has(column) && FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * The statement as CSV (RFC 4180: CRLF unless `eol` says otherwise): a header, an "opening" row with the balance
 * before the period, one row per line, a "closing" row; the amountUsd column of the lines between them sums to
 * closing - opening.
 */
export function statementCsv(statement: Statement, eol: "\r\n" | "\n" = "\r\n"): string {
  const rows: string[][] = [[...STATEMENT_CSV_COLUMNS]];
  const edge = (kind: string, time: string, balance: string) => STATEMENT_CSV_COLUMNS.map((c) => (c === "kind" ? kind : c === "time" ? time : c === "balanceUsd" ? balance : ""));
  rows.push(edge("opening", statement.period.since, statement.openingBalanceUsd));
  for (const l of statement.lines) rows.push(STATEMENT_CSV_COLUMNS.map((c) => csvCell(c, l[c])));
  rows.push(edge("closing", statement.period.until, statement.closingBalanceUsd));
  return rows.map((r) => r.join(",")).join(eol) + eol;
}

/** A statement as a downloadable file's text: the CSV of statementCsv, or the JSON document, pretty-printed. */
export function statementFile(statement: Statement, format: "csv" | "json"): string {
  return format === "csv" ? statementCsv(statement) : `${JSON.stringify(statement, null, 2)}\n`;
}

/** A statement's file name: statement-<project id>-<period>.<ext> (safe in a Content-Disposition header and on disk). */
export function statementFileName(statement: Statement, ext: "csv" | "json"): string {
  return `statement-${statement.project.id}-${statement.period.label}`.replace(/[^A-Za-z0-9._-]/g, "_") + `.${ext}`;
}
