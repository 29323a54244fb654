/**
 * The store on PostgreSQL, for several service replicas sharing one database (DATABASE_URL). Same `Store`
 * interface and the same semantics as the SQLite store (sqlite.ts): same validation, same StoreError codes,
 * replace-not-double reservations, the same tank accounting and idempotent credits.
 *
 * Driver: `pg` (node-postgres), the widely used PostgreSQL driver for Node, pure JavaScript (no native addon to
 * build: `pg-native` is never loaded). One `Pool` per store; every query is a named prepared statement, so each
 * pooled connection parses it once.
 *
 * Schema: ordered migrations in `schema_migrations`, applied in one transaction that first takes a
 * transaction-level advisory lock, so two processes starting together on an empty database serialise (the
 * second finds the migrations applied). Amounts (wei, token base units, nonces, exchange rates) are
 * NUMERIC(78,0) — every uint256 fits — and converted to bigint at this boundary (the pool's type parser turns
 * NUMERIC into bigint and BIGINT, used for unix seconds, into number). Addresses are stored checksummed, hashes
 * lowercase, as in SQLite.
 *
 * Concurrency (the reason this exists): transactions run at READ COMMITTED with explicit row locks rather than
 * SERIALIZABLE. Serializable would be correct too, but every conflicting pair of reservations on one tank would
 * abort one of them (a retry storm exactly when a tank is busy); row locks make them queue instead, and the
 * outcome is the same. The lock order is always gas tank row, then sponsorship row, in every transaction that
 * takes both (reserve, release), so two transactions can wait on each other only in one direction: no
 * deadlock. See `reserveSponsorship` for the details. What can still happen is benign and retried a bounded
 * number of times: two first reservations of the same op racing on the partial unique index (the loser
 * retries and replaces the winner), and, defensively, serialization failures or deadlocks reported by the
 * server.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { PoolClient, QueryResultRow } from "pg";
import { getAddress, isAddress } from "viem";
import type { Address, Hex } from "@paymaster/shared";

import { StoreError } from "./errors.ts";
import type { Migration } from "./migrations.ts";
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

/** API keys: `pm_` + 32 random bytes, base64url (43 chars): 46 chars in all (as in sqlite.ts). */
const API_KEY_PREFIX = "pm_";
const API_KEY_RANDOM_BYTES = 32;
const API_KEY_DISPLAY_PREFIX_LENGTH = 10;
const API_KEY_MAX_LENGTH = 256;

/** Amount columns are NUMERIC(78,0); values are refused above uint256 (they mean nothing on an EVM chain). */
const UINT256_MAX = (1n << 256n) - 1n;
/** A transaction that hit a transient conflict is tried again, at most this many times in all. */
const MAX_ATTEMPTS = 10;
/** Key of the advisory lock that serialises migrations ("paymastr" in ASCII). */
const MIGRATION_LOCK_KEY = "8097880582120927346";

// PostgreSQL type OIDs and SQLSTATEs.
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const UNIQUE_VIOLATION = "23505";
const FOREIGN_KEY_VIOLATION = "23503";
const NUMERIC_VALUE_OUT_OF_RANGE = "22003";
const SERIALIZATION_FAILURE = "40001";
const DEADLOCK_DETECTED = "40P01";

const SPONSOR_MODES: ReadonlySet<string> = new Set<SponsorMode>(["sponsor", "erc20", "user"]);
const VERSIONS: ReadonlySet<string> = new Set(["v0.6", "v0.7"]);
const STRATEGY_STATUSES: ReadonlySet<string> = new Set<StrategyStatus>(["enabled", "disabled"]);
const BYTES32_RE = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES_RE = /^0x(?:[0-9a-fA-F]{2})*$/;

/** SQLite's NOCASE folds ASCII only; `symbol_key` (see the migration) is the same fold, done in SQL. */
const ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ASCII_LOWER = "abcdefghijklmnopqrstuvwxyz";

/**
 * The PostgreSQL schema as ordered migrations, with the conventions of migrations.ts (SQLite) except for the
 * types: amounts NUMERIC(78,0), times BIGINT, JSON as JSONB, booleans BOOLEAN. Never edit a released
 * migration; append a new one.
 */
