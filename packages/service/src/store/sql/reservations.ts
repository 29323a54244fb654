/**
 * The store's part for reserving a sponsorship: ONE batch (db/types.ts Db.batch: one transaction, one round trip
 * to the database) that records the signed sponsorship and moves every counter it counts in — the strategy's
 * usage rows (caps), the sender's gas tank (User Sponsor mode), its hold rows (open sponsorships per sender and
 * client, postOp charges) and the project's billing account — each checked in the statement that moves it
 * (sql/statements.ts). A refused check ends the batch with nothing written. No row is read first, none is locked
 * across a round trip, so reservations of one strategy never queue behind each other's network waits
 * (docs/scale.md has the measurements).
 *
 * In the common case the op has no active sponsorship and the batch is the whole reservation. When it has one
 * (the partial unique index refuses the insert), that one is read and the batch runs again with its replacement
 * in it: released (reason "replaced"), under a guard that it is still the one read, and what it counted in taken
 * back in the same moves. A guard refused by a concurrent change, or a lost race between two first reservations
 * of one op, runs it again, a bounded number of times.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { CapCheck } from "../../policy/types.ts";
import { holdFor, termsToJson, validTerms } from "../../billing/charge.ts";
import { holdRows, holdsText, linksText, movesOf, rowId, type CounterRow, type Facts, type UsageKey } from "../accounting.ts";
import * as accounting from "../accounting.ts";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import { Refusal, type Db, type Dialect, type Param, type Statement } from "../db/types.ts";
import { StoreError } from "../errors.ts";
import { migrationsFor } from "../migrations.ts";
import { StoreUnavailableError } from "../unavailable.ts";
import { sponsorshipData } from "../../webhooks/events.ts";
import { eventStatement, knownEndpointEvents } from "../webhookRows.ts";
import type { NewSponsorship, ReserveResult, SponsorshipRecord, Store } from "../types.ts";
import { counterMove, growingUsage, usageRowsMove, type RowChecks } from "./statements.ts";
import { factsOf, guardStatements, nowMs, type SqlShared, type SponsorshipFactsRow } from "./shared.ts";
import { releaseRow, releasedEvent } from "./transitions.ts";

/**
 * Attempts before concurrent reservations of the same op that keep replacing each other give up (CONFLICT): each
 * round one of them wins, so n at once need up to n rounds (a client racing itself; never the common case).
 */
const MAX_ATTEMPTS = 64;

