/**
 * The statements the store's batches are made of (db/types.ts Db.batch: one transaction, one round trip), each
 * written once for both databases with the dialect's amount words:
 *
 * - counter moves: add a move (store/accounting.ts) to one row — a strategy usage row, a gas tank, a hold, a
 *   billing account — creating it when missing, and check it there and then: a statement that would leave a
 *   cap, a tank, a bound or a balance exceeded calls `pm_refuse`, which ends the whole batch with nothing
 *   written (a Refusal). The row is locked from that statement to the batch's COMMIT, which the server reaches
 *   without waiting on the network: no lock is held across a round trip (docs/scale.md);
 * - guards: a batch that changes rows it read earlier (a transition) marks them with its change id and checks
 *   the marks, so it is refused (and tried again) when a concurrent one changed them in between;
 * - webhook events: the outbox rows of an event, one per subscribed endpoint, made by the database
 *   (store/webhookRows.ts explains the outbox).
 */
import type { CapCheck } from "../../policy/types.ts";
import type { Amounts, Move, UsageKey } from "../accounting.ts";
import type { Dialect, Param, Statement } from "../db/types.ts";

const floor0 = (v: bigint): bigint => (v < 0n ? 0n : v);

/** What a refused batch reports (the Refusal's reason), as the store's answer will carry it. */
export type RefusalToken = Record<string, string | number>;

const token = (t: RefusalToken | undefined): string | null => (t === undefined ? null : JSON.stringify(t));

/** The checks one counter statement makes; absent ones (undefined) never refuse. */
export interface RowChecks {
  /** Usage rows: the caps of one CapCheck. */
  caps?: CapCheck;
  /** Tank rows: the tank must cover what it reserves; account rows: the balance must cover what it holds. */
  covered?: RefusalToken;
  /** Hold rows: at most this many open. */
  maxOpen?: { limit: number; refusal: RefusalToken };
}

/** The columns of a strategy usage row a move may change, with the field of Amounts that moves each. */
const USAGE_FIELDS = [
  ["reserved_wei", "reservedWei"],
  ["spent_wei", "spentWei"],
  ["reserved_usd_micros", "reservedUsdMicros"],
  ["spent_usd_micros", "spentUsdMicros"],
] as const;

type UsageColumn = (typeof USAGE_FIELDS)[number][0];

/**
 * A strategy usage row's statement for one shape of move: only the columns that move are written, only the caps
 * given are checked (a statement costs the database and this process per value it carries, and SQLite's amount
 * arithmetic is a function call each). Parameters: the row's key, the new row's values and `now`, each moving
 * column's delta, the ops delta and `now`, then each check's limit and refusal.
 */
function usageSql(d: Dialect, moving: readonly UsageColumn[], caps: CapPresence): string {
  const checks = capClauses(d, caps, "");
  return `INSERT INTO strategy_usage (strategy_id, scope, key, reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros, ops, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (strategy_id, scope, key) DO UPDATE SET ${moving.map((c) => `${c} = ${d.plusFloor0(`strategy_usage.${c}`, "?")}, `).join("")}ops = ${d.greatest("strategy_usage.ops + ?", "0")}, updated_at = ?
      ${checks.length === 0 ? "" : `RETURNING CASE ${checks.join(" ")} END AS refused`}`;
}

const usageSqls = new Map<string, string>();

/** Which of a usage row's caps a statement checks. */
interface CapPresence {
  wei: boolean;
  usd: boolean;
  ops: boolean;
}

function capPresence(caps: CapCheck | undefined): CapPresence {
  return { wei: caps?.maxWei !== undefined, usd: caps?.maxUsdMicros !== undefined, ops: caps?.maxOps !== undefined };
}

/**
 * The RETURNING CASE's clauses that refuse a usage row over its caps (each a limit and a refusal parameter);
 * `where` picks the row first in a multi-row upsert (its key's parameters before each clause's).
 */
