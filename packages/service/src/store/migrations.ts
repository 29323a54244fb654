/**
 * The schema as ordered migrations, per database: SQLITE_MIGRATIONS and POSTGRES_MIGRATIONS (versions 1 and 2,
 * written separately before the store had one implementation: they stay byte-for-byte what databases in the
 * field have applied), then `sharedMigrations`, written once and rendered for each database's types.
 *
 * The SQLite schema as ordered migrations. Each runs once, inside the transaction that records it in
 * `schema_migrations`; never edit a released migration, append a new one.
 *
 * Conventions:
 * - STRICT tables (SQLite checks column types).
 * - Amounts (wei, token base units, nonces, exchange rates) are TEXT holding a decimal integer: SQLite's INTEGER
 *   is 64-bit and wei overflows it. They are converted to bigint at the store boundary and never summed in SQL.
 * - Addresses are stored checksummed (the store normalises every address it is given), so equality on the
 *   column is equality of addresses regardless of the caller's casing; hashes are stored lowercase.
 * - Times are unix seconds.
 */
import type { Dialect } from "./db/types.ts";
import { StoreError } from "./errors.ts";

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const SQLITE_MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    version: 1,
    name: "initial schema",
    sql: `
      CREATE TABLE projects (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        created_at  INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE api_keys (
        id          TEXT PRIMARY KEY,
        project_id  TEXT NOT NULL REFERENCES projects(id),
        key_hash    TEXT NOT NULL,            -- sha256(plaintext), hex; the plaintext is never stored
        prefix      TEXT NOT NULL,
        label       TEXT,
        status      TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER
      ) STRICT;
      CREATE UNIQUE INDEX api_keys_key_hash ON api_keys(key_hash);
      CREATE INDEX api_keys_project ON api_keys(project_id);

      CREATE TABLE strategies (
        id           TEXT PRIMARY KEY,
        project_id   TEXT NOT NULL REFERENCES projects(id),
        code         TEXT NOT NULL,
        name         TEXT NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('enabled', 'disabled')),
        valid_from   INTEGER,
        valid_until  INTEGER,
        networks     TEXT,                    -- JSON array of network names, NULL = every configured network
        created_at   INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX strategies_code ON strategies(code);
      CREATE INDEX strategies_project ON strategies(project_id);

      CREATE TABLE tokens (
        network       TEXT NOT NULL,
        address       TEXT NOT NULL,          -- checksummed, so (network, address) is (network, lower(address))
        symbol        TEXT NOT NULL,
        decimals      INTEGER NOT NULL CHECK (decimals BETWEEN 0 AND 255),
        price_source  TEXT NOT NULL,          -- JSON PriceSource
        markup_bps    INTEGER NOT NULL CHECK (markup_bps BETWEEN 0 AND 10000),
        enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
        updated_at    INTEGER NOT NULL,
        PRIMARY KEY (network, address)
      ) STRICT;
      CREATE UNIQUE INDEX tokens_symbol ON tokens(network, symbol COLLATE NOCASE);

      CREATE TABLE gas_tanks (
        network       TEXT NOT NULL,
        sender        TEXT NOT NULL,          -- checksummed
        balance_wei   TEXT NOT NULL,          -- decimal: credited minus settled spending
        reserved_wei  TEXT NOT NULL,          -- decimal: held by outstanding user-mode reservations
        updated_at    INTEGER NOT NULL,
        PRIMARY KEY (network, sender)
      ) STRICT;

      CREATE TABLE gas_tank_credits (
        reference   TEXT PRIMARY KEY,         -- idempotency key ("admin:…", a deposit tx hash + log index, …)
        network     TEXT NOT NULL,
        sender      TEXT NOT NULL,
        amount_wei  TEXT NOT NULL,
        created_at  INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX gas_tank_credits_tank ON gas_tank_credits(network, sender);

      CREATE TABLE sponsorships (
        id                  TEXT PRIMARY KEY,
        network             TEXT NOT NULL,
        entry_point         TEXT NOT NULL,    -- checksummed
        version             TEXT NOT NULL CHECK (version IN ('v0.6', 'v0.7')),
        sender              TEXT NOT NULL,    -- checksummed
        nonce               TEXT NOT NULL,    -- decimal uint256 (2-D nonces do not fit 64 bits)
        mode                TEXT NOT NULL CHECK (mode IN ('sponsor', 'erc20', 'user')),
        project_id          TEXT NOT NULL REFERENCES projects(id),
        api_key_id          TEXT NOT NULL REFERENCES api_keys(id),
        strategy_id         TEXT REFERENCES strategies(id),
        token               TEXT,
        exchange_rate       TEXT,
        max_token_cost      TEXT,
        max_cost_wei        TEXT NOT NULL,
        valid_until         INTEGER NOT NULL,
        valid_after         INTEGER NOT NULL,
        user_op_hash        TEXT,             -- lowercase hex
        paymaster_and_data  TEXT,
        status              TEXT NOT NULL CHECK (status IN ('reserved', 'signed', 'settled', 'released')),
        created_at          INTEGER NOT NULL,
        updated_at          INTEGER NOT NULL
      ) STRICT;
      -- At most one active sponsorship per (network, EntryPoint, sender, nonce): the database itself refuses a second.
      CREATE UNIQUE INDEX sponsorships_active_op ON sponsorships(network, entry_point, sender, nonce)
        WHERE status IN ('reserved', 'signed');
      CREATE INDEX sponsorships_user_op_hash ON sponsorships(user_op_hash) WHERE user_op_hash IS NOT NULL;
      -- No index on valid_until: the expiry sweeper's "status IN ('reserved', 'signed') AND valid_until < ?" scans
      -- sponsorships_active_op (only open sponsorships are in it, a set bounded by the signature lifetime), and
      -- every index costs a page write on each reservation.
    `,
  },
  {
    version: 2,
    name: "strategy rules, usage and caps, settlement, cursors",
    sql: `
      -- JSON StrategyRules (policy/schema.ts serializeRules); '{}' = no rules.
      ALTER TABLE strategies ADD COLUMN rules TEXT NOT NULL DEFAULT '{}';

      -- maxCostWei in USD micro-units (1e-6 USD) at the native price when reserved: what USD caps hold.
      ALTER TABLE sponsorships ADD COLUMN max_cost_usd_micros TEXT NOT NULL DEFAULT '0';
      -- Why a released sponsorship was released; kept if it is settled afterwards (its signature landed anyway).
      ALTER TABLE sponsorships ADD COLUMN release_reason TEXT CHECK (release_reason IN ('released', 'replaced', 'expired'));
      -- The settlement (status 'settled' only; cleared when un-settled): what the chain charged, and where.
      ALTER TABLE sponsorships ADD COLUMN actual_gas_cost_wei TEXT;
      ALTER TABLE sponsorships ADD COLUMN actual_cost_usd_micros TEXT;
      ALTER TABLE sponsorships ADD COLUMN actual_token_cost TEXT;
      ALTER TABLE sponsorships ADD COLUMN settled_success INTEGER CHECK (settled_success IN (0, 1));
      ALTER TABLE sponsorships ADD COLUMN settled_tx_hash TEXT;            -- lowercase hex
      ALTER TABLE sponsorships ADD COLUMN settled_block_number INTEGER;
      ALTER TABLE sponsorships ADD COLUMN settled_block_hash TEXT;         -- lowercase hex
      ALTER TABLE sponsorships ADD COLUMN settled_log_index INTEGER;
      ALTER TABLE sponsorships ADD COLUMN settled_at INTEGER;
      CREATE INDEX sponsorships_settled_block ON sponsorships(network, settled_block_number) WHERE status = 'settled';

      -- A strategy's totals per cap scope (see store/common.ts): active reservations, settled spending, ops.
      CREATE TABLE strategy_usage (
        strategy_id          TEXT NOT NULL REFERENCES strategies(id),
        scope                TEXT NOT NULL CHECK (scope IN ('global', 'daily', 'perSender')),
        key                  TEXT NOT NULL,     -- '' (global), 'YYYY-MM-DD' (daily, UTC), checksummed sender
        reserved_wei         TEXT NOT NULL,     -- decimal
        spent_wei            TEXT NOT NULL,
        reserved_usd_micros  TEXT NOT NULL,
        spent_usd_micros     TEXT NOT NULL,
        ops                  INTEGER NOT NULL CHECK (ops >= 0),
        updated_at           INTEGER NOT NULL,
        PRIMARY KEY (strategy_id, scope, key)
      ) STRICT;

      -- The usage rows a sponsorship was reserved in (one per cap check), fixed when it is reserved: its release,
      -- settlement and un-settlement change exactly these rows, even after the UTC day has turned.
      CREATE TABLE sponsorship_usage (
        sponsorship_id  TEXT NOT NULL REFERENCES sponsorships(id),
        strategy_id     TEXT NOT NULL,
        scope           TEXT NOT NULL,
        key             TEXT NOT NULL,
        PRIMARY KEY (sponsorship_id, strategy_id, scope, key),
        FOREIGN KEY (strategy_id, scope, key) REFERENCES strategy_usage(strategy_id, scope, key)
      ) STRICT;

      -- Named positions (e.g. the last block a watcher fully processed).
      CREATE TABLE cursors (
        name        TEXT PRIMARY KEY,
        value       TEXT NOT NULL,              -- decimal
        updated_at  INTEGER NOT NULL
      ) STRICT;
    `,
  },
]);

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

