/**
 * The PostgreSQL driver of the dialect layer, for several service replicas sharing one database (DATABASE_URL).
 *
 * Driver: `pg` (node-postgres), pure JavaScript (no native addon: `pg-native` is never loaded). One `Pool` per
 * store; every query is a named prepared statement (named by its text), so each pooled connection parses it
 * once. `?` placeholders are numbered `$1…` here. NUMERIC (amounts) is read as bigint and BIGINT (unix seconds,
 * counts, block numbers) as number, for this pool only.
 *
 * Transactions run at READ COMMITTED; the store takes explicit row locks (`FOR UPDATE`) in one fixed order (see
 * sqlStore.ts), so conflicting reservations queue instead of aborting. A transaction that hits a transient
 * conflict (serialization failure, deadlock, or what the caller names retryable) is run again after a short
 * random pause, at most MAX_ATTEMPTS times in all.
 */
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { PoolClient } from "pg";

import { StoreError } from "../errors.ts";
import type { Migration } from "../migrations.ts";
import type { Leadership } from "./types.ts";
import { AmbientTx, type Db, type Dialect, type Param, type Tx, type Violation } from "./types.ts";

/** A transaction that hit a transient conflict is tried again, at most this many times in all. */
const MAX_ATTEMPTS = 10;
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

export const POSTGRES_DIALECT: Dialect = Object.freeze({
  name: "postgres",
  forUpdate: " FOR UPDATE",
  json: (column: string, as = column) => `${column}::text AS ${as}`,
  symbolKey: "symbol_key",
  symbolOrder: 'symbol_key COLLATE "C"',
  insertionOrder: "seq",
  types: Object.freeze({ amount: "NUMERIC(78, 0)", time: "BIGINT", json: "JSONB", bool: "BOOLEAN", int: "INTEGER" }),
  tableSuffix: "",
  keyLock: "SELECT pg_advisory_xact_lock(hashtext(?))",
  // NUMERIC sums exactly: the whole amount is the low part.
  amountParts: (c: string) => [c, "0", "0"] as const,
});

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function isTransient(err: unknown): boolean {
  const state = sqlState(err);
  return state === SERIALIZATION_FAILURE || state === DEADLOCK_DETECTED;
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

/** `?` placeholders numbered for PostgreSQL, and a statement name, once per text. */
const numbered = new Map<string, { name: string; text: string }>();
function statement(sql: string): { name: string; text: string } {
  let s = numbered.get(sql);
  if (!s) {
    let n = 0;
    s = { name: `pm_${numbered.size + 1}`, text: sql.replace(/\?/g, () => `$${++n}`) };
    numbered.set(sql, s);
  }
  return s;
}

type Queryable = pg.Pool | PoolClient;

async function query<R>(on: Queryable, sql: string, params: readonly Param[]): Promise<pg.QueryResult<R & pg.QueryResultRow>> {
  const s = statement(sql);
  return on.query<R & pg.QueryResultRow>({ name: s.name, text: s.text, values: params as unknown[] });
}

function queryer(on: Queryable) {
  return {
    all: async <R>(sql: string, params: readonly Param[] = []) => (await query<R>(on, sql, params)).rows as R[],
    one: async <R>(sql: string, params: readonly Param[] = []) => (await query<R>(on, sql, params)).rows[0] as R | undefined,
    run: async (sql: string, params: readonly Param[] = []) => (await query(on, sql, params)).rowCount ?? 0,
  };
}

class PostgresDb implements Db {
  readonly dialect = POSTGRES_DIALECT;
  readonly #pool: pg.Pool;
  readonly #outside: ReturnType<typeof queryer>;
  readonly #url: string;
  #closed = false;
  /** An `atomic` operation's transaction: the queries made inside it run on its connection. */
  readonly #ambient = new AmbientTx();

  constructor(pool: pg.Pool, url: string) {
    this.#pool = pool;
    this.#outside = queryer(pool);
    this.#url = url;
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

  all<R>(sql: string, params: readonly Param[] = []): Promise<R[]> {
    return (this.#ambient.current() ?? this.#outside).all<R>(sql, params);
  }

  one<R>(sql: string, params: readonly Param[] = []): Promise<R | undefined> {
    return (this.#ambient.current() ?? this.#outside).one<R>(sql, params);
  }

  run(sql: string, params: readonly Param[] = []): Promise<number> {
    return (this.#ambient.current() ?? this.#outside).run(sql, params);
  }

  /** Inside `atomic`, a transaction joins it (a transient conflict then retries the whole atomic operation). */
  async atomic<T>(body: () => Promise<T>): Promise<T> {
    if (this.#ambient.current()) return body();
    return this.transaction((tx) => this.#ambient.run(tx, body));
  }

  async transaction<T>(body: (tx: Tx) => Promise<T>, retryable: (err: unknown) => boolean = isTransient): Promise<T> {
    const ambient = this.#ambient.current();
    if (ambient) return body(ambient);
    for (let attempt = 1; ; attempt++) {
      const client = await this.#pool.connect();
      let broken = false;
      let retry = false;
      try {
        await client.query("BEGIN");
        let rollback = false;
        const result = await body({ ...queryer(client), rollbackOnly: () => (rollback = true) });
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

  violation(err: unknown): Violation | undefined {
    const state = sqlState(err);
    const constraint = (err as { constraint?: unknown } | null)?.constraint;
    const named = typeof constraint === "string" ? { constraint } : {};
    if (state === UNIQUE_VIOLATION) return { kind: "unique", ...named };
    if (state === FOREIGN_KEY_VIOLATION) return { kind: "foreignKey", ...named };
    if (state === NUMERIC_VALUE_OUT_OF_RANGE) return { kind: "outOfRange" };
    return undefined;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }
}

/** Applies the migrations the database has not seen yet, in one transaction under an advisory lock. */
async function migrate(pool: pg.Pool, migrations: readonly Migration[], now: number): Promise<void> {
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
          now,
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
 * Opens the PostgreSQL database at `url` (postgres://user:password@host:port/database?…), applying any pending
 * migration. The pool holds up to 10 connections (pg's default).
 */
export async function openPostgresDb(url: string, migrations: readonly Migration[], now: number): Promise<Db> {
  const pool = new pg.Pool({ connectionString: url, types: TYPES, application_name: "paymaster" });
  // A pooled connection that breaks while idle (server restart, network) is dropped by the pool, which then
  // emits "error"; without a listener that event would crash the process. The next query opens a new one.
  pool.on("error", () => {});
  try {
    await migrate(pool, migrations, now);
    return new PostgresDb(pool, url);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
}
