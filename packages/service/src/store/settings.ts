/**
 * How long the PostgreSQL store waits on its database (the configuration's `database` block; docs/configuration.md).
 * Sized so that a request meets an unreachable database with STORE_UNAVAILABLE within 2 s: a connection that
 * does not open within connectTimeoutMs fails; a query the database leaves unanswered for queryTimeoutMs, while
 * it answers nothing else either, has a new connection probe it (connectTimeoutMs), and fails when the probe gets
 * no answer: 0.5 + 1 s with the defaults. A database that answers other work is waited for (a slow query is not
 * an outage), up to statementTimeoutMs; so is a free pooled connection under load (queueing is not an outage
 * either), a wait that ends at once when the database is declared down.
 */
export interface DatabaseSettings {
  /** Opening a connection. */
  connectTimeoutMs: number;
  /** A query with no answer for this long while the database answers nothing else has the database probed. */
  queryTimeoutMs: number;
  /** PostgreSQL's statement_timeout for the service's sessions, the longest any query waits for its answer, and for a free pooled connection. */
  statementTimeoutMs: number;
  /**
   * How long a replica serves keys, strategies and plans from memory before it reads the config version again
   * (store/configCache.ts: what signs is checked against the version as it is, whatever this says).
   */
  configMaxAgeMs: number;
}

export const DATABASE_DEFAULTS: Readonly<DatabaseSettings> = Object.freeze({
  connectTimeoutMs: 1_000,
  queryTimeoutMs: 500,
  statementTimeoutMs: 30_000,
  configMaxAgeMs: 1_000,
});

export const DATABASE_RANGES = Object.freeze({
  connectTimeoutMs: { min: 100, max: 60_000 },
  queryTimeoutMs: { min: 50, max: 60_000 },
  statementTimeoutMs: { min: 1_000, max: 3_600_000 },
  configMaxAgeMs: { min: 0, max: 60_000 },
});
