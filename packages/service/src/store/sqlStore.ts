/**
 * The store: one implementation of `Store` for both databases, over the dialect layer (db/types.ts), composed
 * of one part per concern (sql/): keys and projects (keys.ts), strategies and usage (strategies.ts), tokens
 * (tokens.ts), gas tanks (tanks.ts), reserving a sponsorship (reservations.ts), its transitions and reads
 * (sponsorships.ts), project billing (billing.ts), webhooks (webhooks.ts), the audit log (audit.ts), the watcher's
 * cursors and leadership (cursors.ts) and the console's reads (console.ts); what they share — the shared statements, the locking reads
 * of tanks and usage rows, a sponsorship's webhook event — is sql/shared.ts. SQL is written once, with `?`
 * placeholders and the dialect's few words; validation, row conversion and the accounting (what each
 * transition does to usage rows and tanks, the cap checks) are common.ts. No amount is computed in SQL (SQLite
 * keeps them as TEXT).
 *
 * ## Locking: what makes reservations exact
 *
 * SQLite: every transaction holds the database's one write lock from its first statement (BEGIN IMMEDIATE), so
 * read-decide-write sequences never interleave, across processes too; `forUpdate` is empty there.
 *
 * PostgreSQL: transactions run at READ COMMITTED with explicit row locks rather than SERIALIZABLE. Serializable
 * would be correct too, but every conflicting pair of reservations on one tank or one cap would abort one of
 * them (a retry storm exactly when a cap is busy); row locks make them queue instead, and the outcome is the
 * same. Every transaction that takes several of these locks takes them in one order:
 *
 *   1. the gas tank row (network, sender) — User Sponsor mode;
 *   2. the strategy usage rows, in `lockOrder` (common.ts: sorted by strategy_id, scope, key);
 *   3. the billing accounts of billed projects (billing_accounts), sorted by project id;
 *   4. sponsorship rows: the op's active sponsorship (reserve), or the sponsorship being released, settled or
 *      un-settled and then (unsettle only) the op's active one;
 *   5. (reserving an ERC-20 op charged in postOp only) the key lock of the sender's token charges, which nothing
 *      else takes.
 *
 * (A credit row is locked before its tank: creditGasTank, revertGasTankCredit. A billing entry by hand takes the
 * key lock of its reference, which nothing else takes, before its account: addBillingEntry.) So two transactions can wait on
 * each other only in one direction: no deadlock. What must be locked is learned from unlocked reads of what
 * never changes once written (a sponsorship's mode, network, sender and the usage rows it is linked to); where
 * that can go stale — the op's active sponsorship replaced between the look and the lock — the attempt is
 * abandoned and run again (`LockOrderRetry`). Also retried, a bounded number of times: two first reservations
 * of one op racing on the partial unique index (the loser retries and replaces the winner), and serialization
 * failures or deadlocks reported by the server (db/postgres.ts). Under SQLite's write lock none of these races
 * can happen, and the same code takes the same steps.
 */
import type { Db } from "./db/types.ts";
import type { Store } from "./types.ts";
import { sqlShared } from "./sql/shared.ts";
import { keyStore } from "./sql/keys.ts";
import { strategyStore } from "./sql/strategies.ts";
import { tokenStore } from "./sql/tokens.ts";
import { tankStore } from "./sql/tanks.ts";
import { reservationStore } from "./sql/reservations.ts";
import { sponsorshipStore } from "./sql/sponsorships.ts";
import { webhookStore } from "./sql/webhooks.ts";
import { auditStore } from "./sql/audit.ts";
import { cursorStore } from "./sql/cursors.ts";
import { consoleStore } from "./sql/console.ts";
import { retentionStore } from "./sql/retention.ts";
import { billingStore } from "./sql/billing.ts";

/** The store over `db`: every part's methods, and closing the database. */
export function sqlStore(db: Db): Store {
  const shared = sqlShared(db);
  return {
    ...keyStore(shared),
    ...strategyStore(shared),
    ...tokenStore(shared),
    ...tankStore(shared),
    ...reservationStore(shared),
    ...sponsorshipStore(shared),
    ...webhookStore(shared),
    ...auditStore(shared),
    ...cursorStore(shared),
    ...consoleStore(shared),
    ...retentionStore(shared),
    ...billingStore(shared),
    health: db.health,
    async close(): Promise<void> {
      await db.close();
    },
  };
}
