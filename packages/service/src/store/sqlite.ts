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
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { closeSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { getAddress, isAddress } from "viem";
import type { Address, Hex } from "@paymaster/shared";

import { StoreError } from "./errors.ts";
import { SQLITE_MIGRATIONS, type Migration } from "./migrations.ts";
import type {
  ApiKey,
  ApiKeyStatus,
  GasTank,
  NewSponsorship,
  NewStrategy,
  PriceSource,
  Project,
  ReserveResult,
  SponsorMode,
  SponsorshipRecord,
  SponsorshipStatus,
  Store,
  Strategy,
  StrategyStatus,
  Token,
} from "./types.ts";

const BUSY_TIMEOUT_MS = 5000;
/**
 * Checkpoint the WAL every 10000 pages (~40 MB) instead of SQLite's 1000: a checkpoint copies pages back and
 * fsyncs, and at the default it ran every ~200 reservations and cost a good part of reserveSponsorship's time
 * (measured on a 2-core VM: user-mode reserve ~85 µs -> ~55-70 µs). The price is a WAL file of up to ~40 MB.
 */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;
/** API keys: `pm_` + 32 random bytes, base64url (43 chars): 46 chars in all. */
const API_KEY_PREFIX = "pm_";
const API_KEY_RANDOM_BYTES = 32;
/** How many leading characters of the plaintext are kept to recognise a key ("pm_" + 7). */
const API_KEY_DISPLAY_PREFIX_LENGTH = 10;
/** Longer inputs are not keys: answer without hashing them. */
const API_KEY_MAX_LENGTH = 256;

// SQLite extended result codes (https://sqlite.org/rescode.html).
const SQLITE_CONSTRAINT_FOREIGNKEY = 787;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

const SPONSOR_MODES: ReadonlySet<string> = new Set<SponsorMode>(["sponsor", "erc20", "user"]);
const VERSIONS: ReadonlySet<string> = new Set(["v0.6", "v0.7"]);
const STRATEGY_STATUSES: ReadonlySet<string> = new Set<StrategyStatus>(["enabled", "disabled"]);
const BYTES32_RE = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES_RE = /^0x(?:[0-9a-fA-F]{2})*$/;

// ---- row shapes (what SELECT * returns)

interface ProjectRow {
  id: string;
  name: string;
  created_at: number;
}
interface ApiKeyRow {
  id: string;
  project_id: string;
  prefix: string;
  label: string | null;
  status: ApiKeyStatus;
  created_at: number;
}
interface StrategyRow {
  id: string;
  project_id: string;
  code: string;
  name: string;
  status: StrategyStatus;
  valid_from: number | null;
  valid_until: number | null;
  networks: string | null;
  created_at: number;
}
interface TokenRow {
  network: string;
  address: string;
  symbol: string;
  decimals: number;
  price_source: string;
  markup_bps: number;
  enabled: number;
}
interface TankRow {
  balance_wei: string;
  reserved_wei: string;
}
interface CreditRow {
  network: string;
  sender: string;
  amount_wei: string;
}
interface SponsorshipRow {
  id: string;
  network: string;
  entry_point: string;
  version: "v0.6" | "v0.7";
  sender: string;
  nonce: string;
  mode: SponsorMode;
  project_id: string;
  api_key_id: string;
  strategy_id: string | null;
  token: string | null;
  exchange_rate: string | null;
  max_token_cost: string | null;
  max_cost_wei: string;
  valid_until: number;
  valid_after: number;
  user_op_hash: string | null;
  paymaster_and_data: string | null;
  status: SponsorshipStatus;
  created_at: number;
}

// ---- helpers

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

function invalid(message: string): never {
  throw new StoreError("INVALID_INPUT", message);
}

function address(value: unknown, what: string): Address {
  if (typeof value !== "string" || !isAddress(value, { strict: false })) invalid(`${what} is not an address`);
  return getAddress(value);
}

function nonNegative(value: unknown, what: string): bigint {
  if (typeof value !== "bigint" || value < 0n) invalid(`${what} must be a non-negative bigint`);
  return value;
}

function optionalNonNegative(value: unknown, what: string): string | null {
  return value === null || value === undefined ? null : nonNegative(value, what).toString();
}

function unixSeconds(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    invalid(`${what} must be unix seconds (a non-negative integer)`);
  }
  return value;
}