/**
 * Migrations from version 3 on: written once, with the column types of `Dialect.types` (amounts: TEXT decimals in
 * SQLite, NUMERIC(78,0) in PostgreSQL; times: INTEGER / BIGINT; JSON: TEXT / JSONB; booleans: INTEGER 0/1 /
 * BOOLEAN) and `tableSuffix` (SQLite tables are STRICT). Use only SQL both databases accept.
 */
export function sharedMigrations(d: Dialect): Migration[] {
  const t = d.types;
  return [
    {
      version: 3,
      name: "token charge flags",
      sql: `
        -- ERC-20 sponsorships whose token charge is at risk: signed in charge-in-postOp mode (at most one may be
        -- outstanding per sender and network) or seen unpaid by the settlement watcher (the sender may then only
        -- use pre-charge mode on that network). Cleared when a settlement is reorganised away.
        CREATE TABLE token_charge_flags (
          sponsorship_id  TEXT PRIMARY KEY REFERENCES sponsorships(id),
          network         TEXT NOT NULL,
          sender          TEXT NOT NULL,           -- checksummed, as in sponsorships
          postop_charge   ${t.bool} NOT NULL,
          unpaid          ${t.bool} NOT NULL,
          updated_at      ${t.time} NOT NULL
        )${d.tableSuffix};
        CREATE INDEX token_charge_flags_sender ON token_charge_flags(network, sender);
      `,
    },
    {
      version: 4,
      name: "administration: project status, tank debits, audit log",
      sql: `
      -- A disabled project's keys are refused (the keys keep their own status, so enabling it again restores them).
      ALTER TABLE projects ADD COLUMN status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled'));

      -- Debits an operator made by hand (refunds, corrections); the reference makes each one idempotent.
      CREATE TABLE gas_tank_debits (
        reference   TEXT PRIMARY KEY,
        network     TEXT NOT NULL,
        sender      TEXT NOT NULL,          -- checksummed
        amount_wei  ${t.amount} NOT NULL,
        created_at  ${t.time} NOT NULL
      )${d.tableSuffix};

      -- Every mutating administration call: who, when, what, and the object before and after (JSON, no secrets).
      CREATE TABLE audit_log (
        id          TEXT PRIMARY KEY,
        at          ${t.time} NOT NULL,
        actor       TEXT NOT NULL,          -- "cli:<os user>" or "api:<token name>"
        action      TEXT NOT NULL,          -- e.g. "key.revoke"
        target      TEXT,                   -- the object's id or code
        before      ${t.json},
        after       ${t.json}
      )${d.tableSuffix};
      CREATE INDEX audit_log_at ON audit_log(at);
    `,
    },
    {
      version: 5,
      name: "API key access: allowed origins and client IP ranges",
      sql: `
      -- JSON arrays. allowed_origins: NULL = any origin (or none); [] = server-side only (a request with an Origin
      -- header is refused); else the exact origins allowed. allowed_ips: NULL = any; else CIDR ranges.
      ALTER TABLE api_keys ADD COLUMN allowed_origins ${t.json};
      ALTER TABLE api_keys ADD COLUMN allowed_ips ${t.json};
    `,
    },
    {
      version: 6,
      name: "API key applications",
      sql: `
      -- The spec's application process: a team applies (public endpoint), the operator approves (a project and
      -- a one-time claim token) or rejects; the applicant claims the key once with the token.
      CREATE TABLE key_applications (
        id                TEXT PRIMARY KEY,
        created_at        ${t.time} NOT NULL,
        contact           TEXT NOT NULL,
        project_name      TEXT NOT NULL,
        networks          ${t.json} NOT NULL,      -- the networks the applicant intends to use
        intended_use      TEXT NOT NULL,
        status            TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'claimed')),
        decided_at        ${t.time},
        decided_by        TEXT,
        reason            TEXT,                    -- a rejection's reason
        project_id        TEXT REFERENCES projects(id),
        claim_token_hash  TEXT,                    -- sha256 of the claim token; the token itself is never stored
        api_key_id        TEXT REFERENCES api_keys(id),
        claimed_at        ${t.time}
      )${d.tableSuffix};
      CREATE INDEX key_applications_status ON key_applications(status, created_at);
      CREATE UNIQUE INDEX key_applications_claim ON key_applications(claim_token_hash);
    `,
    },
    {
      version: 7,
      name: "webhooks",
      sql: `
        -- A project's webhook endpoints: 'events' endpoints receive the events listed in \`events\` (JSON array);
        -- the one 'approval' endpoint per project is asked before each signature. The secret is kept as generated
        -- (HMAC needs the key itself, a hash of it cannot sign): see docs/webhooks.md.
        CREATE TABLE webhook_endpoints (
          id                TEXT PRIMARY KEY,
          project_id        TEXT NOT NULL REFERENCES projects(id),
          kind              TEXT NOT NULL CHECK (kind IN ('events', 'approval')),
          url               TEXT NOT NULL,
          events            TEXT,                    -- JSON array of event types ('events' endpoints), else NULL
          secret            TEXT NOT NULL,
          timeout_ms        ${d.types.int},          -- approval: how long to wait for the answer
          default_decision  TEXT CHECK (default_decision IN ('allow', 'deny')),  -- approval: on timeout or error
          created_at        ${d.types.time} NOT NULL
        )${d.tableSuffix};
        CREATE INDEX webhook_endpoints_project ON webhook_endpoints(project_id);
        CREATE UNIQUE INDEX webhook_endpoints_one_approval ON webhook_endpoints(project_id) WHERE kind = 'approval';

        -- The outbox: one row per event and endpoint, written in the transaction of the change that causes it.
        -- \`payload\` is the exact body sent (TEXT in both databases, so every attempt signs the same bytes);
        -- \`seq\` orders the events of one sponsorship for one endpoint (delivered strictly in that order).
        CREATE TABLE webhook_events (
          id               TEXT PRIMARY KEY,         -- the event id receivers de-duplicate by
          -- No foreign key, on purpose: deleting an endpoint must never make a concurrent transition (a signature)
          -- fail on the reference; a row left behind by such a race is never claimed nor listed (both join endpoints).
          endpoint_id      TEXT NOT NULL,
          project_id       TEXT NOT NULL,
          type             TEXT NOT NULL,
          sponsorship_id   TEXT,
          seq              ${d.types.int} NOT NULL,
          dedupe_key       TEXT,                     -- at most one event per (endpoint, key): cap.reached, deposit.low
          payload          TEXT NOT NULL,
          status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
          attempts         ${d.types.int} NOT NULL,
          next_attempt_ms  ${d.types.time} NOT NULL,
          lease_owner      TEXT,                     -- the worker delivering it now, until lease_until_ms
          lease_until_ms   ${d.types.time},
          last_error       TEXT,
          created_ms       ${d.types.time} NOT NULL,
          delivered_ms     ${d.types.time}
        )${d.tableSuffix};
        CREATE UNIQUE INDEX webhook_events_dedupe ON webhook_events(endpoint_id, dedupe_key);
        CREATE INDEX webhook_events_due ON webhook_events(status, next_attempt_ms);
        CREATE INDEX webhook_events_order ON webhook_events(endpoint_id, sponsorship_id, seq);
        CREATE INDEX webhook_events_project ON webhook_events(project_id, created_ms);
        `,
    },
    {
      version: 8,
      name: "EntryPoint v0.8 sponsorships",
      // Only widens sponsorships.version's CHECK. SQLite cannot alter a constraint; widening one changes no
      // stored row, so the documented writable_schema edit applies (no table rebuild, foreign keys untouched),
      // and RESET reloads this connection's schema. PostgreSQL names the column's check <table>_<column>_check.
      sql:
        d.name === "sqlite"
          ? `
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (version IN (''v0.6'', ''v0.7''))', 'CHECK (version IN (''v0.6'', ''v0.7'', ''v0.8''))')
          WHERE type = 'table' AND name = 'sponsorships';
        PRAGMA writable_schema = RESET;
      `
          : `
        ALTER TABLE sponsorships DROP CONSTRAINT sponsorships_version_check;
        ALTER TABLE sponsorships ADD CONSTRAINT sponsorships_version_check CHECK (version IN ('v0.6', 'v0.7', 'v0.8'));
      `,
    },
    {
      version: 9,
      name: "request counts per minute",
      sql: `
        -- JSON-RPC calls answered, per minute (the minute's first unix second), network, method and outcome ('ok'
        -- or the error reason): what the console's "over time" charts read. Each process adds what it counted
        -- since its last flush (src/metrics/requestCounts.ts), so the rows are the sum over every replica and
        -- survive restarts. Rows older than the retention are deleted by the flusher.
        CREATE TABLE request_counts (
          minute   ${t.time} NOT NULL,
          network  TEXT NOT NULL,
          method   TEXT NOT NULL,
          outcome  TEXT NOT NULL,
          count    ${t.time} NOT NULL CHECK (count >= 0),
          PRIMARY KEY (minute, network, method, outcome)
        )${d.tableSuffix};
      `,
    },
    {
      version: 10,
      name: "config version",
      // One counter that every change of a project, API key, strategy or webhook endpoint bumps, in the same
      // transaction, by trigger (whatever writes it: the service, the CLI, the admin API, SQL by hand). The service
      // reads it once per request and keeps what it looked up under the version it read (src/store/configCache.ts):
      // a revoked key is still refused on its next request by every replica.
      sql:
        d.name === "sqlite"
          ? `
        CREATE TABLE config_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL) STRICT;
        INSERT INTO config_version (id, version) VALUES (1, 0);
        ${CONFIG_TABLES.map((table) => configVersionTriggers(d, table)).join("\n        ")}
      `
          : `
        CREATE TABLE config_version (id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL);
        INSERT INTO config_version (id, version) VALUES (1, 0);
        CREATE FUNCTION bump_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; RETURN NULL; END $$;
        ${CONFIG_TABLES.map((table) => configVersionTriggers(d, table)).join("\n        ")}
      `,
    },
    {
      version: 11,
      name: "outstanding reservations per sender and per client address",
      // client_ip: the requester's address (the one keys' IP allowlists judge), for the per-client bound on
      // outstanding reservations of browser keys. Both indexes hold open sponsorships only (a set bounded by the
      // signature lifetime), so counting them stays cheap however long the history grows.
      // parallel_nonce: the op's nonce key is not 0 (a 2-D nonce): what the per-sender bound counts.
      sql: `
        ALTER TABLE sponsorships ADD COLUMN client_ip TEXT;
        ALTER TABLE sponsorships ADD COLUMN parallel_nonce ${t.bool} NOT NULL DEFAULT ${d.name === "sqlite" ? "0" : "FALSE"};
        CREATE INDEX sponsorships_open_sender ON sponsorships(network, entry_point, sender) WHERE status IN ('reserved', 'signed') AND parallel_nonce = ${d.name === "sqlite" ? "1" : "TRUE"};
        CREATE INDEX sponsorships_open_client ON sponsorships(api_key_id, client_ip) WHERE status IN ('reserved', 'signed') AND client_ip IS NOT NULL;
      `,
    },
    {
      version: 12,
      name: "sponsorship retention: rollups and history indexes",
      sql: `
        -- What the console's charts and the strategy history need of sponsorships deleted by the retention pass
        -- (src/store/retention.ts), per minute of creation (the minute's first unix second): written in the
        -- transaction that deletes them, read beside the rows still present. Not unique: each pass adds its rows.
        CREATE TABLE sponsorship_rollup (
          minute                  ${t.time} NOT NULL,
          network                 TEXT NOT NULL,
          project_id              TEXT NOT NULL,
          strategy_id             TEXT,
          mode                    TEXT NOT NULL,
          version                 TEXT NOT NULL,
          status                  TEXT NOT NULL CHECK (status IN ('settled', 'released')),
          count                   ${t.time} NOT NULL CHECK (count > 0),
          max_cost_wei            ${t.amount} NOT NULL,
          max_cost_usd_micros     ${t.amount} NOT NULL,
          actual_gas_cost_wei     ${t.amount} NOT NULL,
          actual_cost_usd_micros  ${t.amount} NOT NULL
        )${d.tableSuffix};
        CREATE INDEX sponsorship_rollup_minute ON sponsorship_rollup(minute);
        -- How many sponsorships were deleted, per what the records-by-status gauge counts.
        CREATE TABLE sponsorship_pruned_counts (
          network  TEXT NOT NULL,
          mode     TEXT NOT NULL,
          version  TEXT NOT NULL,
          status   TEXT NOT NULL,
          count    ${t.time} NOT NULL CHECK (count >= 0),
          PRIMARY KEY (network, mode, version, status)
        )${d.tableSuffix};
        -- History that stays fast as it grows: the console's windows and lists by creation time (of everything,
        -- and of one strategy: its daily history), and the retention pass's two scans (released ones by creation, settled ones by settlement).
        CREATE INDEX sponsorships_created ON sponsorships(created_at);
        CREATE INDEX sponsorships_strategy_created ON sponsorships(strategy_id, created_at);
        CREATE INDEX sponsorships_released ON sponsorships(created_at) WHERE status = 'released';
        CREATE INDEX sponsorships_settled_at ON sponsorships(settled_at) WHERE status = 'settled';
      `,
    },
    {
      version: 13,
      name: "gas tank consents",
      // Which projects may draw from a sender's gas tank (User Sponsor mode): none unless a row says allowed
      // (deny by default). issued_at orders the consents of one (tank, project): a signed consent is kept only
      // when newer than the row, so an old signed message cannot be replayed to undo a later change.
      // An upgraded database keeps what its history proves: a tank allows each project under which its sender
      // signed a User Sponsor op that landed (a settled sponsorship), dated 0 so any signed consent overrides it.
      sql: `
        CREATE TABLE gas_tank_consents (
          network     TEXT NOT NULL,
          sender      TEXT NOT NULL,
          project_id  TEXT NOT NULL REFERENCES projects(id),
          allowed     ${t.bool} NOT NULL,
          issued_at   ${t.time} NOT NULL,
          changed_by  TEXT NOT NULL,
          updated_at  ${t.time} NOT NULL,
          PRIMARY KEY (network, sender, project_id)
        )${d.tableSuffix};
        INSERT INTO gas_tank_consents (network, sender, project_id, allowed, issued_at, changed_by, updated_at)
          SELECT network, sender, project_id, ${d.name === "sqlite" ? "1" : "TRUE"}, 0, 'settled ops', MAX(COALESCE(settled_at, created_at))
          FROM sponsorships WHERE mode = 'user' AND status = 'settled'
          GROUP BY network, sender, project_id;
      `,
    },
    {
      version: 14,
      name: "audit log: the actor's role",
      // The role the actor acted with (src/admin/roles.ts); NULL for the public door's changes (an applicant's
      // claim). Every token was admin before roles existed, and the CLI acts as admin: earlier rows say so.
      sql: `
        ALTER TABLE audit_log ADD COLUMN role TEXT CHECK (role IN ('viewer', 'operator', 'admin'));
        UPDATE audit_log SET role = 'admin' WHERE actor LIKE 'cli:%' OR actor LIKE 'api:%' OR actor LIKE 'console:%';
      `,
    },
    {
      version: 15,
      name: "project billing: plans, balances, the ledger, holds",
      // Hosted operators bill their projects (docs/policies.md, "Project billing"). USD amounts are micro-units
      // (1e-6 USD) in amount columns; balances may go below zero (the chain charged an op whose hold was already
      // released), so a sum over them is never taken in SQL (amountParts is for non-negative amounts).
      sql: `
        -- The operator's terms per project; off unless a row says enabled (self-hosting teams see nothing new).
        -- A config table: every change bumps config_version, so each replica reads a plan once per version.
        CREATE TABLE billing_plans (
          project_id             TEXT PRIMARY KEY REFERENCES projects(id),
          enabled                ${t.bool} NOT NULL,
          markup_bps             ${t.int} NOT NULL CHECK (markup_bps BETWEEN 0 AND 100000),
          fee_usd_micros         ${t.amount} NOT NULL,          -- per settled operation
          alert_below_usd_micros ${t.amount},                   -- low-balance alert threshold; NULL: none
          updated_at             ${t.time} NOT NULL
        )${d.tableSuffix};
        ${configVersionTriggers(d, "billing_plans")}

        -- A project's prepaid balance (credits minus what settled operations were billed) and what its open
        -- sponsorships hold of it. Locked by every transaction that moves either (lock order 3, sqlStore.ts).
        CREATE TABLE billing_accounts (
          project_id         TEXT PRIMARY KEY REFERENCES projects(id),
          balance_usd_micros ${t.amount} NOT NULL,
          held_usd_micros    ${t.amount} NOT NULL,
          last_seq           ${t.int} NOT NULL,                 -- the ledger's last entry of the project
          last_at            ${t.time} NOT NULL,                -- and its time: entries never go back in time
          low_alerted        ${t.bool} NOT NULL,                -- balance.low sent for the current dip below the threshold
          updated_at         ${t.time} NOT NULL
        )${d.tableSuffix};

        -- Append-only: every change of a balance is one entry, never updated or deleted (retention does not touch
        -- it), so a statement of a past period never changes. kind: credit (by the operator), debit (a settled
        -- operation), adjustment (a debit undone by a reorganisation, or a correction by the operator).
        -- Operation entries copy what a statement shows, so they outlive the sponsorship rows.
        CREATE TABLE billing_ledger (
          project_id          TEXT NOT NULL REFERENCES projects(id),
          seq                 ${t.int} NOT NULL,
          at                  ${t.time} NOT NULL,
          kind                TEXT NOT NULL CHECK (kind IN ('credit', 'debit', 'adjustment')),
          reference           TEXT NOT NULL,                   -- the operator's reference, or the sponsorship id
          amount_usd_micros   ${t.amount} NOT NULL,            -- signed: + credits the balance, - debits it
          balance_usd_micros  ${t.amount} NOT NULL,            -- the balance after this entry
          actor               TEXT,                            -- who made an entry by hand
          sponsorship_id      TEXT,                            -- operation entries (no foreign key: outlives it)
          network             TEXT,
          mode                TEXT,
          user_op_hash        TEXT,
          tx_hash             TEXT,
          block_number        ${t.time},
          gas_cost_wei        ${t.amount},
          gas_usd_micros      ${t.amount},
          markup_usd_micros   ${t.amount},
          fee_usd_micros      ${t.amount},
          reverses_seq        ${t.int},                        -- an adjustment undoing this entry
          PRIMARY KEY (project_id, seq)
        )${d.tableSuffix};
        CREATE INDEX billing_ledger_at ON billing_ledger(project_id, at);
        CREATE INDEX billing_ledger_sponsorship ON billing_ledger(sponsorship_id) WHERE sponsorship_id IS NOT NULL;
        -- Entries by hand are idempotent by their reference: the same reference is one entry, whatever the project.
        CREATE UNIQUE INDEX billing_ledger_reference ON billing_ledger(reference) WHERE sponsorship_id IS NULL;

        -- A billed sponsorship's hold (its maximum cost as billed, held while it is open) and the terms it was
        -- priced at when reserved (JSON: basis, the native USD price, markup, fee), which its settlement bills by.
        -- NULL: the project was not billed for it.
        ALTER TABLE sponsorships ADD COLUMN billing_hold_usd_micros ${t.amount};
        ALTER TABLE sponsorships ADD COLUMN billing_terms ${t.json};
      `,
    },
    {
      version: 16,
      name: "audit log: insertion order",
      // Newest first needs a strictly increasing key after `at` (whole seconds; ids are random): the dialect's
      // insertionOrder, as for sponsorships. SQLite has one (rowid, already in audit_log_at's index); PostgreSQL
      // numbers the rows it holds in their stored order (rows of one second written before had no order at all).
      sql:
        d.name === "sqlite"
          ? `-- audit_log is ordered by rowid: nothing to add.`
          : `
        ALTER TABLE audit_log ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY;
        DROP INDEX audit_log_at;
        CREATE INDEX audit_log_at ON audit_log(at, seq);
      `,
    },
    {
      version: 17,
      name: "one round trip per sponsorship: running holds, change marks, pm_refuse",
      // A reservation is one batch of statements that move counters and check them (store/sql/reservations.ts), in
      // one round trip and without a lock held across round trips (docs/scale.md). What it counted before by
      // reading rows under a lock becomes running sums, kept by every transition that opens or closes a
      // sponsorship (store/accounting.ts, "holds"): open sponsorships per parallel sender, per (key, client),
      // per key, postOp-charge ones per sender, and what they hold in USD. Filled here from the open
      // sponsorships there are; the two partial indexes that served the counting go.
      // holds: the hold rows it counts in while open (store/accounting.ts holdsText), fixed when it is reserved.
      // usage_links: the strategy usage rows it counts in (its strategy's; accounting.ts linksText), which the
      // table sponsorship_usage held: one column written with the row, no insert of its own, read with the row.
      // change_id: the store call that last changed the row, so that a batch can tell its own change from a
      // concurrent one (its guards: store/sql/statements.ts).
      sql: `
        ALTER TABLE sponsorships ADD COLUMN holds TEXT;
        ALTER TABLE sponsorships ADD COLUMN usage_links TEXT;
        UPDATE sponsorships SET usage_links = (SELECT ${d.name === "sqlite" ? "group_concat(l.scope || '=' || l.key, ';')" : "string_agg(l.scope || '=' || l.key, ';')"}
          FROM sponsorship_usage l WHERE l.sponsorship_id = sponsorships.id);
        DROP TABLE sponsorship_usage;
        ALTER TABLE sponsorships ADD COLUMN change_id TEXT;
        ALTER TABLE gas_tank_credits ADD COLUMN change_id TEXT;
        CREATE TABLE holds (
          scope       TEXT NOT NULL,
          key         TEXT NOT NULL,
          open        ${t.int} NOT NULL CHECK (open >= 0),
          usd_micros  ${t.amount} NOT NULL,
          updated_at  ${t.time} NOT NULL,
          PRIMARY KEY (scope, key)
        )${d.tableSuffix};
        ${initialHolds(d)}
        DROP INDEX sponsorships_open_sender;
        DROP INDEX sponsorships_open_client;
        ${
          d.name === "postgres"
            ? `CREATE FUNCTION pm_refuse(reason TEXT, value TEXT) RETURNS BOOLEAN LANGUAGE plpgsql VOLATILE AS $$
          BEGIN RAISE EXCEPTION USING ERRCODE = 'PM001', MESSAGE = reason, DETAIL = COALESCE(value, ''); END $$;`
            : ""
        }
      `,
    },
    {
      version: 18,
      name: "tokens are configuration: every change bumps config_version",
      // An ERC-20 sponsorship looked its token up in the database on every request: one more round trip before
      // the chain call with a database 2.4 ms away. Tokens change only by the operator's hand (upsertToken), so
      // they are cached per config version like keys and strategies (store/configCache.ts), and the reservation's
      // config guard refuses an op decided on a token row that changed since.
      sql: `
        ${configVersionTriggers(d, "tokens")}
      `,
    },
  ];
}

