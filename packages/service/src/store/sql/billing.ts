/**
 * The store's part for project billing (migration 15; docs/policies.md, "Project billing"): plans, balances and
 * their append-only ledger, and the moves that reservations (reservations.ts) and sponsorship transitions
 * (sponsorships.ts) make in their own transactions — so a hold, a bill and their undoing are exact by
 * construction, as caps and gas tanks are:
 *
 * | transition                             | account held   | account balance                | ledger                 |
 * | -------------------------------------- | -------------- | ------------------------------ | ---------------------- |
 * | reserve (-> reserved / signed)         | + hold         |                                |                        |
 * | release, replace, expire, withdraw     | - hold         |                                |                        |
 * | settle from signed (-> settled)        | - hold         | - bill (settlementCharge)      | debit                  |
 * | settle from released (-> settled)      |                | - bill                         | debit                  |
 * | unsettle (a reorg)                     | + hold if back to signed | + the debit, exactly  | adjustment reversing it |
 *
 * `hold` is the sponsorship's billing_hold_usd_micros, written when it was reserved and never changed, so what is
 * given back is exactly what was taken. A project's account row is locked (lock order 3, ../sqlStore.ts) by every
 * transaction that moves it; entries are numbered per project under that lock and stamped no earlier than the
 * previous one, so a period that has ended never gains an entry: its statement never changes (a late reorg is an
 * adjustment in the period it happens in).
 */
import type { Hex } from "@paymaster/shared";
import { MAX_MARKUP_BPS, settlementCharge, termsFromJson, type BillingCharge } from "../../billing/charge.ts";
import * as validation from "../validation.ts";
import { Refusal, type Dialect, type Statement, type Tx } from "../db/types.ts";
import { StoreError } from "../errors.ts";
import type { Settlement, Store } from "../types.ts";
import type { BillingAccount, BillingEntry, BillingLedgerSlice, BillingPlan, BillingPlanChange, NewBillingEntry } from "../../billing/ledger.ts";
import type { SponsorMode } from "../../policy/types.ts";
import { eventBodyParts } from "../../webhooks/events.ts";
import type { SqlShared } from "./shared.ts";

const ACCOUNT_COLUMNS = "balance_usd_micros, held_usd_micros, last_seq, last_at, low_alerted, updated_at";
const PLAN_COLUMNS = "project_id, enabled, markup_bps, fee_usd_micros, alert_below_usd_micros, updated_at";
const ENTRY_COLUMNS = `project_id, seq, at, kind, reference, amount_usd_micros, balance_usd_micros, actor, sponsorship_id, network,
  mode, user_op_hash, tx_hash, block_number, gas_cost_wei, gas_usd_micros, markup_usd_micros, fee_usd_micros, reverses_seq`;
/** Statements read the ledger this many entries at a time. */
const LEDGER_PAGE = 1000;
/** A reference by hand: 1 to 200 characters. */
const MAX_REFERENCE_LENGTH = 200;

function billingQueries(d: Dialect) {
  return {
    selectProject: "SELECT 1 AS one FROM projects WHERE id = ?",
    selectPlan: `SELECT ${PLAN_COLUMNS} FROM billing_plans WHERE project_id = ?`,
    selectPlans: `SELECT ${PLAN_COLUMNS} FROM billing_plans ORDER BY project_id`,
    upsertPlan: `INSERT INTO billing_plans (${PLAN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET enabled = excluded.enabled, markup_bps = excluded.markup_bps,
        fee_usd_micros = excluded.fee_usd_micros, alert_below_usd_micros = excluded.alert_below_usd_micros,
        updated_at = excluded.updated_at`,
    selectAccount: `SELECT project_id, ${ACCOUNT_COLUMNS} FROM billing_accounts WHERE project_id = ?`,
    selectAccounts: `SELECT project_id, ${ACCOUNT_COLUMNS} FROM billing_accounts ORDER BY project_id`,
    selectByReference: `SELECT ${ENTRY_COLUMNS} FROM billing_ledger WHERE reference = ? AND sponsorship_id IS NULL`,
    selectEntries: `SELECT ${ENTRY_COLUMNS} FROM billing_ledger WHERE project_id = ? AND at >= ? AND at < ? AND seq > ?
      ORDER BY seq LIMIT ?`,
    // Entries are stamped in order (at never decreases with seq): the last one before `since` holds the opening balance.
    selectBalanceBefore: "SELECT balance_usd_micros FROM billing_ledger WHERE project_id = ? AND at < ? ORDER BY at DESC, seq DESC LIMIT 1",
    refuseUsedReference: `SELECT CASE WHEN EXISTS (SELECT 1 FROM billing_ledger WHERE reference = ? AND sponsorship_id IS NULL)
      THEN pm_refuse('{"reason":"DUPLICATE"}', NULL) END AS refused`,
  };
}