export const POSTGRES_MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    version: 1,
    name: "initial schema",
    sql: `
      CREATE TABLE projects (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        created_at  BIGINT NOT NULL
      );

      CREATE TABLE api_keys (
        id          TEXT PRIMARY KEY,
        project_id  TEXT NOT NULL REFERENCES projects(id),
        key_hash    TEXT NOT NULL,            -- sha256(plaintext), hex; the plaintext is never stored
        prefix      TEXT NOT NULL,
        label       TEXT,
        status      TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
        created_at  BIGINT NOT NULL,
        revoked_at  BIGINT
      );
      CREATE UNIQUE INDEX api_keys_key_hash ON api_keys(key_hash);
      CREATE INDEX api_keys_project ON api_keys(project_id);

      CREATE TABLE strategies (
        id           TEXT PRIMARY KEY,
        project_id   TEXT NOT NULL REFERENCES projects(id),
        code         TEXT NOT NULL,
        name         TEXT NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('enabled', 'disabled')),
        valid_from   BIGINT,
        valid_until  BIGINT,
        networks     JSONB,                   -- array of network names, NULL = every configured network
        created_at   BIGINT NOT NULL
      );
      CREATE UNIQUE INDEX strategies_code ON strategies(code);
      CREATE INDEX strategies_project ON strategies(project_id);

      CREATE TABLE tokens (
        network       TEXT NOT NULL,
        address       TEXT NOT NULL,          -- checksummed, so (network, address) is (network, lower(address))
        symbol        TEXT NOT NULL,
        -- the symbol with ASCII letters lowercased: SQLite's COLLATE NOCASE, independent of the database's locale
        symbol_key    TEXT NOT NULL GENERATED ALWAYS AS (translate(symbol, '${ASCII_UPPER}', '${ASCII_LOWER}')) STORED,
        decimals      SMALLINT NOT NULL CHECK (decimals BETWEEN 0 AND 255),
        price_source  JSONB NOT NULL,         -- PriceSource
        markup_bps    INTEGER NOT NULL CHECK (markup_bps BETWEEN 0 AND 10000),
        enabled       BOOLEAN NOT NULL,
        updated_at    BIGINT NOT NULL,
        PRIMARY KEY (network, address)
      );
      CREATE UNIQUE INDEX tokens_symbol ON tokens(network, symbol_key);

      CREATE TABLE gas_tanks (
        network       TEXT NOT NULL,
        sender        TEXT NOT NULL,          -- checksummed
        balance_wei   NUMERIC(78, 0) NOT NULL CHECK (balance_wei >= 0),   -- credited minus settled spending
        reserved_wei  NUMERIC(78, 0) NOT NULL CHECK (reserved_wei >= 0),  -- held by outstanding user-mode reservations
        updated_at    BIGINT NOT NULL,
        PRIMARY KEY (network, sender)
      );

      CREATE TABLE gas_tank_credits (
        reference   TEXT PRIMARY KEY,         -- idempotency key ("admin:…", a deposit tx hash + log index, …)
        network     TEXT NOT NULL,
        sender      TEXT NOT NULL,
        amount_wei  NUMERIC(78, 0) NOT NULL CHECK (amount_wei > 0),
        created_at  BIGINT NOT NULL
      );
      CREATE INDEX gas_tank_credits_tank ON gas_tank_credits(network, sender);

      CREATE TABLE sponsorships (
        seq                 BIGINT GENERATED ALWAYS AS IDENTITY,  -- insertion order (SQLite's rowid), for ties
        id                  TEXT PRIMARY KEY,
        network             TEXT NOT NULL,
        entry_point         TEXT NOT NULL,    -- checksummed
        version             TEXT NOT NULL CHECK (version IN ('v0.6', 'v0.7')),
        sender              TEXT NOT NULL,    -- checksummed
        nonce               NUMERIC(78, 0) NOT NULL CHECK (nonce >= 0),  -- uint256 (2-D nonces do not fit 64 bits)
        mode                TEXT NOT NULL CHECK (mode IN ('sponsor', 'erc20', 'user')),
        project_id          TEXT NOT NULL REFERENCES projects(id),
        api_key_id          TEXT NOT NULL REFERENCES api_keys(id),
        strategy_id         TEXT REFERENCES strategies(id),
        token               TEXT,
        exchange_rate       NUMERIC(78, 0),
        max_token_cost      NUMERIC(78, 0),
        max_cost_wei        NUMERIC(78, 0) NOT NULL,
        valid_until         BIGINT NOT NULL,
        valid_after         BIGINT NOT NULL,
        user_op_hash        TEXT,             -- lowercase hex
        paymaster_and_data  TEXT,
        status              TEXT NOT NULL CHECK (status IN ('reserved', 'signed', 'settled', 'released')),
        created_at          BIGINT NOT NULL,
        updated_at          BIGINT NOT NULL
      );
      -- At most one active sponsorship per (network, EntryPoint, sender, nonce): the database itself refuses a second.
      CREATE UNIQUE INDEX sponsorships_active_op ON sponsorships(network, entry_point, sender, nonce)
        WHERE status IN ('reserved', 'signed');
      CREATE INDEX sponsorships_user_op_hash ON sponsorships(user_op_hash) WHERE user_op_hash IS NOT NULL;
    `,
  },
]);