/**
 * The hold rows of the sponsorships open when migration 17 runs (what the counting it replaces counted; new
 * sponsorships get theirs from store/accounting.ts holdRows): which open sponsorships count in a scope, the key
 * they count under, and the USD they hold there.
 */
const POSTOP_AT_16 = "EXISTS (SELECT 1 FROM token_charge_flags f WHERE f.sponsorship_id = s.id AND f.postop_charge = TRUE)";
const HOLD_SCOPES_AT_16: readonly { scope: string; key: string; usd: string; where: string }[] = [
  { scope: "sender", key: "s.network || ':' || s.entry_point || ':' || s.sender", usd: "", where: "s.parallel_nonce = TRUE" },
  { scope: "client", key: "s.api_key_id || ':' || s.client_ip", usd: "s.billing_hold_usd_micros", where: "s.client_ip IS NOT NULL" },
  { scope: "key", key: "s.api_key_id", usd: "s.billing_hold_usd_micros", where: "s.billing_hold_usd_micros IS NOT NULL" },
  { scope: "postop-sender", key: "s.network || ':' || s.sender", usd: "", where: POSTOP_AT_16 },
  { scope: "postop-project", key: "s.project_id", usd: "s.max_cost_usd_micros", where: POSTOP_AT_16 },
  { scope: "postop-key", key: "s.api_key_id", usd: "s.max_cost_usd_micros", where: POSTOP_AT_16 },
];

