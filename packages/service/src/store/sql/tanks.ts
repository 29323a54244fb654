/**
 * The store's part for gas tanks (User Sponsor mode: a sender's prepaid balance, and what its outstanding
 * sponsorships hold of it): credits and debits, each idempotent by its reference and one batch (its tank row
 * moved by one statement, as reservations move it: sql/statements.ts), and their reads.
 */
import { randomUUID } from "node:crypto";
import type { Address } from "@paymaster/shared";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import { StoreError } from "../errors.ts";
import type { GasTank, GasTankConsentChange, GasTankConsentRecord, GasTankTotals, Store } from "../types.ts";
import { replaceableAfterSql } from "../tankConsentClock.ts";
import { Refusal } from "../db/types.ts";
import { amounts } from "../accounting.ts";
import { counterMove } from "./statements.ts";
import { isForeignKey, readTank, type SqlShared } from "./shared.ts";

const CONSENT_COLUMNS = `network, sender, project_id, allowed, issued_at, changed_by, updated_at,
  ${replaceableAfterSql("gas_tank_consents")} AS replaceable_after`;
const UPSERT_CONSENT = `INSERT INTO gas_tank_consents (network, sender, project_id, allowed, issued_at, changed_by, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (network, sender, project_id) DO UPDATE SET allowed = excluded.allowed, issued_at = excluded.issued_at,
      changed_by = excluded.changed_by, updated_at = excluded.updated_at`;

const TANK_QUERIES = {
  insertCredit: `INSERT INTO gas_tank_credits (reference, network, sender, amount_wei, created_at)
    VALUES (?, ?, ?, ?, ?)`,
  selectCredit: "SELECT network, sender, amount_wei FROM gas_tank_credits WHERE reference = ?",
  refuseUsedCredit: `SELECT CASE WHEN EXISTS (SELECT 1 FROM gas_tank_credits WHERE reference = ?) THEN pm_refuse('{"reason":"DUPLICATE"}', NULL) END AS refused`,
  refuseUsedDebit: `SELECT CASE WHEN EXISTS (SELECT 1 FROM gas_tank_debits WHERE reference = ?) THEN pm_refuse('{"reason":"DUPLICATE"}', NULL) END AS refused`,
  markCredit: "UPDATE gas_tank_credits SET change_id = ? WHERE reference = ?",
  guardCredit: `SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM gas_tank_credits WHERE reference = ? AND change_id = ?)
    THEN pm_refuse('{"reason":"STALE"}', NULL) END AS refused`,
  deleteCredit: "DELETE FROM gas_tank_credits WHERE reference = ? AND change_id = ?",
  insertDebit: `INSERT INTO gas_tank_debits (reference, network, sender, amount_wei, created_at)
    VALUES (?, ?, ?, ?, ?)`,
  selectDebit: "SELECT network, sender, amount_wei FROM gas_tank_debits WHERE reference = ?",
  // Amounts are added up here, not in SQL (SQLite keeps them as TEXT): this reads the rows.
  selectTankAmounts: "SELECT network, balance_wei, reserved_wei FROM gas_tanks",
  selectAllowed: "SELECT allowed FROM gas_tank_consents WHERE network = ? AND sender = ? AND project_id = ?",
  selectConsent: `SELECT ${CONSENT_COLUMNS} FROM gas_tank_consents WHERE network = ? AND sender = ? AND project_id = ?`,
  selectConsents: `SELECT ${CONSENT_COLUMNS} FROM gas_tank_consents WHERE network = ? AND sender = ? ORDER BY updated_at DESC, project_id`,
  // A signed consent replaces the row only when dated after what the row's recording allows (tankConsentClock.ts),
  // decided in the upsert's WHERE, on the row as it is when the upsert runs (concurrent ones queue on it).
  upsertSignedConsent: `${UPSERT_CONSENT}
    WHERE excluded.issued_at > ${replaceableAfterSql("gas_tank_consents")}`,
  // The operator's: dated when recorded, always applied.
  upsertConsentByHand: UPSERT_CONSENT,
} as const;

