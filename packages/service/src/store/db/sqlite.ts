/**
 * The SQLite driver of the dialect layer: one file through Node's built-in `node:sqlite` (`DatabaseSync`, a
 * real SQLite compiled into Node). Chosen over better-sqlite3 because better-sqlite3 is a native addon that
 * must be built against the running Node's headers, which this project's machines do not have for Node 22.
 *
 * Several processes may share the file (service replicas on one host, the admin CLI next to the service): every
 * transaction runs in `BEGIN IMMEDIATE … COMMIT`, which takes SQLite's write lock up front, and `busy_timeout`
 * makes a second writer wait for it instead of failing. Within this process the calls are synchronous, but a
 * transaction body is async (the store is written once for both databases), so a mutex keeps every other query
 * of this connection out while a transaction is open: they wait for its COMMIT, as another process would.
 * Stores opened on one file in one process share one connection (counted; closed with the last store): two
 * connections in one thread would deadlock, the second's BEGIN IMMEDIATE blocking the thread that must finish
 * the first's transaction.
 *
 * Pragmas: WAL (readers never block the writer), synchronous=NORMAL (durable across process crashes; a power
 * loss may lose the last transactions but never corrupts), busy_timeout 5 s, foreign_keys ON, and a larger
 * WAL auto-checkpoint (see WAL_AUTOCHECKPOINT_PAGES). Statements are prepared once per connection (by text).
 *
 * A full disk, a read-only file and disk errors are SQLite result codes (SQLITE_FULL, SQLITE_READONLY,
 * SQLITE_IOERR, …): each is a StoreUnavailableError with its cause (../unavailable.ts), reported with every
 * statement's outcome to the store's health (../health.ts). A full disk fails writes while reads still work, so
 * the health remembers that writes fail until one succeeds (a probe write every PROBE_MS while they fail).
 */
import { closeSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "../../runtime/sqlite.ts";

import { StoreAvailability } from "../health.ts";
import { pendingMigrations, type Migration, type MigrationPolicy } from "../migrations.ts";
import { driverDetail, StoreUnavailableError, type StoreCause } from "../unavailable.ts";
import type { Leadership, ProbeStatement } from "./types.ts";
import { AmbientTx, joinAmountParts, Refusal, type AmountPart, type Db, type Dialect, type Param, type Queryer, type Statement, type Tx, type Violation } from "./types.ts";

const BUSY_TIMEOUT_MS = 5000;
/**
 * Checkpoint the WAL every 10000 pages (~40 MB) instead of SQLite's 1000: a checkpoint copies pages back and
 * fsyncs, and at the default it ran every ~200 reservations and cost a good part of reserveSponsorship's time.
 * The price is a WAL file of up to ~40 MB.
 */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;

// SQLite extended result codes (https://sqlite.org/rescode.html).
const SQLITE_CONSTRAINT_FOREIGNKEY = 787;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

/** Primary result codes (the low byte of an extended one) that mean the database, not the statement, failed. */
const RESULT_CAUSES: Record<number, StoreCause> = {
  5: "busy", // SQLITE_BUSY: another process held the write lock past busy_timeout
  6: "busy", // SQLITE_LOCKED
  8: "read_only", // SQLITE_READONLY: a read-only file, directory or mount
  10: "io", // SQLITE_IOERR
  11: "corrupt", // SQLITE_CORRUPT
  13: "disk_full", // SQLITE_FULL
  14: "io", // SQLITE_CANTOPEN
  15: "busy", // SQLITE_PROTOCOL: a WAL lock race
  26: "corrupt", // SQLITE_NOTADB
};

/** A node:sqlite error that is the database's failure, as a StoreUnavailableError; else undefined. */
function unavailable(err: unknown): StoreUnavailableError | undefined {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  if (typeof code !== "number") return undefined;
  const cause = RESULT_CAUSES[code & 0xff];
  return cause === undefined ? undefined : new StoreUnavailableError(cause, `${driverDetail(err)} (SQLite result code ${code})`);
}

export const SQLITE_DIALECT: Dialect = Object.freeze({
  name: "sqlite",
  forUpdate: "",
  json: (column: string, as = column) => (as === column ? column : `${column} AS ${as}`),
  symbolKey: "symbol COLLATE NOCASE",
  symbolOrder: "symbol COLLATE NOCASE",
  insertionOrder: "rowid",
  // Amounts are TEXT decimals: SQLite's INTEGER is 64-bit and wei overflows it (see migrations.ts).
  types: Object.freeze({ amount: "TEXT", time: "INTEGER", json: "TEXT", bool: "INTEGER", int: "INTEGER" }),
  tableSuffix: " STRICT",
  keyLock: undefined,
  // substr counts from the right with a negative start; a start before the first digit gives the digits there are.
  amountParts: (c: string) =>
    [
      `CAST(substr(${c}, -9) AS INTEGER)`,
      `CAST(substr(${c}, -18, 9) AS INTEGER)`,
      `CASE WHEN length(${c}) > 18 THEN CAST(substr(${c}, 1, length(${c}) - 18) AS INTEGER) ELSE 0 END`,
    ] as const,
  plus: (a: string, b: string) => `pm_plus(${a}, ${b})`,
  plusFloor0: (a: string, b: string) => `pm_plus_floor0(${a}, ${b})`,
  minus: (a: string, b: string) => `pm_minus(${a}, ${b})`,
  times: (a: string, b: string) => `pm_times(${a}, ${b})`,
  greater: (a: string, b: string) => `pm_greater(${a}, ${b})`,
  // The parts' SUMs are 64-bit exact (SQLITE_DIALECT.amountParts), put back together exactly.
  sumAmount(c: string) {
    const [low, mid, high] = this.amountParts(c);
    return `pm_join_parts(SUM(${low}), SUM(${mid}), SUM(${high}))`;
  },
  greatest: (a: string, b: string) => `max(${a}, ${b})`,
  jsonTexts: "SELECT value FROM json_each(?)",
  newEventId: "'evt_' || lower(hex(randomblob(16)))",
});

/** An amount as SQLite hands it to a function (TEXT decimal, or an INTEGER column as bigint), as a bigint; null stays null. */
function amountArg(value: unknown): bigint | null {
  if (value === null || value === undefined) return null;
  return BigInt(value as string | bigint);
}

/**
 * The functions the dialect's amount words and the batches' refusals call (the same names PostgreSQL has as SQL:
 * migration 17): exact bigint arithmetic on decimal TEXT, and `pm_refuse`, which throws the Refusal that ends a batch.
 */
function registerFunctions(db: DatabaseSync): void {
  const exact = { deterministic: true, useBigIntArguments: true } as const;
  db.function("pm_plus", exact, (a, b) => {
    const [x, y] = [amountArg(a), amountArg(b)];
    return x === null || y === null ? null : (x + y).toString();
  });
  db.function("pm_plus_floor0", exact, (a, b) => {
    const [x, y] = [amountArg(a), amountArg(b)];
    return x === null || y === null ? null : (x + y < 0n ? 0n : x + y).toString();
  });
  db.function("pm_minus", exact, (a, b) => {
    const [x, y] = [amountArg(a), amountArg(b)];
    return x === null || y === null ? null : (x - y).toString();
  });
  db.function("pm_times", exact, (a, b) => {
    const [x, y] = [amountArg(a), amountArg(b)];
    return x === null || y === null ? null : (x * y).toString();
  });
  db.function("pm_join_parts", exact, (low, mid, high) => joinAmountParts(low as AmountPart, mid as AmountPart, high as AmountPart).toString());
  db.function("pm_greater", exact, (a, b) => {
    const [x, y] = [amountArg(a), amountArg(b)];
    return x === null || y === null ? null : x > y ? 1 : 0;
  });
  db.function("pm_refuse", { deterministic: false }, (reason, value) => {
    throw new Refusal(String(reason), value === null || value === undefined ? null : String(value));
  });
}

/** Amounts are bound as decimal text, booleans as 1/0. */
function bind(params: readonly Param[]): SQLInputValue[] {
  return params.map((p) => (typeof p === "bigint" ? p.toString() : typeof p === "boolean" ? (p ? 1 : 0) : p));
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

class SqliteDb implements Db {
  readonly dialect = SQLITE_DIALECT;
  readonly #availability = new StoreAvailability();
  readonly health = this.#availability;
  /** Whether the open transaction changed rows (its COMMIT then proves that writes work). */
  #txWrote = false;
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();
  /** Held while a transaction is open; `#unlocked` resolves when it is released. */
  #locked = false;
  #unlocked: Promise<void> = Promise.resolve();
  #closed = false;
  /** An `atomic` operation's transaction: its queries hold the mutex already. */
  readonly #ambient = new AmbientTx();
  /** The queries a transaction body runs: no mutex (it holds it). */
  readonly #inside: Queryer = {
    all: async <R>(sql: string, params: readonly Param[] = []) => this.#all<R>(sql, params),
    one: async <R>(sql: string, params: readonly Param[] = []) => this.#one<R>(sql, params),
    run: async (sql: string, params: readonly Param[] = []) => this.#run(sql, params),
  };

  constructor(db: DatabaseSync, writeProbe: ProbeStatement | undefined) {
    this.#db = db;
    this.#availability.setProbe(async (scope) => (scope === "writes" ? writeProbe && this.run(writeProbe.sql, writeProbe.params()) : this.one("SELECT 1 AS one")));
  }

  /** The error a statement threw, as callers see it: a StoreUnavailableError (reported to the health) or as is. */
  #failure(err: unknown): unknown {
    const failure = unavailable(err);
    if (failure === undefined) return err;
    this.#availability.failed(failure);
    return failure;
  }

  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #all<R>(sql: string, params: readonly Param[]): R[] {
    try {
      const rows = this.#prepare(sql).all(...bind(params)) as R[];
      this.#availability.answered(false);
      return rows;
    } catch (err) {
      throw this.#failure(err);
    }
  }

  #one<R>(sql: string, params: readonly Param[]): R | undefined {
    try {
      const row = this.#prepare(sql).get(...bind(params)) as R | undefined;
      this.#availability.answered(false);
      return row;
    } catch (err) {
      throw this.#failure(err);
    }
  }

  #run(sql: string, params: readonly Param[]): number {
    try {
      const changes = Number(this.#prepare(sql).run(...bind(params)).changes);
      // In a transaction, the write reaches the disk at COMMIT: that is what proves writes work.
      if (this.#db.isTransaction) this.#txWrote ||= changes > 0;
      else this.#availability.answered(changes > 0);
      return changes;
    } catch (err) {
      throw this.#failure(err);
    }
  }

  /** BEGIN IMMEDIATE, COMMIT, ROLLBACK: their failures (a full disk at COMMIT, a lock held elsewhere) are the database's. */
  #control(sql: "BEGIN IMMEDIATE" | "COMMIT" | "ROLLBACK" | "SAVEPOINT pm_batch" | "RELEASE pm_batch" | "ROLLBACK TO pm_batch"): void {
    try {
      this.#prepare(sql).run();
    } catch (err) {
      throw this.#failure(err);
    }
    if (sql === "COMMIT") this.#availability.answered(this.#txWrote);
  }

  // Outside a transaction a query waits for an open one to end (it must not join it). The check and the
  // query (or taking the lock) happen in one synchronous step: nothing can start in between.

  async all<R>(sql: string, params: readonly Param[] = []): Promise<R[]> {
    if (this.#ambient.current()) return this.#all<R>(sql, params);
    while (this.#locked) await this.#unlocked;
    return this.#all<R>(sql, params);
  }

  async one<R>(sql: string, params: readonly Param[] = []): Promise<R | undefined> {
    if (this.#ambient.current()) return this.#one<R>(sql, params);
    while (this.#locked) await this.#unlocked;
    return this.#one<R>(sql, params);
  }

  async run(sql: string, params: readonly Param[] = []): Promise<number> {
    if (this.#ambient.current()) return this.#run(sql, params);
    while (this.#locked) await this.#unlocked;
    return this.#run(sql, params);
  }

  /** Runs a script of several statements (migrations). */
  exec(sql: string): void {
    this.#db.exec(sql);
  }

  /** BEGIN IMMEDIATE … COMMIT under the mutex. No retry: the write lock leaves no transient conflict to retry. */
  async transaction<T>(body: (tx: Tx) => Promise<T>): Promise<T> {
    const ambient = this.#ambient.current();
    if (ambient) return body(ambient);
    while (this.#locked) await this.#unlocked;
    this.#locked = true;
    let release!: () => void;
    this.#unlocked = new Promise((resolve) => (release = resolve));
    let rollback = false;
    this.#txWrote = false;
    try {
      this.#control("BEGIN IMMEDIATE");
      const result = await body({ ...this.#inside, rollbackOnly: () => (rollback = true) });
      this.#control(rollback ? "ROLLBACK" : "COMMIT");
      return result;
    } catch (err) {
      // SQLite may have rolled back already (a full disk, an I/O error); a ROLLBACK that fails too changes nothing.
      if (this.#db.isTransaction) {
        try {
          this.#prepare("ROLLBACK").run();
        } catch {
          // the original error is the one to report
        }
      }
      throw err;
    } finally {
      this.#locked = false;
      release();
    }
  }

  /**
   * The statements in order under BEGIN IMMEDIATE (in process: the "round trip" is a function call), or inside an
   * `atomic` operation under a savepoint. A Refusal thrown by pm_refuse rolls the batch back like any error.
   */
  async batch(statements: readonly Statement[]): Promise<unknown[][]> {
    const run = () => statements.map((st) => this.#all(st.sql, st.params));
    if (this.#ambient.current()) {
      this.#control("SAVEPOINT pm_batch");
      try {
        const rows = run();
        this.#control("RELEASE pm_batch");
        return rows;
      } catch (err) {
        this.#control("ROLLBACK TO pm_batch");
        throw err;
      }
    }
    return this.transaction(async () => {
      const rows = run();
      this.#txWrote = true; // its COMMIT proves writes work
      return rows;
    });
  }

  atomic<T>(body: () => Promise<T>): Promise<T> {
    const ambient = this.#ambient.current();
    if (ambient) return body();
    return this.transaction((tx) => this.#ambient.run(tx, body));
  }

  /** SQLite serves one process's work (docs/configuration.md): that process always leads. */
  async tryLeadership(_name: string): Promise<Leadership> {
    return { lost: new Promise<void>(() => {}), release: async () => {} };
  }

  violation(err: unknown): Violation | undefined {
    const code = (err as { errcode?: unknown } | null)?.errcode;
    if (code === SQLITE_CONSTRAINT_UNIQUE || code === SQLITE_CONSTRAINT_PRIMARYKEY) return { kind: "unique" };
    if (code === SQLITE_CONSTRAINT_FOREIGNKEY) return { kind: "foreignKey" };
    return undefined;
  }

  /** Stores sharing this connection; the last close closes it. */
  refs = 0;

  async close(): Promise<void> {
    if (this.#closed || --this.refs > 0) return;
    this.#closed = true;
    this.#availability.close();
    for (const [file, db] of shared) if (db === this) shared.delete(file);
    while (this.#locked) await this.#unlocked;
    this.#db.close();
  }

  /** Applies the migrations the file has not seen yet, all in one write transaction (safe against a concurrent opener). */
  migrate(migrations: readonly Migration[], now: number, policy: MigrationPolicy): void {
    this.#db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  INTEGER NOT NULL
  ) STRICT`);
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const applied = (this.#db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => Number(r.version));
      const record = this.#db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
      for (const m of pendingMigrations(migrations, applied, policy)) {
        this.#db.exec(m.sql);
        record.run(m.version, m.name, now);
      }
      this.#db.exec("COMMIT");
    } catch (err) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw err;
    }
  }
}

/** The open connections of this process, by absolute file name (":memory:" databases are never shared). */
const shared = new Map<string, SqliteDb>();

/** One store's use of a shared connection: closing it closes the connection only when it was the last. */
function handle(db: SqliteDb): Db {
  db.refs++;
  let closed = false;
  return {
    dialect: db.dialect,
    health: db.health,
    all: (sql, params) => db.all(sql, params),
    one: (sql, params) => db.one(sql, params),
    run: (sql, params) => db.run(sql, params),
    transaction: (body) => db.transaction(body),
    batch: (statements) => db.batch(statements),
    atomic: (body) => db.atomic(body),
    violation: (err) => db.violation(err),
    tryLeadership: (name) => db.tryLeadership(name),
    close: async () => {
      if (closed) return;
      closed = true;
      await db.close();
    },
  };
}

/**
 * Opens (creating as needed) the SQLite file and applies `migrations`; ":memory:" keeps everything in memory.
 * `writeProbe`: a harmless write, tried while writes fail (a full disk) to see them work again.
 */
export function openSqliteDb(file: string, migrations: readonly Migration[], now: number, writeProbe?: ProbeStatement, policy: MigrationPolicy = "apply"): Db {
  const key = file === ":memory:" || file.startsWith("file:") ? undefined : path.resolve(file);
  const open = key === undefined ? undefined : shared.get(key);
  if (open) return handle(open);
  prepareFile(file);
  const raw = new DatabaseSync(file, { timeout: BUSY_TIMEOUT_MS, enableForeignKeyConstraints: true });
  try {
    raw.exec(`PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS};
             PRAGMA foreign_keys = ON;
             PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES};`);
    registerFunctions(raw);
    const db = new SqliteDb(raw, writeProbe);
    db.migrate(migrations, now, policy);
    if (key !== undefined) shared.set(key, db);
    return handle(db);
  } catch (err) {
    raw.close();
    throw err;
  }
}
