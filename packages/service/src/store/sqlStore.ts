/**
 * The store: one implementation of `Store` for both databases, over the dialect layer (db/types.ts). SQL is
 * written once, with `?` placeholders and the dialect's few words; validation, row conversion and the
 * accounting (what each transition does to usage rows and tanks, the cap checks) are common.ts. No amount is
 * computed in SQL (SQLite keeps them as TEXT).
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
 *   3. sponsorship rows: the op's active sponsorship (reserve), or the sponsorship being released, settled or
 *      un-settled and then (unsettle only) the op's active one;
 *   4. (reserving an ERC-20 op charged in postOp only) the key lock of the sender's token charges, which nothing
 *      else takes.
 *
 * (A credit row is locked before its tank: creditGasTank, revertGasTankCredit.) So two transactions can wait on
 * each other only in one direction: no deadlock. What must be locked is learned from unlocked reads of what
 * never changes once written (a sponsorship's mode, network, sender and the usage rows it is linked to); where
 * that can go stale — the op's active sponsorship replaced between the look and the lock — the attempt is
 * abandoned and run again (`LockOrderRetry`). Also retried, a bounded number of times: two first reservations
 * of one op racing on the partial unique index (the loser retries and replaces the winner), and serialization
 * failures or deadlocks reported by the server (db/postgres.ts). Under SQLite's write lock none of these races
 * can happen, and the same code takes the same steps.
 */
import { randomUUID } from "node:crypto";
import { getAddress, isAddress } from "viem";
import type { Address, Hex } from "@paymaster/shared";

import type { CapCheck, StrategyRules } from "../policy/types.ts";
import * as common from "./common.ts";
import { asciiLower, type Db, type Dialect, type Param, type Queryer, type Tx } from "./db/types.ts";
import { StoreError } from "./errors.ts";
import { releasedData, settledData, sponsorshipData } from "../webhooks/events.ts";
import {
  ACTIVITY_ROW_LIMIT,
  CONSOLE_QUERIES as C,
  aggregateActivity,
  mergeLedger,
  toRequestCountBucket,
  toTimeline,
  type ActivityRow,
  type LedgerRow,
  type RequestCountRow,
  type SpendRow,
  type TimelineRow,
} from "./consoleRows.ts";
import { EXPIRE_PENDING_APPLICATIONS, expiryReason } from "./applicationExpiry.ts";
import { WEBHOOK_QUERIES as W, toDelivery, toEndpoint, validEndpoint, writeEvents, type DeliveryRow, type EndpointRow } from "./webhookRows.ts";
import type {
  ActivityFilter,
  GasTankListing,
  RequestCount,
  RequestCountBucket,
  SponsorshipActivity,
  SponsorshipTimeline,
  TankLedgerEntry,
  ClaimedDelivery,
  DeliveryOutcome,
  NewWebhookEndpoint,
  NewWebhookEvent,
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEventType,
  ApiKey,
  GasTank,
  GasTankTotals,
  Leadership,
  SponsorMode,
  SponsorshipCount,
  NewSponsorship,
  ApiKeyAccess,
  AuditEntry,
  KeyApplication,
  KeyApplicationStatus,
  NewKeyApplication,
  NewStrategy,
  Project,
  ProjectStatus,
  SponsorshipFilter,
  StrategyPatch,
  ReserveResult,
  Settlement,
  SponsorshipRecord,
  SponsorshipStatus,
  Store,
  Strategy,
  StrategyStatus,
  Token,
  UsageTotals,
} from "./types.ts";

/** releaseExpired looks for expired sponsorships this many at a time. */
const EXPIRY_BATCH = 500;

/** The op's active sponsorship, as reserve reads it. */
interface ActiveRow {
  id: string;
  mode: SponsorshipRecord["mode"];
  status: "reserved" | "signed";
  max_cost_wei: string | bigint;
  max_cost_usd_micros: string | bigint;
}

/** What a sponsorship's status change does (see #transition): the delta to apply and the statement that changes the row. */
interface Change {
  delta: common.Delta;
  sql: string;
  values: Param[];
  /** The webhook event the change causes (written to the outbox in the same transaction), from the changed record. */
  event?: { type: WebhookEventType; data: (record: SponsorshipRecord) => Record<string, unknown> };
}

/** Webhook outbox rows are stamped in milliseconds (delivery backoff is finer than a second). */
const nowMs = (): number => Date.now();

/** Thrown inside a reservation that found it would have to take a lock out of the lock order. */
class LockOrderRetry extends Error {
  override name = "LockOrderRetry";
}

