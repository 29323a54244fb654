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
 *
 * When the database fails (a failover, a restart, a partition: see ../settings.ts for the times): a connection
 * opens within connectTimeoutMs or fails; a query the database leaves unanswered for queryTimeoutMs while it
 * answers nothing else is checked by a probe on a new connection, and when the probe gets no answer either the
 * database is declared down. Every failure for want of the database is a StoreUnavailableError with its cause
 * (../unavailable.ts), reported to the store's health (../health.ts). While the database is down every query
 * fails at once (no request waits on it), the pool's connections are dropped (a failover leaves them dead), and
 * a probe every PROBE_MS brings the store back when the database answers. A connection that broke mid-query is
 * never given back to the pool; a transaction whose connection broke is not rolled back by hand (the server does
 * it for a session that never committed), and one whose COMMIT went unanswered fails: its outcome is unknown,
 * so nothing that depends on it (a signature) is handed out.
 */
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { PoolClient } from "pg";

import { StoreAvailability, type StoreHealth } from "../health.ts";
import { pendingMigrations, type Migration, type MigrationPolicy } from "../migrations.ts";
import { DATABASE_DEFAULTS, type DatabaseSettings } from "../settings.ts";
import { driverDetail, isStoreUnavailable, StoreUnavailableError, type StoreCause } from "../unavailable.ts";
import type { Leadership, ProbeStatement } from "./types.ts";
import { PgBatch } from "./pgBatch.ts";
import { AmbientTx, Refusal, type Db, type Dialect, type Param, type Statement, type Tx, type Violation } from "./types.ts";

/** A transaction that hit a transient conflict is tried again, at most this many times in all. */
const MAX_ATTEMPTS = 10;
/** Key of the advisory lock that serialises migrations ("paymastr" in ASCII). */
const MIGRATION_LOCK_KEY = "8097880582120927346";
/** First key of the leadership advisory locks ("pmld"); the second is hashtext(name). */
const LEADER_LOCK_NAMESPACE = 0x706d6c64;
/** A leader's dedicated connection is checked this often; a failed check ends the leadership. */
const LEADER_HEARTBEAT_MS = 2_000;
/** Closing waits this long for the pool's connections to end, then cuts them (a database that answers nothing). */
const CLOSE_GRACE_MS = 2_000;

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
  plus: (a: string, b: string) => `(${a} + ${b})`,
  plusFloor0: (a: string, b: string) => `GREATEST(${a} + ${b}, 0)`,
  minus: (a: string, b: string) => `(${a} - ${b})`,
  times: (a: string, b: string) => `(${a} * ${b})`,
  greater: (a: string, b: string) => `(${a} > ${b})`,
  sumAmount: (c: string) => `COALESCE(SUM(${c}), 0)`,
  greatest: (a: string, b: string) => `GREATEST(${a}, ${b})`,
  jsonTexts: "SELECT jsonb_array_elements_text(CAST(? AS JSONB))",
  newEventId: "'evt_' || replace(gen_random_uuid()::text, '-', '')",
});

/** The SQLSTATE `pm_refuse` raises (migration 17): a batch's own refusal, not a failure. */
const BATCH_REFUSAL = "PM001";

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function isTransient(err: unknown): boolean {
  const state = sqlState(err);
  return state === SERIALIZATION_FAILURE || state === DEADLOCK_DETECTED;
}

/** SQLSTATEs (and classes) that mean the database, not the statement, failed. */
const SQLSTATE_CAUSES: Record<string, StoreCause> = {
  "57P01": "connection", // admin_shutdown (a failover, a restart)
  "57P02": "connection", // crash_shutdown
  "57P03": "refused", // cannot_connect_now: starting up, shutting down, in recovery
  "57014": "timeout", // query_canceled: statement_timeout
  "53300": "busy", // too_many_connections
  "53400": "busy", // configuration_limit_exceeded
  "53200": "busy", // out_of_memory
  "55P03": "busy", // lock_not_available
  "53100": "disk_full",
  "25006": "read_only", // read_only_sql_transaction: a replica not promoted yet
  "28P01": "auth",
  "28000": "auth",
  "3D000": "missing", // invalid_catalog_name: the database does not exist (dropped, renamed, a wrong name in the URL)
  "58030": "io",
  XX001: "corrupt",
  XX002: "corrupt",
};
/**
 * SQLSTATEs that are the database's failure only when the server ended the session with them (FATAL): at the
 * start of a session they refuse it; as a statement's ERROR they are that statement's (a table's privilege).
 */