const RESERVATION_SQL = {
  insertSponsorship: `INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id,
      api_key_id, strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, max_cost_usd_micros, valid_until,
      valid_after, user_op_hash, paymaster_and_data, status, created_at, updated_at, client_ip, parallel_nonce,
      billing_hold_usd_micros, billing_terms, holds, usage_links, change_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  insertPostOpCharge: `INSERT INTO token_charge_flags (sponsorship_id, network, sender, postop_charge, unpaid, updated_at)
    VALUES (?, ?, ?, ?, ?, ?)`,
  // First in the batch: a replica older than the database's schema (a newer build migrated it during a rolling
  // upgrade) holds and signs nothing, since its statements may no longer keep the counters the newer schema keeps.
  schemaGuard: `SELECT CASE WHEN EXISTS (SELECT 1 FROM schema_migrations WHERE version > ?) THEN pm_refuse('{"reason":"SCHEMA_TOO_NEW"}', NULL) END AS refused`,
  // Next, the same: a refusal here costs nothing, no row is touched yet.
  configGuard: `SELECT CASE WHEN version <> ? THEN pm_refuse('{"reason":"CONFIG_CHANGED"}', NULL) END AS refused FROM config_version WHERE id = 1`,
  // NewSponsorship.requires: checks of rows the reservation does not move, next in the batch (nothing touched yet).
  tankConsentGuard: `SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM gas_tank_consents WHERE network = ? AND sender = ? AND project_id = ? AND allowed = ?)
    THEN pm_refuse('{"reason":"GAS_TANK_NOT_ALLOWED"}', NULL) END AS refused`,
  unpaidChargeGuard: `SELECT CASE WHEN EXISTS (SELECT 1 FROM token_charge_flags WHERE network = ? AND sender = ? AND unpaid = ?)
    THEN pm_refuse('{"reason":"TOKEN_CHARGE_UNPAID"}', NULL) END AS refused`,
} as const;


/**
 * The ERC-20 postOp-charge bound (NewSponsorship.postOpChargeRisk), checked after the op's hold rows moved: what
 * the project's (or key's) open postOp-charge sponsorships hold, plus the charges that went unpaid since a time,
 * against the limit. Read in its own statement, after the hold row was moved (and is locked): a charge marked
 * unpaid moves the same row, so the two never interleave.
 */
function atRiskSql(s: SqlShared, column: "project_id" | "api_key_id"): string {
  const d = s.db.dialect;
  const unpaid = `(SELECT ${d.sumAmount("s.max_cost_usd_micros")} FROM token_charge_flags f JOIN sponsorships s ON s.id = f.sponsorship_id
      WHERE s.${column} = ? AND f.unpaid = ? AND f.updated_at >= ?)`;
  return `SELECT CASE WHEN ${d.greater("t.total", "?")} THEN pm_refuse(?, CAST(t.total AS TEXT)) END AS refused
    FROM (SELECT ${d.plus("h.usd_micros", unpaid)} AS total FROM holds h WHERE h.scope = ? AND h.key = ?) t`;
}

/**
 * A billed browser key's share of its project's balance (NewSponsorship.billingShares), per client address and per
 * key: what its open sponsorships hold there may not exceed that share of the balance. After the account moved.
 */
function shareSql(s: SqlShared): string {
  const d = s.db.dialect;
  return `SELECT CASE WHEN ${d.greater(d.times("h.usd_micros", "10000"), d.times("a.balance_usd_micros", "?"))}
      THEN pm_refuse(?, CAST(h.usd_micros AS TEXT)) END AS refused
    FROM holds h JOIN billing_accounts a ON a.project_id = ? WHERE h.scope = ? AND h.key = ?`;
}

/** What a reservation writes, decided once (validated input); the batch is built from it per attempt. */
interface Plan {
  record: SponsorshipRecord;
  input: NewSponsorship;
  checks: CapCheck[];
  facts: Facts;
  hold: bigint | null;
  now: number;
}

/** The op's active sponsorship as a replacement read it, with what it counts in. */
interface Previous {
  row: SponsorshipFactsRow;
  facts: Facts;
}

/** The reservation's statements, rendered once for the database's dialect. */
function reservationQueries(s: SqlShared) {
  const knownSchema = Math.max(...migrationsFor(s.db.dialect).map((m) => m.version));
  return { ...RESERVATION_SQL, knownSchema, atRiskProject: atRiskSql(s, "project_id"), atRiskKey: atRiskSql(s, "api_key_id"), share: shareSql(s) };
}

/** What every step of a reservation runs on: the store's shared parts and the reservation's own statements. */
interface ReservationParts {
  readonly s: SqlShared;
  readonly q: ReturnType<typeof reservationQueries>;
}

export function reservationStore(s: SqlShared) {
  const parts: ReservationParts = { s, q: reservationQueries(s) };
  return {
    reserveSponsorship: (input: NewSponsorship, caps?: readonly CapCheck[]) => reserveSponsorship(parts, input, caps),
  } satisfies Partial<Store>;
}

/**
 * The reservation: its batch, and again after a read of the op's active sponsorship when the op has one (the
 * insert's unique violation: replace it) or a guard saw a concurrent change of the one read.
 */
async function reserveSponsorship(parts: ReservationParts, input: NewSponsorship, caps: readonly CapCheck[] | undefined): Promise<ReserveResult> {
  const p = plan(input, caps);
  const op: Param[] = [p.record.network, p.record.entryPoint, p.record.sender, p.record.nonce];
  let previous: Previous | undefined;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const outcome = await attemptReservation(parts, p, previous);
    if (outcome === "stale") previous = await raced(parts.s, op, attempt);
    else if (outcome === "taken") previous = await (attempt === 1 ? activeOp(parts.s, op) : raced(parts.s, op, attempt));
    else return outcome;
  }
  throw new StoreError("CONFLICT", "concurrent reservations of the same op kept replacing each other");
}

/**
 * One run of the reservation's batch, answered as the reservation's result, "stale" (a guard saw a concurrent
 * change: read again) or "taken" (the op has an active sponsorship, or a concurrent first reservation of it won:
 * replace it).
 */
async function attemptReservation(parts: ReservationParts, p: Plan, previous: Previous | undefined): Promise<ReserveResult | "stale" | "taken"> {
  const { db } = parts.s;
  try {
    await db.batch(reservationBatch(parts, p, previous));
    return { ok: true, record: p.record, replaced: previous?.row.id ?? null };
  } catch (err) {
    if (err instanceof Refusal) {
      const refused = refusalOf(err, p, parts.s.db);
      if (refused !== "stale" && refused.reason === "CAP_EXCEEDED") await capReached(parts.s, p, refused);
      return refused;
    }
    const violation = db.violation(err)?.kind;
    if (violation === "unique") return "taken";
    if (violation === "foreignKey") throw new StoreError("NOT_FOUND", "sponsorship refers to an unknown project, API key or strategy");
    throw err;
  }
}

/** The reservation's decisions from its input: the record, the cap checks, the billing hold and what it counts in. */
function plan(input: NewSponsorship, caps: readonly CapCheck[] | undefined): Plan {
  const now = validation.nowSeconds();
  const record = validation.newSponsorshipRecord(input, now);
  const checks = validation.validCapChecks(caps, record.strategyId);
  if (input.billing !== undefined) {
    const problem = validTerms(input.billing);
    if (problem !== undefined) validation.invalid(problem);
  }
  const hold = input.billing === undefined ? null : holdFor(input.billing, record.maxCostWei);
  const links: UsageKey[] = checks.map((c) => ({ strategyId: record.strategyId!, scope: c.scope, key: c.key }));
  const facts: Facts = { network: record.network, sender: record.sender, mode: record.mode, projectId: record.projectId, maxCost: accounting.maxCostOf(record), billingHold: hold, links, holds: holdsOf(record, input, hold) };
  return { record, input, checks, facts, hold, now };
}

/** The hold rows the new op counts in (the bounds its input asks for decide which). */
function holdsOf(record: SponsorshipRecord, input: NewSponsorship, hold: bigint | null): Facts["holds"] {
  return holdRows({
    network: record.network,
    entryPoint: record.entryPoint,
    sender: record.sender,
    apiKeyId: record.apiKeyId,
    projectId: record.projectId,
    parallelNonce: validation.parallelNonce(record.nonce),
    boundedClient: input.outstanding?.maxPerClientIp === undefined && input.billingShares?.perClientBps === undefined ? undefined : input.clientBucket,
    boundedKey: hold !== null && input.billingShares?.perKeyBps !== undefined,
    postOpCharge: input.postOpCharge === true,
  });
}

/**
 * The whole batch: the schema and config guards first (a refusal there costs nothing), the replaced one's release, the record,
 * the counters with their checks, then the postOp flag and the events.
 */
function reservationBatch(parts: ReservationParts, p: Plan, previous: Previous | undefined): Statement[] {
  // A first reservation changes no row it read: its own id marks it. A replacement's guard needs an id of its own.
  const changeId = previous ? randomUUID() : p.record.id;
  const version = p.input.configVersion;
  return [
    { sql: parts.q.schemaGuard, params: [parts.q.knownSchema] },
    ...(version === undefined ? [] : [{ sql: parts.q.configGuard, params: [version] }]),
    ...requiredStatements(parts, p),
    ...(previous ? replacement(parts, previous.row, changeId, p.now) : []),
    ...recordStatements(parts, p, changeId),
    ...counterStatements(parts, p, previous?.facts),
    ...afterCounters(parts, p),
  ];
}

/** The checks of the new op's rows, by row id (each such row is written even when its move nets to nothing). */
function rowChecks(p: Plan): Map<string, { row: CounterRow; checks: RowChecks }> {
  const { record, input, facts } = p;
  const checked = new Map<string, { row: CounterRow; checks: RowChecks }>();
  const add = (row: CounterRow, checks: RowChecks) => checked.set(rowId(row), { row, checks });
  p.checks.forEach((caps, i) => add({ kind: "usage", ...facts.links[i]! }, { caps }));
  if (record.mode === "user") add({ kind: "tank", network: record.network, sender: record.sender }, { covered: { reason: "GAS_TANK_INSUFFICIENT" } });
  const bounds = input.outstanding;
  for (const h of facts.holds) {
    if (h.scope === "sender" && bounds) add({ kind: "hold", ...h }, { maxOpen: { limit: bounds.maxPerSender, refusal: { reason: "TOO_MANY_OUTSTANDING", scope: "sender", limit: bounds.maxPerSender } } });
    if (h.scope === "client" && bounds?.maxPerClientIp !== undefined) {
      add({ kind: "hold", ...h }, { maxOpen: { limit: bounds.maxPerClientIp, refusal: { reason: "TOO_MANY_OUTSTANDING", scope: "clientIp", limit: bounds.maxPerClientIp } } });
    }
    if (h.scope === "postop-sender") add({ kind: "hold", ...h }, { maxOpen: { limit: 1, refusal: { reason: "POSTOP_CHARGE_PENDING" } } });
  }
  if (p.hold !== null) add({ kind: "account", projectId: record.projectId }, { covered: { reason: "BALANCE_EXHAUSTED" } });
  return checked;
}

/** The postOp-charge risk checks (atRiskSql), after the hold rows moved. */
function afterHolds(parts: ReservationParts, p: Plan): Statement[] {
  const risk = p.input.postOpCharge === true ? p.input.postOpChargeRisk : undefined;
  if (!risk) return [];
  const { record } = p;
  const check = (sql: string, id: string, scope: "project" | "apiKey", holdScope: string, limit: bigint): Statement => ({
    sql,
    params: [limit, JSON.stringify({ reason: "POSTOP_CHARGE_AT_RISK", scope, limit: limit.toString() }), id, true, risk.sinceSeconds, holdScope, id],
  });
  return [
    check(parts.q.atRiskProject, record.projectId, "project", "postop-project", risk.maxUsdMicrosPerProject),
    check(parts.q.atRiskKey, record.apiKeyId, "apiKey", "postop-key", risk.maxUsdMicrosPerKey),
  ];
}

/** The billing-share checks (shareSql), after the account moved. */
function afterAccount(parts: ReservationParts, p: Plan): Statement[] {
  const shares = p.input.billingShares;
  if (p.hold === null || !shares) return [];
  const { record, facts } = p;
  const check = (scope: "client" | "key", bps: number | undefined): Statement[] => {
    const hold = facts.holds.find((h) => h.scope === scope);
    if (bps === undefined || !hold) return [];
    const refusal = { reason: "TOO_MANY_OUTSTANDING", scope: scope === "client" ? "clientIp" : "apiKey", shareBps: bps };
    return [{ sql: parts.q.share, params: [bps, JSON.stringify(refusal), record.projectId, hold.scope, hold.key] }];
  };
  return [...check("client", shares.perClientBps), ...check("key", shares.perKeyBps)];
}

/** The counter statements of the reservation (and of the replaced one), with the bound checks in their places. */
function counterStatements(parts: ReservationParts, p: Plan, previous: Facts | undefined): Statement[] {
  const d = parts.s.db.dialect;
  const checked = rowChecks(p);
  const transitions = [...(previous ? [{ facts: previous, from: "open" as const, to: "closed" as const }] : []), { facts: p.facts, from: "closed" as const, to: "open" as const }];
  const moves = movesOf(transitions, [...checked.values()].map((c) => c.row));
  // A first reservation's usage rows only grow: all of them in one statement (rows are sorted: they come together).
  const usage = moves.filter((m) => m.row.kind === "usage");
  const together = usage.length > 1 && growingUsage(usage);
  const statements: Statement[] = [];
  let risked = false;
  for (const move of moves) {
    if (move.row.kind === "account" && !risked) statements.push(...afterHolds(parts, p)), (risked = true);
    if (together && move === usage[0]) statements.push(usageRowsMove(d, usage, p.now, (row) => checked.get(rowId(row))?.checks.caps));
    if (!(together && move.row.kind === "usage")) statements.push(counterMove(d, move, p.now, checked.get(move.id)?.checks));
  }
  if (!risked) statements.push(...afterHolds(parts, p));
  return [...statements, ...afterAccount(parts, p)];
}

/** The sponsorship's row, signed, with what it counts in (its holds and usage links) and the batch's change id. */
function recordStatements(parts: ReservationParts, p: Plan, changeId: string): Statement[] {
  const { record, input, facts } = p;
  const values: Param[] = [
    record.id, record.network, record.entryPoint, record.version, record.sender, record.nonce, record.mode, record.projectId,
    record.apiKeyId, record.strategyId, record.token, record.exchangeRate, record.maxTokenCost, record.maxCostWei,
    record.maxCostUsdMicros, record.validUntil, record.validAfter, record.userOpHash, record.paymasterAndData, record.status,
    p.now, p.now, input.clientBucket ?? null, validation.parallelNonce(record.nonce), p.hold,
    input.billing === undefined ? null : termsToJson(input.billing), holdsText(facts.holds), linksText(facts.links), changeId,
  ];
  return [{ sql: parts.q.insertSponsorship, params: values }];
}

/** NewSponsorship.requires: the guards of rows the reservation does not move. */
function requiredStatements(parts: ReservationParts, p: Plan): Statement[] {
  const { record, input } = p;
  return [
    ...(input.requires?.tankConsent === true ? [{ sql: parts.q.tankConsentGuard, params: [record.network, record.sender, record.projectId, true] }] : []),
    ...(input.requires?.noUnpaidCharge === true ? [{ sql: parts.q.unpaidChargeGuard, params: [record.network, record.sender, true] }] : []),
  ];
}

/** After the counters: the op's postOp-charge flag and its sponsorship.signed events. */
function afterCounters(parts: ReservationParts, p: Plan): Statement[] {
  const { record } = p;
  return [
    ...(p.input.postOpCharge === true ? [{ sql: parts.q.insertPostOpCharge, params: [record.id, record.network, record.sender, true, false, p.now] }] : []),
    // The row is signed as it is inserted: its sponsorship.signed outbox rows commit with it.
    ...signedEvent(parts.s.db.dialect, p),
  ];
}

/** sponsorship.signed: for the endpoints the request knows (none subscribed: no statement), else as the database finds them. */
function signedEvent(d: Dialect, p: Plan): Statement[] {
  const { record } = p;
  const event = { projectId: record.projectId, type: "sponsorship.signed" as const, data: sponsorshipData(record), sponsorshipId: record.id };
  // Known endpoints are only as current as the config version the batch checks.
  const known = p.input.configVersion === undefined ? undefined : p.input.webhookEndpoints;
  return known === undefined ? [eventStatement(d, event, nowMs())] : knownEndpointEvents(event, known, nowMs());
}

/** The replaced sponsorship's release, under a guard that it is still the one read (and still open). */
function replacement(parts: ReservationParts, previous: SponsorshipFactsRow, changeId: string, now: number): Statement[] {
  const event = releasedEvent(previous.status, "replaced");
  const released = () => dbRows.toSponsorship({ ...previous, status: "released", release_reason: "replaced" });
  return [
    releaseRow(previous.id, "replaced", { now, changeId }),
    ...guardStatements(parts.s, [previous.id], changeId),
    ...(event ? [eventStatement(parts.s.db.dialect, { ...event(released()), projectId: previous.project_id, sponsorshipId: previous.id }, nowMs())] : []),
  ];
}

/** cap.reached for a refused reservation, once per (strategy, cap rule, window key, limit) and endpoint. */
async function capReached(s: SqlShared, p: Plan, refusal: { rule: string; limit: string; value: string }): Promise<void> {
  const { record } = p;
  const check = p.checks.find((c) => refusal.rule.startsWith(`${c.rulePrefix}.`));
  const key = check?.key ?? "";
  const data = { strategyId: record.strategyId, rule: refusal.rule, scope: check?.scope ?? null, key, limit: refusal.limit, attempted: refusal.value, network: record.network, sender: record.sender };
  await s.db.batch([eventStatement(s.db.dialect, { projectId: record.projectId, type: "cap.reached", data, dedupeKey: `cap.reached:${record.strategyId}:${refusal.rule}:${key}:${refusal.limit}` }, nowMs())]);
}

/** After a lost race for the op: a short random pause (the racers spread out), then its active sponsorship again. */
async function raced(s: SqlShared, op: Param[], attempt: number): Promise<Previous | undefined> {
  await sleep(Math.random() * Math.min(attempt, 10));
  return activeOp(s, op);
}

/** The op's active sponsorship with what it counts in (read without a lock: the batch's guard checks it). */
async function activeOp(s: SqlShared, op: Param[]): Promise<Previous | undefined> {
  const row = await s.db.one<SponsorshipFactsRow>(s.q.selectActiveFacts, op);
  return row && { row, facts: factsOf(row) };
}

/** A refused batch as the reservation's answer ("stale": a guard saw a concurrent change; run it again). */
function refusalOf(err: Refusal, p: Plan, db: Db): Exclude<ReserveResult, { ok: true }> | "stale" {
  const r = JSON.parse(err.reason) as Record<string, string | number>;
  const value = err.value ?? "0";
  switch (r.reason) {
    case "CAP_EXCEEDED":
      return { ok: false, reason: "CAP_EXCEEDED", rule: String(r.rule), limit: String(r.limit), value };
    case "GAS_TANK_INSUFFICIENT": {
      // value: the tank's balance minus all it would reserve with this op (negative).
      const available = BigInt(value) + p.record.maxCostWei;
      return { ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: available < 0n ? 0n : available, requiredWei: p.record.maxCostWei };
    }
    case "BALANCE_EXHAUSTED":
      return { ok: false, reason: "BALANCE_EXHAUSTED", availableUsdMicros: BigInt(value) + p.hold!, requiredUsdMicros: p.hold! };
    case "TOO_MANY_OUTSTANDING":
      if (r.shareBps !== undefined) return { ok: false, reason: "HOLD_SHARE_EXCEEDED", scope: r.scope as "clientIp" | "apiKey", shareBps: Number(r.shareBps), heldUsdMicros: BigInt(value) };
      return { ok: false, reason: "TOO_MANY_OUTSTANDING", scope: r.scope as "sender" | "clientIp", limit: Number(r.limit) };
    case "POSTOP_CHARGE_PENDING":
      return { ok: false, reason: "POSTOP_CHARGE_PENDING" };
    case "POSTOP_CHARGE_AT_RISK":
      return { ok: false, reason: "POSTOP_CHARGE_AT_RISK", scope: r.scope as "project" | "apiKey", limit: String(r.limit), value };
    case "STALE":
      return "stale";
    case "CONFIG_CHANGED":
      return { ok: false, reason: "CONFIG_CHANGED" };
    case "SCHEMA_TOO_NEW": {
      const detail = "the database records a migration this build does not know: a newer version of the service migrated it";
      db.health.outdated(detail); // /ready goes red for good: a load balancer drains this replica
      throw new StoreUnavailableError("schema_too_new", detail);
    }
    case "GAS_TANK_NOT_ALLOWED":
      return { ok: false, reason: "GAS_TANK_NOT_ALLOWED" };
    case "TOKEN_CHARGE_UNPAID":
      return { ok: false, reason: "TOKEN_CHARGE_UNPAID" };
    default:
      throw new Error(`a reservation batch was refused for an unknown reason: ${err.reason}`);
  }
}
