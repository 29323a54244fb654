/**
 * The embedded store: one SQLite file.
 *
 * Driver: Node's built-in `node:sqlite` (`DatabaseSync`, a real SQLite compiled into Node). Chosen over
 * better-sqlite3 because better-sqlite3 is a native addon that must be built against the running Node's headers,
 * which this project's machines do not have for Node 22; `node:sqlite` needs no build step and no dependency.
 * It is synchronous like better-sqlite3: each call blocks the event loop for its (microsecond) duration, and a
 * transaction is a plain synchronous block, so no other request of this process can interleave with it.
 *
 * Several processes may share the file (e.g. two service replicas on one host, or the admin CLI next to the
 * service): every read-modify-write runs in `BEGIN IMMEDIATE … COMMIT`, which takes SQLite's write lock up
 * front, and `busy_timeout` makes a second writer wait for it instead of failing (the wait blocks that process's
 * event loop, which is acceptable because every write transaction here lasts well under a millisecond).
 *
 * Pragmas: WAL (readers never block the writer), synchronous=NORMAL (durable across process crashes; a power
 * loss may lose the last transactions but never corrupts), busy_timeout 5 s, foreign_keys ON, and a larger
 * WAL auto-checkpoint (see WAL_AUTOCHECKPOINT_PAGES).
 *
 * Amounts are TEXT decimals converted at this boundary (see migrations.ts). Statements are prepared once per
 * store instance: `findApiKey` and `reserveSponsorship` run on every sponsorship request.
 *
 * Validation, row conversion and the accounting (what each transition does to usage rows and tanks, the cap
 * checks) are common.ts, shared with postgres.ts. Here every read-modify-write is one BEGIN IMMEDIATE
 * transaction, so it needs no row locks: SQLite's single writer lock orders them, across processes too.
 */
