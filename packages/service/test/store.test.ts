import { expect } from "chai";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import pg from "pg";
import type { Address } from "@paymaster/shared";

import { ConfigError } from "../src/config/errors.ts";
import { buildConfig, redactConfig } from "../src/config/load.ts";
import { openStore } from "../src/store/index.ts";
import { isStoreError, StoreError } from "../src/store/errors.ts";
import { StoreUnavailableError } from "../src/store/unavailable.ts";
import { describeStoreState } from "../src/store/health.ts";
import { POSTGRES_DIALECT } from "../src/store/db/postgres.ts";
import { SQLITE_DIALECT } from "../src/store/db/sqlite.ts";
import { migrationsFor, POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS, type Migration } from "../src/store/migrations.ts";
import { openPostgresDb } from "../src/store/db/postgres.ts";
import { openSqliteDb } from "../src/store/db/sqlite.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { CapCheck } from "../src/policy/types.ts";
import type { NewSponsorship, ReserveResult, Settlement, SponsorshipRecord, Store } from "../src/store/types.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";

const NET = "base-sepolia";
const EP = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789" as Address;
const EP7 = "0x0000000071727De22E5E9d8BAf0edAc6f37da032" as Address;
const EP8 = "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108" as Address;
const SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as Address;
const OTHER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" as Address;
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as Address;
const DAI = "0x9178a9844002240359454488bC593E68b604214E" as Address;
const HASH_A = `0x${"ab".repeat(32)}` as const;
const HASH_B = `0x${"cd".repeat(32)}` as const;