// ---- row shapes

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
  networks: string[] | null;
  created_at: number;
}
interface TokenRow {
  network: string;
  address: string;
  symbol: string;
  decimals: number;
  price_source: PriceSource;
  markup_bps: number;
  enabled: boolean;
}
interface TankRow {
  balance_wei: bigint;
  reserved_wei: bigint;
}
interface SponsorshipRow {
  id: string;
  network: string;
  entry_point: string;
  version: "v0.6" | "v0.7";
  sender: string;
  nonce: bigint;
  mode: SponsorMode;
  project_id: string;
  api_key_id: string;
  strategy_id: string | null;
  token: string | null;
  exchange_rate: bigint | null;
  max_token_cost: bigint | null;
  max_cost_wei: bigint;
  valid_until: number;
  valid_after: number;
  user_op_hash: string | null;
  paymaster_and_data: string | null;
  status: SponsorshipStatus;
  created_at: number;
}

// ---- statements (named: prepared once per pooled connection)

interface Statement {
  readonly name: string;
  readonly text: string;
}

const SPONSORSHIP_COLUMNS = `id, network, entry_point, version, sender, nonce, mode, project_id, api_key_id, strategy_id,
  token, exchange_rate, max_token_cost, max_cost_wei, valid_until, valid_after, user_op_hash, paymaster_and_data,
  status, created_at`;
const STRATEGY_COLUMNS = "id, project_id, code, name, status, valid_from, valid_until, networks, created_at";
const TOKEN_COLUMNS = "network, address, symbol, decimals, price_source, markup_bps, enabled";

function statements<T extends Record<string, string>>(texts: T): { readonly [K in keyof T]: Statement } {
  return Object.freeze(
    Object.fromEntries(Object.entries(texts).map(([key, text]) => [key, { name: `pm_${key}`, text }])),
  ) as { readonly [K in keyof T]: Statement };
}

