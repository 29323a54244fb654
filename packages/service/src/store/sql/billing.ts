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
import * as common from "../common.ts";
import type { Dialect, Param, Tx } from "../db/types.ts";
import { StoreError } from "../errors.ts";
import type {
  BillingAccount,
  BillingEntry,
  BillingLedgerSlice,
  BillingPlan,
  BillingPlanChange,
  NewBillingEntry,
  Settlement,
  SponsorMode,
  Store,
} from "../types.ts";
import { writeEvents } from "../webhookRows.ts";
import { nowMs, type SqlShared } from "./shared.ts";

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
    selectAlertThreshold: "SELECT alert_below_usd_micros FROM billing_plans WHERE project_id = ?",
    selectAccount: `SELECT project_id, ${ACCOUNT_COLUMNS} FROM billing_accounts WHERE project_id = ?`,
    selectAccounts: `SELECT project_id, ${ACCOUNT_COLUMNS} FROM billing_accounts ORDER BY project_id`,
    // Creates the row if missing, and locks it either way (ON CONFLICT DO UPDATE locks the existing row).
    upsertLockAccount: `INSERT INTO billing_accounts (project_id, balance_usd_micros, held_usd_micros, last_seq, last_at, low_alerted, updated_at)
      VALUES (?, '0', '0', 0, 0, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET updated_at = billing_accounts.updated_at
      RETURNING project_id, ${ACCOUNT_COLUMNS}`,
    updateAccount: `UPDATE billing_accounts SET balance_usd_micros = ?, held_usd_micros = ?, last_seq = ?, last_at = ?,
        low_alerted = ?, updated_at = ?
      WHERE project_id = ?`,
    insertEntry: `INSERT INTO billing_ledger (${ENTRY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    selectByReference: `SELECT ${ENTRY_COLUMNS} FROM billing_ledger WHERE reference = ? AND sponsorship_id IS NULL`,
    // A sponsorship's latest entry: a debit while it stands settled, the adjustment that undid it after a reorg.
    selectLastOfSponsorship: `SELECT ${ENTRY_COLUMNS} FROM billing_ledger WHERE sponsorship_id = ? ORDER BY seq DESC LIMIT 1`,
    selectEntries: `SELECT ${ENTRY_COLUMNS} FROM billing_ledger WHERE project_id = ? AND at >= ? AND at < ? AND seq > ?
      ORDER BY seq LIMIT ?`,
    // Entries are stamped in order (at never decreases with seq): the last one before `since` holds the opening balance.
    selectBalanceBefore: "SELECT balance_usd_micros FROM billing_ledger WHERE project_id = ? AND at < ? ORDER BY at DESC, seq DESC LIMIT 1",
    keyLock: d.keyLock,
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

/** A locked account while a transaction moves it; written back by saveAccounts. */
export interface AccountState {
  projectId: string;
  balance: bigint;
  held: bigint;
  lastSeq: number;
  lastAt: number;
  lowAlerted: boolean;
  /** Something to write back; `billed`: the balance itself moved (what the low-balance alert looks at). */
  changed: boolean;
  billed: boolean;
}

/** What a sponsorship row carries for billing (its project, and the hold and terms it was reserved with; null: not billed). */
export interface BilledRow {
  project_id: string;
  billing_hold_usd_micros: Amount | null;
}

/**
 * What billing reads of a sponsorship row (BILLING_ROW_COLUMNS): written when it is reserved and never changed, so
 * safe to read before its locks are taken (that read tells which account to lock).
 */
export interface BillingRow extends BilledRow {
  network: string;
  mode: SponsorMode;
  user_op_hash: string | null;
  billing_terms: string | null;
}

/** The columns of a BillingRow, for a SELECT from sponsorships. */
export function billingRowColumns(d: Dialect): string {
  return `project_id, network, mode, user_op_hash, billing_hold_usd_micros, ${d.json("billing_terms")}`;
}

/** The projects whose accounts a change of these sponsorship rows moves (billed ones only). */
export function billedProjects(rows: readonly (BilledRow | undefined)[]): string[] {
  return rows.filter((r): r is BilledRow => r !== undefined && r.billing_hold_usd_micros !== null).map((r) => r.project_id);
}

/** A sponsorship status change, as billing sees it: "deleted" is a withdrawn reservation. */
export type BillingNext = "signed" | "released" | "settled" | "deleted";

const isOpen = (status: string): boolean => status === "reserved" || status === "signed";

export function billingParts(s: SqlShared) {
  const { db } = s;
  const q = billingQueries(db.dialect);

  /** Locks (lock order 3: sorted by project id, after tanks and usage rows) and reads the accounts, creating missing ones. */
  async function lockAccounts(tx: Tx, projectIds: readonly string[]): Promise<Map<string, AccountState>> {
    const accounts = new Map<string, AccountState>();
    const now = common.nowSeconds();
    for (const projectId of [...new Set(projectIds)].sort()) {
      const row = (await tx.one<AccountRow>(q.upsertLockAccount, [projectId, false, now]))!;
      accounts.set(projectId, {
        projectId,
        balance: BigInt(row.balance_usd_micros),
        held: BigInt(row.held_usd_micros),
        lastSeq: Number(row.last_seq),
        lastAt: Number(row.last_at),
        lowAlerted: flag(row.low_alerted),
        changed: false,
        billed: false,
      });
    }
    return accounts;
  }

  /** Appends one entry to a locked account: its number, its time (never before the previous one) and the balance after it. */
  async function append(
    tx: Tx,
    account: AccountState,
    entry: { kind: BillingEntry["kind"]; reference: string; amount: bigint; actor: string | null; op: BillingEntry["op"]; reversesSeq: number | null },
    now: number,
  ): Promise<BillingEntry> {
    account.lastSeq += 1;
    account.lastAt = Math.max(now, account.lastAt);
    account.balance += entry.amount;
    account.changed = true;
    account.billed = true;
    const op = entry.op;
    const values: Param[] = [
      account.projectId,
      account.lastSeq,
      account.lastAt,
      entry.kind,
      entry.reference,
      entry.amount,
      account.balance,
      entry.actor,
      op?.sponsorshipId ?? null,
      op?.network ?? null,
      op?.mode ?? null,
      op?.userOpHash ?? null,
      op?.txHash ?? null,
      op?.blockNumber ?? null,
      op?.gasCostWei ?? null,
      op?.gasUsdMicros ?? null,
      op?.markupUsdMicros ?? null,
      op?.feeUsdMicros ?? null,
      entry.reversesSeq,
    ];
    await tx.run(q.insertEntry, values);
    return { projectId: account.projectId, seq: account.lastSeq, at: account.lastAt, kind: entry.kind, reference: entry.reference, amountUsdMicros: entry.amount, balanceUsdMicros: account.balance, actor: entry.actor, op, reversesSeq: entry.reversesSeq };
  }

  /**
   * Writes back the accounts a transaction moved. A balance that fell below the plan's alert threshold writes the
   * project's balance.low event (once per dip: re-armed when the balance is back at or above the threshold).
   */
  async function saveAccounts(tx: Tx, accounts: ReadonlyMap<string, AccountState>, now: number): Promise<void> {
    for (const a of accounts.values()) {
      if (!a.changed) continue;
      // Only a move of the balance can cross the threshold (holds come and go with every reservation).
      const plan = a.billed ? await tx.one<{ alert_below_usd_micros: Amount | null }>(q.selectAlertThreshold, [a.projectId]) : undefined;
      const threshold = plan?.alert_below_usd_micros === null || plan === undefined ? null : BigInt(plan.alert_below_usd_micros);
      const below = a.billed ? threshold !== null && a.balance < threshold : a.lowAlerted;
      if (below && !a.lowAlerted && threshold !== null) {
        await writeEvents(
          tx,
          {
            projectId: a.projectId,
            type: "balance.low",
            data: { balanceUsdMicros: a.balance.toString(), heldUsdMicros: a.held.toString(), availableUsdMicros: (a.balance - a.held).toString(), thresholdUsdMicros: threshold.toString(), seq: a.lastSeq },
            dedupeKey: `balance.low:${a.projectId}:${a.lastSeq}`,
          },
          nowMs(),
        );
      }
      a.lowAlerted = below;
      await tx.run(q.updateAccount, [a.balance, a.held, a.lastSeq, a.lastAt, a.lowAlerted, now, a.projectId]);
    }
  }

  /**
   * The bill of a sponsorship's transition from `row`'s status to `next`, on its locked account: its hold leaves
   * or comes back, a settlement is debited (billed by the terms it was reserved with), an un-settlement is the
   * exact reverse of the debit it undoes. Nothing for a sponsorship that was not billed.
   */
  async function billTransition(
    tx: Tx,
    accounts: ReadonlyMap<string, AccountState>,
    id: string,
    row: BillingRow,
    change: { from: string; next: BillingNext; settlement?: Settlement | undefined },
    now: number,
  ): Promise<void> {
    const { from, next, settlement } = change;
    if (row.billing_hold_usd_micros === null) return;
    const account = accounts.get(row.project_id);
    if (!account) throw new Error(`billing: the account of project ${row.project_id} was not locked`);
    moveHold(account, BigInt(row.billing_hold_usd_micros), from, next);
    if (next === "settled" && settlement) {
      const terms = termsFromJson(row.billing_terms!);
      const bill = settlementCharge(terms, settlement.actualGasCostWei, (settlement.actualTokenCost ?? 0n) > 0n);
      await append(tx, account, { kind: "debit", reference: id, amount: -bill.totalUsdMicros, actor: null, op: billedOp(id, row, settlement, bill), reversesSeq: null }, now);
    } else if (from === "settled" && next !== "settled") {
      const last = await tx.one<EntryRow>(q.selectLastOfSponsorship, [id]);
      if (last && last.kind === "debit") {
        const undone = toEntry(last);
        await append(tx, account, { kind: "adjustment", reference: id, amount: -undone.amountUsdMicros, actor: null, op: undone.op, reversesSeq: undone.seq }, now);
      }
    }
  }

  /** Moves a hold between the account's held amount and nothing, as the sponsorship opens or closes. */
  function moveHold(account: AccountState, hold: bigint, from: string, next: BillingNext): void {
    const delta = (isOpen(next) ? hold : 0n) - (isOpen(from) ? hold : 0n);
    if (delta === 0n) return;
    account.held += delta;
    if (account.held < 0n) account.held = 0n; // never below zero (as usage rows): only drifted rows could get here
    account.changed = true;
  }

  return { q, lockAccounts, append, saveAccounts, billTransition, moveHold };
}

export type BillingParts = ReturnType<typeof billingParts>;

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

// ---- the Store methods

function validPlanChange(change: BillingPlanChange): BillingPlanChange {
  if (typeof change !== "object" || change === null) common.invalid("billing plan changes must be an object");
  const known = new Set(["enabled", "markupBps", "feeUsdMicros", "alertBelowUsdMicros"]);
  const unknown = Object.keys(change).find((k) => !known.has(k));
  if (unknown !== undefined) common.invalid(`billing plan field "${unknown}" does not exist`);
  if (change.enabled !== undefined && typeof change.enabled !== "boolean") common.invalid("enabled must be a boolean");
  if (change.markupBps !== undefined && (!Number.isSafeInteger(change.markupBps) || change.markupBps < 0 || change.markupBps > MAX_MARKUP_BPS)) {
    common.invalid(`markupBps must be an integer from 0 to ${MAX_MARKUP_BPS}`);
  }
  if (change.feeUsdMicros !== undefined && (typeof change.feeUsdMicros !== "bigint" || change.feeUsdMicros < 0n)) common.invalid("feeUsdMicros must be a non-negative bigint");
  const alert = change.alertBelowUsdMicros;
  if (alert !== undefined && alert !== null && (typeof alert !== "bigint" || alert < 0n)) common.invalid("alertBelowUsdMicros must be a non-negative bigint or null");
  return change;
}

function validEntry(entry: NewBillingEntry): NewBillingEntry {
  if (typeof entry.projectId !== "string" || entry.projectId === "") common.invalid("projectId must be a non-empty string");
  if (entry.kind !== "credit" && entry.kind !== "adjustment") common.invalid('kind must be "credit" or "adjustment"');
  if (typeof entry.amountUsdMicros !== "bigint") common.invalid("amountUsdMicros must be a bigint");
  if (entry.kind === "credit" && entry.amountUsdMicros <= 0n) common.invalid("a credit must be positive");
  if (entry.amountUsdMicros === 0n) common.invalid("an adjustment must not be zero");
  if (common.UINT256_MAX < (entry.amountUsdMicros < 0n ? -entry.amountUsdMicros : entry.amountUsdMicros)) common.invalid("the amount does not fit in 256 bits");
  if (typeof entry.reference !== "string" || entry.reference === "" || entry.reference.length > MAX_REFERENCE_LENGTH) {
    common.invalid(`reference must be a string of 1 to ${MAX_REFERENCE_LENGTH} characters`);
  }
  if (typeof entry.actor !== "string" || entry.actor === "") common.invalid("actor must be a non-empty string");
  return entry;
}

export function billingStore(s: SqlShared) {
  const { db } = s;
  const parts = billingParts(s);
  const { q } = parts;

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
          updatedAt: common.nowSeconds(),
        };
        await tx.run(q.upsertPlan, [projectId, plan.enabled, plan.markupBps, plan.feeUsdMicros, plan.alertBelowUsdMicros, plan.updatedAt]);
        return { plan, previous };
      });
    },

    async getBillingAccount(projectId: string): Promise<BillingAccount> {
      return toAccount(projectId, await db.one<AccountRow>(q.selectAccount, [projectId]));
    },

    /**
     * Entries by hand are serialised per reference first (PostgreSQL: an advisory lock that only this takes;
     * SQLite's write lock already does), so of two with one reference the second finds the first: never a
     * unique violation inside the caller's transaction. Then the account (lock order 3).
     */
    async addBillingEntry(input: NewBillingEntry): Promise<{ entry: BillingEntry; account: BillingAccount; duplicate: boolean }> {
      const entry = validEntry(input);
      return db.transaction(async (tx) => {
        if (q.keyLock !== undefined) await tx.one(q.keyLock, [`billing-reference:${entry.reference}`]);
        const prior = await tx.one<EntryRow>(q.selectByReference, [entry.reference]);
        if (prior) {
          const same = prior.project_id === entry.projectId && prior.kind === entry.kind && BigInt(prior.amount_usd_micros) === entry.amountUsdMicros;
          if (!same) {
            throw new StoreError("CONFLICT", `reference "${entry.reference}" was already used for a ${prior.kind} of ${prior.amount_usd_micros} USD micros to project ${prior.project_id}`);
          }
          return { entry: toEntry(prior), account: toAccount(entry.projectId, await tx.one<AccountRow>(q.selectAccount, [entry.projectId])), duplicate: true };
        }
        await requireProject(tx, entry.projectId);
        const now = common.nowSeconds();
        const accounts = await parts.lockAccounts(tx, [entry.projectId]);
        const account = accounts.get(entry.projectId)!;
        const written = await parts.append(tx, account, { kind: entry.kind, reference: entry.reference, amount: entry.amountUsdMicros, actor: entry.actor, op: null, reversesSeq: null }, now);
        await parts.saveAccounts(tx, accounts, now);
        return { entry: written, account: { projectId: entry.projectId, balanceUsdMicros: account.balance, heldUsdMicros: account.held, updatedAt: now }, duplicate: false };
      });
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