/** A minimal valid network, for the configuration tests. */
const LOCAL_NETWORK = {
  name: "local",
  rpcUrl: "http://127.0.0.1:8545",
  entryPoints: {
    "v0.6": {
      verifyingPaymaster: "0x9fa47A8D5435A5466cb484BBA6da42D451158B88",
      erc20Paymaster: "0x4C48baE99f5d4dA1e9E57dA5805FFC0528208feC",
    },
  },
  nativeUsdPrice: { type: "fixed", usd: "3000" },
};
/** Hardhat's well-known dev key #1. */
const LOCAL_ENV = { PAYMASTER_NETWORK_LOCAL_SIGNER_KEYS: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" };

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

/** One store implementation, with raw access to its database for the tests that look underneath. */
interface Backend {
  readonly name: string;
  readonly migrations: readonly Migration[];
  /** The module and its export that open a store on `target()`, for worker threads and child processes. */
  readonly module: string;
  readonly opener: "openSqliteStore" | "openPostgresStore";
  /** Once per run. */
  setup(): Promise<void>;
  teardown(): Promise<void>;
  /** Before each test: an empty database; `dir` is the test's scratch directory. */
  reset(dir: string): Promise<void>;
  /** What the opener takes: the SQLite file or the PostgreSQL URL. */
  target(): string;
  open(): Promise<Store>;
  /** The `n` of a `SELECT COUNT(*) AS n …`. */
  count(sql: string): Promise<number>;
  exec(sql: string): Promise<void>;
  /** Everything the database holds, as text: the test for "the plaintext is not stored". */
  storedText(): Promise<string>;
}

function sqliteBackend(): Backend {
  let file = "";
  const raw = <T>(fn: (db: DatabaseSync) => T): T => {
    const db = new DatabaseSync(file);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  return {
    name: "SQLite",
    migrations: migrationsFor(SQLITE_DIALECT),
    module: new URL("../src/store/sqlite.ts", import.meta.url).href,
    opener: "openSqliteStore",
    async setup() {},
    async teardown() {},
    async reset(dir) {
      file = path.join(dir, "db", "paymaster.sqlite");
    },
    target: () => file,
    async open() {
      return openSqliteStore(file);
    },
    async count(sql) {
      return raw((db) => Number((db.prepare(sql).get() as { n: number | bigint }).n));
    },
    async exec(sql) {
      raw((db) => db.exec(sql));
    },
    async storedText() {
      return Buffer.concat(
        [file, `${file}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)),
      ).toString("latin1");
    },
  };
}

/**
 * The tests' PostgreSQL server (helpers/testServers.ts: PAYMASTER_TEST_POSTGRES_URL, or a throwaway one). Each run
 * creates its own database there (paymaster_test_<random>) and drops it at the end; every test starts from an
 * empty schema.
 */
function postgresBackend(): Backend {
  let database: TestDatabase | undefined;
  let raw: pg.Client | undefined;
  const url = (): string => {
    if (!database) throw new Error("the PostgreSQL test database is not set up");
    return database.url;
  };
  const client = (): pg.Client => {
    if (!raw) throw new Error("the PostgreSQL test database is not set up");
    return raw;
  };
  return {
    name: "PostgreSQL",
    migrations: migrationsFor(POSTGRES_DIALECT),
    module: new URL("../src/store/postgres.ts", import.meta.url).href,
    opener: "openPostgresStore",
    async setup() {
      database = await createTestDatabase("paymaster_test");
      raw = new pg.Client({ connectionString: database.url });
      await raw.connect();
    },
    async teardown() {
      await raw?.end();
      raw = undefined;
      await database?.drop();
      database = undefined;
    },
    async reset() {
      await client().query("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    },
    target: url,
    open: () => openPostgresStore(url()),
    async count(sql) {
      return Number((await client().query<{ n: string }>(sql)).rows[0]!.n);
    },
    async exec(sql) {
      await client().query(sql);
    },
    async storedText() {
      const tables = await client().query<{ tablename: string }>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
      );
      let text = "";
      for (const { tablename } of tables.rows) {
        const rows = await client().query<{ j: string }>(
          `SELECT row_to_json(t)::text AS j FROM ${pg.escapeIdentifier(tablename)} t`,
        );
        text += rows.rows.map((r) => r.j).join("\n");
      }
      return text;
    },
  };
}

const BACKENDS: readonly Backend[] = [sqliteBackend(), postgresBackend()];

/** JSON with bigints as "123n" (for child processes and workers), and back. */
const bigintJson = (value: unknown): string => JSON.stringify(value, (_, v) => (typeof v === "bigint" ? `${v}n` : v));

/**
 * A script for `node` (child processes): opens the store, says "ready", waits for "go", reserves `attempts` ops
 * (nonces base, base + 1, …; `lanes` in flight at once) against `caps`, prints how many were accepted and the
 * refusals by reason. Its argument is bigintJson.
 */
const RESERVE_SCRIPT = `
import { createInterface } from "node:readline";
const spec = JSON.parse(process.argv[2], (_, v) => (typeof v === "string" && /^\\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v));
const { [spec.opener]: open } = await import(spec.module);
const store = await open(spec.target);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
console.log("ready");
await lines.next(); // "go": start together
let ok = 0;
const refused = {};
let next = 0;
async function lane() {
  while (next < spec.attempts) {
    const i = next++;
    const r = await store.reserveSponsorship({ ...spec.op, nonce: BigInt(spec.base + i) }, spec.caps);
    if (r.ok) ok++;
    else refused[r.reason] = (refused[r.reason] ?? 0) + 1;
  }
}
await Promise.all(Array.from({ length: spec.lanes }, lane));
await store.close();
console.log(JSON.stringify({ ok, refused }));
process.exit(0);
`;

for (const backend of BACKENDS) {
  describe(`${backend.name} store`, () => {
    let dir: string;
    let store: Store;
    const opened: Store[] = [];

    async function open(): Promise<Store> {
      const s = await backend.open();
      opened.push(s);
      return s;
    }

    async function closeAll(): Promise<void> {
      for (const s of opened.splice(0)) await s.close();
    }

    before(async function () {
      this.timeout(30_000);
      await backend.setup();
    });

    after(async () => {
      await backend.teardown();
    });

    beforeEach(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "pm-store-"));
      await backend.reset(dir);
      store = await open();
    });

    afterEach(async () => {
      await closeAll();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    /** A project + key to hang sponsorships on. */
    async function owner() {
      const project = await store.createProject("demo");
      const { apiKey } = await store.createApiKey(project.id, "ci");
      return { projectId: project.id, apiKeyId: apiKey.id };
    }

    function op(ids: { projectId: string; apiKeyId: string }, over: Partial<NewSponsorship> = {}): NewSponsorship {
      return sponsorshipInput(ids, {
        network: NET,
        entryPoint: EP,
        version: "v0.6",
        sender: SENDER,
        mode: "user",
        userOpHash: `0x${randomBytes(32).toString("hex")}`,
        paymasterAndData: "0x01",
        ...over,
      });
    }

    /**
     * What an earlier version left when it stopped between its two steps (reserve, then sign): the same row,
     * status "reserved", no signature. No current code path writes one; every transition must still handle it.
     */
    async function unsignedLegacy(record: SponsorshipRecord): Promise<SponsorshipRecord> {
      await backend.exec(`UPDATE sponsorships SET status = 'reserved', user_op_hash = NULL, paymaster_and_data = NULL WHERE id = '${record.id}'`);
      return { ...record, status: "reserved", userOpHash: null, paymasterAndData: null };
    }

    /**
     * Two child processes on the test's database reserve `attempts` ops each (distinct nonces, `lanes` in flight
     * per process), started together; their answers.
     */
    async function twoProcesses(spec: {
      op: NewSponsorship;
      caps?: readonly CapCheck[];
      attempts: number;
      lanes: number;
    }): Promise<{ ok: number; refused: Record<string, number> }[]> {
      const script = path.join(dir, "reserve.mjs");
      fs.writeFileSync(script, RESERVE_SCRIPT);
      const children = [0, 1].map((p) =>
        spawn(
          process.execPath,
          [
            "--disable-warning=ExperimentalWarning",
            script,
            bigintJson({ module: backend.module, opener: backend.opener, target: backend.target(), base: p * 1000, ...spec }),
          ],
          { stdio: ["pipe", "pipe", "inherit"] },
        ),
      );
      try {
        const outputs = children.map((child) => createInterface({ input: child.stdout })[Symbol.asyncIterator]());
        for (const lines of outputs) expect((await lines.next()).value).to.equal("ready");
        for (const child of children) child.stdin.write("go\n");
        const answers = await Promise.all(
          outputs.map(async (lines) => JSON.parse((await lines.next()).value as string) as { ok: number; refused: Record<string, number> }),
        );
        await Promise.all(children.map((child) => (child.exitCode === null ? once(child, "exit") : undefined)));
        expect(children.map((child) => child.exitCode)).to.deep.equal([0, 0]);
        return answers;
      } finally {
        for (const child of children) if (child.exitCode === null) child.kill();
      }
    }

    describe("opening", () => {
      if (backend.name === "SQLite") {
        it("creates the directory, the file (owner-only), WAL mode and the migrations table", () => {
          const file = backend.target();
          expect(fs.existsSync(file)).to.equal(true);
          expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
          const raw = new DatabaseSync(file);
          try {
            expect(raw.prepare("PRAGMA journal_mode").get()).to.deep.equal({ journal_mode: "wal" });
            const versions = raw.prepare("SELECT version FROM schema_migrations ORDER BY version").all();
            expect(versions.map((r) => r.version)).to.deep.equal(migrationsFor(SQLITE_DIALECT).map((m) => m.version));
          } finally {
            raw.close();
          }
        });

        it("openStore opens the SQLite file named by databasePath", async () => {
          const other = path.join(dir, "other.sqlite");
          const s = await openStore({ databasePath: other });
          opened.push(s);
          const p = await s.createProject("x");
          expect((await s.getProject(p.id))?.name).to.equal("x");
          expect(fs.existsSync(other)).to.equal(true);
        });
      } else {
        it("creates the tables and records every migration in schema_migrations", async () => {
          expect(await backend.count("SELECT COUNT(*) AS n FROM schema_migrations")).to.equal(migrationsFor(POSTGRES_DIALECT).length);
          expect(
            await backend.count(
              `SELECT COUNT(*) AS n FROM pg_tables WHERE schemaname = 'public' AND tablename IN
                 ('projects', 'api_keys', 'strategies', 'tokens', 'gas_tanks', 'gas_tank_credits', 'sponsorships',
                  'strategy_usage', 'holds', 'cursors', 'gas_tank_debits', 'audit_log')`,
            ),
          ).to.equal(12);
          // amounts are NUMERIC(78,0): every uint256 fits
          expect(
            await backend.count(
              `SELECT COUNT(*) AS n FROM information_schema.columns WHERE table_schema = 'public'
                 AND data_type = 'numeric' AND numeric_precision = 78 AND numeric_scale = 0`,
            ),
          ).to.equal(33); // 16 of migrations 1-2, gas_tank_debits.amount_wei of migration 3, sponsorship_rollup's 4 (migration 12), billing's 11 (migration 15), holds.usd_micros (migration 16)
        });

        it("openStore opens PostgreSQL when databaseUrl is given (databasePath unused)", async () => {
          const unused = path.join(dir, "unused.sqlite");
          const s = await openStore({ databasePath: unused, databaseUrl: backend.target() });
          opened.push(s);
          const p = await s.createProject("in postgres");
          expect(await backend.count(`SELECT COUNT(*) AS n FROM projects WHERE id = '${p.id}'`)).to.equal(1);
          expect(fs.existsSync(unused)).to.equal(false);
        });

        it("a configuration with DATABASE_URL opens PostgreSQL; without it, the SQLite file", async () => {
          const doc = { databasePath: path.join(dir, "pm.sqlite"), networks: [LOCAL_NETWORK] };
          const withUrl = buildConfig(doc, { ...LOCAL_ENV, DATABASE_URL: backend.target() });
          expect(withUrl.databaseUrl).to.equal(backend.target());
          const s = await openStore(withUrl);
          opened.push(s);
          const p = await s.createProject("configured");
          expect(await backend.count(`SELECT COUNT(*) AS n FROM projects WHERE id = '${p.id}'`)).to.equal(1);
          expect(fs.existsSync(doc.databasePath)).to.equal(false);

          const withoutUrl = buildConfig(doc, LOCAL_ENV);
          expect(withoutUrl.databaseUrl).to.equal(undefined);
          opened.push(await openStore(withoutUrl));
          expect(fs.existsSync(doc.databasePath)).to.equal(true);
        });

        it("refuses amounts beyond uint256 (the columns are NUMERIC(78,0))", async () => {
          const ids = await owner();
          const tooBig = 1n << 256n;
          for (const over of [{ nonce: tooBig }, { maxCostWei: tooBig }, { exchangeRate: tooBig }, { maxTokenCost: tooBig }]) {
            const err = await rejection(store.reserveSponsorship(op(ids, { mode: "sponsor", ...over })));
            expect(isStoreError(err, "INVALID_INPUT"), String(err)).to.equal(true);
          }
          expect(isStoreError(await rejection(store.creditGasTank(NET, SENDER, tooBig, "big")), "INVALID_INPUT")).to.equal(true);
          const max = tooBig - 1n;
          const r = await store.reserveSponsorship(op(ids, { mode: "sponsor", nonce: max, maxCostWei: max }));
          if (!r.ok) throw new Error("expected ok");
          expect(await store.getSponsorship(r.record.id)).to.deep.include({ nonce: max, maxCostWei: max });
          expect((await store.creditGasTank(NET, SENDER, max, "max")).balanceWei).to.equal(max);
        });
      }

      it("keeps data across close and re-open, applying no migration twice", async () => {
        const project = await store.createProject("persisted");
        const { plaintext } = await store.createApiKey(project.id);
        await store.creditGasTank(NET, SENDER, 5n * 10n ** 30n, "admin:1");
        await store.close();
        const again = await open();
        expect(await again.getProject(project.id)).to.deep.equal(project);
        expect((await again.findApiKey(plaintext))?.projectId).to.equal(project.id);
        expect((await again.getGasTank(NET, SENDER)).balanceWei).to.equal(5n * 10n ** 30n);
        await again.close();
        await open(); // a third open is still fine
        expect(await backend.count("SELECT COUNT(*) AS n FROM schema_migrations")).to.equal(backend.migrations.length);
      });

      it("several stores opening one empty database together migrate it once", async () => {
        await closeAll();
        await backend.reset(dir);
        const stores = await Promise.all([open(), open(), open(), open()]);
        expect(await backend.count("SELECT COUNT(*) AS n FROM schema_migrations")).to.equal(backend.migrations.length);
        const p = await stores[0]!.createProject("shared");
        for (const s of stores) expect((await s.getProject(p.id))?.name).to.equal("shared");
      });

      it("refuses a database written by a newer schema", async () => {
        await store.close();
        await backend.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)");
        const err = await rejection(backend.open());
        expect(isStoreError(err, "SCHEMA_TOO_NEW")).to.equal(true);
        expect((err as Error).message).to.match(/999/);
      });

      it("a replica already running when a newer build migrates the database reserves nothing (a rolling upgrade)", async () => {
        const ids = await owner();
        const before = await store.reserveSponsorship(op(ids, { mode: "sponsor", nonce: 1n }));
        expect(before.ok).to.equal(true);
        const rows = () => backend.count("SELECT COUNT(*) AS n FROM sponsorships");
        const held = () => backend.count("SELECT COUNT(*) AS n FROM holds");
        const [sponsorships, holds] = [await rows(), await held()];
        // Another process, a newer build, migrates the database while this store stays open.
        await backend.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)");
        const err = await rejection(store.reserveSponsorship(op(ids, { mode: "sponsor", nonce: 2n })));
        expect(err).to.be.instanceOf(StoreUnavailableError);
        expect((err as StoreUnavailableError).cause).to.equal("schema_too_new");
        expect((err as Error).message).to.match(/migrated by a newer version of the service: upgrade this replica/);
        expect([await rows(), await held()], "nothing written").to.deep.equal([sponsorships, holds]);
        // /ready goes red (a load balancer drains the replica), for good: no probe, no answer brings it back.
        expect(store.health.state()).to.include({ up: false, scope: "writes", cause: "schema_too_new" });
        expect(describeStoreState(store.health.state())).to.match(/^migrated by a newer version of the service \(schema_too_new\) since .*: this replica reserves nothing; upgrade it$/);
        // Reads and what was signed before still answer: only new holds and signatures stop.
        expect((await store.getSponsorship(before.ok ? before.record.id : ""))?.status).to.equal("signed");
        await backend.exec("DELETE FROM schema_migrations WHERE version = 999");
        expect((await store.reserveSponsorship(op(ids, { mode: "sponsor", nonce: 2n }))).ok, "the migration undone by hand: reserves").to.equal(true);
        expect(store.health.state().up, "red until a restart").to.equal(false);
      });

      it("applies a known migration the database lacks even below its highest (migrations merged in another order)", async () => {
        // As if the database had been migrated by a build without migration 13 but with the ones after it.
        await store.close();
        await backend.exec("DROP TABLE gas_tank_consents");
        await backend.exec("DELETE FROM schema_migrations WHERE version = 13");
        store = await open();
        expect(await backend.count("SELECT COUNT(*) AS n FROM schema_migrations")).to.equal(backend.migrations.length);
        expect(await backend.count("SELECT COUNT(*) AS n FROM gas_tank_consents")).to.equal(0);
        // A recorded version this build does not know, even below its highest, is another build's: refused.
        const versions = backend.migrations.map((m) => m.version);
        const foreign = Array.from({ length: Math.max(...versions) }, (_, i) => i + 1).find((v) => !versions.includes(v)) ?? 0;
        await store.close();
        await backend.exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${foreign}, 'another build', 0)`);
        expect(isStoreError(await rejection(backend.open()), "SCHEMA_TOO_NEW")).to.equal(true);
        await backend.exec(`DELETE FROM schema_migrations WHERE version = ${foreign}`);
        store = await open();
      });

      it("upgrades a database that has only the first two migrations, keeping its rows", async () => {
        await closeAll();
        if (backend.name === "SQLite") fs.rmSync(path.dirname(backend.target()), { recursive: true, force: true });
        await backend.reset(dir);
        if (backend.name === "SQLite") fs.mkdirSync(path.dirname(backend.target()), { recursive: true });
        const legacy = backend.name === "SQLite" ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
        const db =
          backend.name === "SQLite"
            ? openSqliteDb(backend.target(), legacy, 1_700_000_000)
            : await openPostgresDb(backend.target(), legacy, 1_700_000_000);
        await db.run("INSERT INTO projects (id, name, created_at) VALUES ('p-old', 'from the field', 1)");
        await db.close();
        const upgraded = await open();
        expect(await upgraded.getProject("p-old")).to.deep.equal({ id: "p-old", name: "from the field", status: "active", createdAt: 1 });
        expect(await backend.count("SELECT COUNT(*) AS n FROM schema_migrations")).to.equal(backend.migrations.length);
      });

      it("close is idempotent", async () => {
        await store.close();
        await store.close();
      });
    });

    describe("projects and API keys", () => {
      it("creates and reads projects; unknown id is undefined", async () => {
        const before = Math.floor(Date.now() / 1000);
        const p = await store.createProject("Acme");
        expect(p.name).to.equal("Acme");
        expect(p.id).to.match(/^[0-9a-f-]{36}$/);
        expect(p.createdAt).to.be.within(before, before + 5);
        expect(await store.getProject(p.id)).to.deep.equal(p);
        expect(await store.getProject("nope")).to.equal(undefined);
      });

      it("creates pm_ keys, stores only their hash, finds them by plaintext", async () => {
        const p = await store.createProject("Acme");
        const { apiKey, plaintext } = await store.createApiKey(p.id, "backend");
        expect(plaintext).to.match(/^pm_[A-Za-z0-9_-]{43}$/);
        expect(apiKey).to.include({ projectId: p.id, label: "backend", status: "active", prefix: plaintext.slice(0, 10) });
        expect(await store.findApiKey(plaintext)).to.deep.equal(apiKey);
        expect(await store.findApiKey(`${plaintext}x`)).to.equal(undefined);
        expect(await store.findApiKey("")).to.equal(undefined);
        expect(await store.findApiKey("x".repeat(10_000))).to.equal(undefined);
        const second = await store.createApiKey(p.id);
        expect(second.plaintext).to.not.equal(plaintext);
        expect(second.apiKey.label).to.equal(null);

        await store.close();
        const stored = await backend.storedText(); // SQLite: the file's bytes; PostgreSQL: every row of every table
        expect(stored).to.include(apiKey.id); // the row is in there...
        expect(stored).to.include(second.apiKey.id);
        expect(stored).to.not.include(plaintext); // ...the plaintext is not
        expect(stored).to.not.include(plaintext.slice(10));
        expect(stored).to.not.include(second.plaintext.slice(10));
      });

      it("refuses a key for an unknown project", async () => {
        const err = await rejection(store.createApiKey("no-such-project"));
        expect(isStoreError(err, "NOT_FOUND")).to.equal(true);
      });

      it("a revoked key is still found, with status revoked", async () => {
        const p = await store.createProject("Acme");
        const { apiKey, plaintext } = await store.createApiKey(p.id);
        await store.revokeApiKey(apiKey.id);
        const revoked = await store.findApiKey(plaintext);
        expect(revoked).to.deep.equal({ ...apiKey, status: "revoked", revokedAt: revoked?.revokedAt });
        expect(revoked?.revokedAt).to.be.a("number").and.at.least(apiKey.createdAt);
        await store.revokeApiKey(apiKey.id); // idempotent
        expect(await store.findApiKey(plaintext)).to.deep.equal(revoked);
        expect(isStoreError(await rejection(store.revokeApiKey("missing")), "NOT_FOUND")).to.equal(true);
      });
    });

    describe("strategies", () => {
      it("creates with defaults, reads by code, changes status", async () => {
        const p = await store.createProject("Acme");
        const s = await store.createStrategy({ projectId: p.id, code: "FREE", name: "Free gas" });
        expect(s).to.include({ projectId: p.id, code: "FREE", name: "Free gas", status: "enabled" });
        expect(s.validFrom).to.equal(null);
        expect(s.validUntil).to.equal(null);
        expect(s.networks).to.equal(null);
        expect(await store.getStrategyByCode("FREE")).to.deep.equal(s);
        expect(await store.getStrategyByCode("free")).to.equal(undefined);

        const t = await store.createStrategy({
          projectId: p.id,
          code: "WINDOW",
          name: "Windowed",
          status: "disabled",
          validFrom: 100,
          validUntil: 200,
          networks: ["base-sepolia", "local"],
        });
        expect(await store.getStrategyByCode("WINDOW")).to.deep.equal(t);
        expect(t).to.include({ status: "disabled", validFrom: 100, validUntil: 200 });
        expect(t.networks).to.deep.equal(["base-sepolia", "local"]);

        await store.setStrategyStatus(t.id, "enabled");
        expect((await store.getStrategyByCode("WINDOW"))?.status).to.equal("enabled");
        await store.setStrategyStatus(t.id, "disabled");
        expect((await store.getStrategyByCode("WINDOW"))?.status).to.equal("disabled");
        expect(isStoreError(await rejection(store.setStrategyStatus("missing", "enabled")), "NOT_FOUND")).to.equal(true);
      });

      it("a duplicate code is a clear error", async () => {
        const p = await store.createProject("Acme");
        await store.createStrategy({ projectId: p.id, code: "FREE", name: "a" });
        const err = await rejection(store.createStrategy({ projectId: p.id, code: "FREE", name: "b" }));
        expect(err).to.be.instanceOf(StoreError);
        expect((err as StoreError).code).to.equal("DUPLICATE");
        expect((err as Error).message).to.include('code "FREE" already exists');
      });

      it("refuses an unknown project", async () => {
        const err = await rejection(store.createStrategy({ projectId: "nope", code: "X", name: "x" }));
        expect(isStoreError(err, "NOT_FOUND")).to.equal(true);
      });
    });

    describe("tokens", () => {
      const usdc = {
        network: NET,
        symbol: "USDC",
        address: USDC,
        decimals: 6,
        priceSource: { type: "fixed", usd: "1.00" },
        markupBps: 500,
        enabled: true,
      } as const;

      it("upserts, lists and finds by symbol (any case) or address (any case)", async () => {
        await store.upsertToken({ ...usdc, address: USDC.toLowerCase() as Address });
        const dai = {
          ...usdc,
          symbol: "DAI",
          address: DAI,
          decimals: 18,
          priceSource: { type: "chainlink" as const, feed: OTHER, maxAgeSeconds: 3600 },
          markupBps: 0,
          enabled: false,
        };
        await store.upsertToken(dai);
        await store.upsertToken({ ...usdc, network: "local" });

        const list = await store.listTokens(NET);
        expect(list).to.deep.equal([dai, usdc]); // ordered by symbol, address checksummed
        expect(await store.findToken(NET, "usdc")).to.deep.equal(usdc);
        expect(await store.findToken(NET, "UsDc")).to.deep.equal(usdc);
        expect(await store.findToken(NET, USDC.toLowerCase())).to.deep.equal(usdc);
        expect(await store.findToken(NET, DAI)).to.deep.equal(dai);
        expect(await store.findToken(NET, "WETH")).to.equal(undefined);
        expect(await store.findToken("optimism-sepolia", "USDC")).to.equal(undefined);
        expect(await store.listTokens("local")).to.have.length(1);

        await store.upsertToken({ ...usdc, markupBps: 100, enabled: false });
        expect(await store.findToken(NET, "USDC")).to.deep.equal({ ...usdc, markupBps: 100, enabled: false });
        expect(await store.listTokens(NET)).to.have.length(2);
      });

      it("a symbol names one token per network: a new address under it replaces the old row", async () => {
        await store.upsertToken(usdc);
        await store.upsertToken({ ...usdc, symbol: "usdc", address: DAI });
        expect(await store.listTokens(NET)).to.deep.equal([{ ...usdc, symbol: "usdc", address: DAI }]);
        expect(await store.findToken(NET, USDC)).to.equal(undefined);
      });

      it("refuses a bad address or price source", async () => {
        expect(isStoreError(await rejection(store.upsertToken({ ...usdc, address: "0x1234" })), "INVALID_INPUT")).to.equal(
          true,
        );
        const bad = { ...usdc, priceSource: { type: "oracle" } } as unknown as typeof usdc;
        expect(isStoreError(await rejection(store.upsertToken(bad)), "INVALID_INPUT")).to.equal(true);
        expect(await store.listTokens(NET)).to.deep.equal([]);
      });
    });

    describe("gas tanks", () => {
      it("an unknown sender has an empty tank", async () => {
        expect(await store.getGasTank(NET, SENDER)).to.deep.equal({
          network: NET,
          sender: SENDER,
          balanceWei: 0n,
          reservedWei: 0n,
        });
      });

      it("credits add up beyond 64 bits, keyed by checksummed sender and network", async () => {
        const big = 2n ** 70n;
        const t1 = await store.creditGasTank(NET, SENDER.toLowerCase() as Address, big, "tx:1");
        expect(t1).to.deep.equal({ network: NET, sender: SENDER, balanceWei: big, reservedWei: 0n });
        const t2 = await store.creditGasTank(NET, SENDER, 7n, "tx:2");
        expect(t2.balanceWei).to.equal(big + 7n);
        expect((await store.getGasTank(NET, SENDER)).balanceWei).to.equal(big + 7n);
        expect((await store.getGasTank("local", SENDER)).balanceWei).to.equal(0n);
        expect((await store.getGasTank(NET, OTHER)).balanceWei).to.equal(0n);
      });

      it("one reference sent many times at once moves the tank once (credit and debit)", async () => {
        for (let round = 0; round < 5; round++) {
          const credits = await Promise.allSettled(Array.from({ length: 16 }, () => store.creditGasTank(NET, SENDER, 1000n, `at-once:credit:${round}`)));
          expect(credits.filter((c) => c.status === "rejected").map((c) => String((c as PromiseRejectedResult).reason)), "credits refused").to.deep.equal([]);
          const debits = await Promise.allSettled(Array.from({ length: 16 }, () => store.debitGasTank(NET, SENDER, 400n, `at-once:debit:${round}`)));
          expect(debits.filter((d) => d.status === "rejected").map((d) => String((d as PromiseRejectedResult).reason)), "debits refused").to.deep.equal([]);
        }
        expect((await store.getGasTank(NET, SENDER)).balanceWei, "5 credits of 1000 and 5 debits of 400, each once").to.equal(3000n);
      });

      it("a repeated reference changes nothing; a conflicting one is refused", async () => {
        await store.creditGasTank(NET, SENDER, 1000n, "admin:deposit-1");
        const again = await store.creditGasTank(NET, SENDER, 1000n, "admin:deposit-1");
        expect(again.balanceWei).to.equal(1000n);
        expect((await store.getGasTank(NET, SENDER)).balanceWei).to.equal(1000n);
        const err = await rejection(store.creditGasTank(NET, SENDER, 999n, "admin:deposit-1"));
        expect(isStoreError(err, "CONFLICT")).to.equal(true);
        expect((await store.getGasTank(NET, SENDER)).balanceWei).to.equal(1000n);
      });

      it("refuses non-positive credits and bad senders", async () => {
        expect(isStoreError(await rejection(store.creditGasTank(NET, SENDER, 0n, "r0")), "INVALID_INPUT")).to.equal(true);
        expect(isStoreError(await rejection(store.creditGasTank(NET, SENDER, -5n, "r1")), "INVALID_INPUT")).to.equal(true);
        expect(
          isStoreError(await rejection(store.creditGasTank(NET, "0xnope" as Address, 5n, "r2")), "INVALID_INPUT"),
        ).to.equal(true);
        expect((await store.getGasTank(NET, SENDER)).balanceWei).to.equal(0n);
      });

      it("consents: deny by default; a signed one is kept only when dated after the recorded one's recording; one by hand is dated when recorded", async () => {
        const { projectId } = await owner();
        expect(await store.gasTankAllows(NET, SENDER, projectId)).to.equal(false);
        const signed = await store.setGasTankConsent({ network: NET, sender: SENDER, projectId, allowed: true, issuedAt: 1000, changedBy: "owner" });
        expect(signed.applied).to.equal(true);
        expect(await store.gasTankAllows(NET, SENDER.toLowerCase() as Address, projectId)).to.equal(true);
        expect(await store.gasTankAllows("local", SENDER, projectId)).to.equal(false);
        expect(await store.gasTankAllows(NET, OTHER, projectId)).to.equal(false);
        // Dated before the allow was recorded: ignored, whatever it says.
        for (const issuedAt of [1000, 999, signed.consent.updatedAt - 1]) {
          const stale = await store.setGasTankConsent({ network: NET, sender: SENDER, projectId, allowed: false, issuedAt, changedBy: "owner" });
          expect(stale.applied).to.equal(false);
          expect(stale.consent).to.include({ allowed: true, issuedAt: 1000 });
        }
        // By hand: dated when recorded, so the old signed allow cannot come back.
        const byHand = await store.setGasTankConsent({ network: NET, sender: SENDER, projectId, allowed: false, changedBy: "cli:ops" });
        expect(byHand.applied).to.equal(true);
        expect(byHand.consent.issuedAt).to.equal(byHand.consent.updatedAt);
        expect((await store.setGasTankConsent({ network: NET, sender: SENDER, projectId, allowed: true, issuedAt: 1000, changedBy: "owner" })).applied).to.equal(false);
        expect(await store.gasTankAllows(NET, SENDER, projectId)).to.equal(false);
        const listed = await store.gasTankConsents(NET, SENDER);
        expect(listed).to.have.length(1);
        expect(listed[0]).to.include({ projectId, allowed: false, changedBy: "cli:ops" });
        // A project that does not exist: NOT_FOUND, nothing written.
        expect(isStoreError(await rejection(store.setGasTankConsent({ network: NET, sender: SENDER, projectId: "nope", allowed: true, changedBy: "x" })), "NOT_FOUND")).to.equal(true);
        expect(await store.gasTankConsents(NET, SENDER)).to.have.length(1);
      });

      it("consents: a withdrawal recorded at T beats every message dated up to T + 60 s (all signed before T); an allow gives way to one dated from T", async () => {
        const { projectId } = await owner();
        const change = (allowed: boolean, issuedAt: number) => store.setGasTankConsent({ network: NET, sender: SENDER, projectId, allowed, issuedAt, changedBy: "owner" });
        const now = Math.floor(Date.now() / 1000);
        // An allow dated 60 s ahead (the most the service accepts) is recorded now; a withdrawal dated at its recording replaces it.
        const allow = await change(true, now + 60);
        expect(allow.consent.replaceableAfter).to.equal(allow.consent.updatedAt - 1);
        const withdrawal = await change(false, allow.consent.updatedAt);
        expect(withdrawal.applied, "a withdrawal right after an allow").to.equal(true);
        const t = withdrawal.consent.updatedAt;
        expect(withdrawal.consent.replaceableAfter).to.equal(t + 60);
        // Every allow signed before T is dated at most T + 60: none replaces the withdrawal, the one dated ahead included.
        for (const issuedAt of [now + 60, t, t + 60]) expect((await change(true, issuedAt)).applied, String(issuedAt)).to.equal(false);
        expect(await store.gasTankAllows(NET, SENDER, projectId)).to.equal(false);
        expect((await change(true, t + 61)).applied, "signed after the withdrawal").to.equal(true);
        // The operator's disallow by hand holds the same way.
        const byHand = await store.setGasTankConsent({ network: NET, sender: SENDER, projectId, allowed: false, changedBy: "cli:ops" });
        const h = byHand.consent.updatedAt;
        expect((await change(true, h + 60)).applied).to.equal(false);
        expect((await change(true, h + 61)).applied).to.equal(true);
      });

      it("consents on upgrade: a tank allows the projects under which its sender's User Sponsor ops landed, and only those", async () => {
        const landed = await owner();
        const pending = await owner();
        await store.creditGasTank(NET, SENDER, 10_000n, "c1");
        const settledOne = await store.reserveSponsorship(op(landed, { maxCostWei: 100n }));
        const unlanded = await store.reserveSponsorship(op(pending, { sender: SENDER, nonce: 1n, maxCostWei: 100n }));
        const sponsorMode = await store.createStrategy({ projectId: pending.projectId, code: "FREE_UP", name: "free" });
        const bySponsor = await store.reserveSponsorship(op(pending, { sender: OTHER, mode: "sponsor", strategyId: sponsorMode.id, maxCostWei: 100n }));
        if (!settledOne.ok || !unlanded.ok || !bySponsor.ok) expect.fail("reserved");
        const facts = { actualGasCostWei: 40n, actualCostUsdMicros: 0n, actualTokenCost: null, success: true, txHash: HASH_B, blockNumber: 1n, blockHash: HASH_A, logIndex: 0 };
        expect(await store.settleSponsorship(settledOne.record.id, facts)).to.equal(true);
        expect(await store.settleSponsorship(bySponsor.record.id, { ...facts, logIndex: 1 })).to.equal(true);
        // The database as version 12 left it (no consents yet), then opened by this version.
        await store.close();
        await backend.exec("DROP TABLE gas_tank_consents");
        await backend.exec("DELETE FROM schema_migrations WHERE version = 13"); // only 13 runs again: the store applies each migration it lacks
        store = await open();
        expect(await store.gasTankAllows(NET, SENDER, landed.projectId)).to.equal(true);
        expect(await store.gasTankAllows(NET, SENDER, pending.projectId), "an op not landed proves nothing").to.equal(false);
        expect(await store.gasTankAllows(NET, OTHER, pending.projectId), "Sponsor mode used no tank").to.equal(false);
        const [kept] = await store.gasTankConsents(NET, SENDER);
        expect(kept).to.include({ projectId: landed.projectId, allowed: true, issuedAt: 0, changedBy: "settled ops" });
        // Any consent signed now is newer.
        const now = Math.floor(Date.now() / 1000);
        expect((await store.setGasTankConsent({ network: NET, sender: SENDER, projectId: landed.projectId, allowed: false, issuedAt: now, changedBy: "owner" })).applied).to.equal(true);
      });
    });

    describe("sponsorships", () => {
      it("reserves signed (sponsor mode needs no tank), reads back every field, finds by userOpHash", async () => {
        const ids = await owner();
        const strategy = await store.createStrategy({ projectId: ids.projectId, code: "FREE", name: "Free" });
        const input = op(ids, {
          mode: "erc20",
          version: "v0.7",
          entryPoint: EP7.toLowerCase() as Address,
          nonce: 2n ** 200n + 5n, // a 2-D nonce: key in the high bits
          strategyId: strategy.id,
          token: USDC.toLowerCase() as Address,
          exchangeRate: 3_000_000_000n,
          maxTokenCost: 2n ** 80n,
          maxCostWei: 2n ** 90n,
          userOpHash: HASH_A.toUpperCase().replace("0X", "0x") as `0x${string}`,
          paymasterAndData: "0x1234",
        });
        const result = await store.reserveSponsorship(input);
        if (!result.ok) throw new Error("expected ok");
        expect(result.replaced).to.equal(null);
        const { record } = result;
        expect(record).to.deep.include({
          network: NET,
          entryPoint: EP7,
          version: "v0.7",
          sender: SENDER,
          nonce: 2n ** 200n + 5n,
          mode: "erc20",
          strategyId: strategy.id,
          token: USDC,
          exchangeRate: 3_000_000_000n,
          maxTokenCost: 2n ** 80n,
          maxCostWei: 2n ** 90n,
          validUntil: 2_000_000_000,
          validAfter: 1_700_000_000,
          userOpHash: HASH_A,
          paymasterAndData: "0x1234",
          status: "signed",
        });
        expect(await store.getSponsorship(record.id)).to.deep.equal(record);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 0n, reservedWei: 0n });
        expect(await store.findSponsorshipByUserOpHash(HASH_A)).to.deep.equal(record);
        expect(await store.findSponsorshipByUserOpHash(HASH_B)).to.equal(undefined);
        expect(await store.getSponsorship("missing")).to.equal(undefined);
      });

      it("token charges at risk: one outstanding postOp-charge sponsorship per sender, unpaid marks set and cleared", async () => {
        const ids = await owner();
        const erc20 = (nonce: bigint, sender: Address = SENDER, postOpCharge = true) =>
          op(ids, { mode: "erc20", nonce, sender, token: USDC, exchangeRate: 1n, maxTokenCost: 1n, postOpCharge });
        const pending = { ok: false, reason: "POSTOP_CHARGE_PENDING" };
        const a = await store.reserveSponsorship(erc20(1n));
        if (!a.ok) throw new Error("expected ok");
        expect(await store.reserveSponsorship(erc20(2n))).to.deep.equal(pending);
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships"), "a refusal writes nothing").to.equal(1);
        const again = await store.reserveSponsorship(erc20(1n)); // the same op: it replaces a, which does not count
        if (!again.ok) throw new Error("expected ok");
        expect(again.replaced).to.equal(a.record.id);
        expect((await store.reserveSponsorship(erc20(3n, OTHER))).ok, "another sender").to.equal(true);
        expect((await store.reserveSponsorship(erc20(4n, SENDER, false))).ok, "pre-charge ones are not limited").to.equal(true);
        expect((await store.reserveSponsorship(erc20(2n, SENDER, false))).ok).to.equal(true);
        expect(await store.reserveSponsorship(erc20(2n)), "refused in place of a pre-charge one").to.deep.equal(pending);
        expect(await store.findActiveSponsorship({ network: NET, entryPoint: EP, sender: SENDER, nonce: 2n }), "left in place").to.not.equal(undefined);
        await store.releaseSponsorship(again.record.id);
        const d = await store.reserveSponsorship(erc20(5n));
        if (!d.ok) throw new Error("expected ok: the earlier one was released");
        expect(await store.settleSponsorship(d.record.id, { actualGasCostWei: 1n, actualCostUsdMicros: 0n, actualTokenCost: 1n, success: true, txHash: HASH_B, blockNumber: 1n, blockHash: HASH_A, logIndex: 0 })).to.equal(true);
        expect((await store.reserveSponsorship(erc20(6n))).ok, "d is settled: no longer outstanding").to.equal(true);
        expect(await backend.count("SELECT COUNT(*) AS n FROM token_charge_flags WHERE postop_charge = TRUE")).to.equal(5);

        expect(await store.hasUnpaidTokenCharge(NET, SENDER)).to.equal(false);
        await store.setTokenChargeUnpaid(a.record.id, true);
        expect(await store.hasUnpaidTokenCharge(NET, SENDER.toLowerCase() as Address)).to.equal(true);
        expect(await store.hasUnpaidTokenCharge(NET, OTHER)).to.equal(false);
        expect(await store.hasUnpaidTokenCharge("local", SENDER)).to.equal(false);
        await store.setTokenChargeUnpaid(a.record.id, false);
        expect(await store.hasUnpaidTokenCharge(NET, SENDER)).to.equal(false);
        await store.setTokenChargeUnpaid("missing", true); // ignored
      });

      it("a reservation's required checks (requires) refuse in its own batch and write nothing: the tank's consent, an unpaid postOp charge", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 10n ** 18n, "test");
        const user = (nonce: bigint) => op(ids, { mode: "user", nonce, strategyId: null, requires: { tankConsent: true } });
        expect(await store.reserveSponsorship(user(1n))).to.deep.equal({ ok: false, reason: "GAS_TANK_NOT_ALLOWED" });
        await store.setGasTankConsent({ network: NET, sender: SENDER, projectId: ids.projectId, allowed: true, changedBy: "test" });
        expect((await store.reserveSponsorship(user(1n))).ok, "allowed").to.equal(true);
        await store.setGasTankConsent({ network: NET, sender: SENDER, projectId: ids.projectId, allowed: false, changedBy: "test" });
        expect(await store.reserveSponsorship(user(2n)), "withdrawn").to.deep.equal({ ok: false, reason: "GAS_TANK_NOT_ALLOWED" });
        expect((await store.getGasTank(NET, SENDER)).reservedWei, "only the allowed one holds the tank").to.equal(op(ids).maxCostWei);

        const erc20 = (nonce: bigint, sender: Address) => op(ids, { mode: "erc20", nonce, sender, token: USDC, exchangeRate: 1n, maxTokenCost: 1n, postOpCharge: true, requires: { noUnpaidCharge: true } });
        const first = await store.reserveSponsorship(erc20(3n, OTHER));
        if (!first.ok) throw new Error("expected ok");
        await store.releaseSponsorship(first.record.id);
        await store.setTokenChargeUnpaid(first.record.id, true);
        const before = await backend.count("SELECT COUNT(*) AS n FROM sponsorships");
        expect(await store.reserveSponsorship(erc20(4n, OTHER))).to.deep.equal({ ok: false, reason: "TOKEN_CHARGE_UNPAID" });
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships"), "a refusal writes nothing").to.equal(before);
        expect((await store.reserveSponsorship(erc20(4n, SENDER))).ok, "another sender").to.equal(true);
        expect((await store.reserveSponsorship({ ...erc20(5n, OTHER), postOpCharge: false, requires: {} })).ok, "pre-charge is not refused").to.equal(true);
      });

      it("postOp-charge risk per project and per key: outstanding maxima + unpaid within the window, summed exactly", async () => {
        const ids = await owner();
        const other = (await store.createApiKey(ids.projectId, "other")).apiKey.id;
        const risk = { maxUsdMicrosPerProject: 3_000_000_000_000_000_001n, maxUsdMicrosPerKey: 2_000_000_000_000_000_000n, sinceSeconds: 1_000 };
        let n = 0;
        const erc20 = (apiKeyId: string, usdMicros: bigint, postOpCharge = true) => {
          n++;
          const sender = `0x${n.toString(16).padStart(40, "7")}` as Address;
          return op({ ...ids, apiKeyId }, { mode: "erc20", nonce: BigInt(n), sender, token: USDC, exchangeRate: 1n, maxTokenCost: 1n, maxCostUsdMicros: usdMicros, postOpCharge, postOpChargeRisk: risk });
        };
        // Amounts across the 9-digit parts: the sums must be exact, not floating.
        const a = await store.reserveSponsorship(erc20(ids.apiKeyId, 1_000_000_000_000_000_000n));
        if (!a.ok) throw new Error("expected ok");
        expect((await store.reserveSponsorship(erc20(ids.apiKeyId, 1_000_000_000_000_000_000n))).ok, "the key's budget exactly").to.equal(true);
        expect(await store.reserveSponsorship(erc20(ids.apiKeyId, 1n))).to.deep.equal({ ok: false, reason: "POSTOP_CHARGE_AT_RISK", scope: "apiKey", limit: "2000000000000000000", value: "2000000000000000001" });
        expect((await store.reserveSponsorship(erc20(ids.apiKeyId, 5n, false))).ok, "pre-charge is not counted or limited").to.equal(true);
        expect((await store.reserveSponsorship(erc20(other, 1_000_000_000_000_000_001n))).ok, "the project's budget exactly").to.equal(true);
        expect(await store.reserveSponsorship(erc20(other, 1n))).to.deep.include({ reason: "POSTOP_CHARGE_AT_RISK", scope: "project", value: "3000000000000000002" });
        // Released: no longer at risk; found unpaid (within the window): at risk again; outside the window: not.
        await store.releaseSponsorship(a.record.id);
        expect((await store.reserveSponsorship(erc20(other, 1n))).ok).to.equal(true);
        await store.setTokenChargeUnpaid(a.record.id, true);
        expect(await store.reserveSponsorship(erc20(other, 1n))).to.deep.include({ reason: "POSTOP_CHARGE_AT_RISK", scope: "project" });
        const later = { ...risk, sinceSeconds: Math.floor(Date.now() / 1000) + 60 };
        const beyond = await store.reserveSponsorship({ ...erc20(other, 1n), postOpChargeRisk: later });
        expect(beyond.ok, "an unpaid charge older than the window no longer counts").to.equal(true);
      });

      it("postOp-charge reservations of one sender racing on two store instances: exactly one holds", async () => {
        const ids = await owner();
        const second = await open();
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 === 0 ? store : second).reserveSponsorship(
              op(ids, { mode: "erc20", nonce: BigInt(i), token: USDC, exchangeRate: 1n, maxTokenCost: 1n, postOpCharge: true }),
            ),
          ),
        );
        expect(results.filter((r) => r.ok).length).to.equal(1);
        expect(results.filter((r) => !r.ok && r.reason === "POSTOP_CHARGE_PENDING").length).to.equal(11);
        expect(await backend.count("SELECT COUNT(*) AS n FROM token_charge_flags")).to.equal(1);
      });

      it("refuses a malformed signature record without writing; an unsigned row of an earlier version is released like a signed one", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const badHash = await rejection(store.reserveSponsorship(op(ids, { userOpHash: "0x12" })));
        expect(isStoreError(badHash, "INVALID_INPUT")).to.equal(true);
        const noHash = await rejection(store.reserveSponsorship(op(ids, { userOpHash: undefined as unknown as `0x${string}` })));
        expect(isStoreError(noHash, "INVALID_INPUT")).to.equal(true);
        const badData = await rejection(store.reserveSponsorship(op(ids, { paymasterAndData: "0x123" })));
        expect(isStoreError(badData, "INVALID_INPUT")).to.equal(true);
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships")).to.equal(0);
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(0n);

        const r = await unsignedLegacy(await reserved(store.reserveSponsorship(op(ids, { maxCostWei: 400n }))));
        expect(await store.getSponsorship(r.id)).to.deep.equal(r);
        const replacing = await reserved(store.reserveSponsorship(op(ids, { maxCostWei: 300n }))); // the same op
        expect((await store.getSponsorship(r.id))?.status).to.equal("released");
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(300n);
        await unsignedLegacy(replacing);
        await store.releaseSponsorship(replacing.id);
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(0n);
      });

      it("user mode reserves from the tank and refuses, writing nothing, when it cannot cover", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 250n, "c1");
        const a = await store.reserveSponsorship(op(ids, { nonce: 1n, maxCostWei: 100n }));
        const b = await store.reserveSponsorship(op(ids, { nonce: 2n, maxCostWei: 100n }));
        expect(a.ok && b.ok).to.equal(true);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 250n, reservedWei: 200n });

        const c = await store.reserveSponsorship(op(ids, { nonce: 3n, maxCostWei: 51n }));
        expect(c).to.deep.equal({ ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 50n, requiredWei: 51n });
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 250n, reservedWei: 200n });
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships")).to.equal(2);

        const d = await store.reserveSponsorship(op(ids, { nonce: 3n, maxCostWei: 50n })); // exactly what is left
        expect(d.ok).to.equal(true);
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(250n);

        // a sender without a tank
        const e = await store.reserveSponsorship(op(ids, { sender: OTHER, maxCostWei: 1n }));
        expect(e).to.deep.equal({ ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 0n, requiredWei: 1n });
        expect(await store.getGasTank(NET, OTHER)).to.deep.include({ balanceWei: 0n, reservedWei: 0n });
      });

      it("the same (network, entryPoint, sender, nonce) replaces, never doubles, the reservation", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const first = await store.reserveSponsorship(op(ids, { nonce: 7n, maxCostWei: 600n }));
        if (!first.ok) throw new Error("expected ok");
        // 600 reserved; a second ask for 700 only fits because the first one's 600 is given back.
        const second = await store.reserveSponsorship(
          op(ids, { nonce: 7n, maxCostWei: 700n, sender: SENDER.toLowerCase() as Address }),
        );
        if (!second.ok) throw new Error(`expected ok, got ${JSON.stringify(second, (_, v) => (typeof v === "bigint" ? `${v}` : v))}`);
        expect(second.replaced).to.equal(first.record.id);
        expect((await store.getSponsorship(first.record.id))?.status).to.equal("released");
        expect((await store.getSponsorship(second.record.id))?.status).to.equal("signed");
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(700n);

        // and again
        const third = await store.reserveSponsorship(op(ids, { nonce: 7n, maxCostWei: 300n }));
        if (!third.ok) throw new Error("expected ok");
        expect(third.replaced).to.equal(second.record.id);
        expect((await store.getSponsorship(second.record.id))?.status).to.equal("released");
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(300n);

        // too much even after giving the earlier one back: nothing changes, the earlier one stays active
        const fourth = await store.reserveSponsorship(op(ids, { nonce: 7n, maxCostWei: 1001n }));
        expect(fourth).to.deep.equal({ ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 1000n, requiredWei: 1001n });
        expect((await store.getSponsorship(third.record.id))?.status).to.equal("signed");
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(300n);

        // switching mode: a sponsor-mode replacement frees the user-mode reservation
        const fifth = await store.reserveSponsorship(op(ids, { nonce: 7n, mode: "sponsor", maxCostWei: 5000n }));
        if (!fifth.ok) throw new Error("expected ok");
        expect(fifth.replaced).to.equal(third.record.id);
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(0n);

        // a different nonce, EntryPoint or network is a different op
        const otherNonce = await store.reserveSponsorship(op(ids, { nonce: 8n, mode: "sponsor" }));
        const otherEp = await store.reserveSponsorship(op(ids, { nonce: 7n, mode: "sponsor", entryPoint: EP7, version: "v0.7" }));
        const otherNet = await store.reserveSponsorship(op(ids, { nonce: 7n, mode: "sponsor", network: "local" }));
        // v0.8 rows are accepted since migration 8 (both databases).
        const v08 = await store.reserveSponsorship(op(ids, { nonce: 7n, mode: "sponsor", entryPoint: EP8, version: "v0.8" }));
        expect([otherNonce, otherEp, otherNet, v08].map((r) => r.ok && r.replaced)).to.deep.equal([null, null, null, null]);
        if (!v08.ok) throw new Error("expected ok");
        expect((await store.getSponsorship(v08.record.id))?.version).to.equal("v0.8");
        expect((await store.getSponsorship(fifth.record.id))?.status).to.equal("signed");
      });

      it("release frees the tank exactly once", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const a = await store.reserveSponsorship(op(ids, { nonce: 1n, maxCostWei: 400n }));
        const b = await store.reserveSponsorship(op(ids, { nonce: 2n, maxCostWei: 300n }));
        if (!a.ok || !b.ok) throw new Error("expected ok");
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(700n);
        await store.releaseSponsorship(a.record.id);
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(300n);
        await store.releaseSponsorship(a.record.id);
        await store.releaseSponsorship(a.record.id);
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(300n);
        await store.releaseSponsorship(b.record.id); // released when the signature went unused
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(0n);
        expect((await store.getSponsorship(b.record.id))?.status).to.equal("released");
        await store.releaseSponsorship("unknown-id"); // no-op
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 1000n, reservedWei: 0n });
      });

      it("after a release the same op can be reserved again with replaced: null", async () => {
        const ids = await owner();
        const a = await store.reserveSponsorship(op(ids, { mode: "sponsor" }));
        if (!a.ok) throw new Error("expected ok");
        await store.releaseSponsorship(a.record.id);
        const b = await store.reserveSponsorship(op(ids, { mode: "sponsor" }));
        expect(b.ok && b.replaced).to.equal(null);
      });

      it("prefers the active sponsorship when two share a userOpHash", async () => {
        const ids = await owner();
        const a = await store.reserveSponsorship(op(ids, { mode: "sponsor", userOpHash: HASH_A, paymasterAndData: "0x" }));
        if (!a.ok) throw new Error("expected ok");
        const b = await store.reserveSponsorship(op(ids, { mode: "sponsor", userOpHash: HASH_A, paymasterAndData: "0x" }));
        if (!b.ok) throw new Error("expected ok");
        expect((await store.findSponsorshipByUserOpHash(HASH_A))?.id).to.equal(b.record.id);
      });

      it("refuses unknown references and malformed input without writing", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const fk = await rejection(store.reserveSponsorship(op(ids, { apiKeyId: "nope" })));
        expect(isStoreError(fk, "NOT_FOUND")).to.equal(true);
        expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(0n); // rolled back
        expect(isStoreError(await rejection(store.reserveSponsorship(op(ids, { maxCostWei: -1n }))), "INVALID_INPUT")).to.equal(true);
        expect(isStoreError(await rejection(store.reserveSponsorship(op(ids, { sender: "0x12" as Address }))), "INVALID_INPUT")).to.equal(true);
        const badMode = op(ids, { mode: "free" as "user" });
        expect(isStoreError(await rejection(store.reserveSponsorship(badMode)), "INVALID_INPUT")).to.equal(true);
      });

      it("two store instances on one database never over-reserve one tank", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 300n, "c1"); // exactly 3 reservations of 100
        const second = await open();
        const results = [];
        for (let i = 0; i < 10; i++) {
          const s = i % 2 === 0 ? store : second;
          results.push(await s.reserveSponsorship(op(ids, { nonce: BigInt(i), maxCostWei: 100n })));
        }
        expect(results.filter((r) => r.ok)).to.have.length(3);
        expect(results.filter((r) => !r.ok)).to.have.length(7);
        expect(results.slice(0, 3).every((r) => r.ok)).to.equal(true);
        expect(await second.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 300n, reservedWei: 300n });
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 300n, reservedWei: 300n });
      });

      it("two store instances reserving concurrently never over-reserve one tank", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 3000n, "c1"); // exactly 30 reservations of 100
        const second = await open();
        const results = await Promise.all(
          Array.from({ length: 80 }, (_, i) =>
            (i % 2 === 0 ? store : second).reserveSponsorship(op(ids, { nonce: BigInt(i), maxCostWei: 100n })),
          ),
        );
        expect(results.filter((r) => r.ok)).to.have.length(30);
        for (const r of results) {
          if (!r.ok) expect(r).to.deep.equal({ ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 0n, requiredWei: 100n });
        }
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 3000n, reservedWei: 3000n });
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships WHERE status = 'signed'")).to.equal(30);
      });

      it("concurrent reservations of one op replace each other: one stays active and only it is held", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const second = await open();
        // user and sponsor mode mixed: a sponsor-mode replacement must give a user-mode reservation back
        const results = await Promise.all(
          Array.from({ length: 16 }, (_, i) =>
            (i % 2 === 0 ? store : second).reserveSponsorship(
              op(ids, { nonce: 42n, mode: i % 3 === 0 ? "sponsor" : "user", maxCostWei: 100n + BigInt(i) }),
            ),
          ),
        );
        const records: SponsorshipRecord[] = [];
        const replaced: (string | null)[] = [];
        for (const r of results) {
          if (!r.ok) throw new Error("expected every reservation to fit: each gives the previous one back");
          records.push(r.record);
          replaced.push(r.replaced);
        }
        expect(replaced.filter((x) => x === null)).to.have.length(1); // only the first found nothing to replace
        expect(new Set(replaced).size).to.equal(16); // each was replaced at most once
        const active = [];
        for (const r of records) {
          const now = await store.getSponsorship(r.id);
          if (now?.status === "signed") active.push(now);
          else expect(now?.status).to.equal("released");
        }
        expect(active).to.have.length(1);
        expect(replaced).to.not.include(active[0]!.id); // the survivor is the one nobody replaced
        const expected = active[0]!.mode === "user" ? active[0]!.maxCostWei : 0n;
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 1000n, reservedWei: expected });
      });

      it("concurrent reservations and releases keep the tank equal to its active reservations", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 1500n, "c1"); // room for 15 of the 20 ops: some are refused
        const second = await open();
        const all: SponsorshipRecord[] = [];
        for (let round = 0; round < 4; round++) {
          const releases = all.filter((_, k) => (k + round) % 3 === 0).map((r, k) => (k % 2 ? store : second).releaseSponsorship(r.id));
          const reserves = Array.from({ length: 20 }, (_, i) =>
            ((i + round) % 2 ? store : second).reserveSponsorship(
              op(ids, { nonce: BigInt(i), mode: (i + round) % 4 === 0 ? "sponsor" : "user", maxCostWei: 100n }),
            ),
          );
          const [, results] = await Promise.all([Promise.all(releases), Promise.all(reserves)]);
          for (const r of results) if (r.ok) all.push(r.record);
        }
        let held = 0n;
        let activeCount = 0;
        for (const r of all) {
          const now = await store.getSponsorship(r.id);
          if (now?.status === "signed") {
            activeCount++;
            if (now.mode === "user") held += now.maxCostWei;
          }
        }
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships WHERE status = 'signed'")).to.equal(activeCount);
        expect(activeCount).to.be.at.most(20);
        expect(held <= 1500n, `${held} held`).to.equal(true);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 1500n, reservedWei: held });
      });

      it("four threads (800 attempts) reserving concurrently against one tank never over-reserve", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 10_000n, "c1"); // exactly 100 reservations of 100
        const workerFile = path.join(dir, "worker.ts");
        fs.writeFileSync(
          workerFile,
          `import { parentPort, workerData } from "node:worker_threads";
           const { [workerData.opener]: open } = await import(workerData.module);
           const store = await open(workerData.target);
           const shared = new Int32Array(workerData.gate);
           parentPort.postMessage("ready");
           Atomics.wait(shared, 0, 0); // start together
           let ok = 0;
           for (let i = 0; i < 200; i++) {
             const r = await store.reserveSponsorship({ ...workerData.op, nonce: BigInt(workerData.base + i) });
             if (r.ok) ok++;
           }
           await store.close();
           parentPort.postMessage(ok);`,
        );
        const gate = new SharedArrayBuffer(4);
        const base = op(ids, { maxCostWei: 100n });
        const { module, opener } = backend;
        const workers = [0, 1, 2, 3].map(
          (w) =>
            new Worker(workerFile, {
              workerData: { module, opener, target: backend.target(), gate, base: w * 1000, op: base },
            }),
        );
        try {
          const ready: Promise<void>[] = [];
          const done = workers.map(
            (worker) =>
              new Promise<number>((resolve, reject) => {
                ready.push(new Promise<void>((r) => worker.once("message", () => r())));
                worker.on("message", (m: unknown) => typeof m === "number" && resolve(m));
                worker.once("error", reject);
                worker.once("exit", () => reject(new Error("worker exited without an answer")));
              }),
          );
          await Promise.all(ready); // every worker has opened the database and waits at the gate
          Atomics.store(new Int32Array(gate), 0, 1);
          Atomics.notify(new Int32Array(gate), 0);
          const oks = await Promise.all(done);
          expect(oks.reduce((a, b) => a + b, 0)).to.equal(100);
        } finally {
          await Promise.all(workers.map((w) => w.terminate()));
        }
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 10_000n, reservedWei: 10_000n });
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships WHERE status = 'signed'")).to.equal(100);
      });

      it("two processes sharing one database hold one tank's limit exactly", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 5000n, "c1"); // exactly 50 reservations of 100
        const answers = await twoProcesses({ op: op(ids), attempts: 80, lanes: 4 });
        expect(answers[0]!.ok + answers[1]!.ok).to.equal(50);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 5000n, reservedWei: 5000n });
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships WHERE status = 'signed'")).to.equal(50);
      });
    });

    // ---- accounting: strategy rules and usage, caps, settlement, expiry, credits, cursors

    const DAY = "2026-11-22";
    const NEXT_DAY = "2026-11-23";

    /** The CapCheck of `scope` (key: "" / DAY / SENDER unless given) with `limits`. */
    function cap(scope: CapCheck["scope"], limits: Pick<CapCheck, "maxWei" | "maxUsdMicros" | "maxOps">, key?: string): CapCheck {
      const keys = { global: "", daily: DAY, perSender: SENDER };
      return { scope, key: key ?? keys[scope], rulePrefix: `caps.${scope}`, ...limits };
    }

    /** A project, key and strategy (with `rules`). */
    async function sponsorOwner(rules: Parameters<Store["setStrategyRules"]>[1] = {}) {
      const ids = await owner();
      const strategy = await store.createStrategy({ projectId: ids.projectId, code: `S${randomBytes(4).toString("hex")}`, name: "s", rules });
      return { ...ids, strategyId: strategy.id };
    }

    /** A Sponsor-mode op of the strategy. */
    function sop(ids: { projectId: string; apiKeyId: string; strategyId: string }, over: Partial<NewSponsorship> = {}): NewSponsorship {
      return op(ids, { mode: "sponsor", strategyId: ids.strategyId, maxCostWei: 100n, maxCostUsdMicros: 300_000n, ...over });
    }

    function settlement(over: Partial<Settlement> = {}): Settlement {
      return {
        actualGasCostWei: 40n,
        actualCostUsdMicros: 120_000n,
        actualTokenCost: null,
        success: true,
        txHash: HASH_B,
        blockNumber: 100n,
        blockHash: HASH_A,
        logIndex: 0,
        ...over,
      };
    }

    async function reserved(result: Promise<ReserveResult>): Promise<SponsorshipRecord> {
      const r = await result;
      if (!r.ok) throw new Error(`expected ok, got ${bigintJson(r)}`);
      return r.record;
    }

    function usageOf(strategyId: string, scope: CapCheck["scope"] = "global", key?: string) {
      return store.getUsage(strategyId, scope, key ?? { global: "", daily: DAY, perSender: SENDER }[scope]);
    }

    describe("strategy rules", () => {
      const rules = {
        senderAllowlist: [SENDER.toLowerCase() as Address],
        targets: [{ address: USDC, selectors: ["0xA9059CBB" as const] }],
        caps: { global: { maxWei: 10n ** 30n, maxUsd: "12.5", maxOps: 3 }, daily: { maxOps: 1 }, perOp: { maxWei: 5n } },
        gasLimits: { maxCallGasLimit: 1_000_000n },
        maxFeeMultiplierBps: 15_000,
      };
      const normalised = { ...rules, senderAllowlist: [SENDER], targets: [{ address: USDC, selectors: ["0xa9059cbb"] }] };

      it("stores rules (normalised) and reads them back; {} by default; setStrategyRules replaces them", async () => {
        const p = await store.createProject("Acme");
        const s = await store.createStrategy({ projectId: p.id, code: "RULED", name: "r", rules });
        expect(s.rules).to.deep.equal(normalised);
        expect(await store.getStrategyByCode("RULED")).to.deep.equal(s);
        const plain = await store.createStrategy({ projectId: p.id, code: "PLAIN", name: "p" });
        expect(plain.rules).to.deep.equal({});
        expect((await store.getStrategyByCode("PLAIN"))?.rules).to.deep.equal({});

        // a caller mutating what it was given changes nothing stored
        (await store.getStrategyByCode("RULED"))!.rules.caps!.global!.maxOps = 99;
        expect((await store.getStrategyByCode("RULED"))?.rules.caps?.global?.maxOps).to.equal(3);

        await store.setStrategyRules(plain.id, { caps: { perSender: { maxOps: 2, maxWei: 7n } } });
        expect((await store.getStrategyByCode("PLAIN"))?.rules).to.deep.equal({ caps: { perSender: { maxOps: 2, maxWei: 7n } } });
        await store.setStrategyRules(s.id, {});
        expect((await store.getStrategyByCode("RULED"))?.rules).to.deep.equal({});
        await store.setStrategyRules(s.id, rules);
        await store.close();
        expect((await (await open()).getStrategyByCode("RULED"))?.rules).to.deep.equal(normalised);
      });

      it("refuses invalid rules without writing, and an unknown strategy", async () => {
        const p = await store.createProject("Acme");
        const s = await store.createStrategy({ projectId: p.id, code: "R", name: "r", rules: { caps: { daily: { maxOps: 2 } } } });
        const bad = [
          { caps: { global: { maxOps: 0 } } },
          { senderAlowlist: [] },
          { senderAllowlist: ["0x1234"] },
          { caps: { global: { maxUsd: "1.1234567" } } },
          { targets: "everything" },
        ] as unknown as Parameters<Store["setStrategyRules"]>[1][];
        for (const b of bad) {
          expect(isStoreError(await rejection(store.setStrategyRules(s.id, b)), "INVALID_INPUT"), bigintJson(b)).to.equal(true);
          expect(isStoreError(await rejection(store.createStrategy({ projectId: p.id, code: "X", name: "x", rules: b })), "INVALID_INPUT")).to.equal(true);
        }
        expect((await store.getStrategyByCode("R"))?.rules).to.deep.equal({ caps: { daily: { maxOps: 2 } } });
        expect(await store.getStrategyByCode("X")).to.equal(undefined);
        expect(isStoreError(await rejection(store.setStrategyRules("missing", {})), "NOT_FOUND")).to.equal(true);
      });
    });

    describe("caps", () => {
      it("an unknown usage row is zeros; a malformed scope key is refused", async () => {
        const ids = await sponsorOwner();
        const zero = { reservedWei: 0n, spentWei: 0n, reservedUsdMicros: 0n, spentUsdMicros: 0n, ops: 0 };
        expect(await store.getUsage(ids.strategyId, "global", "")).to.deep.equal(zero);
        expect(await store.getUsage("no-such-strategy", "daily", DAY)).to.deep.equal(zero);
        expect(await store.getUsage(ids.strategyId, "perSender", OTHER)).to.deep.equal(zero);
        for (const [scope, key] of [["global", "x"], ["daily", "22/11/2026"], ["perSender", "0x12"], ["weekly", ""]] as const) {
          const err = await rejection(store.getUsage(ids.strategyId, scope as CapCheck["scope"], key));
          expect(isStoreError(err, "INVALID_INPUT"), `${scope} ${key}`).to.equal(true);
        }
      });

      // Each cap kind of each scope: the limit is reachable exactly, one unit past it is refused (nothing
      // written), another key of the scope is independent, and a release makes room again.
      const kinds = {
        maxWei: { limits: { maxWei: 1000n }, costs: [300n, 300n, 400n], over: "1001", cost: (c: bigint) => ({ maxCostWei: c, maxCostUsdMicros: 0n }) },
        maxUsd: { limits: { maxUsdMicros: 2_500_000n }, costs: [1_000_000n, 1_000_000n, 500_000n], over: "2500001", cost: (c: bigint) => ({ maxCostWei: 10n ** 18n, maxCostUsdMicros: c }) },
        maxOps: { limits: { maxOps: 3 }, costs: [5n, 5n, 5n], over: "4", cost: (c: bigint) => ({ maxCostWei: c, maxCostUsdMicros: c }) },
      } as const;
      for (const scope of ["global", "daily", "perSender"] as const) {
        for (const [kind, k] of Object.entries(kinds)) {
          it(`${scope} ${kind}: accepts up to the limit and refuses one past it with the rule, limit and value`, async () => {
            const ids = await sponsorOwner();
            const caps = [cap(scope, k.limits)];
            const accepted = [];
            for (const [i, c] of k.costs.entries()) {
              accepted.push(await reserved(store.reserveSponsorship(sop(ids, { nonce: BigInt(i), ...k.cost(c) }), caps)));
            }
            const before = await usageOf(ids.strategyId, scope);
            expect(before.ops).to.equal(3);
            expect(before.reservedWei).to.equal(k.costs.reduce((a, c) => a + k.cost(c).maxCostWei, 0n));
            expect(before.reservedUsdMicros).to.equal(k.costs.reduce((a, c) => a + k.cost(c).maxCostUsdMicros, 0n));

            const one = kind === "maxOps" ? k.cost(5n) : k.cost(1n);
            const refused = await store.reserveSponsorship(sop(ids, { nonce: 9n, ...one }), caps);
            const limit = kind === "maxWei" ? "1000" : kind === "maxUsd" ? "2500000" : "3";
            expect(refused).to.deep.equal({ ok: false, reason: "CAP_EXCEEDED", rule: `caps.${scope}.${kind}`, limit, value: k.over });
            expect(await usageOf(ids.strategyId, scope)).to.deep.equal(before);
            expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships")).to.equal(3);

            // another key of the scope (another day, another sender, another strategy) has its own totals
            if (scope === "global") {
              const other = await sponsorOwner();
              await reserved(store.reserveSponsorship(sop(other, { nonce: 9n, ...one }), caps));
            } else {
              const otherKey = scope === "daily" ? NEXT_DAY : OTHER;
              const sender = scope === "daily" ? SENDER : OTHER;
              await reserved(store.reserveSponsorship(sop(ids, { nonce: 9n, sender, ...one }), [cap(scope, k.limits, otherKey)]));
              expect((await usageOf(ids.strategyId, scope, otherKey)).ops).to.equal(1);
            }
            expect(await usageOf(ids.strategyId, scope)).to.deep.equal(before);

            // a release gives its share back, exactly once
            await store.releaseSponsorship(accepted[0]!.id);
            await store.releaseSponsorship(accepted[0]!.id);
            const after = await usageOf(ids.strategyId, scope);
            expect(after.ops).to.equal(2);
            expect(after.reservedWei).to.equal(before.reservedWei - accepted[0]!.maxCostWei);
            expect(after.reservedUsdMicros).to.equal(before.reservedUsdMicros - accepted[0]!.maxCostUsdMicros);
            await reserved(store.reserveSponsorship(sop(ids, { nonce: 10n, ...one }), caps));
          });
        }
      }

      it("every check must hold: the first failing one is reported, in the order given, then maxWei, maxUsd, maxOps", async () => {
        const ids = await sponsorOwner();
        const checks = (sender: Address) => [cap("global", { maxOps: 10 }), cap("daily", { maxWei: 100n }), cap("perSender", { maxOps: 1 }, sender)];
        await reserved(store.reserveSponsorship(sop(ids, { nonce: 0n, maxCostWei: 50n }), checks(SENDER)));
        const second = await store.reserveSponsorship(sop(ids, { nonce: 1n, maxCostWei: 50n }), checks(SENDER));
        expect(second).to.deep.include({ rule: "caps.perSender.maxOps", limit: "1", value: "2" });
        await reserved(store.reserveSponsorship(sop(ids, { sender: OTHER, maxCostWei: 50n }), checks(OTHER))); // daily now 100
        const third = await store.reserveSponsorship(sop(ids, { sender: OTHER, nonce: 1n, maxCostWei: 1n }), checks(OTHER));
        expect(third).to.deep.include({ rule: "caps.daily.maxWei", limit: "100", value: "101" }); // before perSender's maxOps
        expect((await usageOf(ids.strategyId)).ops).to.equal(2);
        const fresh = await sponsorOwner(); // a strategy with nothing counted yet
        const all = [cap("global", { maxWei: 0n, maxUsdMicros: 0n, maxOps: 0 })];
        expect(await store.reserveSponsorship(sop(fresh, { maxCostWei: 1n }), all)).to.deep.include({ rule: "caps.global.maxWei" });
        expect(await store.reserveSponsorship(sop(fresh, { maxCostWei: 0n }), all)).to.deep.include({ rule: "caps.global.maxUsd" });
        const zeroCost = sop(fresh, { maxCostWei: 0n, maxCostUsdMicros: 0n });
        expect(await store.reserveSponsorship(zeroCost, all)).to.deep.include({ rule: "caps.global.maxOps", limit: "0", value: "1" });
      });

      it("asking again for the same op replaces its reservation: the caps count it once", async () => {
        const ids = await sponsorOwner();
        const caps = [cap("global", { maxOps: 1, maxWei: 1000n }), cap("perSender", { maxOps: 1 })];
        let last: SponsorshipRecord | undefined;
        for (let i = 1; i <= 5; i++) {
          const r = await store.reserveSponsorship(sop(ids, { nonce: 5n, maxCostWei: BigInt(i) * 100n, maxCostUsdMicros: BigInt(i) }), caps);
          if (!r.ok) throw new Error(`ask ${i} refused: ${bigintJson(r)}`);
          expect(r.replaced).to.equal(last?.id ?? null);
          last = r.record;
          if (i === 3) last = await unsignedLegacy(last); // an earlier version's unsigned row is replaced the same way
        }
        const once = { reservedWei: 500n, spentWei: 0n, reservedUsdMicros: 5n, spentUsdMicros: 0n, ops: 1 };
        expect(await usageOf(ids.strategyId)).to.deep.equal(once);
        expect(await usageOf(ids.strategyId, "perSender")).to.deep.equal(once);
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships WHERE status = 'signed'")).to.equal(1);
        const another = await store.reserveSponsorship(sop(ids, { nonce: 6n, maxCostWei: 1n }), caps);
        expect(another).to.deep.include({ reason: "CAP_EXCEEDED", rule: "caps.global.maxOps", value: "2" });
      });

      it("a replacement is checked without the reservation it replaces, and a refused one leaves it in place", async () => {
        const ids = await sponsorOwner();
        const caps = [cap("global", { maxWei: 1000n })];
        const a = await reserved(store.reserveSponsorship(sop(ids, { nonce: 0n, maxCostWei: 600n }), caps));
        await reserved(store.reserveSponsorship(sop(ids, { nonce: 1n, maxCostWei: 300n }), caps));
        const a2 = await reserved(store.reserveSponsorship(sop(ids, { nonce: 0n, maxCostWei: 700n }), caps)); // 700 + 300
        expect((await store.getSponsorship(a.id))?.status).to.equal("released");
        const a3 = await store.reserveSponsorship(sop(ids, { nonce: 0n, maxCostWei: 701n }), caps);
        expect(a3).to.deep.equal({ ok: false, reason: "CAP_EXCEEDED", rule: "caps.global.maxWei", limit: "1000", value: "1001" });
        expect((await store.getSponsorship(a2.id))?.status).to.equal("signed");
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 1000n, ops: 2 });
      });

      it("a replacement leaves the rows the old reservation was counted in, even another day's", async () => {
        const ids = await sponsorOwner();
        const on = (day: string) => [cap("global", { maxOps: 1 }), cap("daily", { maxOps: 1 }, day)];
        await reserved(store.reserveSponsorship(sop(ids, { maxCostWei: 100n }), on(DAY)));
        const again = await reserved(store.reserveSponsorship(sop(ids, { maxCostWei: 150n }), on(NEXT_DAY)));
        expect(await usageOf(ids.strategyId, "daily", DAY)).to.deep.include({ reservedWei: 0n, ops: 0 });
        expect(await usageOf(ids.strategyId, "daily", NEXT_DAY)).to.deep.include({ reservedWei: 150n, ops: 1 });
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 150n, ops: 1 });
        // replaced by a reservation without caps (e.g. the strategy's caps were removed): it leaves them all
        const uncapped = await reserved(store.reserveSponsorship(sop(ids, { maxCostWei: 10n })));
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 0n, ops: 0 });
        expect(await usageOf(ids.strategyId, "daily", NEXT_DAY)).to.deep.include({ reservedWei: 0n, ops: 0 });
        expect(await store.getSponsorship(again.id)).to.deep.include({ status: "released" });
        await store.releaseSponsorship(uncapped.id);
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 0n, ops: 0 });
      });

      it("caps apply in every mode, after the tank's own check", async () => {
        const ids = await sponsorOwner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const caps = [cap("global", { maxOps: 1 })];
        await reserved(store.reserveSponsorship(sop(ids, { mode: "user", nonce: 0n }), caps));
        expect(await store.reserveSponsorship(sop(ids, { mode: "user", nonce: 1n }), caps)).to.deep.include({ reason: "CAP_EXCEEDED" });
        expect(await store.reserveSponsorship(sop(ids, { mode: "user", nonce: 1n, maxCostWei: 5000n }), caps)).to.deep.include({
          reason: "GAS_TANK_INSUFFICIENT",
        });
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ reservedWei: 100n });
      });

      it("refuses malformed caps and a missing maxCostUsdMicros without writing", async () => {
        const ids = await sponsorOwner();
        const bad: unknown[] = [
          [cap("global", { maxOps: 1 }), cap("global", { maxWei: 1n })], // one scope twice
          [{ ...cap("daily", { maxOps: 1 }), rulePrefix: "caps.global" }],
          [cap("daily", { maxOps: 1 }, "yesterday")],
          [cap("perSender", { maxOps: 1 }, "0xnope")],
          [cap("global", { maxWei: -1n })],
          [cap("global", { maxOps: 1.5 })],
          [{ ...cap("global", {}), scope: "weekly" }],
        ];
        for (const caps of bad) {
          const err = await rejection(store.reserveSponsorship(sop(ids), caps as CapCheck[]));
          expect(isStoreError(err, "INVALID_INPUT"), bigintJson(caps)).to.equal(true);
        }
        const noStrategy = await rejection(store.reserveSponsorship(sop(ids, { strategyId: null }), [cap("global", { maxOps: 1 })]));
        expect(isStoreError(noStrategy, "INVALID_INPUT")).to.equal(true);
        const noUsd = await rejection(store.reserveSponsorship(sop(ids, { maxCostUsdMicros: undefined as unknown as bigint })));
        expect(isStoreError(noUsd, "INVALID_INPUT")).to.equal(true);
        const unknownStrategy = await rejection(store.reserveSponsorship(sop(ids, { strategyId: "nope" }), [cap("global", { maxOps: 1 })]));
        expect(isStoreError(unknownStrategy, "NOT_FOUND")).to.equal(true);
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships")).to.equal(0);
        // a perSender key in any case is the checksummed sender's row
        await reserved(store.reserveSponsorship(sop(ids), [cap("perSender", { maxOps: 1 }, SENDER.toLowerCase())]));
        expect((await store.getUsage(ids.strategyId, "perSender", SENDER.toUpperCase().replace("0X", "0x"))).ops).to.equal(1);
      });

      it("100 concurrent reservations from two store instances against maxOps = 7: exactly 7", async () => {
        const ids = await sponsorOwner();
        const second = await open();
        const caps = [cap("global", { maxOps: 7 }), cap("daily", { maxWei: 10n ** 30n })];
        const results = await Promise.all(
          Array.from({ length: 100 }, (_, i) =>
            (i % 2 === 0 ? store : second).reserveSponsorship(sop(ids, { nonce: BigInt(i), maxCostWei: 10n }), caps),
          ),
        );
        expect(results.filter((r) => r.ok)).to.have.length(7);
        for (const r of results) {
          if (!r.ok) expect(r).to.deep.equal({ ok: false, reason: "CAP_EXCEEDED", rule: "caps.global.maxOps", limit: "7", value: "8" });
        }
        expect(await usageOf(ids.strategyId)).to.deep.include({ ops: 7, reservedWei: 70n });
        expect(await usageOf(ids.strategyId, "daily")).to.deep.include({ ops: 7, reservedWei: 70n });
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships WHERE status = 'signed'")).to.equal(7);
      });

      it("concurrent reservations, replacements and releases against a wei cap keep usage equal to what is held", async () => {
        const ids = await sponsorOwner();
        const second = await open();
        const caps = [cap("global", { maxWei: 1000n }), cap("perSender", { maxOps: 100 })];
        const records: SponsorshipRecord[] = [];
        for (let round = 0; round < 4; round++) {
          const releases = records.filter((_, k) => (k + round) % 4 === 0).map((r, k) => (k % 2 ? store : second).releaseSponsorship(r.id));
          // 20 ops, each asked for twice at different costs
          const reserves = Array.from({ length: 40 }, (_, i) =>
            (i % 2 ? store : second).reserveSponsorship(sop(ids, { nonce: BigInt(i % 20), maxCostWei: 40n + BigInt((i * 7 + round) % 50) }), caps),
          );
          const [, results] = await Promise.all([Promise.all(releases), Promise.all(reserves)]);
          for (const r of results) if (r.ok) records.push(r.record);
        }
        let held = 0n;
        let active = 0;
        for (const r of records) {
          const now = await store.getSponsorship(r.id);
          if (now?.status === "signed") {
            held += now.maxCostWei;
            active++;
          }
        }
        expect(active).to.be.at.most(20);
        expect(held <= 1000n, `${held} held`).to.equal(true);
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: held, ops: active });
        expect(await usageOf(ids.strategyId, "perSender")).to.deep.include({ reservedWei: held, ops: active });
      });

      it("two processes sharing one database hold a cap of 13 ops exactly", async () => {
        const ids = await sponsorOwner();
        const caps = [cap("global", { maxOps: 13 })];
        const answers = await twoProcesses({ op: sop(ids), caps, attempts: 50, lanes: 4 });
        expect(answers[0]!.ok + answers[1]!.ok).to.equal(13);
        expect(answers.map((a) => a.refused.CAP_EXCEEDED ?? 0).reduce((a, b) => a + b)).to.equal(87);
        expect(await usageOf(ids.strategyId)).to.deep.include({ ops: 13, reservedWei: 1300n });
        expect(await backend.count("SELECT COUNT(*) AS n FROM sponsorships WHERE status = 'signed'")).to.equal(13);
      });
    });

    describe("settlement", () => {
      it("settles a signed sponsorship: its reservation moves to spent exactly; settling again changes nothing", async () => {
        const ids = await sponsorOwner();
        const caps = [cap("global", { maxWei: 1400n }), cap("daily", { maxOps: 5 })];
        const s = await reserved(store.reserveSponsorship(sop(ids, { maxCostWei: 1000n, maxCostUsdMicros: 3_000_000n }), caps));
        const facts = settlement({ actualGasCostWei: 400n, actualCostUsdMicros: 1_200_000n, txHash: HASH_B.toUpperCase().replace("0X", "0x") as `0x${string}` });
        expect(await store.settleSponsorship(s.id, facts)).to.equal(true);
        const spent = { reservedWei: 0n, spentWei: 400n, reservedUsdMicros: 0n, spentUsdMicros: 1_200_000n, ops: 1 };
        expect(await usageOf(ids.strategyId)).to.deep.equal(spent);
        expect(await usageOf(ids.strategyId, "daily")).to.deep.equal(spent);
        const settled = await store.getSponsorship(s.id);
        expect(settled).to.deep.equal({ ...s, status: "settled", settlement: { ...facts, txHash: HASH_B } });
        expect(await store.findSponsorshipByUserOpHash(s.userOpHash!)).to.deep.equal(settled);

        expect(await store.settleSponsorship(s.id, settlement({ actualGasCostWei: 1n }))).to.equal(false);
        expect(await usageOf(ids.strategyId)).to.deep.equal(spent);
        expect(await store.getSponsorship(s.id)).to.deep.equal(settled);

        // what was spent stays counted against the cap: 400 + 1000 fits, one more wei does not
        await reserved(store.reserveSponsorship(sop(ids, { nonce: 1n, maxCostWei: 1000n }), caps));
        expect(await store.reserveSponsorship(sop(ids, { nonce: 2n, maxCostWei: 1n }), caps)).to.deep.include({ value: "1401" });

        // an unsigned one (an earlier version's), or an unknown id, does not settle
        const unsigned = await unsignedLegacy(await reserved(store.reserveSponsorship(sop(ids, { nonce: 3n }))));
        expect(await store.settleSponsorship(unsigned.id, settlement())).to.equal(false);
        expect(await store.settleSponsorship("nope", settlement())).to.equal(false);
        expect((await store.getSponsorship(unsigned.id))?.status).to.equal("reserved");
        const bad = await rejection(store.settleSponsorship(unsigned.id, settlement({ txHash: "0x12" })));
        expect(isStoreError(bad, "INVALID_INPUT")).to.equal(true);
      });

      it("User Sponsor mode: the tank pays the actual cost and frees the reservation; its balance may go negative", async () => {
        const ids = await owner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const a = await reserved(store.reserveSponsorship(op(ids, { nonce: 0n, maxCostWei: 600n })));
        expect(await store.settleSponsorship(a.id, settlement({ actualGasCostWei: 250n }))).to.equal(true);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 750n, reservedWei: 0n });
        const b = await reserved(store.reserveSponsorship(op(ids, { nonce: 1n, maxCostWei: 700n })));
        expect(await store.revertGasTankCredit("c1")).to.equal(true); // the deposit was reorganised away
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: -250n, reservedWei: 700n });
        expect(await store.settleSponsorship(b.id, settlement({ actualGasCostWei: 500n }))).to.equal(true);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: -750n, reservedWei: 0n });
        expect(await store.reserveSponsorship(op(ids, { nonce: 2n, maxCostWei: 1n }))).to.deep.include({ availableWei: 0n });
      });

      it("ERC-20 mode: the token charge is recorded", async () => {
        const ids = await owner();
        const s = await reserved(store.reserveSponsorship(op(ids, { mode: "erc20", token: USDC, exchangeRate: 3n, maxTokenCost: 999n })));
        const facts = settlement({ actualTokenCost: 123_456n, success: false, blockNumber: 2n ** 40n, logIndex: 7 });
        expect(await store.settleSponsorship(s.id, facts)).to.equal(true);
        expect((await store.getSponsorship(s.id))?.settlement).to.deep.equal(facts);
      });

      it("unsettle is the exact inverse: signed again, the reservation held again", async () => {
        const ids = await sponsorOwner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const caps = [cap("global", { maxWei: 10_000n }), cap("perSender", { maxOps: 9 })];
        const s = await reserved(store.reserveSponsorship(sop(ids, { mode: "user", maxCostWei: 600n, maxCostUsdMicros: 9n }), caps));
        const before = { g: await usageOf(ids.strategyId), p: await usageOf(ids.strategyId, "perSender"), t: await store.getGasTank(NET, SENDER) };
        expect(await store.unsettleSponsorship(s.id)).to.equal(false); // not settled
        expect(await store.settleSponsorship(s.id, settlement({ actualGasCostWei: 200n, actualCostUsdMicros: 3n }))).to.equal(true);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 800n, reservedWei: 0n });
        expect(await store.unsettleSponsorship(s.id)).to.equal(true);
        expect(await store.unsettleSponsorship(s.id)).to.equal(false);
        expect(await store.unsettleSponsorship("nope")).to.equal(false);
        expect(await store.getSponsorship(s.id)).to.deep.equal(s);
        expect({ g: await usageOf(ids.strategyId), p: await usageOf(ids.strategyId, "perSender"), t: await store.getGasTank(NET, SENDER) }).to.deep.equal(before);
        // and it can be settled again (the op was included again after the reorganisation)
        expect(await store.settleSponsorship(s.id, settlement({ actualGasCostWei: 201n, blockNumber: 101n }))).to.equal(true);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 799n, reservedWei: 0n });
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 0n, spentWei: 201n, ops: 1 });
      });

      it("a sponsorship released by expiry whose op landed is still settled, counted again; unsettling releases it again", async () => {
        const ids = await sponsorOwner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const caps = [cap("global", { maxOps: 5 })];
        const s = await reserved(store.reserveSponsorship(sop(ids, { mode: "user", maxCostWei: 600n, validUntil: 1000 }), caps));
        expect(await store.releaseExpired(2000, 60)).to.equal(1);
        expect(await store.getSponsorship(s.id)).to.deep.include({ status: "released" });
        const zero = { reservedWei: 0n, spentWei: 0n, reservedUsdMicros: 0n, spentUsdMicros: 0n, ops: 0 };
        expect(await usageOf(ids.strategyId)).to.deep.equal(zero);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 1000n, reservedWei: 0n });

        expect(await store.settleSponsorship(s.id, settlement({ actualGasCostWei: 300n, actualCostUsdMicros: 7n }))).to.equal(true);
        expect(await store.getSponsorship(s.id)).to.deep.include({ status: "settled" });
        expect(await usageOf(ids.strategyId)).to.deep.equal({ ...zero, spentWei: 300n, spentUsdMicros: 7n, ops: 1 });
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 700n, reservedWei: 0n });
        expect(await store.settleSponsorship(s.id, settlement())).to.equal(false);

        expect(await store.unsettleSponsorship(s.id)).to.equal(true);
        expect(await store.getSponsorship(s.id)).to.deep.include({ status: "released", settlement: null });
        expect(await usageOf(ids.strategyId)).to.deep.equal(zero);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 1000n, reservedWei: 0n });

        // released before it was ever signed: its op cannot have landed
        const unsigned = await unsignedLegacy(await reserved(store.reserveSponsorship(sop(ids, { nonce: 1n }), caps)));
        await store.releaseSponsorship(unsigned.id);
        expect(await store.settleSponsorship(unsigned.id, settlement())).to.equal(false);
      });

      it("a replaced signature that lands is settled too; the op's newer reservation stays until it is released", async () => {
        const ids = await sponsorOwner();
        const caps = [cap("global", { maxOps: 5 })];
        const first = await reserved(store.reserveSponsorship(sop(ids, { maxCostWei: 100n }), caps));
        const second = await reserved(store.reserveSponsorship(sop(ids, { maxCostWei: 120n }), caps));
        expect(await store.getSponsorship(first.id)).to.deep.include({ status: "released" });
        expect(await store.settleSponsorship(first.id, settlement({ actualGasCostWei: 30n }))).to.equal(true);
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 120n, spentWei: 30n, ops: 2 });
        await store.releaseSponsorship(second.id);
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 0n, spentWei: 30n, ops: 1 });
      });

      it("un-settling an op that has been reserved again since leaves it released, holding nothing", async () => {
        const ids = await sponsorOwner();
        const caps = [cap("global", { maxOps: 5 })];
        const first = await reserved(store.reserveSponsorship(sop(ids, { maxCostWei: 100n }), caps));
        expect(await store.settleSponsorship(first.id, settlement({ actualGasCostWei: 30n }))).to.equal(true);
        const again = await reserved(store.reserveSponsorship(sop(ids, { maxCostWei: 80n }), caps)); // same op
        expect(again.id).to.not.equal(first.id);
        expect(await store.unsettleSponsorship(first.id)).to.equal(true);
        expect(await store.getSponsorship(first.id)).to.deep.include({ status: "released", settlement: null });
        expect(await store.getSponsorship(again.id)).to.deep.include({ status: "signed" });
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 80n, spentWei: 0n, ops: 1 });
        // should the first signature land again after all, it is settled again
        expect(await store.settleSponsorship(first.id, settlement({ actualGasCostWei: 31n }))).to.equal(true);
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 80n, spentWei: 31n, ops: 2 });
      });

      it("listSettledSince lists one network's settled sponsorships from a block on, in chain order", async () => {
        const ids = await owner();
        const s = [];
        for (let i = 0; i < 4; i++) s.push(await reserved(store.reserveSponsorship(op(ids, { mode: "sponsor", nonce: BigInt(i), network: i === 3 ? "local" : NET }))));
        await store.settleSponsorship(s[0]!.id, settlement({ blockNumber: 10n }));
        await store.settleSponsorship(s[1]!.id, settlement({ blockNumber: 12n, logIndex: 3 }));
        await store.settleSponsorship(s[2]!.id, settlement({ blockNumber: 12n, logIndex: 1 }));
        await store.settleSponsorship(s[3]!.id, settlement({ blockNumber: 12n }));
        expect((await store.listSettledSince(NET, 11n)).map((r) => r.id)).to.deep.equal([s[2]!.id, s[1]!.id]);
        expect((await store.listSettledSince(NET, 0n)).map((r) => r.id)).to.deep.equal([s[0]!.id, s[2]!.id, s[1]!.id]);
        expect((await store.listSettledSince(NET, 13n))).to.deep.equal([]);
        expect((await store.listSettledSince("local", 0n)).map((r) => r.settlement?.blockNumber)).to.deep.equal([12n]);
        await store.unsettleSponsorship(s[2]!.id);
        expect((await store.listSettledSince(NET, 11n)).map((r) => r.id)).to.deep.equal([s[1]!.id]);
        expect((await store.listSettledSince(NET, 0n))[0]).to.deep.equal(await store.getSponsorship(s[0]!.id));
      });
    });

    describe("expiry", () => {
      it("releaseExpired releases exactly the reserved and signed ones past validUntil + grace, freeing usage and tanks", async () => {
        const ids = await sponsorOwner();
        await store.creditGasTank(NET, SENDER, 1000n, "c1");
        const caps = [cap("global", { maxOps: 10 })];
        const at = (nonce: bigint, validUntil: number, over: Partial<NewSponsorship> = {}) =>
          store.reserveSponsorship(sop(ids, { nonce, validUntil, maxCostWei: 100n, ...over }), caps);
        const a = await unsignedLegacy(await reserved(at(0n, 1000))); // an earlier version's unsigned row
        const b = await reserved(at(1n, 1000));
        const c = await unsignedLegacy(await reserved(at(2n, 1001))); // not yet
        const d = await reserved(at(3n, 900));
        await store.settleSponsorship(d.id, settlement({ actualGasCostWei: 10n }));
        const e = await reserved(at(4n, 900));
        await store.releaseSponsorship(e.id);
        const f = await reserved(at(5n, 1000, { mode: "user" }));
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 400n, spentWei: 10n, ops: 5 });

        expect(await store.releaseExpired(1050, 50)).to.equal(0); // 1000 + 50 is not before 1050
        expect(await store.releaseExpired(1051, 50)).to.equal(3);
        expect(await store.releaseExpired(1051, 50)).to.equal(0);
        const status = async (r: SponsorshipRecord) => (await store.getSponsorship(r.id))?.status;
        expect(await Promise.all([a, b, c, d, e, f].map(status))).to.deep.equal(["released", "released", "reserved", "settled", "released", "released"]);
        expect(await usageOf(ids.strategyId)).to.deep.include({ reservedWei: 100n, spentWei: 10n, ops: 2 });
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 1000n, reservedWei: 0n });
        expect(await store.releaseExpired(1052, 0)).to.equal(1); // c
        expect(isStoreError(await rejection(store.releaseExpired(-1, 0)), "INVALID_INPUT")).to.equal(true);
        expect(isStoreError(await rejection(store.releaseExpired(1, 0.5)), "INVALID_INPUT")).to.equal(true);
      });

      it("releaseExpired for one network leaves other networks' reservations alone", async () => {
        const ids = await sponsorOwner();
        const here = await reserved(store.reserveSponsorship(sop(ids, { nonce: 0n, validUntil: 900 })));
        const there = await reserved(store.reserveSponsorship(sop(ids, { nonce: 1n, validUntil: 900, network: "optimism-sepolia" })));
        expect(NET).to.not.equal("optimism-sepolia");
        expect(await store.releaseExpired(2000, 0, "optimism-sepolia")).to.equal(1);
        expect((await store.getSponsorship(here.id))?.status).to.equal("signed");
        expect((await store.getSponsorship(there.id))?.status).to.equal("released");
        expect(await store.releaseExpired(2000, 0)).to.be.greaterThan(0);
        expect((await store.getSponsorship(here.id))?.status).to.equal("released");
      });

      it("releaseExpired, settlements, releases and reservations racing on two stores keep usage and tank exact", async () => {
        const ids = await sponsorOwner();
        await store.creditGasTank(NET, SENDER, 10n ** 6n, "c1");
        const second = await open();
        const caps = [cap("global", { maxOps: 1000 }), cap("daily", { maxWei: 10n ** 9n })];
        const all: SponsorshipRecord[] = [];
        for (let i = 0; i < 60; i++) {
          const mode = i % 3 === 0 ? "user" : "sponsor";
          all.push(await reserved(store.reserveSponsorship(sop(ids, { nonce: BigInt(i), mode, validUntil: 1000 + (i % 2), maxCostWei: 100n + BigInt(i) }), caps)));
        }
        const stores = [store, second];
        const work: Promise<unknown>[] = [];
        const replacements: Promise<ReserveResult>[] = [];
        for (let i = 0; i < 60; i++) {
          const s = stores[i % 2]!;
          if (i % 4 === 0) work.push(s.settleSponsorship(all[i]!.id, settlement({ actualGasCostWei: BigInt(i), actualCostUsdMicros: BigInt(i) })));
          if (i % 4 === 1) work.push(s.releaseSponsorship(all[i]!.id));
          if (i % 4 === 2) replacements.push(s.reserveSponsorship(sop(ids, { nonce: BigInt(i), maxCostWei: 7n, validUntil: 5000 }), caps)); // replaces
          if (i % 10 === 0) work.push(stores[(i + 1) % 2]!.releaseExpired(1001, 0));
          if (i % 4 === 3) work.push(s.settleSponsorship(all[i]!.id, settlement({ actualGasCostWei: 1n, actualCostUsdMicros: 1n }))); // maybe after expiry
        }
        const [, done] = await Promise.all([Promise.all(work), Promise.all(replacements)]);
        for (const r of done) if (r.ok) all.push(r.record);
        await store.releaseExpired(1001, 0); // everything of validUntil 1000 is released or settled by now

        const expected = { reservedWei: 0n, spentWei: 0n, reservedUsdMicros: 0n, spentUsdMicros: 0n, ops: 0 };
        let tankReserved = 0n;
        let tankSpent = 0n;
        for (const r of all) {
          const now = (await store.getSponsorship(r.id))!;
          if (now.status === "reserved" || now.status === "signed") {
            if (r.validUntil === 1000) throw new Error(`${r.id} should have expired`);
            expected.reservedWei += now.maxCostWei;
            expected.reservedUsdMicros += now.maxCostUsdMicros;
            expected.ops++;
            if (now.mode === "user") tankReserved += now.maxCostWei;
          }
          if (now.status === "settled") {
            expected.spentWei += now.settlement!.actualGasCostWei;
            expected.spentUsdMicros += now.settlement!.actualCostUsdMicros;
            expected.ops++;
            if (now.mode === "user") tankSpent += now.settlement!.actualGasCostWei;
          }
        }
        expect(await usageOf(ids.strategyId)).to.deep.equal(expected);
        expect(await usageOf(ids.strategyId, "daily")).to.deep.equal(expected);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 10n ** 6n - tankSpent, reservedWei: tankReserved });
        expect(expected.spentWei > 0n && expected.ops > 0).to.equal(true);
      });
    });

    describe("credit reverts and cursors", () => {
      it("revertGasTankCredit takes a credit and its amount back; unknown is false; the reference may be credited again", async () => {
        await store.creditGasTank(NET, SENDER, 1000n, "tx:1");
        await store.creditGasTank(NET, SENDER, 50n, "tx:2");
        expect(await store.revertGasTankCredit("tx:1")).to.equal(true);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 50n });
        expect(await store.revertGasTankCredit("tx:1")).to.equal(false);
        expect(await store.revertGasTankCredit("unknown")).to.equal(false);
        expect(await store.revertGasTankCredit("")).to.equal(false);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 50n });
        // the deposit is included again after the reorganisation: credited again under its reference
        expect((await store.creditGasTank(NET, SENDER, 1000n, "tx:1")).balanceWei).to.equal(1050n);
        const second = await open();
        const results = await Promise.all([store.revertGasTankCredit("tx:1"), second.revertGasTankCredit("tx:1")]);
        expect(results.filter(Boolean)).to.have.length(1);
        expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 50n, reservedWei: 0n });
      });

      it("cursors: unknown is undefined; set, overwritten, beyond 64 bits, kept across re-open", async () => {
        expect(await store.getCursor("watcher:base-sepolia")).to.equal(undefined);
        await store.setCursor("watcher:base-sepolia", 100n);
        await store.setCursor("watcher:local", 2n ** 70n);
        expect(await store.getCursor("watcher:base-sepolia")).to.equal(100n);
        await store.setCursor("watcher:base-sepolia", 99n);
        await store.close();
        const again = await open();
        expect(await again.getCursor("watcher:base-sepolia")).to.equal(99n);
        expect(await again.getCursor("watcher:local")).to.equal(2n ** 70n);
        expect(isStoreError(await rejection(again.setCursor("x", -1n)), "INVALID_INPUT")).to.equal(true);
        expect(isStoreError(await rejection(again.setCursor("", 1n)), "INVALID_INPUT")).to.equal(true);
      });
    });
  });
}