const SQL = statements({
  insertProject: "INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3)",
  selectProject: "SELECT id, name, created_at FROM projects WHERE id = $1",

  insertApiKey: `INSERT INTO api_keys (id, project_id, key_hash, prefix, label, status, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)`,
  selectApiKeyByHash: "SELECT id, project_id, prefix, label, status, created_at FROM api_keys WHERE key_hash = $1",
  selectApiKeyExists: "SELECT 1 FROM api_keys WHERE id = $1",
  revokeApiKey: "UPDATE api_keys SET status = 'revoked', revoked_at = $1 WHERE id = $2 AND status = 'active'",

  insertStrategy: `INSERT INTO strategies (id, project_id, code, name, status, valid_from, valid_until, networks, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
  selectStrategyByCode: `SELECT ${STRATEGY_COLUMNS} FROM strategies WHERE code = $1`,
  updateStrategyStatus: "UPDATE strategies SET status = $1 WHERE id = $2",

  deleteTokenSymbolElsewhere: "DELETE FROM tokens WHERE network = $1 AND symbol_key = $2 AND address <> $3",
  upsertToken: `INSERT INTO tokens (network, address, symbol, decimals, price_source, markup_bps, enabled, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (network, address) DO UPDATE SET
      symbol = EXCLUDED.symbol, decimals = EXCLUDED.decimals, price_source = EXCLUDED.price_source,
      markup_bps = EXCLUDED.markup_bps, enabled = EXCLUDED.enabled, updated_at = EXCLUDED.updated_at`,
  selectTokens: `SELECT ${TOKEN_COLUMNS} FROM tokens WHERE network = $1 ORDER BY symbol_key COLLATE "C"`,
  selectTokenByAddress: `SELECT ${TOKEN_COLUMNS} FROM tokens WHERE network = $1 AND address = $2`,
  selectTokenBySymbol: `SELECT ${TOKEN_COLUMNS} FROM tokens WHERE network = $1 AND symbol_key = $2`,

  selectTank: "SELECT balance_wei, reserved_wei FROM gas_tanks WHERE network = $1 AND sender = $2",
  lockTank: "SELECT balance_wei, reserved_wei FROM gas_tanks WHERE network = $1 AND sender = $2 FOR UPDATE",
  insertEmptyTank: `INSERT INTO gas_tanks (network, sender, balance_wei, reserved_wei, updated_at)
    VALUES ($1, $2, 0, 0, $3) ON CONFLICT (network, sender) DO NOTHING`,
  creditTank: `INSERT INTO gas_tanks (network, sender, balance_wei, reserved_wei, updated_at) VALUES ($1, $2, $3, 0, $4)
    ON CONFLICT (network, sender) DO UPDATE SET
      balance_wei = gas_tanks.balance_wei + EXCLUDED.balance_wei, updated_at = EXCLUDED.updated_at
    RETURNING balance_wei, reserved_wei`,
  updateTankReserved: "UPDATE gas_tanks SET reserved_wei = $1, updated_at = $2 WHERE network = $3 AND sender = $4",
  insertCredit: `INSERT INTO gas_tank_credits (reference, network, sender, amount_wei, created_at)
    VALUES ($1, $2, $3, $4, $5) ON CONFLICT (reference) DO NOTHING`,
  selectCredit: "SELECT network, sender, amount_wei FROM gas_tank_credits WHERE reference = $1",

  selectActiveOp: `SELECT id, mode, max_cost_wei FROM sponsorships
    WHERE network = $1 AND entry_point = $2 AND sender = $3 AND nonce = $4 AND status IN ('reserved', 'signed')`,
  lockActiveOp: `SELECT id, mode, max_cost_wei FROM sponsorships
    WHERE network = $1 AND entry_point = $2 AND sender = $3 AND nonce = $4 AND status IN ('reserved', 'signed')
    FOR UPDATE`,
  releaseActive: `UPDATE sponsorships SET status = 'released', updated_at = $1
    WHERE id = $2 AND status IN ('reserved', 'signed') RETURNING mode, max_cost_wei`,
  insertSponsorship: `INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id,
      api_key_id, strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, valid_until, valid_after, status,
      created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 'reserved', $17, $17)`,
  markSigned: `UPDATE sponsorships SET status = 'signed', user_op_hash = $1, paymaster_and_data = $2, updated_at = $3
    WHERE id = $4 AND status = 'reserved'`,
  selectSponsorshipStatus: "SELECT status FROM sponsorships WHERE id = $1",
  selectSponsorshipForRelease: "SELECT network, sender, mode, status FROM sponsorships WHERE id = $1",
  selectSponsorship: `SELECT ${SPONSORSHIP_COLUMNS} FROM sponsorships WHERE id = $1`,
  selectSponsorshipByHash: `SELECT ${SPONSORSHIP_COLUMNS} FROM sponsorships WHERE user_op_hash = $1
    ORDER BY (status = 'released'), created_at DESC, seq DESC LIMIT 1`,
});

// ---- helpers (validation mirrors sqlite.ts, so both stores refuse the same input the same way)

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
  if (value > UINT256_MAX) invalid(`${what} does not fit in 256 bits`);
  return value;
}

function optionalNonNegative(value: unknown, what: string): bigint | null {
  return value === null || value === undefined ? null : nonNegative(value, what);
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

function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function constraintOf(err: unknown): string | undefined {
  const constraint = (err as { constraint?: unknown } | null)?.constraint;
  return typeof constraint === "string" ? constraint : undefined;
}

/** Conflicts that a fresh attempt of the same transaction resolves. */
function isTransient(err: unknown): boolean {
  const state = sqlState(err);
  return state === SERIALIZATION_FAILURE || state === DEADLOCK_DETECTED;
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
    networks: row.networks,
    createdAt: row.created_at,
  };
}

function toToken(row: TokenRow): Token {
  return {
    network: row.network,
    symbol: row.symbol,
    address: row.address as Address,
    decimals: row.decimals,
    priceSource: row.price_source,
    markupBps: row.markup_bps,
    enabled: row.enabled,
  };
}

function toSponsorship(row: SponsorshipRow): SponsorshipRecord {
  return {
    id: row.id,
    network: row.network,
    entryPoint: row.entry_point as Address,
    version: row.version,
    sender: row.sender as Address,
    nonce: row.nonce,
    mode: row.mode,
    projectId: row.project_id,
    apiKeyId: row.api_key_id,
    strategyId: row.strategy_id,
    token: row.token as Address | null,
    exchangeRate: row.exchange_rate,
    maxTokenCost: row.max_token_cost,
    maxCostWei: row.max_cost_wei,
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

/**
 * Type parsing for this pool only (the global `pg.types` stays untouched): NUMERIC (amounts, scale 0) as bigint,
 * BIGINT (unix seconds, counts) as number — the store only writes safe integers there.
 */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === NUMERIC_OID) return (value: string) => BigInt(value);
    if (oid === INT8_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig["getTypeParser"],
};

/** Applies the migrations the database has not seen yet, in one transaction under an advisory lock. */
async function migrate(pool: pg.Pool, migrations: readonly Migration[]): Promise<void> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    try {
      // Held until COMMIT/ROLLBACK: a second process opening the same database waits here, then sees the result.
      await client.query("SELECT pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK_KEY]);
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version     INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        applied_at  BIGINT NOT NULL
      )`);
      const { rows } = await client.query<{ v: number }>(
        "SELECT COALESCE(MAX(version), 0)::integer AS v FROM schema_migrations",
      );
      const applied = rows[0]?.v ?? 0;
      const known = migrations.at(-1)?.version ?? 0;
      if (applied > known) {
        throw new StoreError(
          "SCHEMA_TOO_NEW",
          `database schema version ${applied} is newer than this service knows (${known}); upgrade the service`,
        );
      }
      for (const m of migrations) {
        if (m.version <= applied) continue;
        await client.query(m.sql);
        await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
          m.version,
          m.name,
          nowSeconds(),
        ]);
      }
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      throw err;
    }
  } finally {
    client.release(broken);
  }
}