function optionalUnixSeconds(value: unknown, what: string): number | null {
  return value === null || value === undefined ? null : unixSeconds(value, what);
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

function toProject(row: ProjectRow): Project {
  return { id: row.id, name: row.name, createdAt: row.created_at };
}

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    projectId: row.project_id,
    prefix: row.prefix,
    label: row.label,
    status: row.status,
    createdAt: row.created_at,
  };
}

function toStrategy(row: StrategyRow): Strategy {
  return {
    id: row.id,
    projectId: row.project_id,
    code: row.code,
    name: row.name,
    status: row.status,
    validFrom: row.valid_from,
    validUntil: row.valid_until,
    networks: row.networks === null ? null : (JSON.parse(row.networks) as string[]),
    createdAt: row.created_at,
  };
}

function toToken(row: TokenRow): Token {
  return {
    network: row.network,
    symbol: row.symbol,
    address: row.address as Address,
    decimals: row.decimals,
    priceSource: JSON.parse(row.price_source) as PriceSource,
    markupBps: row.markup_bps,
    enabled: row.enabled === 1,
  };
}

function toSponsorship(row: SponsorshipRow): SponsorshipRecord {
  return {
    id: row.id,
    network: row.network,
    entryPoint: row.entry_point as Address,
    version: row.version,
    sender: row.sender as Address,
    nonce: BigInt(row.nonce),
    mode: row.mode,
    projectId: row.project_id,
    apiKeyId: row.api_key_id,
    strategyId: row.strategy_id,
    token: row.token as Address | null,
    exchangeRate: row.exchange_rate === null ? null : BigInt(row.exchange_rate),
    maxTokenCost: row.max_token_cost === null ? null : BigInt(row.max_token_cost),
    maxCostWei: BigInt(row.max_cost_wei),
    validUntil: row.valid_until,
    validAfter: row.valid_after,
    userOpHash: row.user_op_hash as Hex | null,
    paymasterAndData: row.paymaster_and_data as Hex | null,
    status: row.status,
    createdAt: row.created_at,
  };
}

