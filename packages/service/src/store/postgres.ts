/**
 * The store on PostgreSQL, for several service replicas sharing one database (DATABASE_URL). Same `Store`
 * interface and the same semantics as the SQLite store (sqlite.ts): validation, row conversion and the
 * accounting (what each transition does to usage rows and tanks, the cap checks) are common.ts, used by both.
 *
 * Driver: `pg` (node-postgres), the widely used PostgreSQL driver for Node, pure JavaScript (no native addon to
 * build: `pg-native` is never loaded). One `Pool` per store; every query is a named prepared statement, so each
 * pooled connection parses it once.
 *
 * Schema: ordered migrations in `schema_migrations`, applied in one transaction that first takes a
 * transaction-level advisory lock, so two processes starting together on an empty database serialise (the
 * second finds the migrations applied). Amounts (wei, USD micro-units, token base units, nonces, exchange rates)
 * are NUMERIC(78,0) — every uint256 fits — and converted to bigint at this boundary (the pool's type parser turns
 * NUMERIC into bigint and BIGINT, used for unix seconds, counts and block numbers, into number). JSON columns
 * are read as text (`::text`), as SQLite stores them. Addresses are stored checksummed, hashes lowercase.
 *
 * Concurrency (the reason this exists): transactions run at READ COMMITTED with explicit row locks rather than
 * SERIALIZABLE. Serializable would be correct too, but every conflicting pair of reservations on one tank or
 * one cap would abort one of them (a retry storm exactly when a cap is busy); row locks make them queue instead,
 * and the outcome is the same. Every transaction that takes several of these locks takes them in one order:
 *
 *   1. the gas tank row (network, sender) — User Sponsor mode;
 *   2. the strategy usage rows, in `lockOrder` (common.ts: sorted by strategy_id, scope, key);
 *   3. sponsorship rows: the op's active sponsorship (reserve), or the sponsorship being released, settled or
 *      un-settled and then (unsettle only) the op's active one.
 *
 * (A credit row is locked before its tank: creditGasTank, revertGasTankCredit.) So two transactions can wait on
 * each other only in one direction: no deadlock. What must be locked is learned from unlocked reads of what
 * never changes once written (a sponsorship's mode, network, sender and the usage rows it is linked to); where
 * that can go stale — the op's active sponsorship replaced between the look and the lock — the attempt is
 * abandoned and run again (`LockOrderRetry`). Also retried, a bounded number of times: two first reservations
 * of one op racing on the partial unique index (the loser retries and replaces the winner), and, defensively,
 * serialization failures or deadlocks reported by the server.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { PoolClient, QueryResultRow } from "pg";
import { getAddress, isAddress } from "viem";
import type { Address, Hex } from "@paymaster/shared";

import type { CapCheck, StrategyRules } from "../policy/types.ts";
import * as common from "./common.ts";
import { StoreError } from "./errors.ts";
import type { Migration } from "./migrations.ts";
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

/** A transaction that hit a transient conflict is tried again, at most this many times in all. */
const MAX_ATTEMPTS = 10;
/** releaseExpired looks for expired sponsorships this many at a time. */
const EXPIRY_BATCH = 500;
/** Key of the advisory lock that serialises migrations ("paymastr" in ASCII). */
const MIGRATION_LOCK_KEY = "8097880582120927346";

/** First key of the leadership advisory locks ("pmld"); the second is hashtext(name). */
const LEADER_LOCK_NAMESPACE = 0x706d6c64;
/** A leader's dedicated connection is checked this often; a failed check ends the leadership. */
const LEADER_HEARTBEAT_MS = 2_000;