interface ConsentRow {
  network: string;
  sender: Address;
  project_id: string;
  allowed: boolean | number;
  issued_at: number | string;
  changed_by: string;
  updated_at: number | string;
  replaceable_after: number | string;
}

const consentOf = (r: ConsentRow): GasTankConsentRecord => ({
  network: r.network,
  sender: r.sender,
  projectId: r.project_id,
  allowed: Boolean(Number(r.allowed)),
  issuedAt: Number(r.issued_at),
  changedBy: r.changed_by,
  updatedAt: Number(r.updated_at),
  replaceableAfter: Number(r.replaceable_after),
});

export function tankStore(s: SqlShared) {
  return {
    creditGasTank: (network: string, sender: Address, amountWei: bigint, reference: string) => creditGasTank(s, network, sender, amountWei, reference),
    debitGasTank: (network: string, sender: Address, amountWei: bigint, reference: string) => debitGasTank(s, network, sender, amountWei, reference),
    revertGasTankCredit: (reference: string) => revertGasTankCredit(s, reference),
    getGasTank: (network: string, sender: Address) => getGasTank(s, network, sender),
    gasTankAllows: (network: string, sender: Address, projectId: string) => gasTankAllows(s, network, sender, projectId),
    gasTankConsents: (network: string, sender: Address) => gasTankConsents(s, network, sender),
    setGasTankConsent: (change: GasTankConsentChange) => setGasTankConsent(s, change),
    gasTankTotals: () => gasTankTotals(s),
  } satisfies Partial<Store>;
}

async function creditGasTank(s: SqlShared, network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
  try {
    return await adjustTank(s, "credit", network, sender, amountWei, reference);
  } catch (err) {
    if (s.db.violation(err)?.kind === "outOfRange") validation.invalid("the tank's balance would not fit in the database");
    throw err;
  }
}

/** As a credit; the tank must have the amount available (balance - reserved): a debit never makes a debt. */
async function debitGasTank(s: SqlShared, network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
  return adjustTank(s, "debit", network, sender, amountWei, reference);
}

/**
 * One batch: a guard that the reference is new, the credit (or debit) row, and the tank's balance moved (a
 * debit checked to leave what the tank reserves covered). Of two concurrent ones with one reference the
 * primary key lets one in (the insert has no ON CONFLICT: on PostgreSQL both may pass the guard before either
 * commits, and a silent no-op insert would let the second move the tank too); the other, like a repeat, finds
 * the first: the same amount changes nothing, another one is CONFLICT.
 */
async function adjustTank(s: SqlShared, kind: "credit" | "debit", network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
  const { db } = s;
  const q = TANK_QUERIES;
  const { sender: who } = validation.validCredit(sender, amountWei, reference);
  const [insert, select, used] = kind === "credit" ? [q.insertCredit, q.selectCredit, q.refuseUsedCredit] : [q.insertDebit, q.selectDebit, q.refuseUsedDebit];
  const now = validation.nowSeconds();
  const by = kind === "credit" ? amountWei : -amountWei;
  const move = { row: { kind: "tank" as const, network, sender: who }, by: amounts({ balance: by }) };
  try {
    const rows = await db.batch([
      { sql: used, params: [reference] },
      { sql: insert, params: [reference, network, who, amountWei, now] },
      counterMove(db.dialect, move, now, kind === "debit" ? { covered: { reason: "TANK_SHORT" } } : {}),
    ]);
    return { network, sender: who, ...dbRows.toTank(rows[2]![0] as dbRows.TankRow) };
  } catch (err) {
    if (err instanceof Refusal && err.reason.includes("TANK_SHORT")) {
      const available = BigInt(err.value ?? "0") + amountWei;
      throw new StoreError("INVALID_STATE", `the tank of ${who} on ${network} has ${available < 0n ? 0n : available} wei available, less than ${amountWei}`);
    }
    if (!(err instanceof Refusal) && db.violation(err)?.kind !== "unique") throw err;
  }
  const prior = await db.one<{ network: string; sender: string; amount_wei: string | bigint }>(select, [reference]);
  if (prior && (prior.network !== network || prior.sender !== who || BigInt(prior.amount_wei) !== amountWei)) throw validation.creditConflict(reference, prior);
  return readTank(s, db, network, who);
}

