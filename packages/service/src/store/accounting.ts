/**
 * The accounting model: which counters a sponsorship counts in, and by how much, in each standing it can be in.
 * Pure: the store's batches (sql/batches.ts) turn the moves this computes into statements that add them to the
 * rows, so no counter is ever read, changed in JavaScript and written back (docs/scale.md).
 *
 * A sponsorship stands open (reserved or signed: its maximum cost is held), settled (the chain charged it) or
 * closed (released, replaced, expired, withdrawn, or not reserved yet). What it contributes to each counter is
 * a function of its standing alone, and every transition moves each counter by the difference:
 *
 * | counter (row)                                   | open                          | settled               |
 * | ----------------------------------------------- | ----------------------------- | --------------------- |
 * | strategy usage (each of its links)              | reserved += max, ops += 1     | spent += actual, ops += 1 |
 * | gas tank (User Sponsor mode)                    | reserved += max wei           | balance -= actual wei |
 * | billing account (billed projects)               | held += its hold              |                       |
 * | holds (each of its hold rows, see holdRows)     | open += 1, usd += its share   |                       |
 *
 * (`max` is its maxCostWei and maxCostUsdMicros, `actual` the settlement's actualGasCostWei and
 * actualCostUsdMicros.) So: reserve is closed -> open; release, replace, expire, withdraw open -> closed; settle
 * open -> settled (or closed -> settled for a released one whose signature landed anyway: its op is counted
 * again); unsettle the exact inverse of its settle. A billing account's balance moves by ledger entries, not
 * here (sql/billing.ts). Counters never go below zero (only rows that had drifted could get there), except a
 * tank's balance: the chain may charge more than it holds, and clamping would lose that debt.
 */
import type { Address } from "@paymaster/shared";
import type { CapScope } from "../policy/types.ts";
import type { SponsorshipStatus } from "./types.ts";
import type { SponsorMode } from "../policy/types.ts";

/** A sponsorship's maximum cost, or a settlement's actual cost. */
export interface Cost {
  wei: bigint;
  usdMicros: bigint;
}

export function maxCostOf(s: { maxCostWei: bigint; maxCostUsdMicros: bigint }): Cost {
  return { wei: s.maxCostWei, usdMicros: s.maxCostUsdMicros };
}

/** A sponsorship row's maximum cost (amounts as the databases return them). */
export function rowCost(row: { max_cost_wei: string | bigint; max_cost_usd_micros: string | bigint }): Cost {
  return { wei: BigInt(row.max_cost_wei), usdMicros: BigInt(row.max_cost_usd_micros) };
}

export type Standing = "open" | "settled" | "closed";

export function standingOf(status: SponsorshipStatus | null): Standing {
  if (status === "reserved" || status === "signed") return "open";
  return status === "settled" ? "settled" : "closed";
}

/** One `strategy_usage` row. */
export interface UsageKey {
  strategyId: string;
  scope: CapScope;
  key: string;
}

/**
 * The running holds a sponsorship may count in while open (table `holds`, migration 17), each bounding what
 * open sponsorships may hold without anyone having signed them (src/sponsor/outstanding.ts, postOpRisk.ts):
 * - `sender`: its sender's open sponsorships with 2-D nonces (network, EntryPoint, sender);
 * - `client`: a browser key's open sponsorships from one client address (key, client bucket), and their billing holds;
 * - `key`: a billed browser key's open sponsorships and their billing holds;
 * - `postop-sender`, `postop-project`, `postop-key`: ERC-20 sponsorships charged in postOp, per sender
 *   (network, sender), and their maximum USD per project and per key.
 */
export type HoldScope = "sender" | "client" | "key" | "postop-sender" | "postop-project" | "postop-key";

export interface HoldKey {
  scope: HoldScope;
  key: string;
}

/** What never changes once a sponsorship is reserved: the rows it counts in and what it counts there. */
export interface Facts {
  network: string;
  sender: Address | string;
  mode: SponsorMode;
  projectId: string;
  maxCost: Cost;
  /** Its billing hold (USD micros), null when its project was not billed for it. */
  billingHold: bigint | null;
  /** The strategy usage rows it was reserved in. */
  links: readonly UsageKey[];
  /** The hold rows it was reserved in. */
  holds: readonly HoldKey[];
}