function capClauses(d: Dialect, caps: CapPresence, where: string): string[] {
  const total = d.plus("reserved_wei", "spent_wei");
  const usd = d.plus("reserved_usd_micros", "spent_usd_micros");
  return [
    ...(caps.wei ? [`WHEN ${where}${d.greater(total, "?")} THEN pm_refuse(?, CAST(${total} AS TEXT))`] : []),
    ...(caps.usd ? [`WHEN ${where}${d.greater(usd, "?")} THEN pm_refuse(?, CAST(${usd} AS TEXT))`] : []),
    ...(caps.ops ? [`WHEN ${where}ops > ? THEN pm_refuse(?, CAST(ops AS TEXT))`] : []),
  ];
}

/** capClauses' parameters for `caps`: per clause, `rowKey` (see capClauses' `where`), the limit and its refusal. */
function capParams(caps: CapCheck | undefined, has: CapPresence, rowKey: readonly Param[]): Param[] {
  const refusal = (kind: string, limit: bigint | number): Param[] => [...rowKey, limit, capRefusal(`${caps!.rulePrefix}.${kind}`, limit)];
  return [...(has.wei ? refusal("maxWei", caps!.maxWei!) : []), ...(has.usd ? refusal("maxUsd", caps!.maxUsdMicros!) : []), ...(has.ops ? refusal("maxOps", caps!.maxOps!) : [])];
}

/** A cap's refusal token, made once per (rule, limit): every reservation carries one per cap it checks. */
const capRefusals = new Map<string, string>();
function capRefusal(rule: string, limit: bigint | number): string {
  const key = `${rule}\u0000${limit}`;
  let text = capRefusals.get(key);
  if (text === undefined) {
    if (capRefusals.size >= 10_000) capRefusals.clear();
    capRefusals.set(key, (text = JSON.stringify({ reason: "CAP_EXCEEDED", rule, limit: `${limit}` })));
  }
  return text;
}

function usageMove(d: Dialect, row: UsageKey, by: Amounts, now: number, caps: CapCheck | undefined): Statement {
  const moving = USAGE_FIELDS.filter(([, field]) => by[field] !== 0n);
  const has = capPresence(caps);
  const shape = `${d.name}:${moving.map(([c]) => c).join(",")}:${has.wei}${has.usd}${has.ops}`;
  let sql = usageSqls.get(shape);
  if (sql === undefined) usageSqls.set(shape, (sql = usageSql(d, moving.map(([c]) => c), has)));
  return {
    sql,
    params: [
      row.strategyId, row.scope, row.key,
      floor0(by.reservedWei), floor0(by.spentWei), floor0(by.reservedUsdMicros), floor0(by.spentUsdMicros), floor0(by.count), now,
      ...moving.map(([, field]) => by[field]), by.count, now,
      ...capParams(caps, has, []),
    ],
  };
}

/**
 * Several strategy usage rows that only grow (a first reservation's), moved and checked in ONE statement: a
 * multi-row upsert whose RETURNING finds each row's own caps by its (scope, key). One statement, however many caps
 * the strategy has, so a capped reservation costs about what an uncapped one does.
 */
function usageRowsSql(d: Dialect, moving: readonly UsageColumn[], rows: readonly CapPresence[]): string {
  const checks = rows.flatMap((caps) => capClauses(d, caps, "scope = ? AND key = ? AND "));
  return `INSERT INTO strategy_usage (strategy_id, scope, key, reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros, ops, updated_at)
      VALUES ${rows.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}
      ON CONFLICT (strategy_id, scope, key) DO UPDATE SET ${moving.map((c) => `${c} = ${d.plus(`strategy_usage.${c}`, `excluded.${c}`)}, `).join("")}ops = strategy_usage.ops + excluded.ops, updated_at = excluded.updated_at
      ${checks.length === 0 ? "" : `RETURNING CASE ${checks.join(" ")} END AS refused`}`;
}

/** Whether `moves` (usage rows only) can go in one statement: every amount grows or stays (see usageRowsSql). */
export function growingUsage(moves: readonly Move[]): boolean {
  return moves.every((m) => m.row.kind === "usage" && Object.values(m.by).every((v) => v >= 0n));
}

