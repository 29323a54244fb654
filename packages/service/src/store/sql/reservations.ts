/**
 * The store's part for reserving a sponsorship: one transaction that holds the op's maximum cost against the
 * sender's gas tank (User Sponsor mode), the strategy's caps (Sponsor mode) and the project's billing balance
 * (billed projects), allows one outstanding postOp-charge sponsorship per sender (ERC-20 mode), replaces the op's
 * earlier active sponsorship, and records the new one — under the lock order of ../sqlStore.ts.
 */
import type { CapCheck } from "../../policy/types.ts";
import { holdFor, termsToJson, validTerms } from "../../billing/charge.ts";
import * as common from "../common.ts";
import { joinAmountParts, type Dialect, type Param, type Tx } from "../db/types.ts";
import { StoreError } from "../errors.ts";
import { releasedData, sponsorshipData } from "../../webhooks/events.ts";
import { writeEvents } from "../webhookRows.ts";
import type { NewSponsorship, ReserveResult, SponsorshipRecord, Store } from "../types.ts";
import { LockOrderRetry, isActiveOpRace, isForeignKey, usageLinks, lockTank, lockUsage, nowMs, sponsorshipEvent, writeUsage, type SqlShared } from "./shared.ts";
import { billedProjects, billingParts, type AccountState } from "./billing.ts";

/** The op's active sponsorship, as reserve reads it. */
interface ActiveRow {
  id: string;
  mode: SponsorshipRecord["mode"];
  status: "reserved" | "signed";
  max_cost_wei: string | bigint;
  max_cost_usd_micros: string | bigint;
  project_id: string;
  billing_hold_usd_micros: string | bigint | null;
}