type Amount = string | bigint;

interface PlanRow {
  project_id: string;
  enabled: boolean | number;
  markup_bps: number;
  fee_usd_micros: Amount;
  alert_below_usd_micros: Amount | null;
  updated_at: number | string;
}

interface AccountRow {
  project_id: string;
  balance_usd_micros: Amount;
  held_usd_micros: Amount;
  last_seq: number | string;
  last_at: number | string;
  low_alerted: boolean | number;
  updated_at: number | string;
}

interface EntryRow {
  project_id: string;
  seq: number | string;
  at: number | string;
  kind: BillingEntry["kind"];
  reference: string;
  amount_usd_micros: Amount;
  balance_usd_micros: Amount;
  actor: string | null;
  sponsorship_id: string | null;
  network: string | null;
  mode: SponsorMode | null;
  user_op_hash: string | null;
  tx_hash: string | null;
  block_number: number | string | null;
  gas_cost_wei: Amount | null;
  gas_usd_micros: Amount | null;
  markup_usd_micros: Amount | null;
  fee_usd_micros: Amount | null;
  reverses_seq: number | string | null;
}

const flag = (value: boolean | number): boolean => Boolean(Number(value));

function toPlan(row: PlanRow): BillingPlan {
  return {
    projectId: row.project_id,
    enabled: flag(row.enabled),
    markupBps: Number(row.markup_bps),
    feeUsdMicros: BigInt(row.fee_usd_micros),
    alertBelowUsdMicros: row.alert_below_usd_micros === null ? null : BigInt(row.alert_below_usd_micros),
    updatedAt: Number(row.updated_at),
  };
}

function toAccount(projectId: string, row: AccountRow | undefined): BillingAccount {
  return {
    projectId,
    balanceUsdMicros: row ? BigInt(row.balance_usd_micros) : 0n,
    heldUsdMicros: row ? BigInt(row.held_usd_micros) : 0n,
    updatedAt: row ? Number(row.updated_at) : null,
  };
}

function toEntry(row: EntryRow): BillingEntry {
  const big = (v: Amount | null): bigint => BigInt(v ?? 0);
  return {
    projectId: row.project_id,
    seq: Number(row.seq),
    at: Number(row.at),
    kind: row.kind,
    reference: row.reference,
    amountUsdMicros: BigInt(row.amount_usd_micros),
    balanceUsdMicros: BigInt(row.balance_usd_micros),
    actor: row.actor,
    op:
      row.sponsorship_id === null
        ? null
        : {
            sponsorshipId: row.sponsorship_id,
            network: row.network ?? "",
            mode: row.mode ?? "sponsor",
            userOpHash: row.user_op_hash as Hex | null,
            txHash: row.tx_hash as Hex | null,
            blockNumber: row.block_number === null ? null : Number(row.block_number),
            gasCostWei: big(row.gas_cost_wei),
            gasUsdMicros: big(row.gas_usd_micros),
            markupUsdMicros: big(row.markup_usd_micros),
            feeUsdMicros: big(row.fee_usd_micros),
          },
    reversesSeq: row.reverses_seq === null ? null : Number(row.reverses_seq),
  };
}

/** What billing reads of a sponsorship row: written when it is reserved and never changed. */
export interface BillingRow {
  project_id: string;
  network: string;
  mode: SponsorMode;
  user_op_hash: string | null;
  billing_hold_usd_micros: Amount | null;
  billing_terms: string | null;
}