/** The statement of usageRowsSql for `moves` (growing usage rows) and each row's caps. */
export function usageRowsMove(d: Dialect, moves: readonly Move[], now: number, capsOf: (row: Move["row"]) => CapCheck | undefined): Statement {
  const moving = USAGE_FIELDS.filter(([, field]) => moves.some((m) => m.by[field] !== 0n));
  const caps = moves.map((m) => capsOf(m.row));
  const has = caps.map(capPresence);
  const shape = `${d.name}:rows:${moving.map(([c]) => c).join(",")}:${has.map((h) => `${+h.wei}${+h.usd}${+h.ops}`).join("/")}`;
  let sql = usageSqls.get(shape);
  if (sql === undefined) usageSqls.set(shape, (sql = usageRowsSql(d, moving.map(([c]) => c), has)));
  const values = moves.flatMap(({ row, by }) => {
    const key = row as UsageKey;
    return [key.strategyId, key.scope, key.key, by.reservedWei, by.spentWei, by.reservedUsdMicros, by.spentUsdMicros, by.count, now];
  });
  const checks = moves.flatMap(({ row }, i) => {
    const { scope, key } = row as UsageKey;
    return capParams(caps[i], has[i]!, [scope, key]);
  });
  return { sql, params: [...values, ...checks] };
}

function counterSql(d: Dialect) {
  return {
    tank: `INSERT INTO gas_tanks (network, sender, balance_wei, reserved_wei, updated_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (network, sender) DO UPDATE SET balance_wei = ${d.plus("gas_tanks.balance_wei", "?")},
        reserved_wei = ${d.plusFloor0("gas_tanks.reserved_wei", "?")}, updated_at = ?
      RETURNING balance_wei, reserved_wei, CASE WHEN CAST(? AS TEXT) IS NOT NULL AND ${d.greater("reserved_wei", "balance_wei")}
        THEN pm_refuse(?, CAST(${d.minus("balance_wei", "reserved_wei")} AS TEXT)) END AS refused`,
    hold: `INSERT INTO holds (scope, key, open, usd_micros, updated_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (scope, key) DO UPDATE SET open = ${d.greatest("holds.open + ?", "0")},
        usd_micros = ${d.plusFloor0("holds.usd_micros", "?")}, updated_at = ?
      RETURNING CASE WHEN open > ? THEN pm_refuse(?, CAST(open AS TEXT)) END AS refused`,
    account: `INSERT INTO billing_accounts (project_id, balance_usd_micros, held_usd_micros, last_seq, last_at, low_alerted, updated_at)
      VALUES (?, '0', ?, 0, 0, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET held_usd_micros = ${d.plusFloor0("billing_accounts.held_usd_micros", "?")}, updated_at = ?
      RETURNING CASE WHEN CAST(? AS TEXT) IS NOT NULL AND ${d.greater("held_usd_micros", "balance_usd_micros")}
        THEN pm_refuse(?, CAST(${d.minus("balance_usd_micros", "held_usd_micros")} AS TEXT)) END AS refused`,
  };
}

const rendered = new Map<string, ReturnType<typeof counterSql>>();
function sqlFor(d: Dialect): ReturnType<typeof counterSql> {
  let sql = rendered.get(d.name);
  if (!sql) rendered.set(d.name, (sql = counterSql(d)));
  return sql;
}

/** The statement that adds `by` to `row` at `now` and makes `checks` there. */
export function counterMove(d: Dialect, { row, by }: Move, now: number, checks: RowChecks = {}): Statement {
  const sql = sqlFor(d);
  switch (row.kind) {
    case "usage":
      return usageMove(d, row, by, now, checks.caps);
    case "tank": {
      const covered = token(checks.covered);
      return { sql: sql.tank, params: [row.network, row.sender, by.balance, floor0(by.reservedWei), now, by.balance, by.reservedWei, now, covered, covered] };
    }
    case "hold": {
      const max = checks.maxOpen;
      return { sql: sql.hold, params: [row.scope, row.key, floor0(by.count), floor0(by.balance), now, by.count, by.balance, now, max?.limit ?? null, token(max?.refusal)] };
    }
    case "account": {
      const covered = token(checks.covered);
      return { sql: sql.account, params: [row.projectId, floor0(by.balance), false, now, by.balance, now, covered, covered] };
    }
  }
}
