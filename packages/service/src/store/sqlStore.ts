/**
 * The store: one implementation of `Store` for both databases, over the dialect layer (db/types.ts), composed
 * of one part per concern (sql/): keys and projects (keys.ts), strategies and usage (strategies.ts), tokens
 * (tokens.ts), gas tanks (tanks.ts), reserving a sponsorship (reservations.ts), its status changes
 * (transitions.ts) and reads (sponsorships.ts), project billing (billing.ts), webhooks (webhooks.ts), the audit
 * log (audit.ts), the watcher's cursors and leadership (cursors.ts) and the console's reads (console.ts); what
 * they share is sql/shared.ts, the statements batches are made of sql/statements.ts. SQL is written once, with
 * `?` placeholders and the dialect's few words; input checks are validation.ts, row conversion rows.ts, the
 * accounting (which counters a sponsorship counts in, by how much, in each standing) accounting.ts.
 *
 * ## What makes caps, tanks and balances exact without a lock across round trips
 *
 * Every change of money is a batch (Db.batch: one transaction, one round trip; docs/scale.md): counters move by
 * relative amounts in one statement each, which checks the row there and then and refuses the whole batch
 * (pm_refuse) when a cap, tank, bound or balance would be exceeded. A row is locked from its statement to the
 * batch's COMMIT, which the server reaches without waiting on the network, so concurrent reservations of one
 * strategy queue for microseconds, not round trips; what they decide can never interleave, as each checks the
 * row as its own statement left it. Rows are moved in one order in every batch (a transition's own sponsorship
 * rows first, then tanks, strategy usage rows, holds and billing accounts, each sorted by key: accounting.ts
 * movesOf), so two batches never wait on each other in a cycle. A transition first reads the rows it changes
 * (no lock), then marks them with its change id in the batch and checks the marks (shared.ts guardStatements):
 * a concurrent change in between refuses the batch, which reads again. SQLite runs the same batches in process
 * under its one write lock (BEGIN IMMEDIATE), across processes too.
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
import { transitionStore } from "./sql/transitions.ts";
import { webhookStore } from "./sql/webhooks.ts";
import { auditStore } from "./sql/audit.ts";
import { cursorStore } from "./sql/cursors.ts";
import { consoleStore } from "./sql/console.ts";
import { retentionStore } from "./sql/retention.ts";
import { billingStore } from "./sql/billing.ts";

/**
 * The store's methods that change what the config version covers (the tables whose triggers bump it: migrations
 * 10 and 15). Each call counts in Store.configWrites, so this process's config cache reads the version again at
 * once after its own changes (store/configCache.ts).
 */
const CONFIG_WRITES = [
  "createProject",
  "setProjectStatus",
  "createApiKey",
  "revokeApiKey",
  "setApiKeyAccess",
  "approveKeyApplication",
  "claimKeyApplication",
  "createStrategy",
  "setStrategyStatus",
  "setStrategyRules",
  "updateStrategy",
  "createWebhookEndpoint",
  "deleteWebhookEndpoint",
  "setBillingPlan",
] as const satisfies readonly (keyof Store)[];

/** `store` with its config-changing methods counted (after they end, whatever their outcome). */
function countingConfigWrites(store: Omit<Store, "configWrites">): Store {
  let writes = 0;
  const counted = { ...store, configWrites: () => writes } as Store;
  for (const name of CONFIG_WRITES) {
    const method = store[name] as (...args: unknown[]) => Promise<unknown>;
    (counted as unknown as Record<string, unknown>)[name] = async (...args: unknown[]) => {
      try {
        return await method(...args);
      } finally {
        writes++;
      }
    };
  }
  return counted;
}

/** The store over `db`: every part's methods, and closing the database. */
export function sqlStore(db: Db): Store {
  const shared = sqlShared(db);
  return countingConfigWrites({
    ...keyStore(shared),
    ...strategyStore(shared),
    ...tokenStore(shared),
    ...tankStore(shared),
    ...reservationStore(shared),
    ...sponsorshipStore(shared),
    ...transitionStore(shared),
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
  });
}