/** One ledger entry to append (its number, time and the balance after it come from the account as it moves). */
export interface LedgerEntry {
  projectId: string;
  kind: BillingEntry["kind"];
  reference: string;
  amount: bigint;
  actor: string | null;
  op: BillingEntry["op"];
  reversesSeq: number | null;
}

function ledgerSql(d: Dialect) {
  return {
    // The account's balance, entry number and time move first (created when missing), then the entry is written from
    // the account as it now stands: numbered under the account's row lock, never stamped before the previous one.
    moveBalance: `INSERT INTO billing_accounts (project_id, balance_usd_micros, held_usd_micros, last_seq, last_at, low_alerted, updated_at)
        VALUES (?, ?, '0', 1, ?, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET balance_usd_micros = ${d.plus("billing_accounts.balance_usd_micros", "?")},
        last_seq = billing_accounts.last_seq + 1, last_at = ${d.greatest("billing_accounts.last_at", "?")}, updated_at = ?
      RETURNING balance_usd_micros, held_usd_micros`,
    insertEntry: `INSERT INTO billing_ledger (${ENTRY_COLUMNS})
      SELECT project_id, last_seq, last_at, ?, ?, ?, balance_usd_micros, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
      FROM billing_accounts WHERE project_id = ?
      RETURNING ${ENTRY_COLUMNS}`,
    // balance.low, once per dip below the plan's threshold (re-armed when the balance is back at or above it): the
    // outbox rows, then the flag. Only a move of the balance can cross it (holds come and go with every reservation).
    lowBalance: `WITH x AS MATERIALIZED (
        SELECT e.id AS endpoint_id, a.project_id, ${d.newEventId} AS event_id, a.balance_usd_micros AS balance,
          a.held_usd_micros AS held, p.alert_below_usd_micros AS threshold, a.last_seq AS seq
        FROM billing_accounts a JOIN billing_plans p ON p.project_id = a.project_id
          JOIN webhook_endpoints e ON e.project_id = a.project_id AND e.kind = 'events' AND CAST(e.events AS TEXT) LIKE '%"balance.low"%'
        WHERE a.project_id = ? AND a.low_alerted = ? AND ${d.greater("p.alert_below_usd_micros", "a.balance_usd_micros")}
      )
      INSERT INTO webhook_events (id, endpoint_id, project_id, type, sponsorship_id, seq, dedupe_key, payload, status, attempts,
        next_attempt_ms, created_ms)
      SELECT x.event_id, x.endpoint_id, x.project_id, 'balance.low', NULL, 0, 'balance.low:' || x.project_id || ':' || CAST(x.seq AS TEXT),
        ? || x.event_id || ? || x.project_id || '","data":{"balanceUsdMicros":"' || CAST(x.balance AS TEXT) || '","heldUsdMicros":"'
          || CAST(x.held AS TEXT) || '","availableUsdMicros":"' || CAST(${d.minus("x.balance", "x.held")} AS TEXT)
          || '","thresholdUsdMicros":"' || CAST(x.threshold AS TEXT) || '","seq":' || CAST(x.seq AS TEXT) || '}}',
        'pending', 0, ?, ?
      FROM x WHERE 1 = 1
      ON CONFLICT (endpoint_id, dedupe_key) DO NOTHING`,
    lowAlerted: `UPDATE billing_accounts SET low_alerted = COALESCE((SELECT ${d.greater("p.alert_below_usd_micros", "billing_accounts.balance_usd_micros")}
        FROM billing_plans p WHERE p.project_id = billing_accounts.project_id), ?)
      WHERE project_id = ?`,
  };
}

const ledgerSqls = new Map<string, ReturnType<typeof ledgerSql>>();
function ledgerSqlFor(d: Dialect): ReturnType<typeof ledgerSql> {
  let sql = ledgerSqls.get(d.name);
  if (!sql) ledgerSqls.set(d.name, (sql = ledgerSql(d)));
  return sql;
}