// PostgreSQL type OIDs and SQLSTATEs.
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const UNIQUE_VIOLATION = "23505";
const FOREIGN_KEY_VIOLATION = "23503";
const NUMERIC_VALUE_OUT_OF_RANGE = "22003";
const SERIALIZATION_FAILURE = "40001";
const DEADLOCK_DETECTED = "40P01";

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
  {
    version: 2,
    name: "strategy rules, usage and caps, settlement, cursors",
    sql: `
      -- StrategyRules (policy/schema.ts serializeRules); {} = no rules.
      ALTER TABLE strategies ADD COLUMN rules JSONB NOT NULL DEFAULT '{}';

      -- A settlement debits the tank by what the chain charged, which may exceed what it holds, and a reverted
      -- credit may already be spent: the balance may go negative (a debt), so the check goes.
      ALTER TABLE gas_tanks DROP CONSTRAINT gas_tanks_balance_wei_check;

      ALTER TABLE sponsorships
        -- maxCostWei in USD micro-units (1e-6 USD) at the native price when reserved: what USD caps hold.
        ADD COLUMN max_cost_usd_micros NUMERIC(78, 0) NOT NULL DEFAULT 0 CHECK (max_cost_usd_micros >= 0),
        -- Why a released sponsorship was released; kept if it is settled afterwards (its signature landed anyway).
        ADD COLUMN release_reason TEXT CHECK (release_reason IN ('released', 'replaced', 'expired')),
        -- The settlement (status 'settled' only; cleared when un-settled): what the chain charged, and where.
        ADD COLUMN actual_gas_cost_wei NUMERIC(78, 0),
        ADD COLUMN actual_cost_usd_micros NUMERIC(78, 0),
        ADD COLUMN actual_token_cost NUMERIC(78, 0),
        ADD COLUMN settled_success BOOLEAN,
        ADD COLUMN settled_tx_hash TEXT,                  -- lowercase hex
        ADD COLUMN settled_block_number BIGINT,
        ADD COLUMN settled_block_hash TEXT,               -- lowercase hex
        ADD COLUMN settled_log_index INTEGER,
        ADD COLUMN settled_at BIGINT;
      CREATE INDEX sponsorships_settled_block ON sponsorships(network, settled_block_number) WHERE status = 'settled';

      -- A strategy's totals per cap scope (see store/common.ts): active reservations, settled spending, ops.
      CREATE TABLE strategy_usage (
        strategy_id          TEXT NOT NULL REFERENCES strategies(id),
        scope                TEXT NOT NULL CHECK (scope IN ('global', 'daily', 'perSender')),
        key                  TEXT NOT NULL,     -- '' (global), 'YYYY-MM-DD' (daily, UTC), checksummed sender
        reserved_wei         NUMERIC(78, 0) NOT NULL CHECK (reserved_wei >= 0),
        spent_wei            NUMERIC(78, 0) NOT NULL CHECK (spent_wei >= 0),
        reserved_usd_micros  NUMERIC(78, 0) NOT NULL CHECK (reserved_usd_micros >= 0),
        spent_usd_micros     NUMERIC(78, 0) NOT NULL CHECK (spent_usd_micros >= 0),
        ops                  BIGINT NOT NULL CHECK (ops >= 0),
        updated_at           BIGINT NOT NULL,
        PRIMARY KEY (strategy_id, scope, key)
      );

      -- The usage rows a sponsorship was reserved in (one per cap check), fixed when it is reserved: its release,
      -- settlement and un-settlement change exactly these rows, even after the UTC day has turned.
      CREATE TABLE sponsorship_usage (
        sponsorship_id  TEXT NOT NULL REFERENCES sponsorships(id),
        strategy_id     TEXT NOT NULL,
        scope           TEXT NOT NULL,
        key             TEXT NOT NULL,
        PRIMARY KEY (sponsorship_id, strategy_id, scope, key),
        FOREIGN KEY (strategy_id, scope, key) REFERENCES strategy_usage(strategy_id, scope, key)
      );

      -- Named positions (e.g. the last block a watcher fully processed).
      CREATE TABLE cursors (
        name        TEXT PRIMARY KEY,
        value       NUMERIC(78, 0) NOT NULL CHECK (value >= 0),
        updated_at  BIGINT NOT NULL
      );
    `,
  },
]);

// ---- statements (named: prepared once per pooled connection)

interface Statement {
  readonly name: string;
  readonly text: string;
}

const STRATEGY_COLUMNS =
  "id, project_id, code, name, status, valid_from, valid_until, networks::text AS networks, rules::text AS rules, created_at";