function validPriceSource(source: unknown): PriceSource {
  const s = source as Partial<Record<string, unknown>> | null;
  if (s?.type === "fixed" && typeof s.usd === "string" && /^\d+(\.\d+)?$/.test(s.usd)) {
    return { type: "fixed", usd: s.usd };
  }
  if (s?.type === "chainlink") {
    const feed = address(s.feed, "priceSource.feed");
    if (s.maxAgeSeconds === undefined) return { type: "chainlink", feed };
    if (typeof s.maxAgeSeconds !== "number" || !Number.isSafeInteger(s.maxAgeSeconds) || s.maxAgeSeconds <= 0) {
      invalid("priceSource.maxAgeSeconds must be a positive integer");
    }
    return { type: "chainlink", feed, maxAgeSeconds: s.maxAgeSeconds };
  }
  return invalid('priceSource must be {type:"fixed", usd:"<decimal>"} or {type:"chainlink", feed:<address>}');
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
      record.run(m.version, m.name, nowSeconds());
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
    if (typeof name !== "string" || name.trim() === "") invalid("project name must be a non-empty string");
    const project: Project = { id: randomUUID(), name, createdAt: nowSeconds() };
    this.#s.insertProject.run(project.id, project.name, project.createdAt);
    return project;
  }

  async getProject(id: string): Promise<Project | undefined> {
    const row = this.#s.selectProject.get(id) as ProjectRow | undefined;
    return row && toProject(row);
  }

  async createApiKey(projectId: string, label?: string): Promise<{ apiKey: ApiKey; plaintext: string }> {
    const plaintext = API_KEY_PREFIX + randomBytes(API_KEY_RANDOM_BYTES).toString("base64url");
    const apiKey: ApiKey = {
      id: randomUUID(),
      projectId,
      prefix: plaintext.slice(0, API_KEY_DISPLAY_PREFIX_LENGTH),
      label: label ?? null,
      status: "active",
      createdAt: nowSeconds(),
    };
    try {
      this.#s.insertApiKey.run(
        apiKey.id,
        apiKey.projectId,
        sha256Hex(plaintext),
        apiKey.prefix,
        apiKey.label,
        apiKey.status,
        apiKey.createdAt,
      );
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new StoreError("NOT_FOUND", `project ${projectId} not found`);
      throw err;
    }
    return { apiKey, plaintext };
  }

  async findApiKey(plaintext: string): Promise<ApiKey | undefined> {
    if (typeof plaintext !== "string" || plaintext.length === 0 || plaintext.length > API_KEY_MAX_LENGTH) {
      return undefined;
    }
    const row = this.#s.selectApiKeyByHash.get(sha256Hex(plaintext)) as ApiKeyRow | undefined;
    return row && toApiKey(row);
  }

  async revokeApiKey(id: string): Promise<void> {
    const result = this.#s.revokeApiKey.run(nowSeconds(), id);
    if (Number(result.changes) === 0 && this.#s.selectApiKeyStatus.get(id) === undefined) {
      throw new StoreError("NOT_FOUND", `API key ${id} not found`);
    }
  }

  // ---- strategies

  async createStrategy(input: NewStrategy): Promise<Strategy> {
    if (typeof input.code !== "string" || input.code === "") invalid("strategy code must be a non-empty string");
    if (typeof input.name !== "string") invalid("strategy name must be a string");
    const status = input.status ?? "enabled";
    if (!STRATEGY_STATUSES.has(status)) invalid(`strategy status must be "enabled" or "disabled"`);
    const networks = input.networks ?? null;
    if (networks !== null && (!Array.isArray(networks) || networks.some((n) => typeof n !== "string"))) {
      invalid("strategy networks must be an array of network names or null");
    }
    const strategy: Strategy = {
      id: randomUUID(),
      projectId: input.projectId,
      code: input.code,
      name: input.name,
      status,
      validFrom: optionalUnixSeconds(input.validFrom, "validFrom"),
      validUntil: optionalUnixSeconds(input.validUntil, "validUntil"),
      networks: networks === null ? null : [...networks],
      createdAt: nowSeconds(),
    };
    try {
      this.#s.insertStrategy.run(
        strategy.id,
        strategy.projectId,
        strategy.code,
        strategy.name,
        strategy.status,
        strategy.validFrom,
        strategy.validUntil,
        strategy.networks === null ? null : JSON.stringify(strategy.networks),
        strategy.createdAt,
      );
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new StoreError("DUPLICATE", `a strategy with code "${input.code}" already exists`);
      }
      if (isForeignKeyViolation(err)) throw new StoreError("NOT_FOUND", `project ${input.projectId} not found`);
      throw err;
    }
    return strategy;
  }

  async getStrategyByCode(code: string): Promise<Strategy | undefined> {
    const row = this.#s.selectStrategyByCode.get(code) as StrategyRow | undefined;
    return row && toStrategy(row);
  }

  async setStrategyStatus(id: string, status: StrategyStatus): Promise<void> {
    if (!STRATEGY_STATUSES.has(status)) invalid(`strategy status must be "enabled" or "disabled"`);
    const result = this.#s.updateStrategyStatus.run(status, id);
    if (Number(result.changes) === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
  }

  // ---- tokens

  /**
   * Inserts or updates the token at (network, address). A symbol names one token per network
   * (case-insensitively): upserting a different address under a symbol already used replaces that older row,
   * so re-seeding the registry from an edited configuration converges on the configuration.
   */
  async upsertToken(token: Token): Promise<void> {
    const addr = address(token.address, "token address");
    if (typeof token.symbol !== "string" || token.symbol === "") invalid("token symbol must be a non-empty string");
    if (!Number.isInteger(token.decimals) || token.decimals < 0 || token.decimals > 255) {
      invalid("token decimals must be an integer in [0, 255]");
    }
    if (!Number.isInteger(token.markupBps) || token.markupBps < 0 || token.markupBps > 10_000) {
      invalid("token markupBps must be an integer in [0, 10000]");
    }
    const priceSource = JSON.stringify(validPriceSource(token.priceSource));
    this.#transaction(() => {
      this.#s.deleteTokenSymbolElsewhere.run(token.network, token.symbol, addr);
      this.#s.upsertToken.run(
        token.network,
        addr,
        token.symbol,
        token.decimals,
        priceSource,
        token.markupBps,
        token.enabled ? 1 : 0,
        nowSeconds(),
      );
    });
  }

  async listTokens(network: string): Promise<Token[]> {
    return (this.#s.selectTokens.all(network) as unknown as TokenRow[]).map(toToken);
  }

  async findToken(network: string, symbolOrAddress: string): Promise<Token | undefined> {
    if (typeof symbolOrAddress !== "string" || symbolOrAddress === "") return undefined;
    const row = (
      isAddress(symbolOrAddress, { strict: false })
        ? this.#s.selectTokenByAddress.get(network, getAddress(symbolOrAddress))
        : this.#s.selectTokenBySymbol.get(network, symbolOrAddress)
    ) as TokenRow | undefined;
    return row && toToken(row);
  }

  // ---- gas tanks

  async creditGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
    const who = address(sender, "sender");
    if (typeof amountWei !== "bigint" || amountWei <= 0n) invalid("credit amount must be a positive bigint (wei)");
    if (typeof reference !== "string" || reference === "") invalid("credit reference must be a non-empty string");
    return this.#transaction(() => {
      const s = this.#s;
      const prior = s.selectCredit.get(reference) as CreditRow | undefined;
      if (prior) {
        if (prior.network !== network || prior.sender !== who || BigInt(prior.amount_wei) !== amountWei) {
          throw new StoreError(
            "CONFLICT",
            `credit reference "${reference}" was already used for ${prior.amount_wei} wei to ${prior.sender} on ${prior.network}`,
          );
        }
        return this.#tank(network, who);
      }
      const now = nowSeconds();
      s.insertCredit.run(reference, network, who, amountWei.toString(), now);
      const tank = this.#tank(network, who);
      const balanceWei = tank.balanceWei + amountWei;
      s.upsertTank.run(network, who, balanceWei.toString(), tank.reservedWei.toString(), now);
      return { ...tank, balanceWei };
    });
  }

  async getGasTank(network: string, sender: Address): Promise<GasTank> {
    return this.#tank(network, address(sender, "sender"));
  }

  #tank(network: string, sender: Address): GasTank {
    const row = this.#s.selectTank.get(network, sender) as TankRow | undefined;
    return {
      network,
      sender,
      balanceWei: row ? BigInt(row.balance_wei) : 0n,
      reservedWei: row ? BigInt(row.reserved_wei) : 0n,
    };
  }

  // ---- sponsorships

  async reserveSponsorship(input: NewSponsorship): Promise<ReserveResult> {
    if (!SPONSOR_MODES.has(input.mode)) invalid(`mode must be one of sponsor, erc20, user`);
    if (!VERSIONS.has(input.version)) invalid(`version must be v0.6 or v0.7`);
    const entryPoint = address(input.entryPoint, "entryPoint");
    const sender = address(input.sender, "sender");
    const nonce = nonNegative(input.nonce, "nonce").toString();
    const maxCostWei = nonNegative(input.maxCostWei, "maxCostWei");
    const token = input.token === null || input.token === undefined ? null : address(input.token, "token");
    const exchangeRate = optionalNonNegative(input.exchangeRate, "exchangeRate");
    const maxTokenCost = optionalNonNegative(input.maxTokenCost, "maxTokenCost");
    const validUntil = unixSeconds(input.validUntil, "validUntil");
    const validAfter = unixSeconds(input.validAfter, "validAfter");
    const { network } = input;
    if (typeof network !== "string" || network === "") invalid("network must be a non-empty string");

    return this.#transaction((rollback): ReserveResult => {
      const s = this.#s;
      const previous = s.selectActiveOp.get(network, entryPoint, sender, nonce) as
        | { id: string; mode: SponsorMode; max_cost_wei: string }
        | undefined;
      const freedWei = previous?.mode === "user" ? BigInt(previous.max_cost_wei) : 0n;

      // The tank is (network, sender): the same for the previous and the new sponsorship of this op.
      let tank: TankRow | undefined;
      let reservedWei = 0n;
      if (input.mode === "user" || freedWei > 0n) {
        tank = s.selectTank.get(network, sender) as TankRow | undefined;
        reservedWei = tank ? BigInt(tank.reserved_wei) : 0n;
        reservedWei = reservedWei > freedWei ? reservedWei - freedWei : 0n;
      }
      if (input.mode === "user") {
        const balanceWei = tank ? BigInt(tank.balance_wei) : 0n;
        const availableWei = balanceWei > reservedWei ? balanceWei - reservedWei : 0n;
        if (availableWei < maxCostWei) {
          rollback(); // nothing written: the earlier sponsorship stays active
          return { ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei, requiredWei: maxCostWei };
        }
        reservedWei += maxCostWei;
      }

      const now = nowSeconds();
      if (previous) s.releaseActive.run(now, previous.id);
      if (tank) s.updateTankReserved.run(reservedWei.toString(), now, network, sender);
      else if (input.mode === "user") s.upsertTank.run(network, sender, "0", reservedWei.toString(), now);
      const record: SponsorshipRecord = {
        id: randomUUID(),
        network,
        entryPoint,
        version: input.version,
        sender,
        nonce: input.nonce,
        mode: input.mode,
        projectId: input.projectId,
        apiKeyId: input.apiKeyId,
        strategyId: input.strategyId ?? null,
        token,
        exchangeRate: exchangeRate === null ? null : BigInt(exchangeRate),
        maxTokenCost: maxTokenCost === null ? null : BigInt(maxTokenCost),
        maxCostWei,
        validUntil,
        validAfter,
        userOpHash: null,
        paymasterAndData: null,
        status: "reserved",
        createdAt: now,
      };
      try {
        s.insertSponsorship.run(
          record.id,
          network,
          entryPoint,
          record.version,
          sender,
          nonce,
          record.mode,
          record.projectId,
          record.apiKeyId,
          record.strategyId,
          token,
          exchangeRate,
          maxTokenCost,
          maxCostWei.toString(),
          validUntil,
          validAfter,
          now,
          now,
        );
      } catch (err) {
        if (isForeignKeyViolation(err)) {
          throw new StoreError("NOT_FOUND", "sponsorship refers to an unknown project, API key or strategy");
        }
        throw err;
      }
      return { ok: true, record, replaced: previous?.id ?? null };
    });
  }

  async markSigned(id: string, signed: { userOpHash: Hex; paymasterAndData: Hex }): Promise<void> {
    if (typeof signed.userOpHash !== "string" || !BYTES32_RE.test(signed.userOpHash)) {
      invalid("userOpHash must be 32 bytes of 0x-hex");
    }
    if (typeof signed.paymasterAndData !== "string" || !HEX_BYTES_RE.test(signed.paymasterAndData)) {
      invalid("paymasterAndData must be 0x-hex bytes");
    }
    const result = this.#s.markSigned.run(
      signed.userOpHash.toLowerCase(),
      signed.paymasterAndData,
      nowSeconds(),
      id,
    );
    if (Number(result.changes) === 1) return;
    const row = this.#s.selectSponsorshipStatus.get(id) as { status: SponsorshipStatus } | undefined;
    if (!row) throw new StoreError("NOT_FOUND", `sponsorship ${id} not found`);
    throw new StoreError("INVALID_STATE", `sponsorship ${id} is ${row.status}, not reserved: it cannot be signed`);
  }

  /** Idempotent: releasing a released, settled or unknown sponsorship changes nothing. */
  async releaseSponsorship(id: string): Promise<void> {
    this.#transaction(() => {
      const s = this.#s;
      const row = s.selectSponsorshipForRelease.get(id) as
        | { network: string; sender: string; mode: SponsorMode; max_cost_wei: string; status: SponsorshipStatus }
        | undefined;
      if (!row || (row.status !== "reserved" && row.status !== "signed")) return;
      const now = nowSeconds();
      s.releaseActive.run(now, id);
      if (row.mode !== "user") return;
      const tank = s.selectTank.get(row.network, row.sender) as TankRow | undefined;
      if (!tank) return;
      const reserved = BigInt(tank.reserved_wei) - BigInt(row.max_cost_wei);
      s.updateTankReserved.run((reserved > 0n ? reserved : 0n).toString(), now, row.network, row.sender);
    });
  }

  async getSponsorship(id: string): Promise<SponsorshipRecord | undefined> {
    const row = this.#s.selectSponsorship.get(id) as SponsorshipRow | undefined;
    return row && toSponsorship(row);
  }

  /**
   * The sponsorship signed with that userOpHash. Should two share it (the same op re-signed within the same
   * second yields identical paymasterAndData), the active or settled one wins over a released one, then the newest.
   */
  async findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined> {
    if (typeof userOpHash !== "string" || !BYTES32_RE.test(userOpHash)) return undefined;
    const row = this.#s.selectSponsorshipByHash.get(userOpHash.toLowerCase()) as SponsorshipRow | undefined;
    return row && toSponsorship(row);
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
      `INSERT INTO strategies (id, project_id, code, name, status, valid_from, valid_until, networks, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    selectStrategyByCode: p("SELECT * FROM strategies WHERE code = ?"),
    updateStrategyStatus: p("UPDATE strategies SET status = ? WHERE id = ?"),

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
    updateTankReserved: p("UPDATE gas_tanks SET reserved_wei = ?, updated_at = ? WHERE network = ? AND sender = ?"),
    selectCredit: p("SELECT network, sender, amount_wei FROM gas_tank_credits WHERE reference = ?"),
    insertCredit: p(
      "INSERT INTO gas_tank_credits (reference, network, sender, amount_wei, created_at) VALUES (?, ?, ?, ?, ?)",
    ),

    selectActiveOp: p(
      `SELECT id, mode, max_cost_wei FROM sponsorships
       WHERE network = ? AND entry_point = ? AND sender = ? AND nonce = ? AND status IN ('reserved', 'signed')`,
    ),
    releaseActive: p(
      "UPDATE sponsorships SET status = 'released', updated_at = ? WHERE id = ? AND status IN ('reserved', 'signed')",
    ),
    insertSponsorship: p(
      `INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id, api_key_id,
         strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, valid_until, valid_after, status,
         created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?)`,
    ),
    markSigned: p(
      `UPDATE sponsorships SET status = 'signed', user_op_hash = ?, paymaster_and_data = ?, updated_at = ?
       WHERE id = ? AND status = 'reserved'`,
    ),
    selectSponsorshipStatus: p("SELECT status FROM sponsorships WHERE id = ?"),
    selectSponsorshipForRelease: p(
      "SELECT network, sender, mode, max_cost_wei, status FROM sponsorships WHERE id = ?",
    ),
    selectSponsorship: p("SELECT * FROM sponsorships WHERE id = ?"),
    selectSponsorshipByHash: p(
      `SELECT * FROM sponsorships WHERE user_op_hash = ?
       ORDER BY CASE status WHEN 'released' THEN 1 ELSE 0 END, created_at DESC, rowid DESC LIMIT 1`,
    ),
  };
}