export type CounterRow =
  | { kind: "tank"; network: string; sender: string }
  | ({ kind: "usage" } & UsageKey)
  | ({ kind: "hold" } & HoldKey)
  | { kind: "account"; projectId: string };

/** How much one row moves (the fields its kind has; the others stay 0n). */
export interface Amounts {
  reservedWei: bigint;
  reservedUsdMicros: bigint;
  spentWei: bigint;
  spentUsdMicros: bigint;
  /** Usage rows: ops counted; hold rows: open sponsorships. */
  count: bigint;
  /** Tank rows: the balance; account rows: what is held; hold rows: the USD held. */
  balance: bigint;
}

export interface Move {
  row: CounterRow;
  by: Amounts;
}

const ZERO: Readonly<Amounts> = Object.freeze({ reservedWei: 0n, reservedUsdMicros: 0n, spentWei: 0n, spentUsdMicros: 0n, count: 0n, balance: 0n });

/** Amounts with the given fields, the others 0n. */
export const amounts = (fields: Partial<Amounts>): Amounts => ({ ...ZERO, ...fields });

/** What a hold row of `scope` holds in USD for a sponsorship: a billing hold, or the maximum a postOp charge risks. */
function holdUsd(scope: HoldScope, facts: Facts): bigint {
  if (scope === "client" || scope === "key") return facts.billingHold ?? 0n;
  if (scope === "postop-project" || scope === "postop-key") return facts.maxCost.usdMicros;
  return 0n;
}

/** What `facts` contributes to each of its counters while it stands `standing` (`actual`: a settlement's cost). */
export function contribution(facts: Facts, standing: Standing, actual?: Cost): Move[] {
  if (standing === "closed") return [];
  const moves: Move[] = [];
  const tank = { kind: "tank" as const, network: facts.network, sender: facts.sender };
  if (standing === "open") {
    const max = facts.maxCost;
    for (const link of facts.links) moves.push({ row: { kind: "usage", ...link }, by: amounts({ reservedWei: max.wei, reservedUsdMicros: max.usdMicros, count: 1n }) });
    if (facts.mode === "user") moves.push({ row: tank, by: amounts({ reservedWei: max.wei }) });
    if (facts.billingHold !== null) moves.push({ row: { kind: "account", projectId: facts.projectId }, by: amounts({ balance: facts.billingHold }) });
    for (const hold of facts.holds) moves.push({ row: { kind: "hold", ...hold }, by: amounts({ count: 1n, balance: holdUsd(hold.scope, facts) }) });
    return moves;
  }
  const paid = actual ?? { wei: 0n, usdMicros: 0n };
  for (const link of facts.links) moves.push({ row: { kind: "usage", ...link }, by: amounts({ spentWei: paid.wei, spentUsdMicros: paid.usdMicros, count: 1n }) });
  if (facts.mode === "user") moves.push({ row: tank, by: amounts({ balance: -paid.wei }) });
  return moves;
}

/** A row's identity, and the order rows are written in (see lockOrder). */
export function rowId(row: CounterRow): string {
  switch (row.kind) {
    case "tank":
      return `1\u0000${row.network}\u0000${row.sender}`;
    case "usage":
      return `2\u0000${row.strategyId}\u0000${row.scope}\u0000${row.key}`;
    case "hold":
      return `3\u0000${row.scope}\u0000${row.key}`;
    case "account":
      return `4\u0000${row.projectId}`;
  }
}

const add = (a: Amounts, b: Amounts, sign: 1n | -1n): Amounts => ({
  reservedWei: a.reservedWei + sign * b.reservedWei,
  reservedUsdMicros: a.reservedUsdMicros + sign * b.reservedUsdMicros,
  spentWei: a.spentWei + sign * b.spentWei,
  spentUsdMicros: a.spentUsdMicros + sign * b.spentUsdMicros,
  count: a.count + sign * b.count,
  balance: a.balance + sign * b.balance,
});