const TOKEN_COLUMNS = "network, address, symbol, decimals, price_source::text AS price_source, markup_bps, enabled";
const USAGE_COLUMNS = "reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros, ops";
const ACTIVE_OP = `SELECT id, mode, max_cost_wei, max_cost_usd_micros FROM sponsorships
    WHERE network = $1 AND entry_point = $2 AND sender = $3 AND nonce = $4 AND status IN ('reserved', 'signed')`;

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

  insertStrategy: `INSERT INTO strategies (id, project_id, code, name, status, valid_from, valid_until, networks, rules,
      created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
  selectStrategyByCode: `SELECT ${STRATEGY_COLUMNS} FROM strategies WHERE code = $1`,
  selectStrategies: `SELECT ${STRATEGY_COLUMNS} FROM strategies ORDER BY code`,
  countSponsorships: "SELECT network, mode, version, status, COUNT(*) AS count FROM sponsorships GROUP BY network, mode, version, status",
  sumTanks: `SELECT network, SUM(balance_wei) AS balance_wei, SUM(reserved_wei) AS reserved_wei, COUNT(*) AS tanks
    FROM gas_tanks GROUP BY network`,
  sumOutstanding: `SELECT COALESCE(SUM(max_cost_wei), 0) AS total FROM sponsorships
    WHERE network = $1 AND entry_point = $2 AND status IN ('reserved', 'signed') AND mode = ANY($3::text[])`,
  updateStrategyStatus: "UPDATE strategies SET status = $1 WHERE id = $2",
  updateStrategyRules: "UPDATE strategies SET rules = $1 WHERE id = $2",

  selectUsage: `SELECT ${USAGE_COLUMNS} FROM strategy_usage WHERE strategy_id = $1 AND scope = $2 AND key = $3`,
  lockUsage: `SELECT ${USAGE_COLUMNS} FROM strategy_usage WHERE strategy_id = $1 AND scope = $2 AND key = $3 FOR UPDATE`,
  // Creates the row if missing, and locks it either way (ON CONFLICT DO UPDATE locks the existing row).
  upsertLockUsage: `INSERT INTO strategy_usage (strategy_id, scope, key, reserved_wei, spent_wei, reserved_usd_micros,
      spent_usd_micros, ops, updated_at)
    VALUES ($1, $2, $3, 0, 0, 0, 0, 0, $4)
    ON CONFLICT (strategy_id, scope, key) DO UPDATE SET updated_at = strategy_usage.updated_at
    RETURNING ${USAGE_COLUMNS}`,
  updateUsage: `UPDATE strategy_usage SET reserved_wei = $4, spent_wei = $5, reserved_usd_micros = $6,
      spent_usd_micros = $7, ops = $8, updated_at = $9
    WHERE strategy_id = $1 AND scope = $2 AND key = $3`,
  selectLinks: `SELECT strategy_id AS "strategyId", scope, key FROM sponsorship_usage WHERE sponsorship_id = $1`,
  insertLink: "INSERT INTO sponsorship_usage (sponsorship_id, strategy_id, scope, key) VALUES ($1, $2, $3, $4)",

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
  updateTank: "UPDATE gas_tanks SET balance_wei = $1, reserved_wei = $2, updated_at = $3 WHERE network = $4 AND sender = $5",
  insertCredit: `INSERT INTO gas_tank_credits (reference, network, sender, amount_wei, created_at)
    VALUES ($1, $2, $3, $4, $5) ON CONFLICT (reference) DO NOTHING`,
  selectCredit: "SELECT network, sender, amount_wei FROM gas_tank_credits WHERE reference = $1",
  deleteCredit: "DELETE FROM gas_tank_credits WHERE reference = $1 RETURNING network, sender, amount_wei",

  selectActiveOp: ACTIVE_OP,
  lockActiveOp: `${ACTIVE_OP} FOR UPDATE`,
  releaseActive: `UPDATE sponsorships SET status = 'released', release_reason = $1, updated_at = $2
    WHERE id = $3 AND status IN ('reserved', 'signed')`,
  insertSponsorship: `INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id,
      api_key_id, strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, max_cost_usd_micros, valid_until,
      valid_after, status, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 'reserved', $18, $18)`,
  markSigned: `UPDATE sponsorships SET status = 'signed', user_op_hash = $1, paymaster_and_data = $2, updated_at = $3
    WHERE id = $4 AND status = 'reserved'`,
  settle: `UPDATE sponsorships SET status = 'settled', actual_gas_cost_wei = $1, actual_cost_usd_micros = $2,
      actual_token_cost = $3, settled_success = $4, settled_tx_hash = $5, settled_block_number = $6,
      settled_block_hash = $7, settled_log_index = $8, settled_at = $9, updated_at = $9
    WHERE id = $10`,
  unsettle: `UPDATE sponsorships SET status = $1, release_reason = $2, actual_gas_cost_wei = NULL,
      actual_cost_usd_micros = NULL, actual_token_cost = NULL, settled_success = NULL, settled_tx_hash = NULL,
      settled_block_number = NULL, settled_block_hash = NULL, settled_log_index = NULL, settled_at = NULL,
      updated_at = $3
    WHERE id = $4`,
  selectSettledSince: `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships
    WHERE network = $1 AND status = 'settled' AND settled_block_number >= $2
    ORDER BY settled_block_number, settled_log_index, seq`,
  selectExpired: `SELECT id FROM sponsorships WHERE status IN ('reserved', 'signed') AND valid_until < $1
    AND ($3::text IS NULL OR network = $3) ORDER BY valid_until LIMIT $2`,
  selectSponsorshipStatus: "SELECT status FROM sponsorships WHERE id = $1",
  selectSponsorshipPlan: "SELECT network, sender, mode FROM sponsorships WHERE id = $1",
  selectSponsorship: `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships WHERE id = $1`,
  lockSponsorship: `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships WHERE id = $1 FOR UPDATE`,
  selectSponsorshipByHash: `SELECT ${common.SPONSORSHIP_COLUMNS} FROM sponsorships WHERE user_op_hash = $1
    ORDER BY (status = 'released'), created_at DESC, seq DESC LIMIT 1`,

  selectCursor: "SELECT value FROM cursors WHERE name = $1",
  upsertCursor: `INSERT INTO cursors (name, value, updated_at) VALUES ($1, $2, $3)
    ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`,
});

// ---- helpers

/** The op's active sponsorship, as reserve reads it. */
interface ActiveRow {
  id: string;
  mode: SponsorshipRecord["mode"];
  max_cost_wei: bigint;
  max_cost_usd_micros: bigint;
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

/** A lost race for the op's one active sponsorship (partial unique index): the next attempt sees the winner. */
function isActiveOpRace(err: unknown): boolean {
  return err instanceof LockOrderRetry || (sqlState(err) === UNIQUE_VIOLATION && constraintOf(err) === "sponsorships_active_op");
}

/**
 * Type parsing for this pool only (the global `pg.types` stays untouched): NUMERIC (amounts, scale 0) as bigint,
 * BIGINT (unix seconds, counts, block numbers) as number — the store only writes safe integers there.
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
          common.nowSeconds(),
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
    return new PostgresStore(pool, url);
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

/** What a sponsorship's status change does (see #transition): the delta to apply and the statement that changes the row. */
interface Change {
  delta: common.Delta;
  statement: Statement;
  values: unknown[];
}

class PostgresStore implements Store {
  readonly #pool: pg.Pool;
  readonly #url: string;
  #closed = false;

  constructor(pool: pg.Pool, url: string) {
    this.#pool = pool;
    this.#url = url;
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
    const project: Project = { id: randomUUID(), name: common.projectName(name), createdAt: common.nowSeconds() };
    await this.#query(this.#pool, SQL.insertProject, [project.id, project.name, project.createdAt]);
    return project;
  }

  async getProject(id: string): Promise<Project | undefined> {
    const row = await this.#one<common.ProjectRow>(this.#pool, SQL.selectProject, [id]);
    return row && common.toProject(row);
  }

  async createApiKey(projectId: string, label?: string): Promise<{ apiKey: ApiKey; plaintext: string }> {
    const { apiKey, plaintext, keyHash } = common.newApiKey(projectId, label);
    try {
      await this.#query(this.#pool, SQL.insertApiKey, [
        apiKey.id,
        projectId,
        keyHash,
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
    const hash = common.apiKeyLookupHash(plaintext);
    const row = hash === undefined ? undefined : await this.#one<common.ApiKeyRow>(this.#pool, SQL.selectApiKeyByHash, [hash]);
    return row && common.toApiKey(row);
  }

  async revokeApiKey(id: string): Promise<void> {
    const result = await this.#query(this.#pool, SQL.revokeApiKey, [common.nowSeconds(), id]);
    if (result.rowCount === 0 && (await this.#one(this.#pool, SQL.selectApiKeyExists, [id])) === undefined) {
      throw new StoreError("NOT_FOUND", `API key ${id} not found`);
    }
  }

  // ---- strategies

  async createStrategy(input: NewStrategy): Promise<Strategy> {
    const { strategy, networksJson, rulesJson } = common.newStrategy(input);
    try {
      await this.#query(this.#pool, SQL.insertStrategy, [
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
      if (sqlState(err) === UNIQUE_VIOLATION) {
        throw new StoreError("DUPLICATE", `a strategy with code "${input.code}" already exists`);
      }
      if (sqlState(err) === FOREIGN_KEY_VIOLATION) throw new StoreError("NOT_FOUND", `project ${input.projectId} not found`);
      throw err;
    }
    return strategy;
  }

  async getStrategyByCode(code: string): Promise<Strategy | undefined> {
    const row = await this.#one<common.StrategyRow>(this.#pool, SQL.selectStrategyByCode, [code]);
    return row && common.toStrategy(row);
  }

  async setStrategyStatus(id: string, status: StrategyStatus): Promise<void> {
    const result = await this.#query(this.#pool, SQL.updateStrategyStatus, [common.strategyStatus(status), id]);
    if (result.rowCount === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
  }

  async setStrategyRules(id: string, rules: StrategyRules): Promise<void> {
    const result = await this.#query(this.#pool, SQL.updateStrategyRules, [common.validRules(rules).json, id]);
    if (result.rowCount === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
  }

  async getUsage(strategyId: string, scope: CapCheck["scope"], key: string): Promise<UsageTotals> {
    const row = common.scopeKey(scope, key);
    return common.toUsage(await this.#one<common.UsageRow>(this.#pool, SQL.selectUsage, [strategyId, row.scope, row.key]));
  }

  // ---- tokens

  /**
   * Inserts or updates the token at (network, address). A symbol names one token per network
   * (case-insensitively): upserting a different address under a symbol already used replaces that older row.
   * Two concurrent upserts may both miss the other's uncommitted row and collide on a unique index; the loser
   * runs again and then sees (and replaces) the winner's row.
   */
  async upsertToken(token: Token): Promise<void> {
    const { address: addr, priceSourceJson } = common.validToken(token);
    await this.#transaction(
      async ({ client }) => {
        await this.#query(client, SQL.deleteTokenSymbolElsewhere, [token.network, asciiLower(token.symbol), addr]);
        await this.#query(client, SQL.upsertToken, [
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
      (err) => sqlState(err) === UNIQUE_VIOLATION,
    );
  }

  async listTokens(network: string): Promise<Token[]> {
    return (await this.#query<common.TokenRow>(this.#pool, SQL.selectTokens, [network])).rows.map(common.toToken);
  }

  async findToken(network: string, symbolOrAddress: string): Promise<Token | undefined> {
    if (typeof symbolOrAddress !== "string" || symbolOrAddress === "") return undefined;
    const row = isAddress(symbolOrAddress, { strict: false })
      ? await this.#one<common.TokenRow>(this.#pool, SQL.selectTokenByAddress, [network, getAddress(symbolOrAddress)])
      : await this.#one<common.TokenRow>(this.#pool, SQL.selectTokenBySymbol, [network, asciiLower(symbolOrAddress)]);
    return row && common.toToken(row);
  }

  // ---- gas tanks

  /**
   * The credit row is the idempotency key: inserted ON CONFLICT DO NOTHING, so of two concurrent credits with
   * one reference exactly one inserts (the other waits for it, then finds it); only the inserter adds to the
   * balance, in one atomic upsert.
   */
  async creditGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank> {
    const { sender: who } = common.validCredit(sender, amountWei, reference);
    try {
      return await this.#transaction(async ({ client }): Promise<GasTank> => {
        const now = common.nowSeconds();
        const inserted = await this.#query(client, SQL.insertCredit, [reference, network, who, amountWei, now]);
        if (inserted.rowCount === 0) {
          const prior = await this.#one<{ network: string; sender: string; amount_wei: bigint }>(
            client,
            SQL.selectCredit,
            [reference],
          );
          if (prior && (prior.network !== network || prior.sender !== who || prior.amount_wei !== amountWei)) {
            throw common.creditConflict(reference, prior);
          }
          return this.#tank(client, network, who);
        }
        const tank = await this.#one<common.TankRow>(client, SQL.creditTank, [network, who, amountWei, now]);
        return { network, sender: who, ...common.toTank(tank) };
      });
    } catch (err) {
      if (sqlState(err) === NUMERIC_VALUE_OUT_OF_RANGE) common.invalid("the tank's balance would not fit in the database");
      throw err;
    }
  }

  /**
   * The credit row is deleted first (of two concurrent reverts one finds it), then the tank is locked and its
   * balance reduced — possibly below zero, when the credit was spent already. The reference is free again.
   */
  async revertGasTankCredit(reference: string): Promise<boolean> {
    if (typeof reference !== "string" || reference === "") return false;
    return this.#transaction(async ({ client }) => {
      const credit = await this.#one<{ network: string; sender: Address; amount_wei: bigint }>(client, SQL.deleteCredit, [
        reference,
      ]);
      if (!credit) return false;
      const tank = await this.#lockTank(client, credit.network, credit.sender);
      const balanceWei = tank.balanceWei - credit.amount_wei;
      const now = common.nowSeconds();
      await this.#query(client, SQL.updateTank, [balanceWei, tank.reservedWei, now, credit.network, credit.sender]);
      return true;
    });
  }

  async getGasTank(network: string, sender: Address): Promise<GasTank> {
    return this.#tank(this.#pool, network, common.address(sender, "sender"));
  }

  async #tank(on: Queryable, network: string, sender: Address): Promise<GasTank> {
    return { network, sender, ...common.toTank(await this.#one<common.TankRow>(on, SQL.selectTank, [network, sender])) };
  }

  /** Locks the tank row (lock order 1), creating an empty one first if there is none. */
  async #lockTank(client: PoolClient, network: string, sender: string): Promise<{ balanceWei: bigint; reservedWei: bigint }> {
    let row = await this.#one<common.TankRow>(client, SQL.lockTank, [network, sender]);
    if (!row) {
      await this.#query(client, SQL.insertEmptyTank, [network, sender, common.nowSeconds()]);
      row = await this.#one<common.TankRow>(client, SQL.lockTank, [network, sender]);
    }
    return common.toTank(row);
  }

  /** Locks usage rows (lock order 2) in common.lockOrder, creating missing ones when `create`; their totals by usageId. */
  async #lockUsage(client: PoolClient, keys: readonly common.UsageKey[], create: boolean): Promise<Map<string, UsageTotals>> {
    const totals = new Map<string, UsageTotals>();
    const now = common.nowSeconds();
    for (const k of common.lockOrder(keys)) {
      const row = create
        ? await this.#one<common.UsageRow>(client, SQL.upsertLockUsage, [k.strategyId, k.scope, k.key, now])
        : await this.#one<common.UsageRow>(client, SQL.lockUsage, [k.strategyId, k.scope, k.key]);
      totals.set(common.usageId(k), common.toUsage(row));
    }
    return totals;
  }

  async #writeUsage(
    client: PoolClient,
    writes: readonly { key: common.UsageKey; totals: UsageTotals }[],
    now: number,
  ): Promise<void> {
    for (const { key: k, totals: u } of writes) {
      await this.#query(client, SQL.updateUsage, [
        k.strategyId,
        k.scope,
        k.key,
        u.reservedWei,
        u.spentWei,
        u.reservedUsdMicros,
        u.spentUsdMicros,
        u.ops,
        now,
      ]);
    }
  }

  /** The usage rows a sponsorship counts in: written with it, never changed, so safe to read before locking. */
  async #links(on: Queryable, id: string): Promise<common.UsageKey[]> {
    return (await this.#query<common.UsageKey & QueryResultRow>(on, SQL.selectLinks, [id])).rows;
  }

  // ---- sponsorships

  /**
   * One READ COMMITTED transaction with row locks in the lock order (see the module comment):
   *
   * - First an unlocked look at the op's active sponsorship (network, entryPoint, sender, nonce) — the one this
   *   reservation replaces — for what replacing it involves: its tank when it is user-mode, its usage rows.
   * - 1. The tank: User Sponsor mode locks the sender's tank (a missing tank is inserted ON CONFLICT DO NOTHING
   *   and then locked, unless nothing could fit in it anyway); other modes lock it only when the active
   *   sponsorship is user-mode (its reservation is given back). Every transaction that changes a tank holds this
   *   lock, so the balance and reserved amount read under it stay true until COMMIT: reservations against one
   *   tank queue here, across connections and processes, and never over-reserve.
   * - 2. The usage rows of the caps and of the active sponsorship, in common.lockOrder (missing ones created): likewise
   *   every reservation, release, settlement against one cap row queues on it, so a cap is never exceeded.
   * - 3. The active sponsorship, locked, so a concurrent release or replacement of it waits for this transaction
   *   (or this one for it: under READ COMMITTED a row that stopped being active while we waited is simply not
   *   returned). Should the locked one not be the one looked at (replaced in between) and need a tank or usage
   *   row not locked yet, the attempt is abandoned and run again (LockOrderRetry). Two first reservations of one
   *   op can both find none; the partial unique index lets only one insert, and the other retries and replaces it.
   *
   * Then common.planTank and common.planCaps decide; a refusal ends in ROLLBACK: nothing is written, the earlier
   * sponsorship stays.
   */
  async reserveSponsorship(input: NewSponsorship, caps?: readonly CapCheck[]): Promise<ReserveResult> {
    const record = common.newSponsorshipRecord(input, common.nowSeconds());
    const checks = common.validCapChecks(caps, record.strategyId);
    const { network, sender } = record;
    const opKey = [network, record.entryPoint, sender, record.nonce];
    const capKeys = checks.map((c): common.UsageKey => ({ strategyId: record.strategyId!, scope: c.scope, key: c.key }));

    try {
      return await this.#transaction(async ({ client, rollbackOnly }): Promise<ReserveResult> => {
        const peek = await this.#one<ActiveRow>(client, SQL.selectActiveOp, opKey);
        const peekLinks = peek ? await this.#links(client, peek.id) : [];

        let tank: { balanceWei: bigint; reservedWei: bigint } | undefined;
        if (record.mode === "user") {
          const row = await this.#one<common.TankRow>(client, SQL.lockTank, [network, sender]);
          if (!row && record.maxCostWei > 0n) {
            // No tank: nothing fits (a tank-less sender has no user-mode reservation to give back either).
            rollbackOnly();
            return { ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 0n, requiredWei: record.maxCostWei };
          }
          tank = row ? common.toTank(row) : await this.#lockTank(client, network, sender);
        } else if (peek?.mode === "user") {
          tank = await this.#lockTank(client, network, sender);
        }
        const totals = await this.#lockUsage(client, [...capKeys, ...peekLinks], true);
        const previous = await this.#one<ActiveRow>(client, SQL.lockActiveOp, opKey);
        const previousLinks = !previous ? [] : previous.id === peek?.id ? peekLinks : await this.#links(client, previous.id);
        if (previous?.mode === "user" && !tank) throw new LockOrderRetry();
        if (previousLinks.some((k) => !totals.has(common.usageId(k)))) throw new LockOrderRetry();

        const freedWei = previous?.mode === "user" ? previous.max_cost_wei : 0n;
        const tankPlan = common.planTank(record.mode, tank ?? { balanceWei: 0n, reservedWei: 0n }, freedWei, record.maxCostWei);
        if (!tankPlan.ok) {
          rollbackOnly(); // nothing written: the earlier sponsorship stays active
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
          rollbackOnly();
          return capPlan;
        }

        const now = record.createdAt;
        if (previous) await this.#query(client, SQL.releaseActive, ["replaced", now, previous.id]);
        if (tank) await this.#query(client, SQL.updateTank, [tank.balanceWei, tankPlan.reservedWei, now, network, sender]);
        await this.#query(client, SQL.insertSponsorship, [
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
          now,
        ]);
        await this.#writeUsage(client, capPlan.writes, now);
        for (const k of capPlan.links) await this.#query(client, SQL.insertLink, [record.id, k.strategyId, k.scope, k.key]);
        return { ok: true, record, replaced: previous?.id ?? null };
      }, isActiveOpRace);
    } catch (err) {
      if (sqlState(err) === FOREIGN_KEY_VIOLATION) {
        throw new StoreError("NOT_FOUND", "sponsorship refers to an unknown project, API key or strategy");
      }
      throw err;
    }
  }

  async markSigned(id: string, signed: { userOpHash: Hex; paymasterAndData: Hex }): Promise<void> {
    const { userOpHash, paymasterAndData } = common.validSigned(signed);
    const result = await this.#query(this.#pool, SQL.markSigned, [userOpHash, paymasterAndData, common.nowSeconds(), id]);
    if (result.rowCount === 1) return;
    const row = await this.#one<{ status: SponsorshipStatus }>(this.#pool, SQL.selectSponsorshipStatus, [id]);
    if (!row) throw new StoreError("NOT_FOUND", `sponsorship ${id} not found`);
    throw new StoreError("INVALID_STATE", `sponsorship ${id} is ${row.status}, not reserved: it cannot be signed`);
  }

  /**
   * Changes one sponsorship's status in one transaction, in the lock order: its tank (User Sponsor mode), its
   * usage rows, then its own row (FOR UPDATE). `decide` sees the locked row and answers the change — the delta
   * for the usage rows and tank, and the statement for the row — or null to change nothing (answered false).
   */
  async #transition(
    id: string,
    decide: (row: common.SponsorshipRow, client: PoolClient, now: number) => Promise<Change | null>,
  ): Promise<boolean> {
    const plan = await this.#one<{ network: string; sender: string; mode: string }>(this.#pool, SQL.selectSponsorshipPlan, [id]);
    if (!plan) return false;
    const links = await this.#links(this.#pool, id);
    return this.#transaction(async ({ client }) => {
      const tank = plan.mode === "user" ? await this.#lockTank(client, plan.network, plan.sender) : undefined;
      const usage = await this.#lockUsage(client, links, false);
      const row = await this.#one<common.SponsorshipRow>(client, SQL.lockSponsorship, [id]);
      const now = common.nowSeconds();
      const change = row && (await decide(row, client, now));
      if (!change) return false;
      await this.#query(client, change.statement, change.values);
      await this.#writeUsage(
        client,
        links.map((k) => ({ key: k, totals: common.applyUsage(usage.get(common.usageId(k))!, change.delta) })),
        now,
      );
      if (tank) {
        const t = common.applyTank(tank, change.delta);
        await this.#query(client, SQL.updateTank, [t.balanceWei, t.reservedWei, now, plan.network, plan.sender]);
      }
      return true;
    }, isActiveOpRace);
  }

  #release(id: string, reason: common.ReleaseReason): Promise<boolean> {
    return this.#transition(id, async (row, _client, now) =>
      row.status === "reserved" || row.status === "signed"
        ? { delta: common.releaseDelta(common.rowCost(row)), statement: SQL.releaseActive, values: [reason, now, id] }
        : null,
    );
  }

  /** Idempotent: releasing a released, settled or unknown sponsorship changes nothing. */
  async releaseSponsorship(id: string): Promise<void> {
    await this.#release(id, "released");
  }

  /** See common.settleDelta for which sponsorships settle. */
  async settleSponsorship(id: string, settlement: Settlement): Promise<boolean> {
    const valid = common.validSettlement(settlement);
    const actual = { wei: valid.actualGasCostWei, usdMicros: valid.actualCostUsdMicros };
    return this.#transition(id, async (row, _client, now) => {
      const delta = common.settleDelta(row, actual);
      return delta && { delta, statement: SQL.settle, values: [...common.settlementColumns(valid), now, id] };
    });
  }

  /**
   * See common.unsettleTransition. The op's active sponsorship, if any, is locked after this one's row (the
   * lock order's last step); should one be inserted concurrently, the unique index refuses one of the two
   * transactions and it runs again.
   */
  async unsettleSponsorship(id: string): Promise<boolean> {
    return this.#transition(id, async (row, client, now) => {
      if (row.status !== "settled") return null;
      const active = await this.#one(client, SQL.lockActiveOp, [row.network, row.entry_point, row.sender, row.nonce]);
      const change = common.unsettleTransition(row, active !== undefined);
      return change && { delta: change.delta, statement: SQL.unsettle, values: [change.status, change.releaseReason, now, id] };
    });
  }

  async listSettledSince(network: string, fromBlock: bigint): Promise<SponsorshipRecord[]> {
    const from = common.amount(fromBlock, "fromBlock");
    if (from > BigInt(Number.MAX_SAFE_INTEGER)) return [];
    const { rows } = await this.#query<common.SponsorshipRow>(this.#pool, SQL.selectSettledSince, [network, from]);
    return rows.map(common.toSponsorship);
  }

  /**
   * Releases (reason "expired") every reserved or signed sponsorship with validUntil + graceSeconds < now, each in
   * its own transaction under the lock order (as releaseSponsorship); one settled or replaced meanwhile is left
   * alone, so this may run while other replicas reserve and settle.
   */
  async releaseExpired(now: number, graceSeconds: number, network?: string): Promise<number> {
    const cutoff = common.validExpiry(now, graceSeconds);
    let released = 0;
    for (;;) {
      const { rows } = await this.#query<{ id: string }>(this.#pool, SQL.selectExpired, [cutoff, EXPIRY_BATCH, network ?? null]);
      let batch = 0;
      for (const { id } of rows) if (await this.#release(id, "expired")) batch++;
      released += batch;
      // A full batch of which none could be released (all changed meanwhile) would be found again: stop.
      if (rows.length < EXPIRY_BATCH || batch === 0) return released;
    }
  }

  async getCursor(name: string): Promise<bigint | undefined> {
    return (await this.#one<{ value: bigint }>(this.#pool, SQL.selectCursor, [common.cursorName(name)]))?.value;
  }

  async setCursor(name: string, value: bigint): Promise<void> {
    const values = [common.cursorName(name), common.amount(value, "cursor value"), common.nowSeconds()];
    await this.#query(this.#pool, SQL.upsertCursor, values);
  }

  async getSponsorship(id: string): Promise<SponsorshipRecord | undefined> {
    const row = await this.#one<common.SponsorshipRow>(this.#pool, SQL.selectSponsorship, [id]);
    return row && common.toSponsorship(row);
  }

  /**
   * The sponsorship signed with that userOpHash. Should two share it, the active or settled one wins over a
   * released one, then the newest (as in sqlite.ts).
   */
  async findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined> {
    const hash = common.hashKey(userOpHash);
    if (hash === undefined) return undefined;
    const row = await this.#one<common.SponsorshipRow>(this.#pool, SQL.selectSponsorshipByHash, [hash]);
    return row && common.toSponsorship(row);
  }

  // ---- operations (metrics, deposit check, leader election)

  async listStrategies(): Promise<Strategy[]> {
    return (await this.#query<common.StrategyRow>(this.#pool, SQL.selectStrategies, [])).rows.map(common.toStrategy);
  }

  async sponsorshipCounts(): Promise<SponsorshipCount[]> {
    return (await this.#query<SponsorshipCount>(this.#pool, SQL.countSponsorships, [])).rows;
  }

  async gasTankTotals(): Promise<GasTankTotals[]> {
    const rows = (await this.#query<{ network: string; balance_wei: bigint; reserved_wei: bigint; tanks: number }>(this.#pool, SQL.sumTanks, [])).rows;
    return rows.map((r) => ({ network: r.network, balanceWei: r.balance_wei, reservedWei: r.reserved_wei, tanks: r.tanks }));
  }

  async outstandingMaxCost(network: string, entryPoint: Address, modes: readonly SponsorMode[]): Promise<bigint> {
    const row = await this.#one<{ total: bigint }>(this.#pool, SQL.sumOutstanding, [network, common.address(entryPoint, "entryPoint"), [...modes]]);
    return row?.total ?? 0n;
  }

  /**
   * A session advisory lock on a connection of its own (outside the pool): PostgreSQL drops it when the
   * connection ends, so a dead process's leadership is free at once, and a replica whose connection broke
   * knows it lost (the `lost` promise; a heartbeat every LEADER_HEARTBEAT_MS notices a silent break).
   */
  async tryLeadership(name: string): Promise<Leadership | undefined> {
    const client = new pg.Client({ connectionString: this.#url, application_name: "paymaster-leader", keepAlive: true });
    client.on("error", () => {}); // a broken connection ends the leadership (below); never crash the process
    await client.connect();
    let got = false;
    try {
      const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked", [LEADER_LOCK_NAMESPACE, name]);
      got = rows[0]?.locked === true;
    } finally {
      if (!got) await client.end().catch(() => {});
    }
    if (!got) return undefined;
    let ended = false;
    let resolveLost!: () => void;
    const lost = new Promise<void>((resolve) => (resolveLost = resolve));
    const end = async (): Promise<void> => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      resolveLost();
      await client.end().catch(() => {});
    };
    client.on("end", () => void end());
    client.on("error", () => void end());
    const heartbeat = setInterval(() => {
      client.query({ text: "SELECT 1", query_timeout: LEADER_HEARTBEAT_MS } as pg.QueryConfig).catch(() => end());
    }, LEADER_HEARTBEAT_MS);
    heartbeat.unref();
    return { lost, release: end };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }
}

/** Thrown inside a reservation that found it would have to take a lock out of the lock order. */
class LockOrderRetry extends Error {
  override name = "LockOrderRetry";
}
