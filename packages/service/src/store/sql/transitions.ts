/**
 * The store's part for a sponsorship's status changes after it is reserved — released, expired, settled,
 * un-settled — each as two round trips whatever the number of sponsorships: one read of them
 * (no lock), then one batch (db/types.ts Db.batch) that changes their rows under a guard that they are still as
 * read, moves what they count in by the accounting's differences (../accounting.ts), appends their billing
 * entries and writes their webhook events. A guard refused by a concurrent change reads again and retries. So
 * the expiry of 500 sponsorships, or the settlement of a block's ops, is two round trips (docs/scale.md).
 */
import { randomUUID } from "node:crypto";
import type { Address, Hex } from "@paymaster/shared";
import { movesOf, standingOf, type Cost, type Facts, type Standing } from "../accounting.ts";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import { Refusal, type Dialect, type Param, type Statement } from "../db/types.ts";
import { StoreError } from "../errors.ts";
import { releasedData, settledData } from "../../webhooks/events.ts";
import { eventStatement, type OutboxEvent } from "../webhookRows.ts";
import type { SettleItem, SettleOutcome, Settlement, SponsorshipRecord, SponsorshipStatus, Store } from "../types.ts";
import { counterMove } from "./statements.ts";
import { guardStatements, nowMs, readFacts, readFactsWhere, type FactsRead, type SponsorshipFactsRow, type SqlShared } from "./shared.ts";
import { lastEntries, ledgerStatements, lowBalanceStatements, transitionEntry } from "./billing.ts";

/** Attempts of a transition whose rows keep changing under it before it gives up. */
const MAX_ATTEMPTS = 8;
/** releaseExpired releases this many per batch. */
const EXPIRY_BATCH = 500;

const OPEN = "status IN ('reserved', 'signed')";

const TRANSITION_SQL = {
  release: `UPDATE sponsorships SET status = 'released', release_reason = ?, updated_at = ?, change_id = ? WHERE id = ? AND ${OPEN}`,
  settle: `UPDATE sponsorships SET status = 'settled', actual_gas_cost_wei = ?, actual_cost_usd_micros = ?,
      actual_token_cost = ?, settled_success = ?, settled_tx_hash = ?, settled_block_number = ?,
      settled_block_hash = ?, settled_log_index = ?, settled_at = ?, updated_at = ?, change_id = ?
    WHERE id = ? AND status = ?`,
  unsettle: `UPDATE sponsorships SET status = ?, release_reason = ?, actual_gas_cost_wei = NULL,
      actual_cost_usd_micros = NULL, actual_token_cost = NULL, settled_success = NULL, settled_tx_hash = NULL,
      settled_block_number = NULL, settled_block_hash = NULL, settled_log_index = NULL, settled_at = NULL,
      updated_at = ?, change_id = ?
    WHERE id = ? AND status = 'settled'`,
  upsertUnpaid: `INSERT INTO token_charge_flags (sponsorship_id, network, sender, postop_charge, unpaid, updated_at)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (sponsorship_id) DO UPDATE SET unpaid = excluded.unpaid, updated_at = excluded.updated_at`,
  selectActiveOther: `SELECT 1 AS one FROM sponsorships WHERE network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND ${OPEN} AND id <> ?`,
} as const;

/** What one sponsorship's change is, as a transition decides it from the row it read. */
interface Change {
  to: Standing;
  /** The settlement it stands settled with, on either side of the change. */
  actual?: Cost;
  settlement?: Settlement;
  /** Its row's own change, marked with the batch's change id (guarded). */
  statements: Statement[];
  /** The row as it stands after the change (for its webhook event). */
  after?: SponsorshipStatus;
  event?: (record: SponsorshipRecord) => Omit<OutboxEvent, "projectId" | "sponsorshipId">;
}

interface Read {
  row: SponsorshipFactsRow;
  facts: Facts;
}

type Decide = (read: Read, at: { now: number; changeId: string }) => Promise<Change | undefined> | Change | undefined;

/** The changes a transition decided, by sponsorship id, with the reads they were decided on. */
type Changes = Map<string, { read: Read; change: Change }>;

export function transitionStore(s: SqlShared) {
  return {
    releaseSponsorship: (id: string) => releaseSponsorship(s, id),
    settleSponsorship: (id: string, settlement: Settlement) => settleSponsorship(s, id, settlement),
    settleSponsorships: (items: readonly SettleItem[]) => settleSponsorships(s, items),
    unsettleSponsorship: (id: string) => unsettleSponsorship(s, id),
    releaseExpired: (now: number, graceSeconds: number, network?: string) => releaseExpired(s, now, graceSeconds, network),
    setTokenChargeUnpaid: (id: string, unpaid: boolean) => setTokenChargeUnpaid(s, id, unpaid),
  } satisfies Partial<Store>;
}