/** Every statement of the store, rendered once for the database's dialect. */
function queries(d: Dialect) {
  const strategyColumns = `id, project_id, code, name, status, valid_from, valid_until, ${d.json("networks")}, ${d.json("rules")}, created_at`;
  const tokenColumns = `network, address, symbol, decimals, ${d.json("price_source")}, markup_bps, enabled`;
  const apiKeyColumns = `id, project_id, prefix, label, status, created_at, revoked_at, ${d.json("allowed_origins")}, ${d.json("allowed_ips")}`;
  const applicationColumns = `id, created_at, contact, project_name, ${d.json("networks")}, intended_use, status, decided_at,
    decided_by, reason, project_id, api_key_id, claimed_at`;
  const usageColumns = "reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros, ops";
  const activeOp = `SELECT id, mode, status, max_cost_wei, max_cost_usd_micros FROM sponsorships
    WHERE network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND status IN ('reserved', 'signed')`;
  const sponsorship = `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships`;
  return {
    insertProject: "INSERT INTO projects (id, name, status, created_at) VALUES (?, ?, 'active', ?)",
    selectProject: "SELECT id, name, status, created_at FROM projects WHERE id = ?",
    selectProjects: "SELECT id, name, status, created_at FROM projects ORDER BY created_at, id",
    updateProjectStatus: "UPDATE projects SET status = ? WHERE id = ?",

    insertApiKey: `INSERT INTO api_keys (id, project_id, key_hash, prefix, label, status, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?)`,
    selectApiKeyByHash: `SELECT k.id, k.project_id, k.prefix, k.label, k.status, k.created_at, k.revoked_at,
        ${d.json("k.allowed_origins", "allowed_origins")}, ${d.json("k.allowed_ips", "allowed_ips")}, p.status AS project_status
      FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.key_hash = ?`,
    updateApiKeyAccess: "UPDATE api_keys SET allowed_origins = ?, allowed_ips = ? WHERE id = ?",
    selectApiKey: `SELECT ${apiKeyColumns} FROM api_keys WHERE id = ?`,
    // The project filter is bound twice: NULL = every project.
    selectApiKeys: `SELECT ${apiKeyColumns} FROM api_keys WHERE (CAST(? AS TEXT) IS NULL OR project_id = ?) ORDER BY created_at, id`,
    selectApiKeyExists: "SELECT 1 AS found FROM api_keys WHERE id = ?",
    revokeApiKey: "UPDATE api_keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'active'",

    insertStrategy: `INSERT INTO strategies (id, project_id, code, name, status, valid_from, valid_until, networks, rules,
        created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    selectStrategyByCode: `SELECT ${strategyColumns} FROM strategies WHERE code = ?`,
    selectConfigVersion: "SELECT version FROM config_version WHERE id = 1",
    // Amounts are added up here, not in SQL (SQLite keeps them as TEXT): these read the rows.
    countSponsorships: "SELECT network, mode, version, status, COUNT(*) AS count FROM sponsorships GROUP BY network, mode, version, status",
    selectTankAmounts: "SELECT network, balance_wei, reserved_wei FROM gas_tanks",
    insertPostOpCharge: `INSERT INTO token_charge_flags (sponsorship_id, network, sender, postop_charge, unpaid, updated_at)
      VALUES (?, ?, ?, ?, ?, ?)`,
    // The op's own sponsorship being replaced (bound second; '' when none) does not count.
    selectOtherPostOpCharge: `SELECT 1 AS one FROM token_charge_flags f JOIN sponsorships s ON s.id = f.sponsorship_id
      WHERE f.network = ? AND f.sender = ? AND f.postop_charge = ? AND s.status IN ('reserved', 'signed') AND s.id <> ? LIMIT 1`,
    upsertUnpaid: `INSERT INTO token_charge_flags (sponsorship_id, network, sender, postop_charge, unpaid, updated_at)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (sponsorship_id) DO UPDATE SET unpaid = excluded.unpaid, updated_at = excluded.updated_at`,
    selectUnpaid: "SELECT 1 AS one FROM token_charge_flags WHERE network = ? AND sender = ? AND unpaid = ? LIMIT 1",
    // Summed by the database (one row per mode), not row by row here: the deposit check reads it every block.
    selectOutstanding: `SELECT mode, ${d
      .amountParts("max_cost_wei")
      .map((part, i) => `CAST(SUM(${part}) AS TEXT) AS ${["low", "mid", "high"][i]}`)
      .join(", ")} FROM sponsorships WHERE network = ? AND entry_point = ? AND status IN ('reserved', 'signed') GROUP BY mode`,
    updateStrategyStatus: "UPDATE strategies SET status = ? WHERE id = ?",
    updateStrategyRules: "UPDATE strategies SET rules = ? WHERE id = ?",
    selectStrategy: `SELECT ${strategyColumns} FROM strategies WHERE id = ?`,
    selectStrategies: `SELECT ${strategyColumns} FROM strategies WHERE (CAST(? AS TEXT) IS NULL OR project_id = ?) ORDER BY code`,
    updateStrategy: `UPDATE strategies SET name = ?, status = ?, valid_from = ?, valid_until = ?, networks = ?, rules = ?
      WHERE id = ?`,

    selectUsage: `SELECT ${usageColumns} FROM strategy_usage WHERE strategy_id = ? AND scope = ? AND key = ?`,
    lockUsage: `SELECT ${usageColumns} FROM strategy_usage WHERE strategy_id = ? AND scope = ? AND key = ?${d.forUpdate}`,
    // Creates the row if missing, and locks it either way (ON CONFLICT DO UPDATE locks the existing row).
    upsertLockUsage: `INSERT INTO strategy_usage (strategy_id, scope, key, reserved_wei, spent_wei, reserved_usd_micros,
        spent_usd_micros, ops, updated_at)
      VALUES (?, ?, ?, '0', '0', '0', '0', 0, ?)
      ON CONFLICT (strategy_id, scope, key) DO UPDATE SET updated_at = strategy_usage.updated_at
      RETURNING ${usageColumns}`,
    updateUsage: `UPDATE strategy_usage SET reserved_wei = ?, spent_wei = ?, reserved_usd_micros = ?,
        spent_usd_micros = ?, ops = ?, updated_at = ?
      WHERE strategy_id = ? AND scope = ? AND key = ?`,
    selectLinks: `SELECT strategy_id AS "strategyId", scope, key FROM sponsorship_usage WHERE sponsorship_id = ?`,
    insertLink: "INSERT INTO sponsorship_usage (sponsorship_id, strategy_id, scope, key) VALUES (?, ?, ?, ?)",

    deleteTokenSymbolElsewhere: `DELETE FROM tokens WHERE network = ? AND ${d.symbolKey} = ? AND address <> ?`,
    upsertToken: `INSERT INTO tokens (network, address, symbol, decimals, price_source, markup_bps, enabled, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (network, address) DO UPDATE SET
        symbol = excluded.symbol, decimals = excluded.decimals, price_source = excluded.price_source,
        markup_bps = excluded.markup_bps, enabled = excluded.enabled, updated_at = excluded.updated_at`,
    selectTokens: `SELECT ${tokenColumns} FROM tokens WHERE network = ? ORDER BY ${d.symbolOrder}`,
    selectTokenByAddress: `SELECT ${tokenColumns} FROM tokens WHERE network = ? AND address = ?`,
    selectTokenBySymbol: `SELECT ${tokenColumns} FROM tokens WHERE network = ? AND ${d.symbolKey} = ?`,

    selectTank: "SELECT balance_wei, reserved_wei FROM gas_tanks WHERE network = ? AND sender = ?",
    lockTank: `SELECT balance_wei, reserved_wei FROM gas_tanks WHERE network = ? AND sender = ?${d.forUpdate}`,
    insertEmptyTank: `INSERT INTO gas_tanks (network, sender, balance_wei, reserved_wei, updated_at)
      VALUES (?, ?, '0', '0', ?) ON CONFLICT (network, sender) DO NOTHING`,
    updateTank: "UPDATE gas_tanks SET balance_wei = ?, reserved_wei = ?, updated_at = ? WHERE network = ? AND sender = ?",
    insertCredit: `INSERT INTO gas_tank_credits (reference, network, sender, amount_wei, created_at)
      VALUES (?, ?, ?, ?, ?) ON CONFLICT (reference) DO NOTHING`,
    selectCredit: "SELECT network, sender, amount_wei FROM gas_tank_credits WHERE reference = ?",
    deleteCredit: "DELETE FROM gas_tank_credits WHERE reference = ? RETURNING network, sender, amount_wei",

    insertDebit: `INSERT INTO gas_tank_debits (reference, network, sender, amount_wei, created_at)
      VALUES (?, ?, ?, ?, ?) ON CONFLICT (reference) DO NOTHING`,
    selectDebit: "SELECT network, sender, amount_wei FROM gas_tank_debits WHERE reference = ?",

    insertApplication: `INSERT INTO key_applications (id, created_at, contact, project_name, networks, intended_use, status)
      VALUES (?, ?, ?, ?, ?, ?, 'pending')`,
    selectApplication: `SELECT ${applicationColumns} FROM key_applications WHERE id = ?`,
    selectApplications: `SELECT ${applicationColumns} FROM key_applications WHERE (CAST(? AS TEXT) IS NULL OR status = ?)
      ORDER BY created_at, id LIMIT 1000`,
    countApplications: "SELECT COUNT(*) AS n FROM key_applications WHERE status = ?",
    approveApplication: `UPDATE key_applications SET status = 'approved', decided_at = ?, decided_by = ?, project_id = ?,
        claim_token_hash = ? WHERE id = ? AND status = 'pending'`,
    rejectApplication: `UPDATE key_applications SET status = 'rejected', decided_at = ?, decided_by = ?, reason = ?
      WHERE id = ? AND status = 'pending'`,
    claimApplication: `UPDATE key_applications SET status = 'claimed', claimed_at = ?
      WHERE claim_token_hash = ? AND status = 'approved' RETURNING id`,
    setApplicationKey: "UPDATE key_applications SET api_key_id = ? WHERE id = ?",

    insertAudit: `INSERT INTO audit_log (id, at, actor, action, target, before, after) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    selectAudit: `SELECT id, at, actor, action, target, ${d.json("before")}, ${d.json("after")} FROM audit_log
      WHERE (CAST(? AS TEXT) IS NULL OR action = ?) AND (CAST(? AS TEXT) IS NULL OR target = ?)
      ORDER BY at DESC, id DESC LIMIT ?`,
    // Filters bound twice each: NULL = no filter.
    selectSponsorships: `${sponsorship}
      WHERE (CAST(? AS TEXT) IS NULL OR project_id = ?) AND (CAST(? AS TEXT) IS NULL OR strategy_id = ?)
        AND (CAST(? AS TEXT) IS NULL OR network = ?) AND (CAST(? AS TEXT) IS NULL OR sender = ?)
        AND (CAST(? AS TEXT) IS NULL OR status = ?) AND (CAST(? AS TEXT) IS NULL OR user_op_hash = ?)
        AND created_at >= ? AND created_at < ?
      ORDER BY created_at DESC, ${d.insertionOrder} DESC LIMIT ?`,

    selectActiveOp: activeOp,
    selectActiveSponsorship: `${sponsorship}
      WHERE network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND status IN ('reserved', 'signed')`,
    lockActiveOp: `${activeOp}${d.forUpdate}`,
    releaseActive: `UPDATE sponsorships SET status = 'released', release_reason = ?, updated_at = ?
      WHERE id = ? AND status IN ('reserved', 'signed')`,
    insertSponsorship: `INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id,
        api_key_id, strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, max_cost_usd_micros, valid_until,
        valid_after, user_op_hash, paymaster_and_data, status, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    deleteLinks: "DELETE FROM sponsorship_usage WHERE sponsorship_id = ?",
    deleteChargeFlag: "DELETE FROM token_charge_flags WHERE sponsorship_id = ?",
    deleteSponsorship: "DELETE FROM sponsorships WHERE id = ?",
    confirmReserved: `UPDATE sponsorships SET status = 'signed', updated_at = ? WHERE id = ? AND status = 'reserved'
      RETURNING project_id`,
    settle: `UPDATE sponsorships SET status = 'settled', actual_gas_cost_wei = ?, actual_cost_usd_micros = ?,
        actual_token_cost = ?, settled_success = ?, settled_tx_hash = ?, settled_block_number = ?,
        settled_block_hash = ?, settled_log_index = ?, settled_at = ?, updated_at = ?
      WHERE id = ?`,
    unsettle: `UPDATE sponsorships SET status = ?, release_reason = ?, actual_gas_cost_wei = NULL,
        actual_cost_usd_micros = NULL, actual_token_cost = NULL, settled_success = NULL, settled_tx_hash = NULL,
        settled_block_number = NULL, settled_block_hash = NULL, settled_log_index = NULL, settled_at = NULL,
        updated_at = ?
      WHERE id = ?`,
    selectSettledSince: `${sponsorship}
      WHERE network = ? AND status = 'settled' AND settled_block_number >= ?
      ORDER BY settled_block_number, settled_log_index, ${d.insertionOrder}`,
    // Scans sponsorships_active_op: only open sponsorships are in it (see migration 1).
    selectExpired: `SELECT id FROM sponsorships WHERE status IN ('reserved', 'signed') AND valid_until < ?
      AND (CAST(? AS TEXT) IS NULL OR network = ?) ORDER BY valid_until LIMIT ?`,
    selectSponsorshipStatus: "SELECT status FROM sponsorships WHERE id = ?",
    selectSponsorshipPlan: "SELECT network, sender, mode FROM sponsorships WHERE id = ?",
    selectSponsorship: `${sponsorship} WHERE id = ?`,
    lockSponsorship: `${sponsorship} WHERE id = ?${d.forUpdate}`,
    selectSponsorshipByHash: `${sponsorship} WHERE user_op_hash = ?
      ORDER BY CASE status WHEN 'released' THEN 1 ELSE 0 END, created_at DESC, ${d.insertionOrder} DESC LIMIT 1`,

    selectCursor: "SELECT value FROM cursors WHERE name = ?",
    upsertCursor: `INSERT INTO cursors (name, value, updated_at) VALUES (?, ?, ?)
      ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  };
}

export type StoreQueries = ReturnType<typeof queries>;

export class SqlStore implements Store {
  readonly #db: Db;
  readonly #q: StoreQueries;

  constructor(db: Db) {
    this.#db = db;
    this.#q = queries(db.dialect);
  }

  #isUnique(err: unknown, constraint?: string): boolean {
    const v = this.#db.violation(err);
    return v?.kind === "unique" && (constraint === undefined || v.constraint === constraint);
  }

  #isForeignKey(err: unknown): boolean {
    return this.#db.violation(err)?.kind === "foreignKey";
  }

  /** A lost race for the op's one active sponsorship (partial unique index): the next attempt sees the winner. */
  #isActiveOpRace = (err: unknown): boolean => err instanceof LockOrderRetry || this.#isUnique(err, "sponsorships_active_op");

  // ---- projects and API keys

  async createProject(name: string): Promise<Project> {
    const project: Project = { id: randomUUID(), name: common.projectName(name), status: "active", createdAt: common.nowSeconds() };
    await this.#db.run(this.#q.insertProject, [project.id, project.name, project.createdAt]);
    return project;
  }

  async getProject(id: string): Promise<Project | undefined> {
    const row = await this.#db.one<common.ProjectRow>(this.#q.selectProject, [id]);
    return row && common.toProject(row);
  }

  async createApiKey(projectId: string, label?: string): Promise<{ apiKey: ApiKey; plaintext: string }> {
    const { apiKey, plaintext, keyHash } = common.newApiKey(projectId, label);
    try {
      await this.#db.run(this.#q.insertApiKey, [
        apiKey.id,
        projectId,
        keyHash,
        apiKey.prefix,
        apiKey.label,
        apiKey.status,
        apiKey.createdAt,
      ]);
    } catch (err) {
      if (this.#isForeignKey(err)) throw new StoreError("NOT_FOUND", `project ${projectId} not found`);
      throw err;
    }
    return { apiKey, plaintext };
  }

  async findApiKey(plaintext: string): Promise<ApiKey | undefined> {
    const hash = common.apiKeyLookupHash(plaintext);
    const row = hash === undefined ? undefined : await this.#db.one<common.ApiKeyRow>(this.#q.selectApiKeyByHash, [hash]);
    return row && common.toApiKey(row);
  }

  async revokeApiKey(id: string): Promise<void> {
    const changed = await this.#db.run(this.#q.revokeApiKey, [common.nowSeconds(), id]);
    if (changed === 0 && (await this.#db.one(this.#q.selectApiKeyExists, [id])) === undefined) {
      throw new StoreError("NOT_FOUND", `API key ${id} not found`);
    }
  }

  async listProjects(): Promise<Project[]> {
    return (await this.#db.all<common.ProjectRow>(this.#q.selectProjects)).map(common.toProject);
  }

  async setProjectStatus(id: string, status: ProjectStatus): Promise<void> {
    const changed = await this.#db.run(this.#q.updateProjectStatus, [common.projectStatus(status), id]);
    if (changed === 0) throw new StoreError("NOT_FOUND", `project ${id} not found`);
  }

  async listApiKeys(projectId?: string): Promise<ApiKey[]> {
    const project = projectId ?? null;
    return (await this.#db.all<common.ApiKeyRow>(this.#q.selectApiKeys, [project, project])).map(common.toApiKey);
  }

  async getApiKey(id: string): Promise<ApiKey | undefined> {
    const row = await this.#db.one<common.ApiKeyRow>(this.#q.selectApiKey, [id]);
    return row && common.toApiKey(row);
  }

  async setApiKeyAccess(id: string, access: ApiKeyAccess): Promise<void> {
    const json = (list: string[] | null) => (list === null ? null : JSON.stringify(list));
    const changed = await this.#db.run(this.#q.updateApiKeyAccess, [json(access.allowedOrigins), json(access.allowedIps), id]);
    if (changed === 0) throw new StoreError("NOT_FOUND", `API key ${id} not found`);
  }

  async findApiKeyWithProject(plaintext: string): Promise<{ apiKey: ApiKey; projectStatus: ProjectStatus } | undefined> {
    const hash = common.apiKeyLookupHash(plaintext);
    if (hash === undefined) return undefined;
    const row = await this.#db.one<common.ApiKeyRow & { project_status: ProjectStatus }>(this.#q.selectApiKeyByHash, [hash]);
    return row && { apiKey: common.toApiKey(row), projectStatus: row.project_status };
  }

  async configVersion(): Promise<number> {
    const row = await this.#db.one<{ version: number | string }>(this.#q.selectConfigVersion);
    return Number(row?.version ?? 0);
  }

  // ---- strategies

  async getStrategy(id: string): Promise<Strategy | undefined> {
    const row = await this.#db.one<common.StrategyRow>(this.#q.selectStrategy, [id]);
    return row && common.toStrategy(row);
  }

  async listStrategies(projectId?: string): Promise<Strategy[]> {
    const project = projectId ?? null;
    return (await this.#db.all<common.StrategyRow>(this.#q.selectStrategies, [project, project])).map(common.toStrategy);
  }

  async updateStrategy(id: string, patch: StrategyPatch): Promise<Strategy> {
    const current = await this.getStrategy(id);
    if (!current) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
    const { strategy, networksJson, rulesJson } = common.patchedStrategy(current, patch);
    const { name, status, validFrom, validUntil } = strategy;
    await this.#db.run(this.#q.updateStrategy, [name, status, validFrom, validUntil, networksJson, rulesJson, id]);
    return strategy;
  }

  async createStrategy(input: NewStrategy): Promise<Strategy> {
    const { strategy, networksJson, rulesJson } = common.newStrategy(input);
    try {
      await this.#db.run(this.#q.insertStrategy, [
        strategy.id,
        strategy.projectId,
        strategy.code,
        strategy.name,
        strategy.status,
        strategy.validFrom,
        strategy.validUntil,
        networksJson,
        rulesJson,
        strategy.createdAt,
      ]);
    } catch (err) {
      if (this.#isUnique(err)) throw new StoreError("DUPLICATE", `a strategy with code "${input.code}" already exists`);
      if (this.#isForeignKey(err)) throw new StoreError("NOT_FOUND", `project ${input.projectId} not found`);
      throw err;
    }
    return strategy;
  }

  async getStrategyByCode(code: string): Promise<Strategy | undefined> {
    const row = await this.#db.one<common.StrategyRow>(this.#q.selectStrategyByCode, [code]);
    return row && common.toStrategy(row);
  }

  async setStrategyStatus(id: string, status: StrategyStatus): Promise<void> {
    const changed = await this.#db.run(this.#q.updateStrategyStatus, [common.strategyStatus(status), id]);
    if (changed === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
  }

  async setStrategyRules(id: string, rules: StrategyRules): Promise<void> {
    const changed = await this.#db.run(this.#q.updateStrategyRules, [common.validRules(rules).json, id]);
    if (changed === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
  }

  async getUsage(strategyId: string, scope: CapCheck["scope"], key: string): Promise<UsageTotals> {
    const row = common.scopeKey(scope, key);
    return common.toUsage(await this.#db.one<common.UsageRow>(this.#q.selectUsage, [strategyId, row.scope, row.key]));
  }

  // ---- tokens

  /**
   * Inserts or updates the token at (network, address). A symbol names one token per network
   * (case-insensitively): upserting a different address under a symbol already used replaces that older row,
   * so re-seeding the registry from an edited configuration converges on the configuration. Two concurrent
   * upserts (PostgreSQL) may both miss the other's uncommitted row and collide on a unique index; the loser runs
   * again and then sees (and replaces) the winner's row.
   */
  async upsertToken(token: Token): Promise<void> {
    const { address: addr, priceSourceJson } = common.validToken(token);
    await this.#db.transaction(
      async (tx) => {
        await tx.run(this.#q.deleteTokenSymbolElsewhere, [token.network, asciiLower(token.symbol), addr]);
        await tx.run(this.#q.upsertToken, [
          token.network,
          addr,
          token.symbol,
          token.decimals,
          priceSourceJson,
          token.markupBps,
          token.enabled,
          common.nowSeconds(),
        ]);
      },
      (err) => this.#isUnique(err),
    );
  }

  async listTokens(network: string): Promise<Token[]> {
    return (await this.#db.all<common.TokenRow>(this.#q.selectTokens, [network])).map(common.toToken);
  }

  async findToken(network: string, symbolOrAddress: string): Promise<Token | undefined> {
    if (typeof symbolOrAddress !== "string" || symbolOrAddress === "") return undefined;
    const row = isAddress(symbolOrAddress, { strict: false })
      ? await this.#db.one<common.TokenRow>(this.#q.selectTokenByAddress, [network, getAddress(symbolOrAddress)])
      : await this.#db.one<common.TokenRow>(this.#q.selectTokenBySymbol, [network, asciiLower(symbolOrAddress)]);
    return row && common.toToken(row);
  }

  // ---- gas tanks

  /**
   * The credit (or debit) row is the idempotency key: inserted ON CONFLICT DO NOTHING, so of two concurrent
   * ones with one reference exactly one inserts (the other waits for it, then finds it); only the inserter
   * locks the tank and changes its balance.
   */
  async creditGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
    try {
      return await this.#adjustTank("credit", network, sender, amountWei, reference);
    } catch (err) {
      if (this.#db.violation(err)?.kind === "outOfRange") common.invalid("the tank's balance would not fit in the database");
      throw err;
    }
  }

  /** As a credit; the tank must have the amount available (balance - reserved): a debit never makes a debt. */
  async debitGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
    return this.#adjustTank("debit", network, sender, amountWei, reference);
  }

  async #adjustTank(kind: "credit" | "debit", network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
    const { sender: who } = common.validCredit(sender, amountWei, reference);
    const [insert, select] = kind === "credit" ? [this.#q.insertCredit, this.#q.selectCredit] : [this.#q.insertDebit, this.#q.selectDebit];
    return this.#db.transaction(async (tx): Promise<GasTank> => {
      const now = common.nowSeconds();
      if ((await tx.run(insert, [reference, network, who, amountWei, now])) === 0) {
        const prior = await tx.one<{ network: string; sender: string; amount_wei: string | bigint }>(select, [reference]);
        if (prior && (prior.network !== network || prior.sender !== who || BigInt(prior.amount_wei) !== amountWei)) {
          throw common.creditConflict(reference, prior);
        }
        return this.#tank(tx, network, who);
      }
      const tank = await this.#lockTank(tx, network, who);
      if (kind === "debit" && tank.balanceWei - tank.reservedWei < amountWei) {
        const available = tank.balanceWei - tank.reservedWei;
        throw new StoreError("INVALID_STATE", `the tank of ${who} on ${network} has ${available < 0n ? 0n : available} wei available, less than ${amountWei}`);
      }
      const balanceWei = kind === "credit" ? tank.balanceWei + amountWei : tank.balanceWei - amountWei;
      await tx.run(this.#q.updateTank, [balanceWei, tank.reservedWei, now, network, who]);
      return { network, sender: who, balanceWei, reservedWei: tank.reservedWei };
    });
  }

  /**
   * The credit row is deleted first (of two concurrent reverts one finds it), then the tank is locked and its
   * balance reduced — possibly below zero, when the credit was spent already. The reference is free again.
   */
  async revertGasTankCredit(reference: string): Promise<boolean> {
    if (typeof reference !== "string" || reference === "") return false;
    return this.#db.transaction(async (tx) => {
      const credit = await tx.one<{ network: string; sender: Address; amount_wei: string | bigint }>(this.#q.deleteCredit, [
        reference,
      ]);
      if (!credit) return false;
      const tank = await this.#lockTank(tx, credit.network, credit.sender);
      const balanceWei = tank.balanceWei - BigInt(credit.amount_wei);
      await tx.run(this.#q.updateTank, [balanceWei, tank.reservedWei, common.nowSeconds(), credit.network, credit.sender]);
      return true;
    });
  }

  async getGasTank(network: string, sender: Address): Promise<GasTank> {
    return this.#tank(this.#db, network, common.address(sender, "sender"));
  }

  async #tank(on: Queryer, network: string, sender: Address): Promise<GasTank> {
    return { network, sender, ...common.toTank(await on.one<common.TankRow>(this.#q.selectTank, [network, sender])) };
  }

  /** Locks the tank row (lock order 1), creating an empty one first if there is none. */
  async #lockTank(tx: Tx, network: string, sender: string): Promise<{ balanceWei: bigint; reservedWei: bigint }> {
    let row = await tx.one<common.TankRow>(this.#q.lockTank, [network, sender]);
    if (!row) {
      await tx.run(this.#q.insertEmptyTank, [network, sender, common.nowSeconds()]);
      row = await tx.one<common.TankRow>(this.#q.lockTank, [network, sender]);
    }
    return common.toTank(row);
  }

  /** Locks usage rows (lock order 2) in common.lockOrder, creating missing ones when `create`; their totals by usageId. */
  async #lockUsage(tx: Tx, keys: readonly common.UsageKey[], create: boolean): Promise<Map<string, UsageTotals>> {
    const totals = new Map<string, UsageTotals>();
    const now = common.nowSeconds();
    for (const k of common.lockOrder(keys)) {
      const row = create
        ? await tx.one<common.UsageRow>(this.#q.upsertLockUsage, [k.strategyId, k.scope, k.key, now])
        : await tx.one<common.UsageRow>(this.#q.lockUsage, [k.strategyId, k.scope, k.key]);
      totals.set(common.usageId(k), common.toUsage(row));
    }
    return totals;
  }

  async #writeUsage(tx: Tx, writes: readonly { key: common.UsageKey; totals: UsageTotals }[], now: number): Promise<void> {
    for (const { key: k, totals: u } of writes) {
      await tx.run(this.#q.updateUsage, [
        u.reservedWei,
        u.spentWei,
        u.reservedUsdMicros,
        u.spentUsdMicros,
        u.ops,
        now,
        k.strategyId,
        k.scope,
        k.key,
      ]);
    }
  }

  /** The usage rows a sponsorship counts in: written with it, never changed, so safe to read before locking. */
  async #links(on: Queryer, id: string): Promise<common.UsageKey[]> {
    return on.all<common.UsageKey>(this.#q.selectLinks, [id]);
  }

  // ---- sponsorships

  /**
   * One transaction with row locks in the lock order (see the module comment):
   *
   * - First an unlocked look at the op's active sponsorship (network, entryPoint, sender, nonce) — the one this
   *   reservation replaces — for what replacing it involves: its tank when it is user-mode, its usage rows.
   * - 1. The tank: User Sponsor mode locks the sender's tank (a missing tank is inserted ON CONFLICT DO NOTHING
   *   and then locked, unless nothing could fit in it anyway); other modes lock it only when the active
   *   sponsorship is user-mode (its reservation is given back). Every transaction that changes a tank holds this
   *   lock, so the balance and reserved amount read under it stay true until COMMIT: reservations against one
   *   tank queue here, across connections and processes, and never over-reserve.
   * - 2. The usage rows of the caps and of the active sponsorship, in common.lockOrder (missing ones created):
   *   likewise every reservation, release, settlement against one cap row queues on it, so a cap is never exceeded.
   * - 3. The active sponsorship, locked, so a concurrent release or replacement of it waits for this transaction
   *   (or this one for it: under READ COMMITTED a row that stopped being active while we waited is simply not
   *   returned). Should the locked one not be the one looked at (replaced in between) and need a tank or usage
   *   row not locked yet, the attempt is abandoned and run again (LockOrderRetry). Two first reservations of one
   *   op can both find none; the partial unique index lets only one insert, and the other retries and replaces it.
   *
   * - 4. An ERC-20 op charged in postOp: the key lock of (network, sender)'s token charges (PostgreSQL: an
   *   advisory lock; SQLite's write lock already serialises), then a look for another outstanding postOp-charge
   *   sponsorship of the sender. Of two such reservations at once the second looks after the first committed.
   *
   * Then common.planTank, common.planCaps and the postOp-charge look decide; a refusal ends in ROLLBACK: nothing
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
    const q = this.#q;

    try {
      return await this.#db.transaction(async (tx): Promise<ReserveResult> => {
        const peek = await tx.one<ActiveRow>(q.selectActiveOp, opKey);
        const peekLinks = peek ? await this.#links(tx, peek.id) : [];

        let tank: { balanceWei: bigint; reservedWei: bigint } | undefined;
        if (record.mode === "user") {
          const row = await tx.one<common.TankRow>(q.lockTank, [network, sender]);
          if (!row && record.maxCostWei > 0n) {
            // No tank: nothing fits (a tank-less sender has no user-mode reservation to give back either).
            tx.rollbackOnly();
            return { ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 0n, requiredWei: record.maxCostWei };
          }
          tank = row ? common.toTank(row) : await this.#lockTank(tx, network, sender);
        } else if (peek?.mode === "user") {
          tank = await this.#lockTank(tx, network, sender);
        }
        const totals = await this.#lockUsage(tx, [...capKeys, ...peekLinks], true);
        // SQLite: BEGIN IMMEDIATE holds the one write lock, so the locking read is the peek again (same SQL).
        const previous = q.lockActiveOp === q.selectActiveOp ? peek : await tx.one<ActiveRow>(q.lockActiveOp, opKey);
        const previousLinks = !previous ? [] : previous.id === peek?.id ? peekLinks : await this.#links(tx, previous.id);
        if (previous?.mode === "user" && !tank) throw new LockOrderRetry();
        if (previousLinks.some((k) => !totals.has(common.usageId(k)))) throw new LockOrderRetry();

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
          if ((await this.#capReached(tx, record, checks, capPlan)) === 0) tx.rollbackOnly();
          return capPlan;
        }
        if (postOpCharge) {
          if (this.#db.dialect.keyLock !== undefined) await tx.one(this.#db.dialect.keyLock, [`token-charge:${network}:${sender}`]);
          if ((await tx.one(q.selectOtherPostOpCharge, [network, sender, true, previous?.id ?? ""])) !== undefined) {
            tx.rollbackOnly();
            return { ok: false, reason: "POSTOP_CHARGE_PENDING" };
          }
        }

        const now = record.createdAt;
        if (previous) {
          await tx.run(q.releaseActive, ["replaced", now, previous.id]);
          if (previous.status === "signed") await this.#sponsorshipEvent(tx, previous.id, "sponsorship.released", (r) => releasedData(r, "replaced"));
        }
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
        ]);
        if (postOpCharge) await tx.run(q.insertPostOpCharge, [record.id, network, sender, true, false, now]);
        await this.#writeUsage(tx, capPlan.writes, now);
        for (const k of capPlan.links) await tx.run(q.insertLink, [record.id, k.strategyId, k.scope, k.key]);
        // The row is signed as it is inserted: its sponsorship.signed outbox rows commit with it (a pending one's
        // with confirmSponsorship).
        if (record.status === "signed") await this.#sponsorshipEvent(tx, record.id, "sponsorship.signed", sponsorshipData, record.projectId);
        return { ok: true, record, replaced: previous?.id ?? null };
      }, this.#isActiveOpRace);
    } catch (err) {
      if (this.#isForeignKey(err)) {
        throw new StoreError("NOT_FOUND", "sponsorship refers to an unknown project, API key or strategy");
      }
      // Every retry found the op's active sponsorship replaced again by a concurrent reservation of the same op.
      if (this.#isActiveOpRace(err)) throw new StoreError("CONFLICT", "concurrent reservations of the same op kept replacing each other");
      throw err;
    }
  }

  /**
   * Changes one sponsorship's status in one transaction, in the lock order: its tank (User Sponsor mode), its
   * usage rows, then its own row (locked). `decide` sees the locked row and answers the change — the delta for
   * the usage rows and tank, and the statement for the row — or null to change nothing (answered false).
   */
  async #transition(id: string, decide: (row: common.SponsorshipRow, tx: Tx, now: number) => Promise<Change | null>): Promise<boolean> {
    const plan = await this.#db.one<{ network: string; sender: string; mode: string }>(this.#q.selectSponsorshipPlan, [id]);
    if (!plan) return false;
    const links = await this.#links(this.#db, id);
    return this.#db.transaction(async (tx) => {
      const tank = plan.mode === "user" ? await this.#lockTank(tx, plan.network, plan.sender) : undefined;
      const usage = await this.#lockUsage(tx, links, false);
      const row = await tx.one<common.SponsorshipRow>(this.#q.lockSponsorship, [id]);
      const now = common.nowSeconds();
      const change = row && (await decide(row, tx, now));
      if (!change) return false;
      await tx.run(change.sql, change.values);
      await this.#writeUsage(
        tx,
        links.map((k) => ({ key: k, totals: common.applyUsage(usage.get(common.usageId(k))!, change.delta) })),
        now,
      );
      if (tank) {
        const t = common.applyTank(tank, change.delta);
        await tx.run(this.#q.updateTank, [t.balanceWei, t.reservedWei, now, plan.network, plan.sender]);
      }
      if (change.event) await this.#sponsorshipEvent(tx, id, change.event.type, change.event.data);
      return true;
    }, this.#isActiveOpRace);
  }

  #release(id: string, reason: common.ReleaseReason): Promise<boolean> {
    return this.#transition(id, async (row, _tx, now) =>
      row.status === "reserved" || row.status === "signed"
        ? {
            delta: common.releaseDelta(common.rowCost(row)),
            sql: this.#q.releaseActive,
            values: [reason, now, id],
            // Only a signature handed out is news to the project: an unsigned reservation leaves quietly.
            ...(row.status === "signed" ? { event: { type: "sponsorship.released" as const, data: (r: SponsorshipRecord) => releasedData(r, reason) } } : {}),
          }
        : null,
    );
  }

  async confirmSponsorship(id: string): Promise<boolean> {
    // Only the row changes (what it holds stays): no usage or tank row to lock.
    return this.#db.transaction(async (tx) => {
      const row = await tx.one<{ project_id: string }>(this.#q.confirmReserved, [common.nowSeconds(), id]);
      if (!row) return false;
      await this.#sponsorshipEvent(tx, id, "sponsorship.signed", sponsorshipData, row.project_id);
      return true;
    });
  }

  async withdrawSponsorship(id: string): Promise<boolean> {
    // Under the lock order of every transition (tank, usage rows, the row): the rows it was counted in give back
    // exactly what it held, then it goes with its links and charge flag. A pending row has no webhook event.
    return this.#transition(id, async (row, tx) => {
      if (row.status !== "reserved") return null;
      await tx.run(this.#q.deleteLinks, [id]);
      await tx.run(this.#q.deleteChargeFlag, [id]);
      return { delta: common.releaseDelta(common.rowCost(row)), sql: this.#q.deleteSponsorship, values: [id] };
    });
  }

  /** Idempotent: releasing a released, settled or unknown sponsorship changes nothing. */
  async releaseSponsorship(id: string): Promise<void> {
    await this.#release(id, "released");
  }

  /** See common.settleDelta for which sponsorships settle. */
  async settleSponsorship(id: string, settlement: Settlement): Promise<boolean> {
    const valid = common.validSettlement(settlement);
    const actual = { wei: valid.actualGasCostWei, usdMicros: valid.actualCostUsdMicros };
    return this.#transition(id, async (row, _tx, now) => {
      const delta = common.settleDelta(row, actual);
      return delta && {
        delta,
        sql: this.#q.settle,
        values: [...common.settlementColumns(valid), now, now, id],
        event: { type: "sponsorship.settled", data: settledData },
      };
    });
  }

  /**
   * See common.unsettleTransition. The op's active sponsorship, if any, is locked after this one's row (the
   * lock order's last step); should one be inserted concurrently (PostgreSQL), the unique index refuses one of
   * the two transactions and it runs again.
   */
  async unsettleSponsorship(id: string): Promise<boolean> {
    return this.#transition(id, async (row, tx, now) => {
      if (row.status !== "settled") return null;
      const active = await tx.one(this.#q.lockActiveOp, [row.network, row.entry_point, row.sender, BigInt(row.nonce)]);
      const change = common.unsettleTransition(row, active !== undefined);
      return change && { delta: change.delta, sql: this.#q.unsettle, values: [change.status, change.releaseReason, now, id] };
    });
  }

  async listSettledSince(network: string, fromBlock: bigint): Promise<SponsorshipRecord[]> {
    const from = common.amount(fromBlock, "fromBlock");
    if (from > BigInt(Number.MAX_SAFE_INTEGER)) return [];
    const rows = await this.#db.all<common.SponsorshipRow>(this.#q.selectSettledSince, [network, Number(from)]);
    return rows.map(common.toSponsorship);
  }

  /**
   * Releases (reason "expired") every reserved or signed sponsorship with validUntil + graceSeconds < now, each in
   * its own transaction under the lock order (as releaseSponsorship); one settled or replaced meanwhile is left
   * alone, so this may run while other replicas reserve and settle.
   */
  async releaseExpired(now: number, graceSeconds: number, network?: string): Promise<number> {
    const cutoff = common.validExpiry(now, graceSeconds);
    const only = network ?? null;
    let released = 0;
    for (;;) {
      const rows = await this.#db.all<{ id: string }>(this.#q.selectExpired, [cutoff, only, only, EXPIRY_BATCH]);
      let batch = 0;
      for (const { id } of rows) if (await this.#release(id, "expired")) batch++;
      released += batch;
      // A full batch of which none could be released (all changed meanwhile) would be found again: stop.
      if (rows.length < EXPIRY_BATCH || batch === 0) return released;
    }
  }

  async getCursor(name: string): Promise<bigint | undefined> {
    const row = await this.#db.one<{ value: string | bigint }>(this.#q.selectCursor, [common.cursorName(name)]);
    return row && BigInt(row.value);
  }

  async setCursor(name: string, value: bigint): Promise<void> {
    await this.#db.run(this.#q.upsertCursor, [common.cursorName(name), common.amount(value, "cursor value"), common.nowSeconds()]);
  }

  async getSponsorship(id: string): Promise<SponsorshipRecord | undefined> {
    const row = await this.#db.one<common.SponsorshipRow>(this.#q.selectSponsorship, [id]);
    return row && common.toSponsorship(row);
  }

  /**
   * The sponsorship signed with that userOpHash. Should two share it (the same op re-signed within the same
   * second yields identical paymasterAndData), the active or settled one wins over a released one, then the newest.
   */
  async findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined> {
    const hash = common.hashKey(userOpHash);
    if (hash === undefined) return undefined;
    const row = await this.#db.one<common.SponsorshipRow>(this.#q.selectSponsorshipByHash, [hash]);
    return row && common.toSponsorship(row);
  }

  // ---- ERC-20 token charges at risk

  async setTokenChargeUnpaid(id: string, unpaid: boolean): Promise<void> {
    const row = await this.#db.one<common.SponsorshipRow>(this.#q.selectSponsorship, [id]);
    if (!row) return;
    await this.#db.run(this.#q.upsertUnpaid, [id, row.network, row.sender, false, unpaid, common.nowSeconds()]);
  }

  async hasUnpaidTokenCharge(network: string, sender: Address): Promise<boolean> {
    return (await this.#db.one(this.#q.selectUnpaid, [network, common.address(sender, "sender"), true])) !== undefined;
  }

  // ---- operations (metrics, deposit check, leader election)

  async sponsorshipCounts(): Promise<SponsorshipCount[]> {
    const rows = await this.#db.all<Omit<SponsorshipCount, "count"> & { count: number | string }>(this.#q.countSponsorships);
    return rows.map((row) => ({ ...row, count: Number(row.count) }));
  }

  async gasTankTotals(): Promise<GasTankTotals[]> {
    const totals = new Map<string, GasTankTotals>();
    for (const row of await this.#db.all<{ network: string; balance_wei: string | bigint; reserved_wei: string | bigint }>(this.#q.selectTankAmounts)) {
      const t = totals.get(row.network) ?? { network: row.network, balanceWei: 0n, reservedWei: 0n, tanks: 0 };
      t.balanceWei += BigInt(row.balance_wei);
      t.reservedWei += BigInt(row.reserved_wei);
      t.tanks++;
      totals.set(row.network, t);
    }
    return [...totals.values()];
  }

  async outstandingMaxCost(network: string, entryPoint: Address, modes: readonly SponsorMode[]): Promise<bigint> {
    const wanted = new Set<string>(modes);
    let total = 0n;
    for (const row of await this.#db.all<{ mode: string; low: string; mid: string; high: string }>(this.#q.selectOutstanding, [network, common.address(entryPoint, "entryPoint")])) {
      if (wanted.has(row.mode)) total += BigInt(row.high) * 10n ** 18n + BigInt(row.mid) * 10n ** 9n + BigInt(row.low);
    }
    return total;
  }

  tryLeadership(name: string): Promise<Leadership | undefined> {
    return this.#db.tryLeadership(name);
  }

  async listSponsorships(filter: SponsorshipFilter): Promise<SponsorshipRecord[]> {
    const f = common.validSponsorshipFilter(filter);
    const twice = (v: string | null): Param[] => [v, v];
    const rows = await this.#db.all<common.SponsorshipRow>(this.#q.selectSponsorships, [
      ...twice(f.projectId),
      ...twice(f.strategyId),
      ...twice(f.network),
      ...twice(f.sender),
      ...twice(f.status),
      ...twice(f.userOpHash),
      f.since,
      f.until,
      f.limit,
    ]);
    return rows.map(common.toSponsorship);
  }

  async findActiveSponsorship(op: { network: string; entryPoint: Address; sender: Address; nonce: bigint }) {
    const key: Param[] = [op.network, common.address(op.entryPoint, "entryPoint"), common.address(op.sender, "sender"), common.amount(op.nonce, "nonce")];
    const row = await this.#db.one<common.SponsorshipRow>(this.#q.selectActiveSponsorship, key);
    return row && { record: common.toSponsorship(row), links: await this.#links(this.#db, row.id) };
  }

  // ---- API key applications

  async createKeyApplication(input: NewKeyApplication): Promise<KeyApplication> {
    const id = randomUUID();
    const now = common.nowSeconds();
    await this.#db.run(this.#q.insertApplication, [id, now, input.contact, input.projectName, JSON.stringify(input.networks), input.intendedUse]);
    return (await this.getKeyApplication(id))!;
  }

  async getKeyApplication(id: string): Promise<KeyApplication | undefined> {
    const row = await this.#db.one<common.KeyApplicationRow>(this.#q.selectApplication, [id]);
    return row && common.toKeyApplication(row);
  }

  async listKeyApplications(status?: KeyApplicationStatus): Promise<KeyApplication[]> {
    const s = status ?? null;
    return (await this.#db.all<common.KeyApplicationRow>(this.#q.selectApplications, [s, s])).map(common.toKeyApplication);
  }

  async countKeyApplications(status: KeyApplicationStatus): Promise<number> {
    return Number((await this.#db.one<{ n: number | bigint }>(this.#q.countApplications, [status]))?.n ?? 0);
  }

  async expireKeyApplications(ttlSeconds: number): Promise<number> {
    const now = common.nowSeconds();
    return this.#db.run(EXPIRE_PENDING_APPLICATIONS, [now, expiryReason(ttlSeconds), now - ttlSeconds]);
  }

  async #decided(id: string, changed: number): Promise<KeyApplication> {
    const application = await this.getKeyApplication(id);
    if (!application) throw new StoreError("NOT_FOUND", `application ${id} not found`);
    if (changed === 0) throw new StoreError("INVALID_STATE", `application ${id} is ${application.status}, not pending`);
    return application;
  }

  async approveKeyApplication(id: string, decision: { decidedBy: string; claimTokenHash: string }): Promise<KeyApplication> {
    const changed = await this.#db.transaction(async (tx) => {
      const row = await tx.one<common.KeyApplicationRow>(`${this.#q.selectApplication}${this.#db.dialect.forUpdate}`, [id]);
      if (!row || row.status !== "pending") return 0;
      const now = common.nowSeconds();
      const projectId = randomUUID();
      await tx.run(this.#q.insertProject, [projectId, common.projectName(row.project_name), now]);
      return tx.run(this.#q.approveApplication, [now, decision.decidedBy, projectId, decision.claimTokenHash, id]);
    });
    return this.#decided(id, changed);
  }

  async rejectKeyApplication(id: string, decision: { decidedBy: string; reason: string }): Promise<KeyApplication> {
    const changed = await this.#db.run(this.#q.rejectApplication, [common.nowSeconds(), decision.decidedBy, decision.reason, id]);
    return this.#decided(id, changed);
  }

  async claimKeyApplication(claimTokenHash: string) {
    const claimed = await this.#db.transaction(async (tx) => {
      const row = await tx.one<{ id: string }>(this.#q.claimApplication, [common.nowSeconds(), claimTokenHash]);
      if (!row) return undefined;
      const application = (await tx.one<common.KeyApplicationRow>(this.#q.selectApplication, [row.id]))!;
      const { apiKey, plaintext, keyHash } = common.newApiKey(application.project_id!, `application ${row.id}`);
      await tx.run(this.#q.insertApiKey, [apiKey.id, apiKey.projectId, keyHash, apiKey.prefix, apiKey.label, apiKey.status, apiKey.createdAt]);
      await tx.run(this.#q.setApplicationKey, [apiKey.id, row.id]);
      return { id: row.id, apiKey, plaintext };
    });
    if (!claimed) return undefined;
    return { application: (await this.getKeyApplication(claimed.id))!, apiKey: claimed.apiKey, plaintext: claimed.plaintext };
  }

  // ---- audit log

  async appendAudit(entry: Omit<AuditEntry, "id" | "at">): Promise<AuditEntry> {
    const row: AuditEntry = { id: randomUUID(), at: common.nowSeconds(), ...entry, target: entry.target ?? null };
    const json = (v: unknown) => (v === undefined || v === null ? null : common.toJsonText(v));
    await this.#db.run(this.#q.insertAudit, [row.id, row.at, row.actor, row.action, row.target, json(row.before), json(row.after)]);
    return row;
  }

  async listAudit(filter: { action?: string; target?: string; limit?: number } = {}): Promise<AuditEntry[]> {
    const action = filter.action ?? null;
    const target = filter.target ?? null;
    const limit = common.listLimit(filter.limit);
    const rows = await this.#db.all<{ id: string; at: number; actor: string; action: string; target: string | null; before: string | null; after: string | null }>(
      this.#q.selectAudit,
      [action, action, target, target, limit],
    );
    return rows.map((r) => ({ ...r, before: r.before === null ? null : JSON.parse(r.before), after: r.after === null ? null : JSON.parse(r.after) }));
  }

  // ---- webhooks

  /**
   * Writes a sponsorship's event for its project's subscribers, from the record as the transaction left it.
   * With the project known (`projectId`), the record is read only when some endpoint subscribes.
   */
  async #sponsorshipEvent(
    tx: Tx,
    id: string,
    type: WebhookEventType,
    data: (record: SponsorshipRecord) => Record<string, unknown>,
    projectId?: string,
  ): Promise<void> {
    const read = async (): Promise<SponsorshipRecord | undefined> => {
      const row = await tx.one<common.SponsorshipRow>(this.#q.selectSponsorship, [id]);
      return row && common.toSponsorship(row);
    };
    const known = projectId === undefined ? await read() : undefined;
    if (projectId === undefined && !known) return;
    const record = async (): Promise<Record<string, unknown>> => data((known ?? (await read()))!);
    await writeEvents(tx, { projectId: projectId ?? known!.projectId, type, data: record, sponsorshipId: id }, nowMs());
  }

  /** cap.reached for a refused reservation; returns how many outbox rows were written (0: already told, or none subscribed). */
  async #capReached(
    tx: Tx,
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

  async createWebhookEndpoint(input: NewWebhookEndpoint): Promise<WebhookEndpoint> {
    const valid = validEndpoint(input);
    const row: EndpointRow = {
      id: `whe_${randomUUID().replaceAll("-", "")}`,
      project_id: input.projectId,
      kind: input.kind,
      url: input.url,
      events: valid.events,
      timeout_ms: valid.timeoutMs,
      default_decision: valid.defaultDecision as EndpointRow["default_decision"],
      created_at: common.nowSeconds(),
    };
    try {
      await this.#db.run(W.insertEndpoint, [row.id, row.project_id, row.kind, row.url, row.events, input.secret, row.timeout_ms, row.default_decision, row.created_at]);
    } catch (err) {
      if (this.#isForeignKey(err)) throw new StoreError("NOT_FOUND", `project ${input.projectId} not found`);
      if (this.#isUnique(err)) throw new StoreError("DUPLICATE", `project ${input.projectId} already has an approval webhook: delete it first`);
      throw err;
    }
    return toEndpoint(row);
  }

  async listWebhookEndpoints(projectId: string): Promise<WebhookEndpoint[]> {
    return (await this.#db.all<EndpointRow>(W.selectEndpoints, [projectId])).map(toEndpoint);
  }

  async getApprovalEndpoint(projectId: string): Promise<(WebhookEndpoint & { secret: string }) | undefined> {
    const row = await this.#db.one<EndpointRow>(W.selectApproval, [projectId]);
    return row && { ...toEndpoint(row), secret: row.secret! };
  }

  async deleteWebhookEndpoint(id: string): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      await tx.run(W.deleteEndpointEvents, [id]);
      return (await tx.run(W.deleteEndpoint, [id])) === 1;
    });
  }

  async emitWebhookEvent(event: NewWebhookEvent): Promise<number> {
    return this.#db.transaction((tx) =>
      writeEvents(tx, { projectId: event.projectId, type: event.type, data: event.data, ...(event.dedupeKey === undefined ? {} : { dedupeKey: event.dedupeKey }) }, nowMs()),
    );
  }

  async claimWebhookDeliveries(owner: string, now: number, leaseMs: number, limit: number): Promise<ClaimedDelivery[]> {
    const due = await this.#db.all<{ id: string }>(W.selectDue, [now, now, limit]);
    const claimed: ClaimedDelivery[] = [];
    for (const { id } of due) {
      if ((await this.#db.run(W.claim, [owner, now + leaseMs, id, now])) !== 1) continue; // another worker has it
      const row = await this.#db.one<DeliveryRow & { url: string; secret: string }>(W.selectClaimed, [id, owner]);
      if (row) claimed.push({ ...toDelivery(row), url: row.url, secret: row.secret });
    }
    return claimed;
  }

  async completeWebhookDelivery(id: string, owner: string, outcome: DeliveryOutcome, now: number): Promise<boolean> {
    const values: Param[] = outcome.delivered
      ? ["delivered", now, null, now]
      : outcome.retryAtMs === undefined
        ? ["dead", now, outcome.error, null]
        : ["pending", outcome.retryAtMs, outcome.error, null];
    return (await this.#db.run(W.complete, [...values, id, owner])) === 1;
  }

  async listWebhookDeliveries(filter: { projectId?: string; status?: WebhookDeliveryStatus; limit?: number }): Promise<WebhookDelivery[]> {
    const project = filter.projectId ?? null;
    const status = filter.status ?? null;
    const limit = Math.min(Math.max(Math.trunc(filter.limit ?? 100), 1), 1000);
    return (await this.#db.all<DeliveryRow>(W.selectDeliveries, [project, project, status, status, limit])).map(toDelivery);
  }

  async getWebhookDelivery(id: string): Promise<WebhookDelivery | undefined> {
    const row = await this.#db.one<DeliveryRow>(W.selectDelivery, [id]);
    return row && toDelivery(row);
  }

  async pruneWebhookDeliveries(beforeMs: number): Promise<number> {
    return this.#db.run(W.prune, [beforeMs]);
  }

  async replayWebhookDelivery(id: string, now: number): Promise<boolean> {
    if ((await this.#db.run(W.replay, [now, id])) === 1) return true;
    const row = await this.getWebhookDelivery(id);
    if (!row) return false;
    throw new StoreError("INVALID_STATE", `webhook event ${id} is still pending: it is delivered by itself`);
  }

  // ---- the operator console's reads (consoleRows.ts)

  async addRequestCounts(rows: readonly RequestCount[]): Promise<void> {
    const valid = rows.filter((r) => r.count > 0);
    for (const r of valid) {
      if (!Number.isSafeInteger(r.minute) || r.minute % 60 !== 0 || !Number.isSafeInteger(r.count)) common.invalid("a request count needs a whole minute and an integer count");
    }
    if (valid.length === 0) return;
    await this.#db.transaction(async (tx) => {
      for (const r of valid) await tx.run(C.upsertRequestCount, [r.minute, r.network, r.method, r.outcome, r.count]);
    });
  }

  async requestCounts(filter: { since: number; until: number; bucketSeconds: number; network?: string }): Promise<RequestCountBucket[]> {
    const { since, until, bucketSeconds } = filter;
    if (!Number.isSafeInteger(bucketSeconds) || bucketSeconds < 60 || bucketSeconds % 60 !== 0) common.invalid("bucketSeconds must be a positive multiple of 60");
    const network = filter.network ?? null;
    const rows = await this.#db.all<RequestCountRow>(C.selectRequestCounts, [bucketSeconds, bucketSeconds, since, until, network, network]);
    return rows.map(toRequestCountBucket);
  }

  async pruneRequestCounts(beforeMinute: number): Promise<number> {
    return this.#db.run(C.pruneRequestCounts, [beforeMinute]);
  }

  async sponsorshipActivity(filter: ActivityFilter): Promise<{ buckets: SponsorshipActivity[]; truncated: boolean }> {
    if (!Number.isSafeInteger(filter.bucketSeconds) || filter.bucketSeconds < 1) common.invalid("bucketSeconds must be a positive integer");
    const twice = (v: string | undefined): Param[] => [v ?? null, v ?? null];
    const rows = await this.#db.all<ActivityRow>(C.selectActivity, [
      filter.since,
      filter.until,
      ...twice(filter.network),
      ...twice(filter.projectId),
      ...twice(filter.strategyId),
      ACTIVITY_ROW_LIMIT + 1,
    ]);
    const truncated = rows.length > ACTIVITY_ROW_LIMIT;
    return { buckets: aggregateActivity(truncated ? rows.slice(0, ACTIVITY_ROW_LIMIT) : rows, filter.bucketSeconds), truncated };
  }

  async listGasTanks(filter: { network?: string; limit?: number }): Promise<GasTankListing[]> {
    const network = filter.network ?? null;
    const rows = await this.#db.all<common.TankRow & { network: string; sender: Address; updated_at: number | string }>(C.selectTanks, [
      network,
      network,
      common.listLimit(filter.limit),
    ]);
    return rows.map((r) => ({ network: r.network, sender: r.sender, ...common.toTank(r), updatedAt: Number(r.updated_at) }));
  }

  async gasTankLedger(network: string, sender: Address, limit?: number): Promise<TankLedgerEntry[]> {
    const who = common.address(sender, "sender");
    const n = common.listLimit(limit);
    const [credits, debits, spends] = await Promise.all([
      this.#db.all<LedgerRow>(C.selectCredits, [network, who, n]),
      this.#db.all<LedgerRow>(C.selectDebits, [network, who, n]),
      this.#db.all<SpendRow>(C.selectSpends, [network, who, n]),
    ]);
    return mergeLedger(credits, debits, spends);
  }

  async sponsorshipTimeline(id: string): Promise<SponsorshipTimeline | undefined> {
    const row = await this.#db.one<TimelineRow>(C.selectTimeline, [id]);
    return row && toTimeline(row);
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}
