/**
 * The thin dialect layer the one store (store/sqlStore.ts) is written against: run SQL written once (with `?`
 * placeholders and the few dialect words of `Dialect`), inside or outside a transaction, on SQLite (node:sqlite)
 * or PostgreSQL (pg). Each driver keeps the locking its database needs for exact reservations: SQLite runs
 * every transaction under BEGIN IMMEDIATE (its one writer lock, across processes), PostgreSQL at READ COMMITTED
 * with the row locks the store takes (`FOR UPDATE`, in a fixed order) and bounded retries of transient conflicts.
 *
 * Why not a query builder (Kysely): node:sqlite has no Kysely dialect (an adapter would be needed anyway), the
 * queries are few and fixed, and the one place where the two databases differ in substance — row locks versus
 * one writer lock — is a transaction policy, not SQL syntax. A dozen dialect words cover every syntax difference.
 */

import { AsyncLocalStorage } from "node:async_hooks";
import type { StoreHealth } from "../health.ts";

/**
 * The leadership of one name among the processes sharing a database (Db.tryLeadership): PostgreSQL holds it
 * as long as its connection lives, so another process takes over at once when the holder's connection dies.
 * SQLite: one process owns the database file's work, so it always leads.
 */
export interface Leadership {
  /** Resolves when the leadership is lost (the connection broke); never for SQLite. */
  readonly lost: Promise<void>;
  /** Gives the leadership up (idempotent). */
  release(): Promise<void>;
}

/** Values a query binds: bigints are amounts (decimal TEXT in SQLite, NUMERIC in PostgreSQL), booleans 1/0 in SQLite. */
export type Param = string | number | bigint | boolean | null;

export interface Queryer {
  all<R>(sql: string, params?: readonly Param[]): Promise<R[]>;
  one<R>(sql: string, params?: readonly Param[]): Promise<R | undefined>;
  /** Runs a statement; answers how many rows it changed. */
  run(sql: string, params?: readonly Param[]): Promise<number>;
}

/** One statement of a batch (Db.batch). */
export interface Statement {
  readonly sql: string;
  readonly params: readonly Param[];
}

/**
 * A batch refused by one of its own statements (the SQL function `pm_refuse(reason, value)`, which both drivers
 * provide): nothing of the batch was written. `reason` is what the statement was given (the store's description
 * of the check, JSON), `value` what the database found (e.g. the total a cap would reach), as text.
 */
export class Refusal extends Error {
  override name = "Refusal";
  readonly reason: string;
  readonly value: string | null;
  constructor(reason: string, value: string | null) {
    super(`refused by the batch: ${reason}`);
    this.reason = reason;
    this.value = value;
  }
}

/** What a transaction body is given: its queries, and a way to end with ROLLBACK instead of COMMIT. */
export interface Tx extends Queryer {
  rollbackOnly(): void;
}

/** The SQL words that differ between the two databases (everything else is written once). */
export interface Dialect {
  readonly name: "sqlite" | "postgres";
  /** Appended to a SELECT that must lock its rows until COMMIT ("" in SQLite: the write lock covers it). */
  readonly forUpdate: string;
  /** A JSON column selected as text (JSONB in PostgreSQL), named `as` (default: the column). */
  json(column: string, as?: string): string;
  /** The expression a token symbol is compared by, case-insensitively on ASCII (bind asciiLower(symbol)). */
  readonly symbolKey: string;
  /** ORDER BY expression for token symbols. */
  readonly symbolOrder: string;
  /** The column that orders rows of `sponsorships` by insertion (ties). */
  readonly insertionOrder: string;
  /** Column types for new tables (see migrations.ts). */
  readonly types: { amount: string; time: string; json: string; bool: string; int: string };
  /** Ends a CREATE TABLE (SQLite: STRICT). */
  readonly tableSuffix: string;
  /**
   * A statement that holds a lock on one key (bound as its one parameter) until the transaction ends, for
   * counts that must not race (PostgreSQL: a transaction-scoped advisory lock); undefined in SQLite, where the
   * transaction's write lock already serialises them.
   */
  readonly keyLock: string | undefined;
  /**
   * SQL expressions splitting an amount column into its 9-digit parts (low: the last 9 decimal digits, mid: the
   * 9 before them, high: the rest), each small enough for the database's SUM to add up exactly (SQLite keeps
   * amounts as decimal TEXT and its integers are 64-bit); the exact total, high·10^18 + mid·10^9 + low, is put
   * back together in JS. A database whose SUM is exact on the column itself returns it as the low part.
   */
  amountParts(column: string): readonly [low: string, mid: string, high: string];
  /**
   * Exact arithmetic on amount columns and parameters (SQLite keeps amounts as decimal TEXT, which its own `+`
   * would turn into floating point: there, functions the driver registers do it in bigints):
   * `plus` a + b; `plusFloor0` the same, never below zero (what a counter that only ever goes back to zero uses);
   * `greater` a > b, NULL when either is NULL (a check whose limit is NULL never fires).
   */
  plus(a: string, b: string): string;
  plusFloor0(a: string, b: string): string;
  minus(a: string, b: string): string;
  /** a · b, b a small integer (basis points). */
  times(a: string, b: string): string;
  greater(a: string, b: string): string;
  /** The exact SUM of an amount column (0 over no rows), as an amount. */
  sumAmount(column: string): string;
  /** A subquery answering the strings of a JSON array bound as its one parameter (`id IN (${jsonTexts})`). */
  readonly jsonTexts: string;
  /** The larger of two integers (counts, unix seconds). */
  greatest(a: string, b: string): string;
  /** A fresh webhook event id ("evt_" + 32 hex digits, as webhooks/events.ts newEventId), made by the database. */
  readonly newEventId: string;
}