const RESERVATION_QUERIES = {
  insertSponsorship: `INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id,
      api_key_id, strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, max_cost_usd_micros, valid_until,
      valid_after, user_op_hash, paymaster_and_data, status, created_at, updated_at, client_ip, parallel_nonce,
      billing_hold_usd_micros, billing_terms)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  insertLink: "INSERT INTO sponsorship_usage (sponsorship_id, strategy_id, scope, key) VALUES (?, ?, ?, ?)",
  insertPostOpCharge: `INSERT INTO token_charge_flags (sponsorship_id, network, sender, postop_charge, unpaid, updated_at)
    VALUES (?, ?, ?, ?, ?, ?)`,
  // The op's own sponsorship being replaced (bound second; '' when none) does not count.
  // Open sponsorships of the sender (this network and EntryPoint, any nonce) and of a key's client address; the
  // op's own one being replaced (bound last) does not count. Served by the open-only partial indexes.
  countOpenOfSender: `SELECT COUNT(*) AS n FROM sponsorships
    WHERE network = ? AND entry_point = ? AND sender = ? AND status IN ('reserved', 'signed') AND parallel_nonce = ? AND id <> ?`,
  countOpenOfClient: `SELECT COUNT(*) AS n FROM sponsorships
    WHERE api_key_id = ? AND client_ip = ? AND status IN ('reserved', 'signed') AND id <> ?`,
  selectOtherPostOpCharge: `SELECT 1 AS one FROM token_charge_flags f JOIN sponsorships s ON s.id = f.sponsorship_id
    WHERE f.network = ? AND f.sender = ? AND f.postop_charge = ? AND s.status IN ('reserved', 'signed') AND s.id <> ? LIMIT 1`,
} as const;

/**
 * What a project's postOp-charge sponsorships put at risk, and its key's part: outstanding ones' maximum cost and
 * those whose charge went unpaid since a time, in USD micros (summed by the database in exact parts). The op's
 * own sponsorship being replaced (bound second) does not count.
 */
function atRiskQuery(d: Dialect): string {
  const parts = d.amountParts("s.max_cost_usd_micros");
  const sums = parts.map((part, i) => {
    const name = ["low", "mid", "high"][i];
    return `CAST(SUM(${part}) AS TEXT) AS project_${name}, CAST(SUM(CASE WHEN s.api_key_id = ? THEN ${part} ELSE 0 END) AS TEXT) AS key_${name}`;
  });
  return `SELECT ${sums.join(", ")} FROM token_charge_flags f JOIN sponsorships s ON s.id = f.sponsorship_id
    WHERE s.project_id = ? AND s.id <> ?
      AND ((f.postop_charge = ? AND s.status IN ('reserved', 'signed')) OR (f.unpaid = ? AND f.updated_at >= ?))`;
}

/** A nonce whose key (its upper 192 bits) is not 0: a 2-D nonce. */
const parallelNonce = (nonce: bigint): boolean => nonce >> 64n !== 0n;

type PartsRow = Record<`${"project" | "key"}_${"low" | "mid" | "high"}`, string | null>;
const joined = (row: PartsRow | undefined, scope: "project" | "key"): bigint => joinAmountParts(row?.[`${scope}_low`], row?.[`${scope}_mid`], row?.[`${scope}_high`]);

/** cap.reached for a refused reservation; returns how many outbox rows were written (0: already told, or none subscribed). */
async function capReached(
  tx: Parameters<typeof writeEvents>[0],
  record: SponsorshipRecord,
  checks: readonly CapCheck[],
  refusal: { rule: string; limit: string; value: string },
): Promise<number> {
  const check = checks.find((c) => refusal.rule.startsWith(`${c.rulePrefix}.`));
  const key = check?.key ?? "";
  return writeEvents(
    tx,
    {
      projectId: record.projectId,
      type: "cap.reached",
      data: {
        strategyId: record.strategyId,
        rule: refusal.rule,
        scope: check?.scope ?? null,
        key,
        limit: refusal.limit,
        attempted: refusal.value,
        network: record.network,
        sender: record.sender,
      },
      dedupeKey: `cap.reached:${record.strategyId}:${refusal.rule}:${key}:${refusal.limit}`,
    },
    nowMs(),
  );
}

export function reservationStore(s: SqlShared) {
  const { db } = s;
  const q = { ...s.q, ...RESERVATION_QUERIES, selectAtRisk: atRiskQuery(db.dialect) };
  const activeOpRace = (err: unknown): boolean => isActiveOpRace(s, err);
  const billing = billingParts(s);

  /**
   * The project's billing (input.billing): this op's hold must fit in the account's balance minus what its other
   * open sponsorships hold (the op's own earlier one, replaced here, given back first). Undefined when it fits.
   */
  function balanceRefusal(account: AccountState | undefined, hold: bigint | null, previous: ActiveRow | undefined, projectId: string): ReserveResult | undefined {
    if (!account || hold === null) return undefined;
    const freed = previous && previous.project_id === projectId && previous.billing_hold_usd_micros !== null ? BigInt(previous.billing_hold_usd_micros) : 0n;
    const availableUsdMicros = account.balance - (account.held - freed);
    // A project in debt (available below zero) is refused even an op that holds nothing.
    return availableUsdMicros < hold ? { ok: false, reason: "BALANCE_EXHAUSTED", availableUsdMicros, requiredUsdMicros: hold } : undefined;
  }

  /**
   * The bounds on open sponsorships (input.outstanding), under key locks of the sender and of the (key, client
   * address) so that, in PostgreSQL, concurrent reservations count one after the other; undefined when they hold.
   */
  async function outstandingRefusal(tx: Tx, input: NewSponsorship, record: SponsorshipRecord, replacing: string): Promise<ReserveResult | undefined> {
    const bounds = input.outstanding;
    if (!bounds) return undefined;
    const { network, entryPoint, sender } = record;
    if (db.dialect.keyLock !== undefined) await tx.one(db.dialect.keyLock, [`open-sender:${network}:${entryPoint}:${sender}`]);
    // The default nonce key (0) holds one valid nonce at a time, which the sender's own request replaces: only
    // 2-D nonces (any number of fresh keys) are counted and refused.
    const bySender = parallelNonce(record.nonce) ? await tx.one<{ n: number | string }>(q.countOpenOfSender, [network, entryPoint, sender, true, replacing]) : undefined;
    if (bySender !== undefined && Number(bySender.n ?? 0) + 1 > bounds.maxPerSender) return { ok: false, reason: "TOO_MANY_OUTSTANDING", scope: "sender", limit: bounds.maxPerSender };
    if (bounds.maxPerClientIp === undefined || input.clientBucket === undefined) return undefined;
    if (db.dialect.keyLock !== undefined) await tx.one(db.dialect.keyLock, [`open-client:${record.apiKeyId}:${input.clientBucket}`]);
    const byClient = await tx.one<{ n: number | string }>(q.countOpenOfClient, [record.apiKeyId, input.clientBucket, replacing]);
    if (Number(byClient?.n ?? 0) + 1 > bounds.maxPerClientIp) return { ok: false, reason: "TOO_MANY_OUTSTANDING", scope: "clientIp", limit: bounds.maxPerClientIp };
    return undefined;
  }
  return {
    /**
     * One transaction with row locks in the lock order (see the module comment):
     *
     * - First an unlocked look at the op's active sponsorship (network, entryPoint, sender, nonce) — the one this
     *   reservation replaces — for what replacing it involves: its tank when it is user-mode, its usage rows, its
     *   project's billing account when it holds a billing hold.
     * - 1. The tank: User Sponsor mode locks the sender's tank (a missing tank is inserted ON CONFLICT DO NOTHING
     *   and then locked, unless nothing could fit in it anyway); other modes lock it only when the active
     *   sponsorship is user-mode (its reservation is given back). Every transaction that changes a tank holds this
     *   lock, so the balance and reserved amount read under it stay true until COMMIT: reservations against one
     *   tank queue here, across connections and processes, and never over-reserve.
     * - 2. The usage rows of the caps and of the active sponsorship, in common.lockOrder (missing ones created):
     *   likewise every reservation, release, settlement against one cap row queues on it, so a cap is never exceeded.
     * - 3. The billing accounts, sorted by project: this op's project when it is billed (input.billing; a missing
     *   account is created empty), and the active sponsorship's project when that one holds (it is given back).
     *   Every move of a balance or of its holds queues here, so a balance is never over-held.
     * - 4. The active sponsorship, locked, so a concurrent release or replacement of it waits for this transaction
     *   (or this one for it: under READ COMMITTED a row that stopped being active while we waited is simply not
     *   returned). Should the locked one not be the one looked at (replaced in between) and need a tank, usage
     *   row or account not locked yet, the attempt is abandoned and run again (LockOrderRetry). Two first
     *   reservations of one op can both find none; the partial unique index lets only one insert, and the other
     *   retries and replaces it.
     * - 5. An ERC-20 op charged in postOp: the key lock of (network, sender)'s token charges (PostgreSQL: an
     *   advisory lock; SQLite's write lock already serialises), then a look for another outstanding postOp-charge
     *   sponsorship of the sender. Of two such reservations at once the second looks after the first committed.
     *
     * Then common.planTank, common.planCaps, the postOp-charge look and the balance decide; a refusal ends in ROLLBACK: nothing
     * is written, the earlier sponsorship stays. The row is inserted signed (with its userOpHash and
     * paymasterAndData): reserving and signing are one transaction, so there is no reserved-but-unsigned window in
     * which a concurrent request for the same op could replace it.
     */
    async reserveSponsorship(input: NewSponsorship, caps?: readonly CapCheck[]): Promise<ReserveResult> {
      const record = common.newSponsorshipRecord(input, common.nowSeconds());
      const checks = common.validCapChecks(caps, record.strategyId);
      const { network, sender } = record;
      const postOpCharge = input.postOpCharge === true;
      const opKey: Param[] = [network, record.entryPoint, sender, record.nonce];
      const capKeys = checks.map((c): common.UsageKey => ({ strategyId: record.strategyId!, scope: c.scope, key: c.key }));
      const terms = input.billing;
      if (terms !== undefined) {
        const problem = validTerms(terms);
        if (problem !== undefined) common.invalid(problem);
      }
      const hold = terms === undefined ? null : holdFor(terms, record.maxCostWei);

      try {
        return await db.transaction(async (tx): Promise<ReserveResult> => {
          const peek = await tx.one<ActiveRow>(q.selectActiveOp, opKey);
          const peekLinks = peek ? await usageLinks(s, tx, peek.id) : [];

          let tank: { balanceWei: bigint; reservedWei: bigint } | undefined;
          if (record.mode === "user") {
            const row = await tx.one<common.TankRow>(q.lockTank, [network, sender]);
            if (!row && record.maxCostWei > 0n) {
              // No tank: nothing fits (a tank-less sender has no user-mode reservation to give back either).
              tx.rollbackOnly();
              return { ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 0n, requiredWei: record.maxCostWei };
            }
            tank = row ? common.toTank(row) : await lockTank(s, tx, network, sender);
          } else if (peek?.mode === "user") {
            tank = await lockTank(s, tx, network, sender);
          }
          const totals = await lockUsage(s, tx, [...capKeys, ...peekLinks], true);
          const accounts = await billing.lockAccounts(tx, [...(terms ? [record.projectId] : []), ...billedProjects([peek])]);
          // SQLite: BEGIN IMMEDIATE holds the one write lock, so the locking read is the peek again (same SQL).
          const previous = q.lockActiveOp === q.selectActiveOp ? peek : await tx.one<ActiveRow>(q.lockActiveOp, opKey);
          const previousLinks = !previous ? [] : previous.id === peek?.id ? peekLinks : await usageLinks(s, tx, previous.id);
          if (previous?.mode === "user" && !tank) throw new LockOrderRetry();
          if (previousLinks.some((k) => !totals.has(common.usageId(k)))) throw new LockOrderRetry();
          if (billedProjects([previous]).some((p) => !accounts.has(p))) throw new LockOrderRetry();

          const freedWei = previous?.mode === "user" ? BigInt(previous.max_cost_wei) : 0n;
          const tankPlan = common.planTank(record.mode, tank ?? { balanceWei: 0n, reservedWei: 0n }, freedWei, record.maxCostWei);
          if (!tankPlan.ok) {
            tx.rollbackOnly(); // nothing written: the earlier sponsorship stays active
            return tankPlan;
          }
          const capPlan = common.planCaps({
            strategyId: record.strategyId,
            checks,
            cost: { wei: record.maxCostWei, usdMicros: record.maxCostUsdMicros },
            previous: previous ? { links: previousLinks, max: common.rowCost(previous) } : null,
            totals,
          });
          if (!capPlan.ok) {
            // cap.reached: once per (strategy, cap rule, window key, limit) and endpoint; then only that row commits.
            if ((await capReached(tx, record, checks, capPlan)) === 0) tx.rollbackOnly();
            return capPlan;
          }
          const crowded = await outstandingRefusal(tx, input, record, previous?.id ?? "");
          if (crowded) {
            tx.rollbackOnly();
            return crowded;
          }
          if (postOpCharge) {
            if (db.dialect.keyLock !== undefined) await tx.one(db.dialect.keyLock, [`token-charge:${network}:${sender}`]);
            if ((await tx.one(q.selectOtherPostOpCharge, [network, sender, true, previous?.id ?? ""])) !== undefined) {
              tx.rollbackOnly();
              return { ok: false, reason: "POSTOP_CHARGE_PENDING" };
            }
            const risk = input.postOpChargeRisk;
            if (risk) {
              // One project's postOp-charge reservations queue here (PostgreSQL), so the total below stays true.
              if (db.dialect.keyLock !== undefined) await tx.one(db.dialect.keyLock, [`postop-risk:${record.projectId}`]);
              const row = await tx.one<PartsRow>(q.selectAtRisk, [
                ...Array(3).fill(record.apiKeyId),
                record.projectId,
                previous?.id ?? "",
                true,
                true,
                risk.sinceSeconds,
              ]);
              const over = (
                [
                  ["project", joined(row, "project"), risk.maxUsdMicrosPerProject],
                  ["apiKey", joined(row, "key"), risk.maxUsdMicrosPerKey],
                ] as const
              ).find(([, total, limit]) => total + record.maxCostUsdMicros > limit);
              if (over) {
                tx.rollbackOnly();
                return { ok: false, reason: "POSTOP_CHARGE_AT_RISK", scope: over[0], limit: over[2].toString(), value: (over[1] + record.maxCostUsdMicros).toString() };
              }
            }
          }
          const exhausted = balanceRefusal(accounts.get(record.projectId), hold, previous, record.projectId);
          if (exhausted) {
            tx.rollbackOnly();
            return exhausted;
          }

          const now = record.createdAt;
          if (previous) {
            await tx.run(q.releaseActive, ["replaced", now, previous.id]);
            if (previous.status === "signed") await sponsorshipEvent(s, tx, previous.id, "sponsorship.released", (r) => releasedData(r, "replaced"));
            if (previous.billing_hold_usd_micros !== null) billing.moveHold(accounts.get(previous.project_id)!, BigInt(previous.billing_hold_usd_micros), previous.status, "released");
          }
          if (hold !== null) billing.moveHold(accounts.get(record.projectId)!, hold, "new", "signed");
          await billing.saveAccounts(tx, accounts, now);
          if (tank) await tx.run(q.updateTank, [tank.balanceWei, tankPlan.reservedWei, now, network, sender]);
          await tx.run(q.insertSponsorship, [
            record.id,
            network,
            record.entryPoint,
            record.version,
            sender,
            record.nonce,
            record.mode,
            record.projectId,
            record.apiKeyId,
            record.strategyId,
            record.token,
            record.exchangeRate,
            record.maxTokenCost,
            record.maxCostWei,
            record.maxCostUsdMicros,
            record.validUntil,
            record.validAfter,
            record.userOpHash,
            record.paymasterAndData,
            record.status,
            now,
            now,
            input.clientBucket ?? null,
            parallelNonce(record.nonce),
            hold,
            terms === undefined ? null : termsToJson(terms),
          ]);
          if (postOpCharge) await tx.run(q.insertPostOpCharge, [record.id, network, sender, true, false, now]);
          await writeUsage(s, tx, capPlan.writes, now);
          for (const k of capPlan.links) await tx.run(q.insertLink, [record.id, k.strategyId, k.scope, k.key]);
          // The row is signed as it is inserted: its sponsorship.signed outbox rows commit with it (a pending one's
          // with confirmSponsorship).
          if (record.status === "signed") await sponsorshipEvent(s, tx, record.id, "sponsorship.signed", sponsorshipData, record.projectId);
          return { ok: true, record, replaced: previous?.id ?? null };
        }, activeOpRace);
      } catch (err) {
        if (isForeignKey(s, err)) {
          throw new StoreError("NOT_FOUND", "sponsorship refers to an unknown project, API key or strategy");
        }
        // Every retry found the op's active sponsorship replaced again by a concurrent reservation of the same op.
        if (isActiveOpRace(s, err)) throw new StoreError("CONFLICT", "concurrent reservations of the same op kept replacing each other");
        throw err;
      }
    },
  } satisfies Partial<Store>;
}