/** Migration 17: the open sponsorships' hold rows (sponsorships.holds) and the running holds they add up to. */
function initialHolds(d: Dialect): string {
  const truth = (sql: string) => (d.name === "sqlite" ? sql.replaceAll("TRUE", "1") : sql);
  const open = "s.status IN ('reserved', 'signed')";
  const text = HOLD_SCOPES_AT_16.map((h) => `CASE WHEN ${truth(h.where)} THEN '${h.scope}=' || ${h.key} || ';' ELSE '' END`).join(" || ");
  const rows = HOLD_SCOPES_AT_16.map(
    (h) => `INSERT INTO holds (scope, key, open, usd_micros, updated_at)
          SELECT '${h.scope}', ${h.key}, COUNT(*), ${h.usd === "" ? "'0'" : d.sumAmount(`COALESCE(${h.usd}, '0')`)}, 0 FROM sponsorships s
          WHERE ${open} AND ${truth(h.where)} GROUP BY ${h.key};`,
  );
  return [`UPDATE sponsorships AS s SET holds = rtrim(${text}, ';') WHERE ${open};`, ...rows].join("\n        ");
}

/** The tables whose every change bumps config_version (what the service caches per version), as of migration 10. */
const CONFIG_TABLES = ["projects", "api_keys", "strategies", "webhook_endpoints"] as const;