/**
 * Opens the PostgreSQL store at `url` (postgres://user:password@host:port/database?…), applying any pending
 * migration. The pool holds up to 10 connections (pg's default).
 */
export async function openPostgresStore(url: string): Promise<Store> {
  const pool = new pg.Pool({ connectionString: url, types: TYPES, application_name: "paymaster" });
  // A pooled connection that breaks while idle (server restart, network) is dropped by the pool, which then
  // emits "error"; without a listener that event would crash the process. The next query opens a new one.
  pool.on("error", () => {});
  try {
    await migrate(pool, POSTGRES_MIGRATIONS);
    return new PostgresStore(pool);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
}

type Queryable = pg.Pool | PoolClient;

/** What a transaction body is given: its connection, and a way to end with ROLLBACK instead of COMMIT. */
interface Tx {
  client: PoolClient;
  rollbackOnly(): void;
}

class PostgresStore implements Store {
  readonly #pool: pg.Pool;
  #closed = false;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async #query<R extends QueryResultRow>(
    on: Queryable,
    statement: Statement,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    return on.query<R>({ name: statement.name, text: statement.text, values });
  }

  async #one<R extends QueryResultRow>(on: Queryable, statement: Statement, values: unknown[]): Promise<R | undefined> {
    return (await this.#query<R>(on, statement, values)).rows[0];
  }

  /**
   * Runs `body` in BEGIN … COMMIT (READ COMMITTED) on one pooled connection; any throw rolls back. A transient
   * conflict (`retryable`, by default a serialization failure or a deadlock) runs the whole body again, after a
   * short random pause, up to MAX_ATTEMPTS times in all.
   */
  async #transaction<T>(body: (tx: Tx) => Promise<T>, retryable: (err: unknown) => boolean = isTransient): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.#pool.connect();
      let broken = false;
      let retry = false;
      try {
        await client.query("BEGIN");
        let rollback = false;
        const result = await body({
          client,
          rollbackOnly: () => {
            rollback = true;
          },
        });
        await client.query(rollback ? "ROLLBACK" : "COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {
          broken = true; // the connection is unusable: do not give it back to the pool
        });
        if (attempt >= MAX_ATTEMPTS || !(isTransient(err) || retryable(err))) throw err;
        retry = true;
      } finally {
        client.release(broken);
      }
      if (retry) await sleep(Math.random() * 2 * attempt);
    }
  }

  // ---- projects and API keys

  async createProject(name: string): Promise<Project> {
    if (typeof name !== "string" || name.trim() === "") invalid("project name must be a non-empty string");
    const project: Project = { id: randomUUID(), name, createdAt: nowSeconds() };
    await this.#query(this.#pool, SQL.insertProject, [project.id, project.name, project.createdAt]);
    return project;
  }

  async getProject(id: string): Promise<Project | undefined> {
    const row = await this.#one<ProjectRow>(this.#pool, SQL.selectProject, [id]);
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
      await this.#query(this.#pool, SQL.insertApiKey, [
        apiKey.id,
        apiKey.projectId,
        sha256Hex(plaintext),
        apiKey.prefix,
        apiKey.label,
        apiKey.status,
        apiKey.createdAt,
      ]);
    } catch (err) {
      if (sqlState(err) === FOREIGN_KEY_VIOLATION) throw new StoreError("NOT_FOUND", `project ${projectId} not found`);
      throw err;
    }
    return { apiKey, plaintext };
  }

  async findApiKey(plaintext: string): Promise<ApiKey | undefined> {
    if (typeof plaintext !== "string" || plaintext.length === 0 || plaintext.length > API_KEY_MAX_LENGTH) {
      return undefined;
    }
    const row = await this.#one<ApiKeyRow>(this.#pool, SQL.selectApiKeyByHash, [sha256Hex(plaintext)]);
    return row && toApiKey(row);
  }

  async revokeApiKey(id: string): Promise<void> {
    const result = await this.#query(this.#pool, SQL.revokeApiKey, [nowSeconds(), id]);
    if (result.rowCount === 0 && (await this.#one(this.#pool, SQL.selectApiKeyExists, [id])) === undefined) {
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
      await this.#query(this.#pool, SQL.insertStrategy, [
        strategy.id,
        strategy.projectId,
        strategy.code,
        strategy.name,
        strategy.status,
        strategy.validFrom,
        strategy.validUntil,
        strategy.networks === null ? null : JSON.stringify(strategy.networks),
        strategy.createdAt,
      ]);
    } catch (err) {
      if (sqlState(err) === UNIQUE_VIOLATION) {
        throw new StoreError("DUPLICATE", `a strategy with code "${input.code}" already exists`);
      }
      if (sqlState(err) === FOREIGN_KEY_VIOLATION) throw new StoreError("NOT_FOUND", `project ${input.projectId} not found`);
      throw err;
    }
    return strategy;
  }

  async getStrategyByCode(code: string): Promise<Strategy | undefined> {
    const row = await this.#one<StrategyRow>(this.#pool, SQL.selectStrategyByCode, [code]);
    return row && toStrategy(row);
  }

  async setStrategyStatus(id: string, status: StrategyStatus): Promise<void> {
    if (!STRATEGY_STATUSES.has(status)) invalid(`strategy status must be "enabled" or "disabled"`);
    const result = await this.#query(this.#pool, SQL.updateStrategyStatus, [status, id]);
    if (result.rowCount === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
  }

  // ---- tokens

  /**
   * Inserts or updates the token at (network, address). A symbol names one token per network
   * (case-insensitively): upserting a different address under a symbol already used replaces that older row.
   * Two concurrent upserts may both miss the other's uncommitted row and collide on a unique index; the loser
   * runs again and then sees (and replaces) the winner's row.
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
    await this.#transaction(
      async ({ client }) => {
        await this.#query(client, SQL.deleteTokenSymbolElsewhere, [token.network, asciiLower(token.symbol), addr]);
        await this.#query(client, SQL.upsertToken, [
          token.network,
          addr,
          token.symbol,
          token.decimals,
          priceSource,
          token.markupBps,
          token.enabled,
          nowSeconds(),
        ]);
      },
      (err) => sqlState(err) === UNIQUE_VIOLATION,
    );
  }

  async listTokens(network: string): Promise<Token[]> {
    return (await this.#query<TokenRow>(this.#pool, SQL.selectTokens, [network])).rows.map(toToken);
  }

  async findToken(network: string, symbolOrAddress: string): Promise<Token | undefined> {
    if (typeof symbolOrAddress !== "string" || symbolOrAddress === "") return undefined;
    const row = isAddress(symbolOrAddress, { strict: false })
      ? await this.#one<TokenRow>(this.#pool, SQL.selectTokenByAddress, [network, getAddress(symbolOrAddress)])
      : await this.#one<TokenRow>(this.#pool, SQL.selectTokenBySymbol, [network, asciiLower(symbolOrAddress)]);
    return row && toToken(row);
  }

  // ---- gas tanks

  /**
   * The credit row is the idempotency key: inserted ON CONFLICT DO NOTHING, so of two concurrent credits with
   * one reference exactly one inserts (the other waits for it, then finds it); only the inserter adds to the
   * balance, in one atomic upsert.
   */
  async creditGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
    const who = address(sender, "sender");
    if (typeof amountWei !== "bigint" || amountWei <= 0n) invalid("credit amount must be a positive bigint (wei)");
    if (amountWei > UINT256_MAX) invalid("credit amount does not fit in 256 bits");
    if (typeof reference !== "string" || reference === "") invalid("credit reference must be a non-empty string");
    try {
      return await this.#transaction(async ({ client }): Promise<GasTank> => {
        const now = nowSeconds();
        const inserted = await this.#query(client, SQL.insertCredit, [reference, network, who, amountWei, now]);
        if (inserted.rowCount === 0) {
          const prior = await this.#one<{ network: string; sender: string; amount_wei: bigint }>(
            client,
            SQL.selectCredit,
            [reference],
          );
          if (prior && (prior.network !== network || prior.sender !== who || prior.amount_wei !== amountWei)) {
            throw new StoreError(
              "CONFLICT",
              `credit reference "${reference}" was already used for ${prior.amount_wei} wei to ${prior.sender} on ${prior.network}`,
            );
          }
          return this.#tank(client, network, who);
        }
        const tank = await this.#one<TankRow>(client, SQL.creditTank, [network, who, amountWei, now]);
        return { network, sender: who, balanceWei: tank!.balance_wei, reservedWei: tank!.reserved_wei };
      });
    } catch (err) {
      if (sqlState(err) === NUMERIC_VALUE_OUT_OF_RANGE) invalid("the tank's balance would not fit in the database");
      throw err;
    }
  }

  async getGasTank(network: string, sender: Address): Promise<GasTank> {
    return this.#tank(this.#pool, network, address(sender, "sender"));
  }

  async #tank(on: Queryable, network: string, sender: Address): Promise<GasTank> {
    const row = await this.#one<TankRow>(on, SQL.selectTank, [network, sender]);
    return { network, sender, balanceWei: row?.balance_wei ?? 0n, reservedWei: row?.reserved_wei ?? 0n };
  }

  // ---- sponsorships

  /**
   * One READ COMMITTED transaction with row locks, in a fixed order: the tank row first, then the active
   * sponsorship of the op.
   *
   * - User mode: lock the sender's tank (`SELECT … FOR UPDATE`; a missing tank is inserted ON CONFLICT DO NOTHING
   *   and then locked, unless nothing could fit in it anyway). Every transaction that changes this tank's
   *   `reserved_wei` holds this lock, so the balance and reserved amount read under it stay true until COMMIT:
   *   reservations against one tank queue here, across connections and processes, and never over-reserve.
   * - Other modes lock the tank only when the op's active sponsorship is a user-mode one (its reservation is
   *   given back). That is learned from an unlocked read first, so the tank is still locked before the
   *   sponsorship row; should the locked row then turn out to be user-mode after all (it changed in between),
   *   the attempt is abandoned and run again.
   * - The active sponsorship of (network, entryPoint, sender, nonce) is then locked, so a concurrent release or
   *   replacement of it waits for this transaction (or this one for it: under READ COMMITTED a row that stopped
   *   being active while we waited is simply not returned). Two first reservations of one op can both find
   *   none; the partial unique index lets only one insert, and the other retries and replaces it.
   *
   * A refusal (GAS_TANK_INSUFFICIENT) ends in ROLLBACK: nothing is written, the earlier sponsorship stays.
   */
  async reserveSponsorship(input: NewSponsorship): Promise<ReserveResult> {
    if (!SPONSOR_MODES.has(input.mode)) invalid(`mode must be one of sponsor, erc20, user`);
    if (!VERSIONS.has(input.version)) invalid(`version must be v0.6 or v0.7`);
    const entryPoint = address(input.entryPoint, "entryPoint");
    const sender = address(input.sender, "sender");
    const nonce = nonNegative(input.nonce, "nonce");
    const maxCostWei = nonNegative(input.maxCostWei, "maxCostWei");
    const token = input.token === null || input.token === undefined ? null : address(input.token, "token");
    const exchangeRate = optionalNonNegative(input.exchangeRate, "exchangeRate");
    const maxTokenCost = optionalNonNegative(input.maxTokenCost, "maxTokenCost");
    const validUntil = unixSeconds(input.validUntil, "validUntil");
    const validAfter = unixSeconds(input.validAfter, "validAfter");
    const { network } = input;
    if (typeof network !== "string" || network === "") invalid("network must be a non-empty string");
    const opKey = [network, entryPoint, sender, nonce];

    try {
      return await this.#transaction(
        async ({ client, rollbackOnly }): Promise<ReserveResult> => {
          type Active = { id: string; mode: SponsorMode; max_cost_wei: bigint };
          let tank: TankRow | undefined;
          let tankLocked = false;
          if (input.mode === "user") {
            tank = await this.#one<TankRow>(client, SQL.lockTank, [network, sender]);
            if (!tank && maxCostWei > 0n) {
              // No tank: nothing fits (a tank-less sender has no user-mode reservation to give back either).
              rollbackOnly();
              return { ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 0n, requiredWei: maxCostWei };
            }
            if (!tank) {
              await this.#query(client, SQL.insertEmptyTank, [network, sender, nowSeconds()]);
              tank = await this.#one<TankRow>(client, SQL.lockTank, [network, sender]);
            }
            tankLocked = true;
          } else {
            const peek = await this.#one<Active>(client, SQL.selectActiveOp, opKey);
            if (peek?.mode === "user") {
              tank = await this.#one<TankRow>(client, SQL.lockTank, [network, sender]);
              tankLocked = true;
            }
          }
          const previous = await this.#one<Active>(client, SQL.lockActiveOp, opKey);
          if (previous?.mode === "user" && !tankLocked) throw new LockOrderRetry();
          const freedWei = previous?.mode === "user" ? previous.max_cost_wei : 0n;

          let reservedWei = tank ? tank.reserved_wei : 0n;
          reservedWei = reservedWei > freedWei ? reservedWei - freedWei : 0n;
          if (input.mode === "user") {
            const balanceWei = tank ? tank.balance_wei : 0n;
            const availableWei = balanceWei > reservedWei ? balanceWei - reservedWei : 0n;
            if (availableWei < maxCostWei) {
              rollbackOnly(); // nothing written: the earlier sponsorship stays active
              return { ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei, requiredWei: maxCostWei };
            }
            reservedWei += maxCostWei;
          }

          const now = nowSeconds();
          if (previous) await this.#query(client, SQL.releaseActive, [now, previous.id]);
          if (tank && (input.mode === "user" || freedWei > 0n)) {
            await this.#query(client, SQL.updateTankReserved, [reservedWei, now, network, sender]);
          }
          const record: SponsorshipRecord = {
            id: randomUUID(),
            network,
            entryPoint,
            version: input.version,
            sender,
            nonce,
            mode: input.mode,
            projectId: input.projectId,
            apiKeyId: input.apiKeyId,
            strategyId: input.strategyId ?? null,
            token,
            exchangeRate,
            maxTokenCost,
            maxCostWei,
            validUntil,
            validAfter,
            userOpHash: null,
            paymasterAndData: null,
            status: "reserved",
            createdAt: now,
          };
          await this.#query(client, SQL.insertSponsorship, [
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
            maxCostWei,
            validUntil,
            validAfter,
            now,
          ]);
          return { ok: true, record, replaced: previous?.id ?? null };
        },
        (err) =>
          err instanceof LockOrderRetry ||
          (sqlState(err) === UNIQUE_VIOLATION && constraintOf(err) === "sponsorships_active_op"),
      );
    } catch (err) {
      if (sqlState(err) === FOREIGN_KEY_VIOLATION) {
        throw new StoreError("NOT_FOUND", "sponsorship refers to an unknown project, API key or strategy");
      }
      throw err;
    }
  }

  async markSigned(id: string, signed: { userOpHash: Hex; paymasterAndData: Hex }): Promise<void> {
    if (typeof signed.userOpHash !== "string" || !BYTES32_RE.test(signed.userOpHash)) {
      invalid("userOpHash must be 32 bytes of 0x-hex");
    }
    if (typeof signed.paymasterAndData !== "string" || !HEX_BYTES_RE.test(signed.paymasterAndData)) {
      invalid("paymasterAndData must be 0x-hex bytes");
    }
    const result = await this.#query(this.#pool, SQL.markSigned, [
      signed.userOpHash.toLowerCase(),
      signed.paymasterAndData,
      nowSeconds(),
      id,
    ]);
    if (result.rowCount === 1) return;
    const row = await this.#one<{ status: SponsorshipStatus }>(this.#pool, SQL.selectSponsorshipStatus, [id]);
    if (!row) throw new StoreError("NOT_FOUND", `sponsorship ${id} not found`);
    throw new StoreError("INVALID_STATE", `sponsorship ${id} is ${row.status}, not reserved: it cannot be signed`);
  }

  /**
   * Idempotent: releasing a released, settled or unknown sponsorship changes nothing. A user-mode one gives its
   * reservation back to the tank in the same transaction, the tank locked first (the order reserve uses); the
   * status change itself is conditional, so of two concurrent releases only one gives back.
   */
  async releaseSponsorship(id: string): Promise<void> {
    const row = await this.#one<{ network: string; sender: string; mode: SponsorMode; status: SponsorshipStatus }>(
      this.#pool,
      SQL.selectSponsorshipForRelease,
      [id],
    );
    if (!row || (row.status !== "reserved" && row.status !== "signed")) return;
    if (row.mode !== "user") {
      await this.#query(this.#pool, SQL.releaseActive, [nowSeconds(), id]);
      return;
    }
    await this.#transaction(async ({ client }) => {
      const tank = await this.#one<TankRow>(client, SQL.lockTank, [row.network, row.sender]);
      const now = nowSeconds();
      const released = await this.#one<{ max_cost_wei: bigint }>(client, SQL.releaseActive, [now, id]);
      if (!released || !tank) return;
      const reserved = tank.reserved_wei - released.max_cost_wei;
      await this.#query(client, SQL.updateTankReserved, [reserved > 0n ? reserved : 0n, now, row.network, row.sender]);
    });
  }

  async getSponsorship(id: string): Promise<SponsorshipRecord | undefined> {
    const row = await this.#one<SponsorshipRow>(this.#pool, SQL.selectSponsorship, [id]);
    return row && toSponsorship(row);
  }

  /**
   * The sponsorship signed with that userOpHash. Should two share it, the active or settled one wins over a
   * released one, then the newest (as in sqlite.ts).
   */
  async findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined> {
    if (typeof userOpHash !== "string" || !BYTES32_RE.test(userOpHash)) return undefined;
    const row = await this.#one<SponsorshipRow>(this.#pool, SQL.selectSponsorshipByHash, [userOpHash.toLowerCase()]);
    return row && toSponsorship(row);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }
}

/** Thrown inside a reservation that found it would have to take the tank lock after a sponsorship lock. */
class LockOrderRetry extends Error {
  override name = "LockOrderRetry";
}