/** Idempotent: releasing a released, settled or unknown sponsorship changes nothing. */
async function releaseSponsorship(s: SqlShared, id: string): Promise<void> {
  await transition(s, [id], release("released"));
}

async function settleSponsorship(s: SqlShared, id: string, settlement: Settlement): Promise<boolean> {
  const valid = validation.validSettlement(settlement);
  return (await transition(s, [id], settle(valid))).has(id);
}

async function unsettleSponsorship(s: SqlShared, id: string): Promise<boolean> {
  return (await transition(s, [id], (read, at) => unsettle(s, read, at))).has(id);
}

/**
 * Releases (reason "expired") every reserved or signed sponsorship with validUntil + graceSeconds < now,
 * EXPIRY_BATCH at a time (two round trips each); one settled or replaced meanwhile is left alone, so this may
 * run while other replicas reserve and settle.
 */
async function releaseExpired(s: SqlShared, now: number, graceSeconds: number, network?: string): Promise<number> {
  const cutoff = validation.validExpiry(now, graceSeconds);
  const only = network ?? null;
  let released = 0;
  for (;;) {
    const batch = await releaseExpiredBatch(s, cutoff, only);
    released += batch.released;
    // A full batch of which none could be released (all changed meanwhile) would be found again: stop.
    if (batch.found < EXPIRY_BATCH || batch.released === 0) return released;
  }
}

/** One batch of the expiry: how many expired ones its (last) read found, and how many of them it released. */
async function releaseExpiredBatch(s: SqlShared, cutoff: number, only: string | null): Promise<{ found: number; released: number }> {
  let found = 0;
  const read = async () => {
    const facts = await readFactsWhere(s, EXPIRED, [cutoff, only, only, EXPIRY_BATCH]);
    found = facts.size;
    return facts;
  };
  const released = (await transition(s, read, release("expired"))).size;
  return { found, released };
}

async function setTokenChargeUnpaid(s: SqlShared, id: string, unpaid: boolean): Promise<void> {
  const row = await s.db.one<{ network: string; sender: Address }>("SELECT network, sender FROM sponsorships WHERE id = ?", [id]);
  if (!row) return;
  await s.db.run(TRANSITION_SQL.upsertUnpaid, [id, row.network, row.sender, false, unpaid, validation.nowSeconds()]);
}

/**
 * Changes the sponsorships `read` finds (ids, or a read of its own: ./shared.ts readFactsWhere) as `decide` says
 * (undefined: leave it), in one batch; answers the ids changed.
 * A refused guard (a concurrent change of one of them) or a unique violation (unsettle racing a new
 * reservation of its op) reads them again and decides anew.
 */
async function transition(s: SqlShared, read: readonly string[] | (() => Promise<FactsRead>), decide: Decide): Promise<Set<string>> {
  const reading = typeof read === "function" ? read : () => readFacts(s, read);
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const reads = await reading();
    const changeId = randomUUID();
    const now = validation.nowSeconds();
    const changes = await decideAll(reads, decide, { now, changeId });
    if (changes.size === 0) return new Set();
    try {
      await s.db.batch(await changeBatch(s, changes, changeId, now));
      return new Set(changes.keys());
    } catch (err) {
      const stale = (err instanceof Refusal && err.reason.includes('"STALE"')) || s.db.violation(err)?.kind === "unique";
      if (!stale) throw err;
    }
  }
  throw new StoreError("CONFLICT", "the sponsorships kept changing while they were being changed");
}

/** What `decide` says of each sponsorship read, one after the other (those it leaves alone are not in it). */
async function decideAll(reads: FactsRead, decide: Decide, at: { now: number; changeId: string }): Promise<Changes> {
  const changes: Changes = new Map();
  for (const read of reads.values()) {
    const change = await decide(read, at);
    if (change) changes.set(read.row.id, { read, change });
  }
  return changes;
}

/** The batch of `changes` to the rows `reads`: row changes, the guard, counter moves, billing entries, events. */
async function changeBatch(s: SqlShared, changes: Changes, changeId: string, now: number): Promise<Statement[]> {
  const d = s.db.dialect;
  const entries = await billingEntries(s, changes);
  const moved = [...changes.values()].map(({ read, change }) => ({ facts: read.facts, from: standingOf(read.row.status), to: change.to, ...(change.actual ? { actual: change.actual } : {}) }));
  const billedProjects = new Set(entries.map((e) => e.projectId));
  return [
    ...[...changes.values()].flatMap(({ change }) => change.statements),
    ...guardStatements(s, [...changes.keys()], changeId),
    ...movesOf(moved).map((m) => counterMove(d, m, now)),
    ...entries.flatMap((e) => ledgerStatements(d, e, now)),
    ...[...billedProjects].flatMap((p) => lowBalanceStatements(d, p, nowMs())),
    ...[...changes.values()].flatMap(({ read, change }) => eventOf(d, read.row, change)),
  ];
}