describe("DATABASE_URL in the configuration", () => {
  it("is read from the environment only, validated without echoing it, and redacted", () => {
    const secretUrl = "postgres://paymaster:S3cretPassw0rd@db.internal:5432/paymaster_prod?sslmode=require";
    const config = buildConfig({ networks: [LOCAL_NETWORK] }, { ...LOCAL_ENV, DATABASE_URL: secretUrl });
    expect(config.databaseUrl).to.equal(secretUrl);
    const redacted = JSON.stringify(redactConfig(config));
    for (const secret of ["S3cretPassw0rd", "paymaster:", "paymaster_prod", "sslmode"]) {
      expect(redacted).to.not.include(secret);
    }
    expect(redactConfig(config).databaseUrl).to.equal("postgres://db.internal:5432/…");
    expect(redactConfig(buildConfig({ networks: [LOCAL_NETWORK] }, LOCAL_ENV))).to.not.have.property("databaseUrl");

    let err: unknown;
    try {
      buildConfig({ networks: [LOCAL_NETWORK], databaseUrl: secretUrl }, LOCAL_ENV);
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as ConfigError).issues.join("\n")).to.match(/^databaseUrl: .*secret.*DATABASE_URL/m);
    expect((err as Error).message).to.not.include("S3cretPassw0rd");

    const badUrl = "mysql://root:Hunter2@db/x";
    try {
      buildConfig({ networks: [LOCAL_NETWORK] }, { ...LOCAL_ENV, DATABASE_URL: badUrl });
      err = undefined;
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as ConfigError).issues).to.deep.equal([
      "databaseUrl (from DATABASE_URL): must be a postgres:// or postgresql:// URL",
    ]);
    expect((err as Error).message).to.not.include("Hunter2");
    // empty counts as unset
    expect(buildConfig({ networks: [LOCAL_NETWORK] }, { ...LOCAL_ENV, DATABASE_URL: " " }).databaseUrl).to.equal(undefined);
  });
});