/** The statements that append `entry` to its project's ledger (the second answers the entry as written). */
export function ledgerStatements(d: Dialect, entry: LedgerEntry, now: number): Statement[] {
  const sql = ledgerSqlFor(d);
  const op = entry.op;
  return [
    { sql: sql.moveBalance, params: [entry.projectId, entry.amount, now, false, now, entry.amount, now, now] },
    {
      sql: sql.insertEntry,
      params: [
        entry.kind, entry.reference, entry.amount, entry.actor, op?.sponsorshipId ?? null, op?.network ?? null, op?.mode ?? null,
        op?.userOpHash ?? null, op?.txHash ?? null, op?.blockNumber ?? null, op?.gasCostWei ?? null, op?.gasUsdMicros ?? null,
        op?.markupUsdMicros ?? null, op?.feeUsdMicros ?? null, entry.reversesSeq, entry.projectId,
      ],
    },
  ];
}

/** The balance.low check of a project whose balance the batch moved (after its ledger statements). */
export function lowBalanceStatements(d: Dialect, projectId: string, nowMs: number): Statement[] {
  const sql = ledgerSqlFor(d);
  const [head, middle] = eventBodyParts("balance.low", Math.floor(nowMs / 1000), {});
  return [
    { sql: sql.lowBalance, params: [projectId, false, head, middle, nowMs, nowMs] },
    { sql: sql.lowAlerted, params: [false, projectId] },
  ];
}

/**
 * The ledger entry of a sponsorship's transition, if any: a settlement is debited (billed by the terms it was
 * reserved with); an un-settlement reverses exactly the debit it undoes (`lastEntry`: the sponsorship's latest
 * entry, read before). Its hold moves with the other counters (../accounting.ts).
 */
export function transitionEntry(id: string, row: BillingRow, change: { from: string; to: string; settlement?: Settlement | undefined }, lastEntry: BillingEntry | undefined): LedgerEntry | undefined {
  if (row.billing_hold_usd_micros === null) return undefined;
  if (change.to === "settled" && change.settlement) {
    const s = change.settlement;
    const bill = settlementCharge(termsFromJson(row.billing_terms!), s.actualGasCostWei, (s.actualTokenCost ?? 0n) > 0n);
    return { projectId: row.project_id, kind: "debit", reference: id, amount: -bill.totalUsdMicros, actor: null, op: billedOp(id, row, s, bill), reversesSeq: null };
  }
  if (change.from === "settled" && change.to !== "settled" && lastEntry?.kind === "debit") {
    return { projectId: row.project_id, kind: "adjustment", reference: id, amount: -lastEntry.amountUsdMicros, actor: null, op: lastEntry.op, reversesSeq: lastEntry.seq };
  }
  return undefined;
}

function billedOp(id: string, row: BillingRow, settlement: Settlement, bill: BillingCharge): NonNullable<BillingEntry["op"]> {
  return {
    sponsorshipId: id,
    network: row.network,
    mode: row.mode,
    userOpHash: row.user_op_hash as Hex | null,
    txHash: settlement.txHash,
    blockNumber: Number(settlement.blockNumber),
    gasCostWei: bill.gasCostWei,
    gasUsdMicros: bill.gasUsdMicros,
    markupUsdMicros: bill.markupUsdMicros,
    feeUsdMicros: bill.feeUsdMicros,
  };
}

/** The latest ledger entry of each of these sponsorships (a debit while it stands settled, the adjustment that undid it after a reorg). */
export async function lastEntries(s: SqlShared, ids: readonly string[]): Promise<Map<string, BillingEntry>> {
  const rows = await s.db.all<EntryRow>(LAST_ENTRIES_SQL(s.db.dialect), [JSON.stringify(ids)]);
  const last = new Map<string, BillingEntry>();
  for (const row of rows) {
    const entry = toEntry(row);
    const known = last.get(row.sponsorship_id!);
    if (!known || known.seq < entry.seq) last.set(row.sponsorship_id!, entry);
  }
  return last;
}

const LAST_ENTRIES_SQL = (d: Dialect) => `SELECT ${ENTRY_COLUMNS} FROM billing_ledger WHERE sponsorship_id IN (${d.jsonTexts})`;

// ---- the Store methods