import { randomUUID } from "node:crypto";
import { closeSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { getAddress, isAddress } from "viem";
import type { Address, Hex } from "@paymaster/shared";

import type { CapCheck, StrategyRules } from "../policy/types.ts";
import * as common from "./common.ts";
import { StoreError } from "./errors.ts";
import { SQLITE_MIGRATIONS, type Migration } from "./migrations.ts";
import type {
  ApiKey,
  GasTank,
  GasTankTotals,
  Leadership,
  SponsorMode,
  SponsorshipCount,
  NewSponsorship,
  NewStrategy,
  Project,
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

const BUSY_TIMEOUT_MS = 5000;
/**
 * Checkpoint the WAL every 10000 pages (~40 MB) instead of SQLite's 1000: a checkpoint copies pages back and
 * fsyncs, and at the default it ran every ~200 reservations and cost a good part of reserveSponsorship's time
 * (measured on a 2-core VM: user-mode reserve ~85 µs -> ~55-70 µs). The price is a WAL file of up to ~40 MB.
 */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;
/** releaseExpired releases at most this many sponsorships per write transaction (others may write in between). */
const EXPIRY_BATCH = 500;

// SQLite extended result codes (https://sqlite.org/rescode.html).
const SQLITE_CONSTRAINT_FOREIGNKEY = 787;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

/** The op's active sponsorship, as reserve reads it. */
interface ActiveRow {
  id: string;
  mode: SponsorshipRecord["mode"];
  max_cost_wei: string;
  max_cost_usd_micros: string;
}

function sqliteErrcode(err: unknown): number | undefined {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  return typeof code === "number" ? code : undefined;
}

function isUniqueViolation(err: unknown): boolean {
  const code = sqliteErrcode(err);
  return code === SQLITE_CONSTRAINT_UNIQUE || code === SQLITE_CONSTRAINT_PRIMARYKEY;
}

function isForeignKeyViolation(err: unknown): boolean {
  return sqliteErrcode(err) === SQLITE_CONSTRAINT_FOREIGNKEY;
}

/** Creates the file's directory (and the file, owner-only) when missing, so a default path just works. */
function prepareFile(file: string): void {
  if (file === ":memory:" || file.startsWith("file:")) return;
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  try {
    // O_CREAT|O_EXCL: create owner-only (0600) when absent; SQLite's -wal/-shm files copy the main file's mode.
    closeSync(openSync(file, "wx", 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
}

/** Applies the migrations the file has not seen yet, all in one write transaction (safe against a concurrent opener). */
function migrate(db: DatabaseSync, migrations: readonly Migration[]): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  INTEGER NOT NULL
  ) STRICT`);
  db.exec("BEGIN IMMEDIATE");
  try {
    const row = db.prepare("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations").get() as { v: number };
    const known = migrations.at(-1)?.version ?? 0;
    if (row.v > known) {
      throw new StoreError(
        "SCHEMA_TOO_NEW",
        `database schema version ${row.v} is newer than this service knows (${known}); upgrade the service`,
      );
    }
    const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    for (const m of migrations) {
      if (m.version <= row.v) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, common.nowSeconds());
    }
    db.exec("COMMIT");
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

/**
 * Opens (creating and migrating as needed) the SQLite store at `file`; ":memory:" keeps everything in memory.
 */
export function openSqliteStore(file: string): Store {
  prepareFile(file);
  const db = new DatabaseSync(file, { timeout: BUSY_TIMEOUT_MS, enableForeignKeyConstraints: true });
  try {
    db.exec(`PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS};
             PRAGMA foreign_keys = ON;
             PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES};`);
    migrate(db, SQLITE_MIGRATIONS);
    return new SqliteStore(db);
  } catch (err) {
    db.close();
    throw err;
  }
}

class SqliteStore implements Store {
  readonly #db: DatabaseSync;
  readonly #s: ReturnType<typeof prepareStatements>;
  #closed = false;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#s = prepareStatements(db);
  }

  /** Runs `fn` inside BEGIN IMMEDIATE … COMMIT; any throw rolls back. `fn` may also ask for a rollback. */
  #transaction<T>(fn: (rollback: () => void) => T): T {
    const s = this.#s;
    s.begin.run();
    let rolledBack = false;
    try {
      const result = fn(() => {
        s.rollback.run();
        rolledBack = true;
      });
      if (!rolledBack) s.commit.run();
      return result;
    } catch (err) {
      if (!rolledBack && this.#db.isTransaction) s.rollback.run();
      throw err;
    }
  }

  // ---- projects and API keys

  async createProject(name: string): Promise<Project> {
    const project: Project = { id: randomUUID(), name: common.projectName(name), createdAt: common.nowSeconds() };
    this.#s.insertProject.run(project.id, project.name, project.createdAt);
    return project;
  }

  async getProject(id: string): Promise<Project | undefined> {
    const row = this.#s.selectProject.get(id) as common.ProjectRow | undefined;
    return row && common.toProject(row);
  }

  async createApiKey(projectId: string, label?: string): Promise<{ apiKey: ApiKey; plaintext: string }> {
    const { apiKey, plaintext, keyHash } = common.newApiKey(projectId, label);
    try {
      this.#s.insertApiKey.run(apiKey.id, projectId, keyHash, apiKey.prefix, apiKey.label, apiKey.status, apiKey.createdAt);
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new StoreError("NOT_FOUND", `project ${projectId} not found`);
      throw err;
    }
    return { apiKey, plaintext };
  }

  async findApiKey(plaintext: string): Promise<ApiKey | undefined> {
    const hash = common.apiKeyLookupHash(plaintext);
    const row = hash === undefined ? undefined : (this.#s.selectApiKeyByHash.get(hash) as common.ApiKeyRow | undefined);
    return row && common.toApiKey(row);
  }

  async revokeApiKey(id: string): Promise<void> {
    const result = this.#s.revokeApiKey.run(common.nowSeconds(), id);
    if (Number(result.changes) === 0 && this.#s.selectApiKeyStatus.get(id) === undefined) {
      throw new StoreError("NOT_FOUND", `API key ${id} not found`);
    }
  }

  // ---- strategies

  async createStrategy(input: NewStrategy): Promise<Strategy> {
    const { strategy, networksJson, rulesJson } = common.newStrategy(input);
    try {
      this.#s.insertStrategy.run(
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
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError("DUPLICATE", `a strategy with code "${input.code}" already exists`);
      if (isForeignKeyViolation(err)) throw new StoreError("NOT_FOUND", `project ${input.projectId} not found`);
      throw err;
    }
    return strategy;
  }

  async getStrategyByCode(code: string): Promise<Strategy | undefined> {
    const row = this.#s.selectStrategyByCode.get(code) as common.StrategyRow | undefined;
    return row && common.toStrategy(row);
  }

  async setStrategyStatus(id: string, status: StrategyStatus): Promise<void> {
    const result = this.#s.updateStrategyStatus.run(common.strategyStatus(status), id);
    if (Number(result.changes) === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
  }

  async setStrategyRules(id: string, rules: StrategyRules): Promise<void> {
    const result = this.#s.updateStrategyRules.run(common.validRules(rules).json, id);
    if (Number(result.changes) === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
  }

  async getUsage(strategyId: string, scope: CapCheck["scope"], key: string): Promise<UsageTotals> {
    const row = common.scopeKey(scope, key);
    return common.toUsage(this.#s.selectUsage.get(strategyId, row.scope, row.key) as common.UsageRow | undefined);
  }

  // ---- tokens

  /**
   * Inserts or updates the token at (network, address). A symbol names one token per network
   * (case-insensitively): upserting a different address under a symbol already used replaces that older row,
   * so re-seeding the registry from an edited configuration converges on the configuration.
   */
  async upsertToken(token: Token): Promise<void> {
    const { address: addr, priceSourceJson } = common.validToken(token);
    this.#transaction(() => {
      this.#s.deleteTokenSymbolElsewhere.run(token.network, token.symbol, addr);
      this.#s.upsertToken.run(
        token.network,
        addr,
        token.symbol,
        token.decimals,
        priceSourceJson,
        token.markupBps,
        token.enabled ? 1 : 0,
        common.nowSeconds(),
      );
    });
  }

  async listTokens(network: string): Promise<Token[]> {
    return (this.#s.selectTokens.all(network) as unknown as common.TokenRow[]).map(common.toToken);
  }

  async findToken(network: string, symbolOrAddress: string): Promise<Token | undefined> {
    if (typeof symbolOrAddress !== "string" || symbolOrAddress === "") return undefined;
    const row = (
      isAddress(symbolOrAddress, { strict: false })
        ? this.#s.selectTokenByAddress.get(network, getAddress(symbolOrAddress))
        : this.#s.selectTokenBySymbol.get(network, symbolOrAddress)
    ) as common.TokenRow | undefined;
    return row && common.toToken(row);
  }

  // ---- gas tanks

  async creditGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
    const credit = common.validCredit(sender, amountWei, reference);
    const who = credit.sender;
    return this.#transaction(() => {
      const s = this.#s;
      const prior = s.selectCredit.get(reference) as { network: string; sender: string; amount_wei: string } | undefined;
      if (prior) {
        if (prior.network !== network || prior.sender !== who || BigInt(prior.amount_wei) !== amountWei) {
          throw common.creditConflict(reference, prior);
        }
        return this.#tank(network, who);
      }
      const now = common.nowSeconds();
      s.insertCredit.run(reference, network, who, common.dec(amountWei), now);
      const tank = this.#tank(network, who);
      const balanceWei = tank.balanceWei + amountWei;
      s.upsertTank.run(network, who, common.dec(balanceWei), common.dec(tank.reservedWei), now);
      return { ...tank, balanceWei };
    });
  }

  /** The credit leaves the tank's balance (which may go negative: it was spent already) and its reference is free again. */
  async revertGasTankCredit(reference: string): Promise<boolean> {
    if (typeof reference !== "string" || reference === "") return false;
    return this.#transaction(() => {
      const s = this.#s;
      const credit = s.selectCredit.get(reference) as { network: string; sender: Address; amount_wei: string } | undefined;
      if (!credit) return false;
      const tank = this.#tank(credit.network, credit.sender);
      s.deleteCredit.run(reference);
      const balanceWei = tank.balanceWei - BigInt(credit.amount_wei);
      s.upsertTank.run(credit.network, credit.sender, common.dec(balanceWei), common.dec(tank.reservedWei), common.nowSeconds());
      return true;
    });
  }

  async getGasTank(network: string, sender: Address): Promise<GasTank> {
    return this.#tank(network, common.address(sender, "sender"));
  }

  #tank(network: string, sender: Address): GasTank {
    return { network, sender, ...common.toTank(this.#s.selectTank.get(network, sender) as common.TankRow | undefined) };
  }

  // ---- sponsorships

  /**
   * One BEGIN IMMEDIATE transaction (SQLite's write lock, across processes): read the op's active sponsorship
   * (to be replaced), the tank and the usage rows, decide (common.planTank, then common.planCaps), then write.
   * A refusal writes nothing: the earlier sponsorship of the op stays active.
   */
  async reserveSponsorship(input: NewSponsorship, caps?: readonly CapCheck[]): Promise<ReserveResult> {
    const now = common.nowSeconds();
    const record = common.newSponsorshipRecord(input, now);
    const checks = common.validCapChecks(caps, record.strategyId);
    const { network, sender } = record;

    return this.#transaction((rollback): ReserveResult => {
      const s = this.#s;
      const opKey = [network, record.entryPoint, sender, common.dec(record.nonce)];
      const previous = s.selectActiveOp.get(...opKey) as ActiveRow | undefined;
      const previousLinks = previous ? this.#links(previous.id) : [];
      const freedWei = previous?.mode === "user" ? BigInt(previous.max_cost_wei) : 0n;
      // The tank is (network, sender): the same for the previous and the new sponsorship of this op.
      const tankTouched = record.mode === "user" || freedWei > 0n;
      const tank = tankTouched ? this.#tank(network, sender) : { balanceWei: 0n, reservedWei: 0n };
      const tankPlan = common.planTank(record.mode, tank, freedWei, record.maxCostWei);
      if (!tankPlan.ok) {
        rollback();
        return tankPlan;
      }
      const capKeys = checks.map((c): common.UsageKey => ({ strategyId: record.strategyId!, scope: c.scope, key: c.key }));
      const capPlan = common.planCaps({
        strategyId: record.strategyId,
        checks,
        cost: { wei: record.maxCostWei, usdMicros: record.maxCostUsdMicros },
        previous: previous ? { links: previousLinks, max: common.rowCost(previous) } : null,
        totals: new Map([...capKeys, ...previousLinks].map((k) => [common.usageId(k), this.#usage(k)])),
      });
      if (!capPlan.ok) {
        rollback();
        return capPlan;
      }

      if (previous) s.releaseActive.run("replaced", now, previous.id);
      if (tankTouched) s.upsertTank.run(network, sender, common.dec(tank.balanceWei), common.dec(tankPlan.reservedWei), now);
      try {
        s.insertSponsorship.run(
          record.id,
          network,
          record.entryPoint,
          record.version,
          sender,
          common.dec(record.nonce),
          record.mode,
          record.projectId,
          record.apiKeyId,
          record.strategyId,
          record.token,
          common.dec(record.exchangeRate),
          common.dec(record.maxTokenCost),
          common.dec(record.maxCostWei),
          common.dec(record.maxCostUsdMicros),
          record.validUntil,
          record.validAfter,
          now,
          now,
        );
      } catch (err) {
        if (isForeignKeyViolation(err)) {
          throw new StoreError("NOT_FOUND", "sponsorship refers to an unknown project, API key or strategy");
        }
        throw err;
      }
      for (const w of capPlan.writes) this.#writeUsage(w.key, w.totals, now);
      for (const k of capPlan.links) s.insertLink.run(record.id, k.strategyId, k.scope, k.key);
      return { ok: true, record, replaced: previous?.id ?? null };
    });
  }

  /** The usage rows a sponsorship counts in. */
  #links(id: string): common.UsageKey[] {
    return this.#s.selectLinks.all(id) as unknown as common.UsageKey[];
  }

  #usage(k: common.UsageKey): UsageTotals {
    return common.toUsage(this.#s.selectUsage.get(k.strategyId, k.scope, k.key) as common.UsageRow | undefined);
  }

  #writeUsage(k: common.UsageKey, u: UsageTotals, now: number): void {
    this.#s.upsertUsage.run(
      k.strategyId,
      k.scope,
      k.key,
      common.dec(u.reservedWei),
      common.dec(u.spentWei),
      common.dec(u.reservedUsdMicros),
      common.dec(u.spentUsdMicros),
      u.ops,
      now,
    );
  }

  /** Inside a transaction: a sponsorship's transition moves its usage rows and, in User Sponsor mode, its tank. */
  #apply(row: common.SponsorshipRow, delta: common.Delta, now: number): void {
    for (const k of this.#links(row.id)) this.#writeUsage(k, common.applyUsage(this.#usage(k), delta), now);
    if (row.mode !== "user") return;
    const tank = common.applyTank(this.#tank(row.network, row.sender as Address), delta);
    this.#s.upsertTank.run(row.network, row.sender, common.dec(tank.balanceWei), common.dec(tank.reservedWei), now);
  }

  /** Inside a transaction: releases a reserved or signed sponsorship (false if it is neither). */
  #release(id: string, reason: common.ReleaseReason, now: number): boolean {
    const row = this.#s.selectSponsorship.get(id) as common.SponsorshipRow | undefined;
    if (!row || (row.status !== "reserved" && row.status !== "signed")) return false;
    this.#s.releaseActive.run(reason, now, id);
    this.#apply(row, common.releaseDelta(common.rowCost(row)), now);
    return true;
  }

  async markSigned(id: string, signed: { userOpHash: Hex; paymasterAndData: Hex }): Promise<void> {
    const { userOpHash, paymasterAndData } = common.validSigned(signed);
    const result = this.#s.markSigned.run(userOpHash, paymasterAndData, common.nowSeconds(), id);
    if (Number(result.changes) === 1) return;
    const row = this.#s.selectSponsorshipStatus.get(id) as { status: SponsorshipStatus } | undefined;
    if (!row) throw new StoreError("NOT_FOUND", `sponsorship ${id} not found`);
    throw new StoreError("INVALID_STATE", `sponsorship ${id} is ${row.status}, not reserved: it cannot be signed`);
  }

  /** Idempotent: releasing a released, settled or unknown sponsorship changes nothing. */
  async releaseSponsorship(id: string): Promise<void> {
    this.#transaction(() => this.#release(id, "released", common.nowSeconds()));
  }

  /** See common.settleDelta for which sponsorships settle. */
  async settleSponsorship(id: string, settlement: Settlement): Promise<boolean> {
    const valid = common.validSettlement(settlement);
    return this.#transaction(() => {
      const row = this.#s.selectSponsorship.get(id) as common.SponsorshipRow | undefined;
      const delta = row && common.settleDelta(row, { wei: valid.actualGasCostWei, usdMicros: valid.actualCostUsdMicros });
      if (!row || !delta) return false;
      const now = common.nowSeconds();
      this.#s.settle.run(...common.settlementColumns(valid), now, now, id);
      this.#apply(row, delta, now);
      return true;
    });
  }

  /** See common.unsettleTransition. */
  async unsettleSponsorship(id: string): Promise<boolean> {
    return this.#transaction(() => {
      const s = this.#s;
      const row = s.selectSponsorship.get(id) as common.SponsorshipRow | undefined;
      if (!row || row.status !== "settled") return false;
      const taken = s.selectActiveOp.get(row.network, row.entry_point, row.sender, row.nonce) !== undefined;
      const change = common.unsettleTransition(row, taken);
      if (!change) return false;
      const now = common.nowSeconds();
      s.unsettle.run(change.status, change.releaseReason, now, id);
      this.#apply(row, change.delta, now);
      return true;
    });
  }

  async listSettledSince(network: string, fromBlock: bigint): Promise<SponsorshipRecord[]> {
    const from = common.amount(fromBlock, "fromBlock");
    if (from > BigInt(Number.MAX_SAFE_INTEGER)) return [];
    const rows = this.#s.selectSettledSince.all(network, Number(from)) as unknown as common.SponsorshipRow[];
    return rows.map(common.toSponsorship);
  }

  /**
   * Releases (reason "expired") every reserved or signed sponsorship with validUntil + graceSeconds < now, in
   * write transactions of at most EXPIRY_BATCH; each release re-reads its row under the write lock, so one that
   * was settled or replaced meanwhile is left alone.
   */
  async releaseExpired(now: number, graceSeconds: number, network?: string): Promise<number> {
    const cutoff = common.validExpiry(now, graceSeconds);
    const only = network ?? null;
    let released = 0;
    for (;;) {
      const batch = this.#transaction(() => {
        const ids = this.#s.selectExpired.all(cutoff, only, only, EXPIRY_BATCH) as { id: string }[];
        const at = common.nowSeconds();
        for (const { id } of ids) if (this.#release(id, "expired", at)) released++;
        return ids.length;
      });
      if (batch < EXPIRY_BATCH) return released;
    }
  }

  async getCursor(name: string): Promise<bigint | undefined> {
    const row = this.#s.selectCursor.get(common.cursorName(name)) as { value: string } | undefined;
    return row && BigInt(row.value);
  }

  async setCursor(name: string, value: bigint): Promise<void> {
    this.#s.upsertCursor.run(common.cursorName(name), common.dec(common.amount(value, "cursor value")), common.nowSeconds());
  }

  async getSponsorship(id: string): Promise<SponsorshipRecord | undefined> {
    const row = this.#s.selectSponsorship.get(id) as common.SponsorshipRow | undefined;
    return row && common.toSponsorship(row);
  }

  /**
   * The sponsorship signed with that userOpHash. Should two share it (the same op re-signed within the same
   * second yields identical paymasterAndData), the active or settled one wins over a released one, then the newest.
   */
  async findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined> {
    const hash = common.hashKey(userOpHash);
    const row = hash === undefined ? undefined : (this.#s.selectSponsorshipByHash.get(hash) as common.SponsorshipRow | undefined);
    return row && common.toSponsorship(row);
  }

  // ---- operations (metrics, deposit check, leader election)

  async listStrategies(): Promise<Strategy[]> {
    return (this.#s.selectStrategies.all() as unknown as common.StrategyRow[]).map(common.toStrategy);
  }

  async sponsorshipCounts(): Promise<SponsorshipCount[]> {
    return (this.#s.countSponsorships.all() as { network: string; mode: SponsorMode; version: SponsorshipCount["version"]; status: SponsorshipStatus; count: number }[]).map(
      (row) => ({ ...row, count: Number(row.count) }),
    );
  }

  /** Amounts are decimal TEXT (SQLite integers are 64-bit): added up here as bigints. */
  async gasTankTotals(): Promise<GasTankTotals[]> {
    const totals = new Map<string, GasTankTotals>();
    for (const row of this.#s.selectTankAmounts.iterate() as Iterable<{ network: string; balance_wei: string; reserved_wei: string }>) {
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
    for (const row of this.#s.selectOutstanding.iterate(network, common.address(entryPoint, "entryPoint")) as Iterable<{ mode: string; max_cost_wei: string }>) {
      if (wanted.has(row.mode)) total += BigInt(row.max_cost_wei);
    }
    return total;
  }

  /** SQLite serves one process's work (docs/configuration.md): that process always leads. */
  async tryLeadership(_name: string): Promise<Leadership> {
    return { lost: new Promise<void>(() => {}), release: async () => {} };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }
}

function prepareStatements(db: DatabaseSync) {
  const p = (sql: string): StatementSync => db.prepare(sql);
  return {
    begin: p("BEGIN IMMEDIATE"),
    commit: p("COMMIT"),
    rollback: p("ROLLBACK"),

    insertProject: p("INSERT INTO projects (id, name, created_at) VALUES (?, ?, ?)"),
    selectProject: p("SELECT id, name, created_at FROM projects WHERE id = ?"),

    insertApiKey: p(
      `INSERT INTO api_keys (id, project_id, key_hash, prefix, label, status, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    selectApiKeyByHash: p(
      "SELECT id, project_id, prefix, label, status, created_at FROM api_keys WHERE key_hash = ?",
    ),
    selectApiKeyStatus: p("SELECT status FROM api_keys WHERE id = ?"),
    revokeApiKey: p("UPDATE api_keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'active'"),

    insertStrategy: p(
      `INSERT INTO strategies (id, project_id, code, name, status, valid_from, valid_until, networks, rules, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    selectStrategyByCode: p(
      `SELECT id, project_id, code, name, status, valid_from, valid_until, networks, rules, created_at
       FROM strategies WHERE code = ?`,
    ),
    selectStrategies: p(
      `SELECT id, project_id, code, name, status, valid_from, valid_until, networks, rules, created_at
       FROM strategies ORDER BY code`,
    ),
    countSponsorships: p("SELECT network, mode, version, status, COUNT(*) AS count FROM sponsorships GROUP BY network, mode, version, status"),
    selectTankAmounts: p("SELECT network, balance_wei, reserved_wei FROM gas_tanks"),
    selectOutstanding: p(
      "SELECT mode, max_cost_wei FROM sponsorships WHERE network = ? AND entry_point = ? AND status IN ('reserved', 'signed')",
    ),
    updateStrategyStatus: p("UPDATE strategies SET status = ? WHERE id = ?"),
    updateStrategyRules: p("UPDATE strategies SET rules = ? WHERE id = ?"),

    selectUsage: p(
      `SELECT reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros, ops FROM strategy_usage
       WHERE strategy_id = ? AND scope = ? AND key = ?`,
    ),
    upsertUsage: p(
      `INSERT INTO strategy_usage (strategy_id, scope, key, reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros,
         ops, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (strategy_id, scope, key) DO UPDATE SET
         reserved_wei = excluded.reserved_wei, spent_wei = excluded.spent_wei,
         reserved_usd_micros = excluded.reserved_usd_micros, spent_usd_micros = excluded.spent_usd_micros,
         ops = excluded.ops, updated_at = excluded.updated_at`,
    ),
    selectLinks: p(
      "SELECT strategy_id AS strategyId, scope, key FROM sponsorship_usage WHERE sponsorship_id = ?",
    ),
    insertLink: p("INSERT INTO sponsorship_usage (sponsorship_id, strategy_id, scope, key) VALUES (?, ?, ?, ?)"),

    deleteTokenSymbolElsewhere: p(
      "DELETE FROM tokens WHERE network = ? AND symbol = ? COLLATE NOCASE AND address <> ?",
    ),
    upsertToken: p(
      `INSERT INTO tokens (network, address, symbol, decimals, price_source, markup_bps, enabled, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (network, address) DO UPDATE SET
         symbol = excluded.symbol, decimals = excluded.decimals, price_source = excluded.price_source,
         markup_bps = excluded.markup_bps, enabled = excluded.enabled, updated_at = excluded.updated_at`,
    ),
    selectTokens: p("SELECT * FROM tokens WHERE network = ? ORDER BY symbol COLLATE NOCASE"),
    selectTokenByAddress: p("SELECT * FROM tokens WHERE network = ? AND address = ?"),
    selectTokenBySymbol: p("SELECT * FROM tokens WHERE network = ? AND symbol = ? COLLATE NOCASE"),

    selectTank: p("SELECT balance_wei, reserved_wei FROM gas_tanks WHERE network = ? AND sender = ?"),
    upsertTank: p(
      `INSERT INTO gas_tanks (network, sender, balance_wei, reserved_wei, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (network, sender) DO UPDATE SET
         balance_wei = excluded.balance_wei, reserved_wei = excluded.reserved_wei, updated_at = excluded.updated_at`,
    ),
    selectCredit: p("SELECT network, sender, amount_wei FROM gas_tank_credits WHERE reference = ?"),
    insertCredit: p(
      "INSERT INTO gas_tank_credits (reference, network, sender, amount_wei, created_at) VALUES (?, ?, ?, ?, ?)",
    ),
    deleteCredit: p("DELETE FROM gas_tank_credits WHERE reference = ?"),

    selectActiveOp: p(
      `SELECT id, mode, max_cost_wei, max_cost_usd_micros FROM sponsorships
       WHERE network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND status IN ('reserved', 'signed')`,
    ),
    releaseActive: p(
      `UPDATE sponsorships SET status = 'released', release_reason = ?, updated_at = ?
       WHERE id = ? AND status IN ('reserved', 'signed')`,
    ),
    insertSponsorship: p(
      `INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id, api_key_id,
         strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, max_cost_usd_micros, valid_until,
         valid_after, status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?)`,
    ),
    markSigned: p(
      `UPDATE sponsorships SET status = 'signed', user_op_hash = ?, paymaster_and_data = ?, updated_at = ?
       WHERE id = ? AND status = 'reserved'`,
    ),
    settle: p(
      `UPDATE sponsorships SET status = 'settled', actual_gas_cost_wei = ?, actual_cost_usd_micros = ?,
         actual_token_cost = ?, settled_success = ?, settled_tx_hash = ?, settled_block_number = ?,
         settled_block_hash = ?, settled_log_index = ?, settled_at = ?, updated_at = ?
       WHERE id = ?`,
    ),
    unsettle: p(
      `UPDATE sponsorships SET status = ?, release_reason = ?, actual_gas_cost_wei = NULL, actual_cost_usd_micros = NULL,
         actual_token_cost = NULL, settled_success = NULL, settled_tx_hash = NULL, settled_block_number = NULL,
         settled_block_hash = NULL, settled_log_index = NULL, settled_at = NULL, updated_at = ?
       WHERE id = ?`,
    ),
    selectSettledSince: p(
      `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships
       WHERE network = ? AND status = 'settled' AND settled_block_number >= ?
       ORDER BY settled_block_number, settled_log_index, rowid`,
    ),
    // Scans sponsorships_active_op: only open sponsorships are in it (see migration 1).
    selectExpired: p(
      "SELECT id FROM sponsorships WHERE status IN ('reserved', 'signed') AND valid_until < ? AND (? IS NULL OR network = ?) ORDER BY valid_until LIMIT ?",
    ),
    selectSponsorshipStatus: p("SELECT status FROM sponsorships WHERE id = ?"),
    selectSponsorship: p(`SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships WHERE id = ?`),
    selectSponsorshipByHash: p(
      `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships WHERE user_op_hash = ?
       ORDER BY CASE status WHEN 'released' THEN 1 ELSE 0 END, created_at DESC, rowid DESC LIMIT 1`,
    ),

    selectCursor: p("SELECT value FROM cursors WHERE name = ?"),
    upsertCursor: p(
      `INSERT INTO cursors (name, value, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    ),
  };
}