const SESSION_CAUSES: Record<string, StoreCause> = {
  "55000": "refused", // object_not_in_prerequisite_state: "not currently accepting connections" (ALLOW_CONNECTIONS false)
  "42501": "auth", // insufficient_privilege: the role lacks CONNECT on the database
};
const ERRNO_CAUSES: Record<string, StoreCause> = {
  ECONNREFUSED: "refused",
  ENOTFOUND: "dns",
  EAI_AGAIN: "dns",
  ETIMEDOUT: "timeout",
  ECONNRESET: "connection",
  EPIPE: "connection",
  ECONNABORTED: "connection",
  EHOSTUNREACH: "connection",
  ENETUNREACH: "connection",
  EPROTO: "tls", // a record that is not TLS (the server answered TLS with something else)
};
/** The driver's own words for a failure it names no code for (pg, pg-protocol). */
const MESSAGE_CAUSES: readonly (readonly [RegExp, StoreCause])[] = [
  [/^timeout exceeded when trying to connect$/, "busy"], // no free pooled connection in time
  [/timeout|timed out/i, "timeout"], // connection timeout, Query read timeout
  [/^Connection terminated|not queryable|Connection ended/i, "connection"],
  // sslmode asks for TLS: the server said no, or answered something that is not PostgreSQL's yes or no.
  [/^The server does not support SSL connections|^There was an error establishing an SSL connection/, "tls"],
  [/^SASL: /, "auth"], // a SCRAM exchange that failed (no password given, a server signature that does not match)
  // Bytes that are not PostgreSQL's protocol (a desynchronised proxy): the connection is unusable.
  [/^received invalid response|^Received unexpected \w+ message from backend/, "connection"],
];

/**
 * Whether the server ended the session with this error (it refused to start one, or cut it), rather than failing
 * one statement. The severity is in the server's language (lc_messages); the source file is not, and a session's
 * start-up refusals come from postinit.c.
 */
function endedSession(err: pg.DatabaseError): boolean {
  return err.severity === "FATAL" || err.severity === "PANIC" || err.file === "postinit.c";
}

/** Node's TLS failures: its ERR_TLS_/ERR_SSL_ codes and OpenSSL's certificate verification codes. */
function tlsFailure(code: string): boolean {
  return /^ERR_(TLS|SSL)_|CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY|DECRYPT)/.test(code);
}

/** The cause of a pg error that is the database's failure, else undefined (the statement's own error). */
function failureCause(err: unknown): StoreCause | undefined {
  const code = sqlState(err);
  if (code !== undefined) {
    const cause = SQLSTATE_CAUSES[code] ?? ERRNO_CAUSES[code];
    if (cause !== undefined) return cause;
    if (code.startsWith("08")) return "connection"; // connection_exception
    if (tlsFailure(code)) return "tls";
  }
  // A server's answer always carries a SQLSTATE: a DatabaseError without one is pg-protocol's (garbage on the wire).
  if (err instanceof pg.DatabaseError && code !== undefined) {
    if (!endedSession(err)) return undefined; // the statement's own error
    return SESSION_CAUSES[code] ?? "connection"; // the session is gone, whatever its SQLSTATE
  }
  const message = err instanceof Error ? err.message : "";
  return MESSAGE_CAUSES.find(([pattern]) => pattern.test(message))?.[1];
}

/** Whether an error left the connection unusable: the transport's, or the server ended the session. */
function transportError(err: unknown): boolean {
  return !(err instanceof pg.DatabaseError) || sqlState(err) === undefined || endedSession(err);
}