/** The billing entries of the changes (an un-settlement's undoes its settlement's last entry: read first). */
async function billingEntries(s: SqlShared, changes: Changes) {
  const undone = [...changes.entries()].filter(([, c]) => c.read.row.status === "settled" && c.read.row.billing_hold_usd_micros !== null).map(([id]) => id);
  const last = undone.length === 0 ? new Map() : await lastEntries(s, undone);
  return [...changes.entries()].flatMap(([id, { read, change }]) => {
    const entry = transitionEntry(id, read.row, { from: read.row.status, to: change.after ?? change.to, settlement: change.settlement }, last.get(id));
    return entry ? [entry] : [];
  });
}

function eventOf(d: Dialect, row: SponsorshipFactsRow, change: Change): Statement[] {
  if (!change.event) return [];
  const record: SponsorshipRecord = {
    ...dbRows.toSponsorship({ ...row, status: change.after ?? row.status }),
    settlement: change.settlement ?? null,
  };
  return [eventStatement(d, { ...change.event(record), projectId: row.project_id, sponsorshipId: row.id }, nowMs())];
}

function release(reason: dbRows.ReleaseReason): Decide {
  return ({ row }, at) => {
    if (row.status !== "reserved" && row.status !== "signed") return undefined;
    const event = releasedEvent(row.status, reason);
    return { to: "closed", after: "released", statements: [releaseRow(row.id, reason, at)], ...(event ? { event } : {}) };
  };
}

/** The release of an open (reserved or signed) sponsorship's row, for `reason`. Also a reservation's replaced one. */
export function releaseRow(id: string, reason: dbRows.ReleaseReason, { now, changeId }: { now: number; changeId: string }): Statement {
  return { sql: TRANSITION_SQL.release, params: [reason, now, changeId, id] };
}

/** A release's event: only a signature handed out is news to the project (an unsigned reservation leaves quietly). */
export function releasedEvent(status: string, reason: dbRows.ReleaseReason): ((r: SponsorshipRecord) => Pick<OutboxEvent, "type" | "data">) | undefined {
  return status === "signed" ? (r) => ({ type: "sponsorship.released", data: releasedData(r, reason) }) : undefined;
}

/** See accounting.ts: a signed one settles; so does a released one that was signed (its signature landed anyway). */
function settle(settlement: Settlement): Decide {
  return ({ row }, { now, changeId }) => {
    if (row.status !== "signed" && !(row.status === "released" && row.user_op_hash !== null)) return undefined;
    return {
      to: "settled",
      actual: { wei: settlement.actualGasCostWei, usdMicros: settlement.actualCostUsdMicros },
      settlement,
      statements: [{ sql: TRANSITION_SQL.settle, params: [...dbRows.settlementColumns(settlement), now, now, changeId, row.id, row.status] }],
      after: "settled",
      event: (r) => ({ type: "sponsorship.settled", data: settledData(r) }),
    };
  };
}

/**
 * The exact inverse of its settlement: signed again with its reservation held — unless the op has an active
 * sponsorship again since (only one may be active), then released ("replaced") holding nothing — or released
 * again with the reason it had.
 */
async function unsettle(s: SqlShared, { row }: Read, { now, changeId }: { now: number; changeId: string }): Promise<Change | undefined> {
  if (row.status !== "settled" || row.actual_gas_cost_wei === null) return undefined;
  const taken = (await s.db.one(TRANSITION_SQL.selectActiveOther, [row.network, row.entry_point, row.sender, BigInt(row.nonce), row.id])) !== undefined;
  const back: SponsorshipStatus = row.release_reason !== null || taken ? "released" : "signed";
  const reason = row.release_reason ?? (taken ? "replaced" : null);
  return {
    to: standingOf(back),
    actual: { wei: BigInt(row.actual_gas_cost_wei), usdMicros: BigInt(row.actual_cost_usd_micros ?? 0n) },
    after: back,
    statements: [{ sql: TRANSITION_SQL.unsettle, params: [back, reason, now, changeId, row.id] }],
  };
}

/**
 * What a block's settlement matched on its last read (again after a refused guard): per userOpHash the
 * sponsorship signed with it, per sponsorship id the item that settles it.
 */