/** The triggers that bump config_version on every change of `table` (migration 10's function, in PostgreSQL). */
function configVersionTriggers(d: Dialect, table: string): string {
  if (d.name === "postgres") {
    return `CREATE TRIGGER config_version_${table} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${table}
          FOR EACH STATEMENT EXECUTE FUNCTION bump_config_version();`;
  }
  return ["INSERT", "UPDATE", "DELETE"]
    .map(
      (event) =>
        `CREATE TRIGGER config_version_${table}_${event.toLowerCase()} AFTER ${event} ON ${table}
          BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;`,
    )
    .join("\n        ");
}

/**
 * The migrations a database that recorded `applied` still needs, in order: every known one it has not recorded —
 * not only those above its highest, so a migration numbered below one already applied (versions taken by changes
 * merged in another order) still runs. A recorded version this service does not know means a newer (or another)
 * build wrote the database: SCHEMA_TOO_NEW, nothing applied.
 */
export function pendingMigrations(migrations: readonly Migration[], applied: readonly number[], policy: MigrationPolicy = "apply"): Migration[] {
  const known = new Set(migrations.map((m) => m.version));
  const unknown = applied.filter((v) => !known.has(v));
  if (unknown.length > 0) {
    throw new StoreError(
      "SCHEMA_TOO_NEW",
      `database schema version ${Math.max(...unknown)} is newer than this service knows (${migrations.at(-1)?.version ?? 0}); upgrade the service`,
    );
  }
  const done = new Set(applied);
  const pending = migrations.filter((m) => !done.has(m.version));
  if (policy === "new-only" && applied.length > 0 && pending.length > 0) {
    throw new StoreError(
      "SCHEMA_TOO_OLD",
      `the database's schema is at migration ${Math.max(...applied)} and this version's at ${Math.max(...pending.map((m) => m.version))}: migrating it would stop the replicas of the older version that run on it from signing`,
    );
  }
  return pending;
}

/**
 * Whether opening a database may bring its schema up to this build's: "apply" (the service: its first replica of a
 * new version migrates), or "new-only" (the operator CLI: a new database is set up, but one with migrations applied
 * and some pending is refused with SCHEMA_TOO_OLD, since the replicas of the older version running on it would stop
 * signing the moment it is migrated: docs/operations.md, "Upgrading replicas that share a database").
 */
export type MigrationPolicy = "apply" | "new-only";

/** Every migration of one database, in order. */
export function migrationsFor(d: Dialect): readonly Migration[] {
  return [...(d.name === "sqlite" ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS), ...sharedMigrations(d)];
}