/** Causes a probe on a new connection checks before the database is declared down. */
const REACHABILITY: ReadonlySet<StoreCause> = new Set(["refused", "timeout", "connection", "dns", "auth", "missing", "tls"]);

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

const TRANSACTION_CONTROL: ReadonlySet<string> = new Set(["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT pm_batch", "RELEASE SAVEPOINT pm_batch", "ROLLBACK TO SAVEPOINT pm_batch"]);

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

/** pg's per-query client-side timeout (in its code, missing from its types). */
type TimedQuery = pg.QueryConfig & { query_timeout?: number };

/** A query on its way: what the watchdog needs to cut it when the database stops answering. */
interface InFlight {
  readonly startedAt: number;
  readonly client: PoolClient;
  timer: NodeJS.Timeout | undefined;
  /** Cut because the database was declared down: its error is the database's, whatever the driver says. */
  killed: boolean;
  /** Cut past its last deadline, its connection alone dead (the database answers others): a timeout. */
  expired?: boolean;
}

/** pg-pool's default size: at most this many connections per store. */
const POOL_SIZE = 10;

/** A promise that only ever rejects, when told to (nobody waiting on it is no unhandled rejection). */
function rejection(): { promise: Promise<never>; fail(error: Error): void } {
  let fail!: (error: Error) => void;
  const promise = new Promise<never>((_, reject) => (fail = reject));
  promise.catch(() => {});
  return { promise, fail };
}

/** Ends a client's connection now (an idle one too): the pool drops it, a query on it fails. */
function cut(client: pg.Client | PoolClient): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

class PostgresDb implements Db {
  readonly dialect = POSTGRES_DIALECT;
  readonly #url: string;
  readonly #settings: DatabaseSettings;
  readonly #availability = new StoreAvailability();
  readonly health: StoreHealth = this.#availability;
  #pool: pg.Pool;
  /** Every connection of the current pool (to cut them when the database is declared down). */
  #clients = new Set<pg.Client>();
  readonly #inflight = new Set<InFlight>();
  /** performance.now() of the database's last answer to anything (a row, an error, a probe). */
  #lastAnswerAt = performance.now();
  /** The watchdog's probe in flight (one for every silent query). */
  #checking: Promise<boolean> | undefined;
  /** Rejected when the database is declared down: what a wait for a free pooled connection races. */
  #down = rejection();
  /** Connections that broke: never given back to the pool. */
  readonly #broken = new WeakSet<PoolClient>();
  #closed = false;
  /** An `atomic` operation's transaction: the queries made inside it run on its connection. */
  readonly #ambient = new AmbientTx();