interface SettleMatch {
  byHash: Map<string, SponsorshipRecord>;
  byId: Map<string, SettleItem>;
}

/** Settles a block's ops: one read of their sponsorships and one batch for all of them (docs/scale.md). */
async function settleSponsorships(s: SqlShared, items: readonly SettleItem[]): Promise<SettleOutcome[]> {
  const valid = items.map((i) => ({ ...i, settlement: validation.validSettlement(i.settlement) }));
  const hashes = JSON.stringify(valid.map((i) => validation.hashKey(i.userOpHash)).filter((h) => h !== undefined));
  const match: SettleMatch = { byHash: new Map(), byId: new Map() };
  const changed = await transition(s, () => readSettleable(s, valid, hashes, match), (read, at) => settleMatched(match, read, at));
  await markUnpaidOfUnchanged(s, valid, match, changed);
  return valid.map((item): SettleOutcome => {
    const record = recordOf(match, item);
    if (!record) return { outcome: "unmatched" };
    if (changed.has(record.id)) return { outcome: "settled", record };
    return { outcome: record.status === "settled" ? "alreadySettled" : "notSettleable", record };
  });
}

/** The item's own sponsorship: the one signed with its hash, of its network and EntryPoint. */
function recordOf(match: SettleMatch, item: SettleItem): SponsorshipRecord | undefined {
  const record = match.byHash.get(item.userOpHash.toLowerCase());
  return record && record.network === item.network && record.entryPoint.toLowerCase() === item.entryPoint.toLowerCase() ? record : undefined;
}

/** One read of the ops' sponsorships (`hashes`) with what they count in, matched to `items`: those of the items. */
async function readSettleable(s: SqlShared, items: readonly SettleItem[], hashes: string, match: SettleMatch): Promise<FactsRead> {
  const facts = await readFactsWhere(s, `user_op_hash IN (${s.db.dialect.jsonTexts})`, [hashes]);
  match.byHash = preferredByHash([...facts.values()].map((f) => f.row));
  match.byId.clear();
  for (const item of items) {
    const record = recordOf(match, item);
    if (record) match.byId.set(record.id, item);
  }
  return new Map([...facts].filter(([id]) => match.byId.has(id)));
}

/** The settlement of a matched sponsorship by its item. */
async function settleMatched(match: SettleMatch, read: Read, at: { now: number; changeId: string }): Promise<Change | undefined> {
  const item = match.byId.get(read.row.id)!;
  const change = await settle(item.settlement)(read, at);
  // A charge left unpaid is recorded whether or not this settles it now (a rescan after a crash).
  const unpaid = item.tokenUnpaid === true ? [{ sql: TRANSITION_SQL.upsertUnpaid, params: [read.row.id, read.row.network, read.row.sender, false, true, at.now] }] : [];
  if (change) return { ...change, statements: [...change.statements, ...unpaid] };
  return undefined;
}

/** Unpaid charges of ops that were not settled now (already settled: a rescan) are recorded all the same. */
async function markUnpaidOfUnchanged(s: SqlShared, items: readonly SettleItem[], match: SettleMatch, changed: Set<string>): Promise<void> {
  const statements = items.flatMap((item) => {
    const record = recordOf(match, item);
    if (!record || changed.has(record.id) || item.tokenUnpaid !== true) return [];
    return [{ sql: TRANSITION_SQL.upsertUnpaid, params: [record.id, record.network, record.sender, false, true, validation.nowSeconds()] as Param[] }];
  });
  if (statements.length > 0) await s.db.batch(statements);
}

/**
 * Per userOpHash, the sponsorship signed with it: should two share it (the same op re-signed within the same
 * second yields identical paymasterAndData), the active or settled one before a released one, then the newest.
 */
function preferredByHash(rows: readonly SponsorshipFactsRow[]): Map<string, SponsorshipRecord> {
  const rank = (r: SponsorshipFactsRow) => [r.status === "released" ? 0 : 1, Number(r.created_at)];
  const best = new Map<string, SponsorshipFactsRow>();
  for (const row of rows) {
    const known = best.get(row.user_op_hash!);
    const [a, b] = [rank(row), known && rank(known)];
    if (!b || a[0]! > b[0]! || (a[0] === b[0] && a[1]! >= b[1]!)) best.set(row.user_op_hash!, row);
  }
  return new Map([...best].map(([hash, row]) => [hash, dbRows.toSponsorship(row)]));
}

// Scans the partial index of open sponsorships (migration 1's sponsorships_active_op).
const EXPIRED = `${OPEN} AND valid_until < ? AND (CAST(? AS TEXT) IS NULL OR network = ?) ORDER BY valid_until LIMIT ?`;