const isZero = (a: Amounts): boolean => Object.values(a).every((v) => v === 0n);

/** One transition of one sponsorship, and the settlement costs on either side of it where they apply. */
export interface Transition {
  facts: Facts;
  from: Standing;
  to: Standing;
  /** The settlement the sponsorship stands settled with (on either side). */
  actual?: Cost;
}

/**
 * The moves of any number of transitions, one per row (what several sponsorships do to one row adds up; a row
 * whose moves cancel out is not written, unless it is one of `alwaysRows`: rows a batch checks whatever it does
 * to them), in the order rows are written and locked: tanks, strategy usage rows, holds, billing accounts, each
 * sorted by key, so two batches never wait on each other in a cycle. Each with its row's id.
 */
export function movesOf(transitions: readonly Transition[], alwaysRows: readonly CounterRow[] = []): (Move & { id: string })[] {
  const rows = new Map<string, Move & { id: string }>();
  const apply = (moves: readonly Move[], sign: 1n | -1n) => {
    for (const m of moves) {
      const id = rowId(m.row);
      const current = rows.get(id);
      rows.set(id, { id, row: m.row, by: add(current?.by ?? ZERO, m.by, sign) });
    }
  };
  for (const t of transitions) {
    apply(contribution(t.facts, t.from, t.actual), -1n);
    apply(contribution(t.facts, t.to, t.actual), 1n);
  }
  const always = new Set(alwaysRows.map(rowId));
  for (const row of alwaysRows) {
    const id = rowId(row);
    if (!rows.has(id)) rows.set(id, { id, row, by: ZERO });
  }
  return [...rows.values()].filter((m) => always.has(m.id) || !isZero(m.by)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

// ---- hold rows: which a new sponsorship counts in, and their stored form

/** What decides a new sponsorship's hold rows (its input: store/types.ts NewSponsorship). */
export interface HoldInput {
  network: string;
  entryPoint: string;
  sender: string;
  apiKeyId: string;
  projectId: string;
  parallelNonce: boolean;
  /** The client bucket, when a per-client bound applies (browser keys). */
  boundedClient: string | undefined;
  /** Billed, and a bound on the key's share of the balance applies (browser keys). */
  boundedKey: boolean;
  postOpCharge: boolean;
}

export function holdRows(input: HoldInput): HoldKey[] {
  const rows: HoldKey[] = [];
  if (input.parallelNonce) rows.push({ scope: "sender", key: `${input.network}:${input.entryPoint}:${input.sender}` });
  if (input.boundedClient !== undefined) rows.push({ scope: "client", key: `${input.apiKeyId}:${input.boundedClient}` });
  if (input.boundedKey) rows.push({ scope: "key", key: input.apiKeyId });
  if (input.postOpCharge) {
    rows.push({ scope: "postop-sender", key: `${input.network}:${input.sender}` });
    rows.push({ scope: "postop-project", key: input.projectId });
    rows.push({ scope: "postop-key", key: input.apiKeyId });
  }
  return rows;
}

/** The stored form of a sponsorship's usage links (sponsorships.usage_links): `scope=key` joined by ";", its strategy's. */
export function linksText(links: readonly UsageKey[]): string {
  return links.map((l) => `${l.scope}=${l.key}`).join(";");
}

export function linksFromText(strategyId: string | null, text: string | null): UsageKey[] {
  if (strategyId === null || text === null || text === "") return [];
  return text.split(";").map((part) => {
    const at = part.indexOf("=");
    return { strategyId, scope: part.slice(0, at) as UsageKey["scope"], key: part.slice(at + 1) };
  });
}

/** The stored form of hold rows (sponsorships.holds): `scope=key` joined by ";" (keys hold no ";" or "="). */
export function holdsText(holds: readonly HoldKey[]): string {
  return holds.map((h) => `${h.scope}=${h.key}`).join(";");
}

export function holdsFromText(text: string | null): HoldKey[] {
  if (text === null || text === "") return [];
  return text.split(";").map((part) => {
    const at = part.indexOf("=");
    return { scope: part.slice(0, at) as HoldScope, key: part.slice(at + 1) };
  });
}
