/**
 * The store's part for gas tanks (User Sponsor mode: a sender's prepaid balance, and what its outstanding
 * sponsorships hold of it): credits and debits, each idempotent by its reference, and their reads. The
 * reservations hold and give back tank amounts under the same row lock (lock order 1, shared.ts lockTank).
 */
import type { Address } from "@paymaster/shared";
import * as common from "../common.ts";
import { StoreError } from "../errors.ts";
import type { GasTank, GasTankTotals, Store } from "../types.ts";
import { lockTank, readTank, type SqlShared } from "./shared.ts";

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
} as const;

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
