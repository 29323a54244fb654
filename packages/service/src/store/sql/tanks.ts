/**
 * The store's part for gas tanks (User Sponsor mode: a sender's prepaid balance, and what its outstanding
 * sponsorships hold of it): credits and debits, each idempotent by its reference, and their reads. The
 * reservations hold and give back tank amounts under the same row lock (lock order 1, shared.ts lockTank).
 */
import type { Address } from "@paymaster/shared";
import * as common from "../common.ts";
import { StoreError } from "../errors.ts";
import type { GasTank, GasTankConsentChange, GasTankConsentRecord, GasTankTotals, Store } from "../types.ts";
import { replaceableAfterSql } from "../tankConsentClock.ts";
import { isForeignKey, lockTank, readTank, type SqlShared } from "./shared.ts";

const CONSENT_COLUMNS = `network, sender, project_id, allowed, issued_at, changed_by, updated_at,
  ${replaceableAfterSql("gas_tank_consents")} AS replaceable_after`;
const UPSERT_CONSENT = `INSERT INTO gas_tank_consents (network, sender, project_id, allowed, issued_at, changed_by, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (network, sender, project_id) DO UPDATE SET allowed = excluded.allowed, issued_at = excluded.issued_at,
      changed_by = excluded.changed_by, updated_at = excluded.updated_at`;

const TANK_QUERIES = {
  insertCredit: `INSERT INTO gas_tank_credits (reference, network, sender, amount_wei, created_at)
    VALUES (?, ?, ?, ?, ?) ON CONFLICT (reference) DO NOTHING`,
  selectCredit: "SELECT network, sender, amount_wei FROM gas_tank_credits WHERE reference = ?",
  deleteCredit: "DELETE FROM gas_tank_credits WHERE reference = ? RETURNING network, sender, amount_wei",
  insertDebit: `INSERT INTO gas_tank_debits (reference, network, sender, amount_wei, created_at)
    VALUES (?, ?, ?, ?, ?) ON CONFLICT (reference) DO NOTHING`,
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
  const { db } = s;
  const q = TANK_QUERIES;

  /**
   * The credit (or debit) row is the idempotency key: inserted ON CONFLICT DO NOTHING, so of two concurrent
   * ones with one reference exactly one inserts (the other waits for it, then finds it); only the inserter
   * locks the tank and changes its balance.
   */
  async function adjustTank(kind: "credit" | "debit", network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
    const { sender: who } = common.validCredit(sender, amountWei, reference);
    const [insert, select] = kind === "credit" ? [q.insertCredit, q.selectCredit] : [q.insertDebit, q.selectDebit];
    return db.transaction(async (tx): Promise<GasTank> => {
      const now = common.nowSeconds();
      if ((await tx.run(insert, [reference, network, who, amountWei, now])) === 0) {
        const prior = await tx.one<{ network: string; sender: string; amount_wei: string | bigint }>(select, [reference]);
        if (prior && (prior.network !== network || prior.sender !== who || BigInt(prior.amount_wei) !== amountWei)) {
          throw common.creditConflict(reference, prior);
        }
        return readTank(s, tx, network, who);
      }
      const tank = await lockTank(s, tx, network, who);
      if (kind === "debit" && tank.balanceWei - tank.reservedWei < amountWei) {
        const available = tank.balanceWei - tank.reservedWei;
        throw new StoreError("INVALID_STATE", `the tank of ${who} on ${network} has ${available < 0n ? 0n : available} wei available, less than ${amountWei}`);
      }
      const balanceWei = kind === "credit" ? tank.balanceWei + amountWei : tank.balanceWei - amountWei;
      await tx.run(s.q.updateTank, [balanceWei, tank.reservedWei, now, network, who]);
      return { network, sender: who, balanceWei, reservedWei: tank.reservedWei };
    });
  }

  return {
    async creditGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
      try {
        return await adjustTank("credit", network, sender, amountWei, reference);
      } catch (err) {
        if (db.violation(err)?.kind === "outOfRange") common.invalid("the tank's balance would not fit in the database");
        throw err;
      }
    },

    /** As a credit; the tank must have the amount available (balance - reserved): a debit never makes a debt. */
    async debitGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
      return adjustTank("debit", network, sender, amountWei, reference);
    },

    /**
     * The credit row is deleted first (of two concurrent reverts one finds it), then the tank is locked and its
     * balance reduced — possibly below zero, when the credit was spent already. The reference is free again.
     */
    async revertGasTankCredit(reference: string): Promise<boolean> {
      if (typeof reference !== "string" || reference === "") return false;
      return db.transaction(async (tx) => {
        const credit = await tx.one<{ network: string; sender: Address; amount_wei: string | bigint }>(q.deleteCredit, [reference]);
        if (!credit) return false;
        const tank = await lockTank(s, tx, credit.network, credit.sender);
        const balanceWei = tank.balanceWei - BigInt(credit.amount_wei);
        await tx.run(s.q.updateTank, [balanceWei, tank.reservedWei, common.nowSeconds(), credit.network, credit.sender]);
        return true;
      });
    },

    async getGasTank(network: string, sender: Address): Promise<GasTank> {
      return readTank(s, db, network, common.address(sender, "sender"));
    },

    async gasTankAllows(network: string, sender: Address, projectId: string): Promise<boolean> {
      const row = await db.one<{ allowed: boolean | number }>(q.selectAllowed, [network, common.address(sender, "sender"), projectId]);
      return row !== undefined && Boolean(Number(row.allowed));
    },

    async gasTankConsents(network: string, sender: Address): Promise<GasTankConsentRecord[]> {
      return (await db.all<ConsentRow>(q.selectConsents, [network, common.address(sender, "sender")])).map(consentOf);
    },

    async setGasTankConsent(change: GasTankConsentChange): Promise<{ applied: boolean; consent: GasTankConsentRecord; previous: GasTankConsentRecord | undefined }> {
      const sender = common.address(change.sender, "sender");
      const key = [change.network, sender, change.projectId];
      try {
        return await db.transaction(async (tx) => {
          const now = common.nowSeconds();
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
    },

    async gasTankTotals(): Promise<GasTankTotals[]> {
      const totals = new Map<string, GasTankTotals>();
      for (const row of await db.all<{ network: string; balance_wei: string | bigint; reserved_wei: string | bigint }>(q.selectTankAmounts)) {
        const t = totals.get(row.network) ?? { network: row.network, balanceWei: 0n, reservedWei: 0n, tanks: 0 };
        t.balanceWei += BigInt(row.balance_wei);
        t.reservedWei += BigInt(row.reserved_wei);
        t.tanks++;
        totals.set(row.network, t);
      }
      return [...totals.values()];
    },
  } satisfies Partial<Store>;
}