  constructor(url: string, settings: DatabaseSettings, writeProbe: ProbeStatement | undefined) {
    this.#url = url;
    this.#settings = settings;
    this.#pool = this.#newPool(this.#clients);
    this.#availability.onChange((now, before) => {
      // Down: every open connection is presumed dead (a failover drops them; a partition leaves them hanging).
      if (!now.up && now.scope === "all" && (before.up || before.scope !== "all")) {
        this.#down.fail(new StoreUnavailableError(now.cause, `not served: the database became unavailable while waiting for a connection (${now.detail})`));
        this.#down = rejection();
        this.#dropConnections();
      }
    });
    this.#availability.setProbe(async (scope) => {
      if (scope === "writes") return writeProbe && this.#outside(writeProbe.sql, writeProbe.params(), true, "run");
      const failure = await this.#probe();
      if (failure === undefined) this.#availability.answered(false);
      // Probes overlap: one that gave up after another found the database back says nothing.
      else if (!this.#availability.state().up) this.#availability.failed(failure);
    });
  }

  /** A pool whose connections are added to `clients` (to cut them all when the database is declared down). */
  #newPool(clients: Set<pg.Client>): pg.Pool {
    const { connectTimeoutMs } = this.#settings;
    const pool = new pg.Pool({
      max: POOL_SIZE,
      connectionString: this.#url,
      types: TYPES,
      application_name: "paymaster",
      // pg-pool uses one setting for two waits: opening a connection (connectTimeoutMs, set on the client below)
      // and waiting for a free one, which under load is queueing, not an outage: that wait is bounded by
      // statementTimeoutMs, and cut short when the database is declared down (#connect).
      connectionTimeoutMillis: this.#settings.statementTimeoutMs,
      // pg-pool constructs its clients with the pool's options (its types say no arguments).
      Client: class extends pg.Client {
        constructor(config?: pg.ClientConfig) {
          super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
        }
      },
      statement_timeout: this.#settings.statementTimeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    // A pooled connection that breaks while idle (server restart, network) is dropped by the pool, which then
    // emits "error"; without a listener that event would crash the process. The next query opens a new one.
    pool.on("error", () => {});
    pool.on("connect", (client) => {
      clients.add(client);
      // A connection cut while in use (see #dropConnections) also emits "error": its query is told, the process must not crash.
      client.on("error", () => {});
    });
    pool.on("remove", (client) => clients.delete(client));
    return pool;
  }

  /** Cuts the queries in flight and every connection, on a new pool; the old one ends in the background. */
  #dropConnections(): void {
    const old = this.#pool;
    const clients = this.#clients;
    this.#clients = new Set();
    this.#pool = this.#newPool(this.#clients);
    for (const flight of this.#inflight) {
      flight.killed = true;
      cut(flight.client);
    }
    for (const client of clients) cut(client);
    void old.end().catch(() => {});
  }

  /** A probe on a new connection: undefined when the database answers, else why not. */
  async #probe(): Promise<StoreUnavailableError | undefined> {
    const { connectTimeoutMs } = this.#settings;
    const client = new pg.Client({ connectionString: this.#url, application_name: "paymaster-probe", connectionTimeoutMillis: connectTimeoutMs, query_timeout: connectTimeoutMs } as pg.ClientConfig);
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("SELECT 1");
      this.#lastAnswerAt = performance.now();
      return undefined;
    } catch (err) {
      return new StoreUnavailableError(failureCause(err) ?? "connection", `a probe on a new connection got no answer: ${driverDetail(err)}`);
    } finally {
      cut(client);
    }
  }

  /**
   * A failure that may mean the database is unreachable (a connection that broke, one that did not open, a query
   * left unanswered): a probe on a new connection decides, one at a time; only when it fails too is the database
   * declared down. One broken connection (a proxy's idle timeout, a killed backend) is not an outage.
   */
  #suspect(failure: StoreUnavailableError): void {
    this.#checking ??= this.#probe().then((probeFailure) => {
      this.#checking = undefined;
      if (probeFailure === undefined) return true;
      this.#availability.failed(failure.cause === probeFailure.cause ? failure : probeFailure);
      return false;
    });
  }

  /**
   * A query has waited queryTimeoutMs: fine while the database answers anything else, else probed. Past
   * statementTimeoutMs (the server cancels it then) and connectTimeoutMs more, its connection alone is dead: cut.
   */
  #silent(flight: InFlight): void {
    flight.timer = undefined;
    if (!this.#inflight.has(flight)) return;
    const { queryTimeoutMs, statementTimeoutMs, connectTimeoutMs } = this.#settings;
    if (performance.now() - flight.startedAt >= statementTimeoutMs + connectTimeoutMs) {
      flight.expired = true;
      cut(flight.client);
      return;
    }
    const again = () => {
      if (this.#inflight.has(flight) && !flight.killed) flight.timer = setTimeout(() => this.#silent(flight), queryTimeoutMs).unref();
    };
    if (this.#lastAnswerAt > flight.startedAt) return again();
    this.#suspect(new StoreUnavailableError("timeout", `no answer within ${this.#settings.queryTimeoutMs} ms, nor to a probe on a new connection within ${this.#settings.connectTimeoutMs} ms`));
    void this.#checking!.then(again);
  }

  /** While the database is down, queries fail at once. */
  #failFast(): void {
    const down = this.#availability.down();
    if (down) throw new StoreUnavailableError(down.cause, `not tried: the database has been unavailable since ${new Date(down.since).toISOString()} (${down.detail})`);
  }

  /** The driver's error as what callers see: a StoreUnavailableError (reported to the health) or the error itself. */
  #failure(err: unknown, killed = false, doing?: string, expired = false): unknown {
    const cause = killed || expired ? "timeout" : failureCause(err);
    if (cause === undefined) return err;
    const down = this.#availability.down();
    // Cut by the watchdog, or a queue timeout while the database is down: the database's cause, not the symptom.
    const failure = new StoreUnavailableError(down && (killed || cause === "busy") ? down.cause : cause, `${doing ? `${doing}: ` : ""}${driverDetail(err)}`);
    if (REACHABILITY.has(failure.cause) && !killed && !down) {
      this.#availability.count(failure.cause);
      this.#suspect(failure);
    } else {
      this.#availability.failed(failure);
    }
    return failure;
  }

  async #connect(): Promise<PoolClient> {
    const pool = this.#pool;
    const acquiring = pool.connect();
    // Every connection busy: the wait for one ends when the database is declared down (its queries are cut).
    const wait = pool.idleCount === 0 && pool.totalCount >= POOL_SIZE ? Promise.race([acquiring, this.#down.promise]) : acquiring;
    try {
      return await wait;
    } catch (err) {
      if (isStoreUnavailable(err)) {
        acquiring.then((client) => client.release(), () => {}); // a connection that comes after all goes back
        throw err;
      }
      throw this.#failure(err, false, "connecting");
    }
  }

  /** One statement on `client`, watched: see #silent. */
  #query<R>(client: PoolClient, sql: string, params: readonly Param[]): Promise<pg.QueryResult<R & pg.QueryResultRow>> {
    // BEGIN, COMMIT and ROLLBACK go as plain text (the simple protocol), everything else as a named statement.
    const s = TRANSACTION_CONTROL.has(sql) ? { text: sql } : statement(sql);
    const doing = sql === "COMMIT" ? "committing (the outcome is unknown)" : undefined;
    return this.#watched(client, doing, () => client.query<R & pg.QueryResultRow>({ ...s, values: params as unknown[] }));
  }

  /**
   * What `send` asks of `client`, watched: cut by #silent past queryTimeoutMs; an answer (an error of the
   * statement's own included) keeps the database heard from; a transport's error marks the connection broken;
   * a failure is the store's (#failure, `doing` saying what was under way).
   */
  async #watched<T>(client: PoolClient, doing: string | undefined, send: () => Promise<T>): Promise<T> {
    const flight: InFlight = { startedAt: performance.now(), client, timer: undefined, killed: false };
    flight.timer = setTimeout(() => this.#silent(flight), this.#settings.queryTimeoutMs).unref();
    this.#inflight.add(flight);
    try {
      const result = await send();
      this.#lastAnswerAt = performance.now();
      return result;
    } catch (err) {
      if (transportError(err)) this.#broken.add(client);
      else this.#lastAnswerAt = performance.now();
      throw this.#failure(err, flight.killed, doing, flight.expired);
    } finally {
      clearTimeout(flight.timer);
      this.#inflight.delete(flight);
    }
  }

  /** The queries of a transaction body on its connection; `wrote` is told of each write that changed rows. */
  #queryer(client: PoolClient, wrote: () => void) {
    return {
      all: async <R>(sql: string, params: readonly Param[] = []) => (await this.#query<R>(client, sql, params)).rows as R[],
      one: async <R>(sql: string, params: readonly Param[] = []) => (await this.#query<R>(client, sql, params)).rows[0] as R | undefined,
      run: async (sql: string, params: readonly Param[] = []) => {
        const changed = (await this.#query(client, sql, params)).rowCount ?? 0;
        if (changed > 0) wrote();
        return changed;
      },
    };
  }

  /** One statement outside any transaction, on a pooled connection. */
  async #outside<R>(sql: string, params: readonly Param[], probing: boolean, kind: "rows"): Promise<R[]>;
  async #outside(sql: string, params: readonly Param[], probing: boolean, kind: "run"): Promise<number>;
  async #outside<R>(sql: string, params: readonly Param[], probing: boolean, kind: "rows" | "run"): Promise<R[] | number> {
    if (!probing) this.#failFast();
    const client = await this.#connect();
    try {
      const result = await this.#query<R>(client, sql, params);
      const changed = result.rowCount ?? 0;
      this.#availability.answered(kind === "run" && changed > 0);
      return kind === "run" ? changed : result.rows;
    } finally {
      client.release(this.#broken.has(client));
    }
  }

  /**
   * A session advisory lock on a connection of its own (outside the pool): PostgreSQL drops it when the
   * connection ends, so a dead process's leadership is free at once, and a replica whose connection broke
   * knows it lost (the `lost` promise; a heartbeat every LEADER_HEARTBEAT_MS notices a silent break).
   */
  async tryLeadership(name: string): Promise<Leadership | undefined> {
    this.#failFast();
    const client = new pg.Client({ connectionString: this.#url, application_name: "paymaster-leader", keepAlive: true, connectionTimeoutMillis: this.#settings.connectTimeoutMs });
    client.on("error", () => {}); // a broken connection ends the leadership (below); never crash the process
    let got = false;
    try {
      await client.connect();
      const { rows } = await client.query<{ locked: boolean }>({ text: "SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked", values: [LEADER_LOCK_NAMESPACE, name], query_timeout: this.#settings.connectTimeoutMs } as TimedQuery);
      got = rows[0]?.locked === true;
    } catch (err) {
      throw this.#failure(err, false, "asking for a leadership");
    } finally {
      if (!got) cut(client);
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
      await Promise.race([client.end().catch(() => {}), sleep(CLOSE_GRACE_MS)]);
      cut(client);
    };
    client.on("end", () => void end());
    client.on("error", () => void end());
    const heartbeat = setInterval(() => {
      client.query({ text: "SELECT 1", query_timeout: LEADER_HEARTBEAT_MS } as TimedQuery).catch(() => end());
    }, LEADER_HEARTBEAT_MS);
    heartbeat.unref();
    return { lost, release: end };
  }

  all<R>(sql: string, params: readonly Param[] = []): Promise<R[]> {
    const ambient = this.#ambient.current();
    return ambient ? ambient.all<R>(sql, params) : this.#outside<R>(sql, params, false, "rows");
  }

  async one<R>(sql: string, params: readonly Param[] = []): Promise<R | undefined> {
    const ambient = this.#ambient.current();
    return ambient ? ambient.one<R>(sql, params) : (await this.#outside<R>(sql, params, false, "rows"))[0];
  }

  run(sql: string, params: readonly Param[] = []): Promise<number> {
    const ambient = this.#ambient.current();
    return ambient ? ambient.run(sql, params) : this.#outside(sql, params, false, "run");
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
      this.#failFast();
      const client = await this.#connect();
      let retry = false;
      let wrote = false;
      try {
        await this.#query(client, "BEGIN", []);
        let rollback = false;
        const result = await body({ ...this.#queryer(client, () => (wrote = true)), rollbackOnly: () => (rollback = true) });
        await this.#query(client, rollback ? "ROLLBACK" : "COMMIT", []);
        this.#availability.answered(wrote && !rollback);
        return result;
      } catch (err) {
        // A connection that broke is not rolled back by hand: the server ends a session's open transaction itself.
        if (!this.#broken.has(client)) {
          await this.#query(client, "ROLLBACK", []).catch(() => this.#broken.add(client));
        }
        if (attempt >= MAX_ATTEMPTS || !(isTransient(err) || retryable(err))) throw err;
        retry = true;
      } finally {
        client.release(this.#broken.has(client));
      }
      if (retry) await sleep(Math.random() * 2 * attempt);
    }
  }

  async batch(statements: readonly Statement[]): Promise<unknown[][]> {
    const ambient = this.#ambient.current();
    if (ambient) return batchInside(ambient, statements);
    for (let attempt = 1; ; attempt++) {
      this.#failFast();
      const client = await this.#connect();
      try {
        const rows = await this.#exchange(client, statements);
        this.#availability.answered(true);
        return rows;
      } catch (err) {
        if (attempt >= MAX_ATTEMPTS || !isTransient(err)) throw err;
      } finally {
        client.release(this.#broken.has(client));
      }
      await sleep(Math.random() * 2 * attempt);
    }
  }

  /** The statements as one exchange on `client` (./pgBatch.ts): one round trip, one transaction. Watched as one query (#silent). */
  async #exchange(client: PoolClient, statements: readonly Statement[]): Promise<unknown[][]> {
    const named = statements.map((st) => ({ ...statement(st.sql), values: st.params as unknown[] }));
    const send = () => new Promise<unknown[][]>((resolve, reject) => void client.query(new PgBatch(named, TYPES, (err, rows) => (err ? reject(err) : resolve(rows!))) as unknown as pg.QueryConfig));
    try {
      // The COMMIT left with the rest: a broken connection leaves the outcome unknown.
      return await this.#watched(client, "running a batch (its outcome is unknown if the connection broke)", send);
    } catch (err) {
      throw refusalOf(err) ?? err; // a statement's pm_refuse is the database's answer (#failure passes it through)
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

  /** Runs the migrations on a connection of the pool (at open). */
  async migrate(migrations: readonly Migration[], now: number, policy: MigrationPolicy): Promise<void> {
    try {
      await migrate(this.#pool, migrations, now, policy);
    } catch (err) {
      throw this.#failure(err, false, "migrating");
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#availability.close();
    // A database that answers nothing never acknowledges the goodbye: give it a moment, then cut.
    await Promise.race([this.#pool.end().catch(() => {}), sleep(CLOSE_GRACE_MS)]);
    for (const client of this.#clients) cut(client);
  }
}

/**
 * A batch inside an `atomic` operation's transaction: its statements one after the other on that transaction,
 * under a savepoint, so that a refusal undoes the batch and leaves the operation's transaction usable.
 */
async function batchInside(tx: Tx, statements: readonly Statement[]): Promise<unknown[][]> {
  await tx.run("SAVEPOINT pm_batch");
  try {
    const rows: unknown[][] = [];
    for (const st of statements) rows.push(await tx.all(st.sql, st.params));
    await tx.run("RELEASE SAVEPOINT pm_batch");
    return rows;
  } catch (err) {
    await tx.run("ROLLBACK TO SAVEPOINT pm_batch");
    throw refusalOf(err) ?? err;
  }
}

/** A statement's pm_refuse (SQLSTATE PM001) as the Refusal callers catch; undefined for any other error. */
function refusalOf(err: unknown): Refusal | undefined {
  if (sqlState(err) !== BATCH_REFUSAL) return undefined;
  const { message, detail } = err as pg.DatabaseError;
  return new Refusal(message, detail ?? null);
}

/** Applies the migrations the database has not seen yet, in one transaction under an advisory lock. */
async function migrate(pool: pg.Pool, migrations: readonly Migration[], now: number, policy: MigrationPolicy): Promise<void> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    try {
      // A migration may take longer than the service's statement_timeout (an index on a large table).
      await client.query("SET LOCAL statement_timeout = 0");
      // Held until COMMIT/ROLLBACK: a second process opening the same database waits here, then sees the result.
      await client.query("SELECT pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK_KEY]);
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version     INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        applied_at  BIGINT NOT NULL
      )`);
      const { rows } = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
      for (const m of pendingMigrations(migrations, rows.map((r) => Number(r.version)), policy)) {
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
 * migration. The pool holds up to 10 connections (pg's default). `writeProbe`: a harmless write, tried while
 * writes fail (disk full, read only) to see them work again.
 */
export async function openPostgresDb(
  url: string,
  migrations: readonly Migration[],
  now: number,
  options: { settings?: Partial<DatabaseSettings>; writeProbe?: ProbeStatement; migrations?: MigrationPolicy } = {},
): Promise<Db> {
  const db = new PostgresDb(url, { ...DATABASE_DEFAULTS, ...options.settings }, options.writeProbe);
  try {
    await db.migrate(migrations, now, options.migrations ?? "apply");
    return db;
  } catch (err) {
    await db.close();
    throw err;
  }
}
