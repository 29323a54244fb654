/**
 * What the store's parts share: the database, the statements more than one part runs, the database's constraint
 * violations as answers, how a sponsorship's row becomes the facts the accounting moves counters by
 * (../accounting.ts), and the guard a batch puts on the rows it read before changing them.
 */
import type { Address } from "@paymaster/shared";
import { holdsFromText, linksFromText, type Facts } from "../accounting.ts";
import * as accounting from "../accounting.ts";
import * as dbRows from "../rows.ts";
import type { Db, Dialect, Param, Queryer, Statement } from "../db/types.ts";
import type { GasTank } from "../types.ts";

/** The columns a transition reads of a sponsorship: its record, and what it counts in. */
const FACT_COLUMNS = (d: Dialect) => `${dbRows.SPONSORSHIP_COLUMNS}, holds, usage_links, billing_hold_usd_micros, ${d.json("billing_terms")}`;

/** The statements more than one part runs, rendered once for the database's dialect. */
function sharedQueries(d: Dialect) {
  const activeOp = "network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND status IN ('reserved', 'signed')";
  return {
    insertProject: "INSERT INTO projects (id, name, status, created_at) VALUES (?, ?, 'active', ?)",
    insertApiKey: `INSERT INTO api_keys (id, project_id, key_hash, prefix, label, status, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?)`,

    usageColumns: "reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros, ops",
    selectTank: "SELECT balance_wei, reserved_wei FROM gas_tanks WHERE network = ? AND sender = ?",

    sponsorship: `SELECT ${dbRows.SPONSORSHIP_COLUMNS} FROM sponsorships`,
    selectSponsorship: `SELECT ${dbRows.SPONSORSHIP_COLUMNS} FROM sponsorships WHERE id = ?`,
    selectActiveFacts: `SELECT ${FACT_COLUMNS(d)} FROM sponsorships WHERE ${activeOp}`,
    factColumns: FACT_COLUMNS(d),
    // The guard of a batch that changed rows it read before (guardStatements).
    guard: `SELECT CASE WHEN (SELECT COUNT(*) FROM sponsorships WHERE change_id = ? AND id IN (${d.jsonTexts})) <> ?
      THEN pm_refuse('{"reason":"STALE"}', NULL) END AS refused`,
  };
}

export type SharedQueries = ReturnType<typeof sharedQueries>;

/** The database and the shared statements, given to every part of the store. */
export interface SqlShared {
  readonly db: Db;
  readonly q: SharedQueries;
}

export function sqlShared(db: Db): SqlShared {
  return { db, q: sharedQueries(db.dialect) };
}

/** Webhook outbox rows are stamped in milliseconds (delivery backoff is finer than a second). */
export const nowMs = (): number => Date.now();

export function isUnique(s: SqlShared, err: unknown, constraint?: string): boolean {
  const v = s.db.violation(err);
  return v?.kind === "unique" && (constraint === undefined || v.constraint === constraint);
}

export function isForeignKey(s: SqlShared, err: unknown): boolean {
  return s.db.violation(err)?.kind === "foreignKey";
}

export async function readTank(s: SqlShared, on: Queryer, network: string, sender: Address): Promise<GasTank> {
  return { network, sender, ...dbRows.toTank(await on.one<dbRows.TankRow>(s.q.selectTank, [network, sender])) };
}


/** A sponsorship's row as a transition reads it (FACT_COLUMNS). */
export type SponsorshipFactsRow = dbRows.SponsorshipRow & {
  holds: string | null;
  usage_links: string | null;
  billing_hold_usd_micros: string | bigint | null;
  billing_terms: string | null;
};

/** What a sponsorship counts in, from its row. */
export function factsOf(row: SponsorshipFactsRow): Facts {
  return {
    network: row.network,
    sender: row.sender,
    mode: row.mode,
    projectId: row.project_id,
    maxCost: accounting.rowCost(row),
    billingHold: row.billing_hold_usd_micros === null ? null : BigInt(row.billing_hold_usd_micros),
    links: linksFromText(row.strategy_id, row.usage_links),
    holds: holdsFromText(row.holds),
  };
}

/** What a transition reads of the sponsorships it may change. */
export type FactsRead = Map<string, { row: SponsorshipFactsRow; facts: Facts }>;

/**
 * The sponsorships that `selection` selects (a WHERE clause over the table's columns, maybe with ORDER BY and
 * LIMIT; `params` bound) and what each counts in, read without a lock in one round trip: what a transition
 * decides on, before the batch that makes it under guardStatements.
 */
export async function readFactsWhere(s: SqlShared, selection: string, params: readonly Param[]): Promise<FactsRead> {
  const rows = await s.db.all<SponsorshipFactsRow>(`SELECT ${s.q.factColumns} FROM sponsorships WHERE ${selection}`, params);
  return new Map(rows.map((row) => [row.id, { row, facts: factsOf(row) }]));
}

/** The sponsorships `ids` (see readFactsWhere). */
export function readFacts(s: SqlShared, ids: readonly string[]): Promise<FactsRead> {
  return readFactsWhere(s, `id IN (${s.db.dialect.jsonTexts})`, [JSON.stringify(ids)]);
}

/**
 * The guard after a batch's changes of sponsorship rows it read before: every one of `ids` must carry the
 * batch's `changeId` (its UPDATE matched: the row was still as read). One that a concurrent transaction changed
 * first did not match, and the whole batch is refused ("STALE") and tried again on a fresh read.
 */
export function guardStatements(s: SqlShared, ids: readonly string[], changeId: string): Statement[] {
  return ids.length === 0 ? [] : [{ sql: s.q.guard, params: [changeId, JSON.stringify(ids), ids.length] }];
}