/**
 * The credit row is marked with this call's change id (of two concurrent reverts, the second waits for the
 * first and then finds nothing to mark: its guard refuses), the tank's balance goes down — possibly below
 * zero, when the credit was spent already — and the row goes. The reference is free again.
 */
async function revertGasTankCredit(s: SqlShared, reference: string): Promise<boolean> {
  if (typeof reference !== "string" || reference === "") return false;
  const q = TANK_QUERIES;
  const credit = await s.db.one<{ network: string; sender: Address; amount_wei: string | bigint }>(q.selectCredit, [reference]);
  if (!credit) return false;
  const changeId = randomUUID();
  const now = validation.nowSeconds();
  const row = { kind: "tank" as const, network: credit.network, sender: credit.sender };
  try {
    await s.db.batch([
      { sql: q.markCredit, params: [changeId, reference] },
      { sql: q.guardCredit, params: [reference, changeId] },
      counterMove(s.db.dialect, { row, by: amounts({ balance: -BigInt(credit.amount_wei) }) }, now),
      { sql: q.deleteCredit, params: [reference, changeId] },
    ]);
    return true;
  } catch (err) {
    if (err instanceof Refusal) return false; // reverted by a concurrent call
    throw err;
  }
}

async function getGasTank(s: SqlShared, network: string, sender: Address): Promise<GasTank> {
  return readTank(s, s.db, network, validation.address(sender, "sender"));
}

async function gasTankAllows(s: SqlShared, network: string, sender: Address, projectId: string): Promise<boolean> {
  const row = await s.db.one<{ allowed: boolean | number }>(TANK_QUERIES.selectAllowed, [network, validation.address(sender, "sender"), projectId]);
  return row !== undefined && Boolean(Number(row.allowed));
}

async function gasTankConsents(s: SqlShared, network: string, sender: Address): Promise<GasTankConsentRecord[]> {
  return (await s.db.all<ConsentRow>(TANK_QUERIES.selectConsents, [network, validation.address(sender, "sender")])).map(consentOf);
}

async function setGasTankConsent(s: SqlShared, change: GasTankConsentChange): Promise<{ applied: boolean; consent: GasTankConsentRecord; previous: GasTankConsentRecord | undefined }> {
  const q = TANK_QUERIES;
  const sender = validation.address(change.sender, "sender");
  const key = [change.network, sender, change.projectId];
  try {
    return await s.db.transaction(async (tx) => {
      const now = validation.nowSeconds();
      const current = await tx.one<ConsentRow>(q.selectConsent, key);
      const [upsert, issuedAt] = change.issuedAt === undefined ? [q.upsertConsentByHand, now] : [q.upsertSignedConsent, change.issuedAt];
      const applied = (await tx.run(upsert, [...key, change.allowed, issuedAt, change.changedBy, now])) > 0;
      const row = await tx.one<ConsentRow>(q.selectConsent, key);
      return { applied, consent: consentOf(row!), previous: current ? consentOf(current) : undefined };
    });
  } catch (err) {
    if (isForeignKey(s, err)) throw new StoreError("NOT_FOUND", `project ${JSON.stringify(change.projectId)} not found`);
    throw err;
  }
}

async function gasTankTotals(s: SqlShared): Promise<GasTankTotals[]> {
  const totals = new Map<string, GasTankTotals>();
  for (const row of await s.db.all<{ network: string; balance_wei: string | bigint; reserved_wei: string | bigint }>(TANK_QUERIES.selectTankAmounts)) {
    const t = totals.get(row.network) ?? { network: row.network, balanceWei: 0n, reservedWei: 0n, tanks: 0 };
    t.balanceWei += BigInt(row.balance_wei);
    t.reservedWei += BigInt(row.reserved_wei);
    t.tanks++;
    totals.set(row.network, t);
  }
  return [...totals.values()];
}