function validPlanChange(change: BillingPlanChange): BillingPlanChange {
  if (typeof change !== "object" || change === null) validation.invalid("billing plan changes must be an object");
  const known = new Set(["enabled", "markupBps", "feeUsdMicros", "alertBelowUsdMicros"]);
  const unknown = Object.keys(change).find((k) => !known.has(k));
  if (unknown !== undefined) validation.invalid(`billing plan field "${unknown}" does not exist`);
  if (change.enabled !== undefined && typeof change.enabled !== "boolean") validation.invalid("enabled must be a boolean");
  if (change.markupBps !== undefined && (!Number.isSafeInteger(change.markupBps) || change.markupBps < 0 || change.markupBps > MAX_MARKUP_BPS)) {
    validation.invalid(`markupBps must be an integer from 0 to ${MAX_MARKUP_BPS}`);
  }
  if (change.feeUsdMicros !== undefined && (typeof change.feeUsdMicros !== "bigint" || change.feeUsdMicros < 0n)) validation.invalid("feeUsdMicros must be a non-negative bigint");
  const alert = change.alertBelowUsdMicros;
  if (alert !== undefined && alert !== null && (typeof alert !== "bigint" || alert < 0n)) validation.invalid("alertBelowUsdMicros must be a non-negative bigint or null");
  return change;
}

function validEntry(entry: NewBillingEntry): NewBillingEntry {
  if (typeof entry.projectId !== "string" || entry.projectId === "") validation.invalid("projectId must be a non-empty string");
  if (entry.kind !== "credit" && entry.kind !== "adjustment") validation.invalid('kind must be "credit" or "adjustment"');
  if (typeof entry.amountUsdMicros !== "bigint") validation.invalid("amountUsdMicros must be a bigint");
  if (entry.kind === "credit" && entry.amountUsdMicros <= 0n) validation.invalid("a credit must be positive");
  if (entry.amountUsdMicros === 0n) validation.invalid("an adjustment must not be zero");
  if (validation.UINT256_MAX < (entry.amountUsdMicros < 0n ? -entry.amountUsdMicros : entry.amountUsdMicros)) validation.invalid("the amount does not fit in 256 bits");
  if (typeof entry.reference !== "string" || entry.reference === "" || entry.reference.length > MAX_REFERENCE_LENGTH) {
    validation.invalid(`reference must be a string of 1 to ${MAX_REFERENCE_LENGTH} characters`);
  }
  if (typeof entry.actor !== "string" || entry.actor === "") validation.invalid("actor must be a non-empty string");
  return entry;
}