/** A statement the store gives a driver to run as its health probe (a harmless write: see ../health.ts). */
export interface ProbeStatement {
  readonly sql: string;
  params(): Param[];
}

/** A constraint or range violation, classified the same way for both drivers. */
export type Violation = { kind: "unique" | "foreignKey" | "outOfRange"; constraint?: string };

export interface Db extends Queryer {
  readonly dialect: Dialect;
  /**
   * Whether the database works, from every statement's outcome (../health.ts). A failure for want of the
   * database is thrown as a StoreUnavailableError (../unavailable.ts); every other error is the driver's own.
   */
  readonly health: StoreHealth;
  /**
   * Takes the leadership of `name` among the processes sharing the database if none holds it (the settlement
   * watcher of a network); undefined when another does. PostgreSQL: a session advisory lock on a connection
   * of its own; SQLite: the database serves one process, which always leads.
   */
  tryLeadership(name: string): Promise<Leadership | undefined>;
  /**
   * Runs `body` in one transaction; a throw rolls back. `retryable` errors (and, in PostgreSQL, serialization
   * failures and deadlocks) run the whole body again, a bounded number of times.
   */
  transaction<T>(body: (tx: Tx) => Promise<T>, retryable?: (err: unknown) => boolean): Promise<T>;
  /**
   * Runs `statements` as one transaction in one round trip to the database (PostgreSQL: pipelined, BEGIN …
   * COMMIT sent at once; SQLite: in process, under BEGIN IMMEDIATE), and answers each statement's rows. Any
   * error, a Refusal among them, rolls the whole batch back and is thrown. A row lock a statement takes is held
   * only while the server runs the rest of the batch, never across a round trip. Inside `atomic` it joins the
   * ambient transaction (under a savepoint, so a refusal undoes the batch alone). Transient conflicts
   * (PostgreSQL: serialization failures, deadlocks) run it again, a bounded number of times.
   */
  batch(statements: readonly Statement[]): Promise<unknown[][]>;
  /**
   * Runs `body` as one transaction that every query and `transaction` of this connection made from inside it
   * joins (the async context tells them apart from other requests' work): a whole operation written against
   * the store's ordinary methods commits or rolls back as one. A nested transaction's rollbackOnly rolls the
   * whole of it back. Once `body` has ended, work it left running no longer joins.
   */
  atomic<T>(body: () => Promise<T>): Promise<T>;
  /** The violation a driver error is, if it is one. */
  violation(err: unknown): Violation | undefined;
  close(): Promise<void>;
}

/** An amount put back together from the sums of its Dialect.amountParts (high·10^18 + mid·10^9 + low; a missing sum is 0). */
export function joinAmountParts(low: AmountPart, mid: AmountPart, high: AmountPart): bigint {
  return BigInt(high ?? 0) * 10n ** 18n + BigInt(mid ?? 0) * 10n ** 9n + BigInt(low ?? 0);
}

/** One part's SUM as a driver returns it (NULL when no row was summed). */
export type AmountPart = string | number | bigint | null | undefined;

/** SQLite's NOCASE folds ASCII only; the PostgreSQL schema's `symbol_key` is the same fold. */
export function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** The transaction `atomic` opened, while its body runs (open turns false when it ends). */
export interface Ambient {
  readonly tx: Tx;
  open: boolean;
}

/** The ambient transaction of one connection (or pool): set by `atomic`, read by every query of that connection. */
export class AmbientTx {
  readonly #storage = new AsyncLocalStorage<Ambient>();

  /** The open transaction the current async context runs inside, if any. */
  current(): Tx | undefined {
    const ambient = this.#storage.getStore();
    return ambient?.open ? ambient.tx : undefined;
  }

  /** Runs `body` inside `tx`; afterwards, whatever it left running runs outside again. */
  async run<T>(tx: Tx, body: () => Promise<T>): Promise<T> {
    const ambient: Ambient = { tx, open: true };
    try {
      return await this.#storage.run(ambient, body);
    } finally {
      ambient.open = false;
    }
  }
}