export function billingStore(s: SqlShared) {
  const { db } = s;
  const q = billingQueries(db.dialect);

  async function requireProject(on: Tx | typeof db, projectId: string): Promise<void> {
    if (typeof projectId !== "string" || (await on.one(q.selectProject, [projectId])) === undefined) {
      throw new StoreError("NOT_FOUND", `project ${JSON.stringify(projectId)} not found`);
    }
  }

  async function getBillingPlan(projectId: string): Promise<BillingPlan | undefined> {
    const row = await db.one<PlanRow>(q.selectPlan, [projectId]);
    return row && toPlan(row);
  }

  return {
    getBillingPlan,

    async setBillingPlan(projectId: string, change: BillingPlanChange): Promise<{ plan: BillingPlan; previous: BillingPlan | undefined }> {
      const valid = validPlanChange(change);
      return db.transaction(async (tx) => {
        await requireProject(tx, projectId);
        const row = await tx.one<PlanRow>(q.selectPlan, [projectId]);
        const previous = row && toPlan(row);
        const plan: BillingPlan = {
          projectId,
          enabled: valid.enabled ?? previous?.enabled ?? false,
          markupBps: valid.markupBps ?? previous?.markupBps ?? 0,
          feeUsdMicros: valid.feeUsdMicros ?? previous?.feeUsdMicros ?? 0n,
          alertBelowUsdMicros: valid.alertBelowUsdMicros === undefined ? (previous?.alertBelowUsdMicros ?? null) : valid.alertBelowUsdMicros,
          updatedAt: validation.nowSeconds(),
        };
        await tx.run(q.upsertPlan, [projectId, plan.enabled, plan.markupBps, plan.feeUsdMicros, plan.alertBelowUsdMicros, plan.updatedAt]);
        return { plan, previous };
      });
    },

    async getBillingAccount(projectId: string): Promise<BillingAccount> {
      return toAccount(projectId, await db.one<AccountRow>(q.selectAccount, [projectId]));
    },

    /**
     * One batch: a guard that the reference is new, the ledger entry (the account moved under its row lock for
     * the statement's time only) and the low-balance check. Of two concurrent entries with one reference the
     * partial unique index lets one in; the other, like a repeat, finds the first and answers it (a duplicate) or,
     * when it differs, CONFLICT.
     */
    async addBillingEntry(input: NewBillingEntry): Promise<{ entry: BillingEntry; account: BillingAccount; duplicate: boolean }> {
      const entry = validEntry(input);
      const now = validation.nowSeconds();
      try {
        const rows = await db.batch([
          { sql: q.refuseUsedReference, params: [entry.reference] },
          ...ledgerStatements(db.dialect, { projectId: entry.projectId, kind: entry.kind, reference: entry.reference, amount: entry.amountUsdMicros, actor: entry.actor, op: null, reversesSeq: null }, now),
          ...lowBalanceStatements(db.dialect, entry.projectId, Date.now()),
        ]);
        const account = rows[1]![0] as AccountRow;
        return { entry: toEntry(rows[2]![0] as EntryRow), account: { projectId: entry.projectId, balanceUsdMicros: BigInt(account.balance_usd_micros), heldUsdMicros: BigInt(account.held_usd_micros), updatedAt: now }, duplicate: false };
      } catch (err) {
        if (db.violation(err)?.kind === "foreignKey") throw new StoreError("NOT_FOUND", `project ${JSON.stringify(entry.projectId)} not found`);
        if (!(err instanceof Refusal) && db.violation(err)?.kind !== "unique") throw err;
      }
      const prior = (await db.one<EntryRow>(q.selectByReference, [entry.reference]))!;
      const same = prior.project_id === entry.projectId && prior.kind === entry.kind && BigInt(prior.amount_usd_micros) === entry.amountUsdMicros;
      if (!same) {
        throw new StoreError("CONFLICT", `reference "${entry.reference}" was already used for a ${prior.kind} of ${prior.amount_usd_micros} USD micros to project ${prior.project_id}`);
      }
      return { entry: toEntry(prior), account: toAccount(entry.projectId, await db.one<AccountRow>(q.selectAccount, [entry.projectId])), duplicate: true };
    },

    async billingLedger(projectId: string, since: number, until: number): Promise<BillingLedgerSlice> {
      const opening = await db.one<{ balance_usd_micros: Amount }>(q.selectBalanceBefore, [projectId, since]);
      const entries: BillingEntry[] = [];
      for (;;) {
        const after = entries.at(-1)?.seq ?? 0;
        const page = await db.all<EntryRow>(q.selectEntries, [projectId, since, until, after, LEDGER_PAGE]);
        entries.push(...page.map(toEntry));
        if (page.length < LEDGER_PAGE) break;
      }
      return { openingUsdMicros: opening ? BigInt(opening.balance_usd_micros) : 0n, entries };
    },

    async listBillingAccounts() {
      const [plans, accounts] = await Promise.all([db.all<PlanRow>(q.selectPlans), db.all<AccountRow>(q.selectAccounts)]);
      const byProject = new Map<string, { projectId: string; plan: BillingPlan | undefined; account: BillingAccount }>();
      for (const row of plans) byProject.set(row.project_id, { projectId: row.project_id, plan: toPlan(row), account: toAccount(row.project_id, undefined) });
      for (const row of accounts) {
        const known = byProject.get(row.project_id);
        byProject.set(row.project_id, { projectId: row.project_id, plan: known?.plan, account: toAccount(row.project_id, row) });
      }
      return [...byProject.values()].sort((a, b) => (a.projectId < b.projectId ? -1 : a.projectId > b.projectId ? 1 : 0));
    },
  } satisfies Partial<Store>;
}
