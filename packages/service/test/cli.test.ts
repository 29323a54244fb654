/**
 * The operator command `paymaster`, run as a real child process against real SQLite and real PostgreSQL: every
 * command, --json, exit codes (0 success, 1 failure, 2 usage), bad input named in one line and leaving nothing
 * half-written, and a revoked key refused by a running service on its next request.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { openStore } from "../src/store/index.ts";
import { openPostgresDb, POSTGRES_DIALECT } from "../src/store/db/postgres.ts";
import { openSqliteDb, SQLITE_DIALECT } from "../src/store/db/sqlite.ts";
import { migrationsFor, POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from "../src/store/migrations.ts";
import type { Store } from "../src/store/types.ts";
import { createTestDatabase, runCli, runCliInProcess, type CliResult } from "./helpers/cli.ts";
import { startTestService } from "./helpers/rpcService.ts";
import { freeLoopbackPort } from "./helpers/throwawayServers.ts";

const SENDER = "0x9406Cc6185a346906296840746125a0E44976454";
const EP = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

function network(name: string) {
  return {
    name,
    rpcUrl: "http://127.0.0.1:1",
    entryPoints: { "v0.7": { verifyingPaymaster: "0x1111111111111111111111111111111111111111", erc20Paymaster: "0x2222222222222222222222222222222222222222" } },
    nativeUsdPrice: { type: "fixed", usd: "3000" },
  };
}

function ok(r: CliResult): CliResult {
  expect(r.code, `${r.stderr}\n${r.stdout}`).to.equal(0);
  return r;
}

/**
 * SQLite: every command as a real child process. PostgreSQL: the same scenarios through the same entry
 * (runCli) in this process — the store is what differs, and each child costs ~0.5 s of CPU on a shared machine.
 */
const BACKENDS = [
  { backend: "SQLite", run: runCli },
  { backend: "PostgreSQL", run: runCliInProcess },
] as const;

for (const { backend, run } of BACKENDS) {
  describe(`paymaster CLI (${backend}${run === runCli ? ", child processes" : ", in process"})`, function () {
    this.timeout(120_000);
    let dir: string;
    let env: Record<string, string>;
    let drop: (() => Promise<void>) | undefined;
    let config: { databasePath: string; databaseUrl?: string };

    const cli = (...args: string[]) => run(["--config", path.join(dir, "paymaster.json"), ...args], env);
    const json = async (...args: string[]) => ok(await cli(...args, "--json")).json;
    /** A store on the same database, to look underneath. */
    async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
      const store = await openStore(config);
      try {
        return await fn(store);
      } finally {
        await store.close();
      }
    }

    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), "pm-cli-"));
      writeFileSync(
        path.join(dir, "paymaster.json"),
        JSON.stringify({ databasePath: path.join(dir, "db.sqlite"), networks: [network("local"), network("base-sepolia")] }),
      );
      env = {};
      config = { databasePath: path.join(dir, "db.sqlite") };
      if (backend === "PostgreSQL") {
        const db = await createTestDatabase("paymaster_cli");
        drop = db.drop;
        env.DATABASE_URL = db.url;
        config.databaseUrl = db.url;
      }
    });

    after(async () => {
      await drop?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it("projects, keys, strategies, tanks, sponsorships and the audit log, with --json and as text", async () => {
      const project = await json("project", "create", "Acme");
      expect(project).to.include({ name: "Acme", status: "active" });
      expect((await json("project", "list")).map((p: { id: string }) => p.id)).to.include(project.id);
      const text = ok(await cli("project", "list")).stdout;
      expect(text).to.match(/^ID\s+NAME\s+STATUS/m).and.to.contain("Acme");

      // Keys: the plaintext is in the create answer only; the store keeps a hash.
      const key = await json("key", "create", "--project", project.id, "--label", "backend");
      expect(key.key).to.match(/^pm_[A-Za-z0-9_-]{43}$/);
      const listed = await json("key", "list", "--project", project.id);
      expect(listed).to.have.length(1);
      expect(JSON.stringify(listed)).not.to.contain(key.key);
      expect(await withStore(async (s) => (await s.findApiKey(key.key))?.id)).to.equal(key.id);

      // Strategies from YAML, then an update from JSON.
      const yamlFile = path.join(dir, "free.yaml");
      writeFileSync(
        yamlFile,
        `code: acme-free\nname: Free mints\nproject: ${project.id}\nnetworks: [base-sepolia]\nrules:\n  caps:\n    daily: { maxUsd: "25.5", maxOps: 10 }\n    global: { maxWei: "1000000" }\n`,
      );
      const created = await json("strategy", "create", "-f", yamlFile);
      expect(created).to.deep.include({ code: "acme-free", name: "Free mints", status: "enabled", networks: ["base-sepolia"] });
      expect(created.rules).to.deep.equal({ caps: { global: { maxWei: "1000000" }, daily: { maxUsd: "25.5", maxOps: 10 } } });
      const jsonFile = path.join(dir, "free.json");
      writeFileSync(jsonFile, JSON.stringify({ code: "acme-free", name: "Free mints v2", rules: { caps: { global: { maxWei: "2000000" } } } }));
      const updated = await json("strategy", "update", "-f", jsonFile);
      expect(updated).to.deep.include({ name: "Free mints v2", networks: ["base-sepolia"], rules: { caps: { global: { maxWei: "2000000" } } } });
      expect((await json("strategy", "disable", "acme-free")).status).to.equal("disabled");
      expect((await json("strategy", "enable", "acme-free")).status).to.equal("enabled");
      expect((await json("strategy", "list", "--project", project.id)).map((s: { code: string }) => s.code)).to.deep.equal(["acme-free"]);
      expect((await json("strategy", "show", "acme-free")).name).to.equal("Free mints v2");

      // Usage: a reservation and a settlement made by the service show as reserved and spent against the cap.
      const strategyId = created.id as string;
      const [r1, r2] = await withStore(async (s) => {
        const op = (nonce: bigint) => ({
          network: "base-sepolia", entryPoint: EP as `0x${string}`, version: "v0.7" as const, sender: SENDER as `0x${string}`, nonce,
          mode: "sponsor" as const, projectId: project.id, apiKeyId: key.id, strategyId, token: null, exchangeRate: null,
          maxTokenCost: null, maxCostWei: 300_000n, maxCostUsdMicros: 900_000n, validUntil: 2_000_000_000, validAfter: 0,
          userOpHash: `0x${(nonce === 1n ? "aa" : "dd").repeat(32)}` as const, paymasterAndData: "0x" as const,
        });
        const caps = [{ scope: "global" as const, key: "", rulePrefix: "caps.global" as const, maxWei: 2_000_000n }];
        const a = await s.reserveSponsorship(op(1n), caps);
        const b = await s.reserveSponsorship(op(2n), caps);
        if (!a.ok || !b.ok) throw new Error("reserve refused");
        await s.settleSponsorship(a.record.id, {
          actualGasCostWei: 123_456n, actualCostUsdMicros: 370_368n, actualTokenCost: null, success: true,
          txHash: `0x${"bb".repeat(32)}`, blockNumber: 7n, blockHash: `0x${"cc".repeat(32)}`, logIndex: 0,
        });
        return [a.record, b.record];
      });
      const usage = await json("strategy", "usage", "acme-free");
      expect(usage.caps).to.deep.equal([
        { cap: "caps.global", key: "", spentWei: "123456", reservedWei: "300000", spentUsd: "0.370368", reservedUsd: "0.90", ops: 2, maxWei: "2000000", remainingWei: "1576544" },
      ]);
      expect(ok(await cli("strategy", "usage", "acme-free")).stdout).to.match(/caps\.global/).and.to.contain("1576544");

      // Sponsorships: filters.
      expect((await json("sponsorship", "list", "--strategy", "acme-free")).map((s: { id: string }) => s.id)).to.have.members([r1!.id, r2!.id]);
      expect((await json("sponsorship", "list", "--status", "settled")).map((s: { id: string }) => s.id)).to.deep.equal([r1!.id]);
      expect(await json("sponsorship", "list", "--sender", SENDER.toLowerCase(), "--network", "local")).to.deep.equal([]);
      expect(await json("sponsorship", "list", "--since", "2100-01-01T00:00:00Z")).to.deep.equal([]);
      const byHash = await json("sponsorship", "show", `0x${"AA".repeat(32)}`);
      expect(byHash).to.deep.include({ id: r1!.id, status: "settled" });
      expect(byHash.settlement.actualGasCostWei).to.equal("123456");
      // Retention on demand: nothing is old enough yet; the dry run says so, and the pass deletes nothing.
      expect(await json("sponsorship", "prune", "--dry-run", "--settled-days", "1")).to.include({ dryRun: true, releasedDays: 7, settledDays: 1, released: 0, settled: 0 });
      expect(await json("sponsorship", "prune")).to.include({ dryRun: false, released: 0, settled: 0, settledBefore: null });
      expect((await json("sponsorship", "list", "--strategy", "acme-free")).length).to.equal(2);

      // Tanks: credit (idempotent by reference), debit, show; never below what is available.
      const credit = await json("tank", "credit", "--network", "local", "--sender", SENDER.toLowerCase(), "--wei", "1000", "--reference", "inv-1");
      expect(credit).to.include({ sender: SENDER, balanceWei: "1000", creditedWei: "1000", reference: "inv-1" });
      await json("tank", "credit", "--network", "local", "--sender", SENDER, "--wei", "1000", "--reference", "inv-1");
      expect((await json("tank", "debit", "--network", "local", "--sender", SENDER, "--wei", "400")).balanceWei).to.equal("600");
      const over = await cli("tank", "debit", "--network", "local", "--sender", SENDER, "--wei", "601");
      expect(over.code).to.equal(1);
      expect(over.stderr).to.match(/600 wei available, less than 601/);
      expect(await json("tank", "show", "--network", "local", "--sender", SENDER)).to.deep.equal({
        network: "local", sender: SENDER, balanceWei: "600", reservedWei: "0", availableWei: "600", projects: [],
      });
      // Which projects may draw from it: none until allowed; allow, disallow, both audited.
      expect((await cli("tank", "show", "--network", "local", "--sender", SENDER)).stdout).to.contain("projects: none allowed");
      expect(await json("tank", "allow", "--network", "local", "--sender", SENDER, "--project", project.id)).to.include({ projectId: project.id, allowed: true });
      expect(await withStore((s) => s.gasTankAllows("local", SENDER, project.id))).to.equal(true);
      expect((await cli("tank", "show", "--network", "local", "--sender", SENDER)).stdout).to.match(new RegExp(`${project.id}\\s+true`));
      expect(await json("tank", "disallow", "--network", "local", "--sender", SENDER, "--project", project.id)).to.include({ allowed: false });
      expect(await withStore((s) => s.gasTankAllows("local", SENDER, project.id))).to.equal(false);
      const unknownProject = await cli("tank", "allow", "--network", "local", "--sender", SENDER, "--project", "nope");
      expect(unknownProject.code, unknownProject.stderr).to.not.equal(0);
      expect(unknownProject.stderr).to.match(/project "nope" not found/);

      // Revoke and rotate.
      const second = await json("key", "create", "--project", project.id);
      const rotated = await json("key", "rotate", second.id);
      expect(rotated.key).to.match(/^pm_/).and.not.equal(second.key);
      expect(rotated.revoked).to.equal(second.id);
      expect((await json("key", "revoke", key.id)).status).to.equal("revoked");
      expect(await withStore(async (s) => (await s.findApiKey(second.key))?.status)).to.equal("revoked");

      // Project disable / show.
      expect((await json("project", "disable", project.id)).status).to.equal("disabled");
      const shown = await json("project", "show", project.id);
      expect(shown.status).to.equal("disabled");
      expect(shown.keys).to.have.length(3);
      expect(shown.strategies.map((s: { code: string }) => s.code)).to.deep.equal(["acme-free"]);
      await json("project", "enable", project.id);

      // Every mutation is in the audit log, with before/after and no key plaintext.
      const log = await json("audit", "--limit", "100");
      const actions = log.map((e: { action: string }) => e.action);
      expect(actions).to.include.members(["project.create", "key.create", "strategy.create", "strategy.update", "strategy.disable", "tank.credit", "tank.debit", "tank.allow", "tank.disallow", "key.rotate", "key.revoke", "project.disable", "project.enable"]);
      expect(log.every((e: { actor: string }) => e.actor.startsWith("cli:"))).to.equal(true);
      const revoke = log.find((e: { action: string }) => e.action === "key.revoke");
      expect(revoke.before.status).to.equal("active");
      expect(revoke.after.status).to.equal("revoked");
      for (const secret of [key.key, second.key, rotated.key]) expect(JSON.stringify(log)).not.to.contain(secret);
    });

    it("apply creates, then finds nothing to change; keys are refused", async () => {
      const file = path.join(dir, "deploy.yaml");
      writeFileSync(
        file,
        [
          "projects:",
          "  - name: Declared",
          "    strategies:",
          "      - code: declared-one",
          "        rules: { caps: { perOp: { maxUsd: '2' } } }",
          "tokens:",
          `  - { network: base-sepolia, symbol: USDC, address: "${USDC}", decimals: 6, priceSource: { type: fixed, usd: "1" }, markupBps: 50 }`,
        ].join("\n"),
      );
      const first = await json("apply", "-f", file);
      expect(first).to.deep.equal([
        { kind: "project", name: "Declared", action: "created" },
        { kind: "strategy", name: "declared-one", action: "created" },
        { kind: "token", name: "base-sepolia:USDC", action: "created" },
      ]);
      const again = await json("apply", "-f", file);
      expect(again.map((c: { action: string }) => c.action)).to.deep.equal(["unchanged", "unchanged", "unchanged"]);
      writeFileSync(file, `projects:\n  - name: Declared\n    strategies:\n      - { code: declared-one, name: Renamed }\n`);
      expect((await json("apply", "-f", file)).map((c: { action: string }) => c.action)).to.deep.equal(["unchanged", "updated"]);
      expect((await json("strategy", "show", "declared-one")).rules).to.deep.equal({});

      writeFileSync(file, `projects:\n  - name: Declared\n    keys: [{ label: x }]\n`);
      const keys = await cli("apply", "-f", file);
      expect(keys.code).to.equal(2);
      expect(keys.stderr).to.match(/projects\[0\]: keys: API keys are never applied/);
    });

    it("bad input fails with a message naming what is wrong and writes nothing", async () => {
      const project = await json("project", "create", "Bad inputs");
      const strategies = async () => (await json("strategy", "list")).length;
      const before = await strategies();
      const audits = (await json("audit", "--limit", "1000")).length;

      const cases: { args: string[]; code: number; message: RegExp; file?: string }[] = [
        { args: ["tank", "show", "--network", "mainnet-nope", "--sender", SENDER], code: 2, message: /unknown network "mainnet-nope": configured networks are local, base-sepolia/ },
        { args: ["tank", "credit", "--network", "local", "--sender", "0x1234", "--wei", "5"], code: 2, message: /sender: not an address: "0x1234"/ },
        { args: ["tank", "credit", "--network", "local", "--sender", SENDER, "--wei", "-5"], code: 2, message: /wei: must be a positive integer amount of wei/ },
        { args: ["tank", "credit", "--network", "local", "--sender", SENDER], code: 2, message: /required option '--wei <amount>' not specified/ },
        { args: ["key", "revoke", "00000000-0000-0000-0000-000000000000"], code: 1, message: /API key "00000000-0000-0000-0000-000000000000" not found/ },
        { args: ["key", "create", "--project", "no-such-project"], code: 1, message: /project "no-such-project" not found/ },
        { args: ["strategy", "show", "nope"], code: 1, message: /strategy "nope" not found/ },
        { args: ["strategy", "create", "-f", path.join(dir, "missing.yaml")], code: 2, message: /cannot read .*missing\.yaml: ENOENT/ },
        {
          args: ["strategy", "create", "-f", "FILE"],
          file: `code: bad-one\nproject: ${project.id}\nrules:\n  caps:\n    daily: { maxUsd: "ten" }\n`,
          code: 2,
          message: /FILE: rules\.caps\.daily\.maxUsd: /,
        },
        { args: ["strategy", "create", "-f", "FILE"], file: `code: bad-two\nproject: ${project.id}\nnetworks: [atlantis]\n`, code: 2, message: /networks\[0\]: unknown network "atlantis"/ },
        { args: ["strategy", "create", "-f", "FILE"], file: `code: bad-three\nproject: ${project.id}\nrulez: {}\n`, code: 2, message: /rulez: unknown field/ },
        { args: ["strategy", "create", "-f", "FILE"], file: `code: [unclosed\n`, code: 2, message: /not valid JSON or YAML/ },
        { args: ["sponsorship", "list", "--user-op-hash", "0x12"], code: 2, message: /userOpHash: must be 32 bytes/ },
        { args: ["sponsorship", "prune", "--released-days", "-3"], code: 2, message: /releasedDays: an integer from 0 to 3650/ },
        { args: ["nonsense"], code: 2, message: /unknown command 'nonsense'/ },
        { args: ["project", "list", "--frobnicate"], code: 2, message: /unknown option '--frobnicate'/ },
      ];
      for (const c of cases) {
        const file = path.join(dir, "input.yaml");
        if (c.file !== undefined) writeFileSync(file, c.file);
        const args = c.args.map((a) => (a === "FILE" ? file : a));
        const r = await cli(...args);
        const message = new RegExp(c.message.source.replace("FILE", file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
        expect(r.code, `${args.join(" ")}: ${r.stderr}`).to.equal(c.code);
        expect(r.stderr, args.join(" ")).to.match(message);
        expect(r.stderr).not.to.match(/\n\s+at /); // never a stack trace
      }
      // A document whose last entry is bad writes none of the earlier ones.
      const applyFile = path.join(dir, "half.yaml");
      writeFileSync(applyFile, `projects:\n  - name: Half\n    strategies:\n      - { code: half-1 }\n      - { code: half-2, rules: { caps: { daily: { maxOps: -1 } } } }\n`);
      const half = await cli("apply", "-f", applyFile);
      expect(half.code).to.equal(2);
      expect(half.stderr).to.match(/projects\[0\]\.strategies\[1\]: rules\.caps\.daily\.maxOps/);
      expect((await json("project", "list")).map((p: { name: string }) => p.name)).not.to.include("Half");
      expect(await strategies()).to.equal(before);
      expect((await json("audit", "--limit", "1000")).length).to.equal(audits);
    });

    it("--help everywhere; no configuration and no embedded database is a usage error", async () => {
      for (const args of [["--help"], ["key", "--help"], ["strategy", "usage", "--help"], ["tank", "credit", "--help"]]) {
        const r = await run(args, env);
        expect(r.code, args.join(" ")).to.equal(0);
        expect(r.stdout).to.match(/^Usage: paymaster/);
      }
      const none = await run(["project", "list", "--database", path.join(dir, "nothing.sqlite")], {});
      expect(none.code).to.equal(2);
      expect(none.stderr).to.match(/no database at .*nothing\.sqlite/);
      // A configuration the CLI cannot use: one problem a line, as at start (it printed a literal "\n" before them).
      const broken = path.join(dir, "broken.json");
      writeFileSync(broken, "{ networks: [");
      for (const [file, problem] of [[path.join(dir, "absent.json"), /cannot read the configuration file: ENOENT/], [broken, /the configuration file is not valid JSON/]] as const) {
        const r = await run(["--config", file, "project", "list"], {});
        expect(r.code, r.stderr).to.equal(2);
        expect(r.stderr).to.match(new RegExp(`^paymaster: invalid configuration \\(.*\\):\\n  - ${problem.source}`));
      }
    });

    it("a database of an older version: the command line migrates it only with --migrate (the older replicas would stop signing)", async () => {
      // A database as an older version left it: its first migrations only.
      const legacy = { dir: mkdtempSync(path.join(tmpdir(), "pm-cli-legacy-")), env: {} as Record<string, string>, drop: undefined as (() => Promise<void>) | undefined };
      const legacyConfig = path.join(legacy.dir, "paymaster.json");
      writeFileSync(legacyConfig, JSON.stringify({ databasePath: path.join(legacy.dir, "db.sqlite"), networks: [network("local")] }));
      let applied: () => Promise<number>;
      if (backend === "PostgreSQL") {
        const db = await createTestDatabase("paymaster_cli_legacy");
        legacy.drop = db.drop;
        legacy.env.DATABASE_URL = db.url;
        await (await openPostgresDb(db.url, POSTGRES_MIGRATIONS, 1_700_000_000)).close();
        applied = async () => {
          const client = new pg.Client({ connectionString: db.url });
          await client.connect();
          try {
            return Number((await client.query("SELECT COUNT(*) AS n FROM schema_migrations")).rows[0].n);
          } finally {
            await client.end();
          }
        };
      } else {
        await openSqliteDb(path.join(legacy.dir, "db.sqlite"), SQLITE_MIGRATIONS, 1_700_000_000).close();
        applied = async () => {
          const db = new DatabaseSync(path.join(legacy.dir, "db.sqlite"), { readOnly: true });
          try {
            return Number((db.prepare("SELECT COUNT(*) AS n FROM schema_migrations").get() as { n: number }).n);
          } finally {
            db.close();
          }
        };
      }
      const legacyCount = (backend === "PostgreSQL" ? POSTGRES_MIGRATIONS : SQLITE_MIGRATIONS).length;
      const all = migrationsFor(backend === "PostgreSQL" ? POSTGRES_DIALECT : SQLITE_DIALECT);
      try {
        const refused = await run(["--config", legacyConfig, "project", "list"], legacy.env);
        expect(refused.code, refused.stderr).to.equal(1);
        expect(refused.stderr).to.match(
          new RegExp(`^paymaster: the database's schema is at migration ${legacyCount} and this version's at ${Math.max(...all.map((m) => m.version))}: migrating it would stop the replicas of the older version that run on it from signing\\. Start this version's service first \\(its first replica migrates the database\\), or give --migrate`),
        );
        expect(await applied(), "nothing migrated").to.equal(legacyCount);
        const migrated = await run(["--config", legacyConfig, "--migrate", "project", "list"], legacy.env);
        expect(migrated.code, migrated.stderr).to.equal(0);
        expect(await applied()).to.equal(all.length);
        // Up to date: every command works without the flag.
        expect((await run(["--config", legacyConfig, "project", "list"], legacy.env)).code).to.equal(0);
      } finally {
        await legacy.drop?.();
        rmSync(legacy.dir, { recursive: true, force: true });
      }
    });
  });
}

describe("paymaster CLI and a running service", () => {
  it("a key revoked by the CLI is refused by the service on its very next request", async function () {
    this.timeout(60_000);
    const service = await startTestService();
    const dir = mkdtempSync(path.join(tmpdir(), "pm-cli-svc-"));
    try {
      const configFile = path.join(dir, "paymaster.json");
      writeFileSync(configFile, JSON.stringify({ databasePath: service.service.config.databasePath, networks: [network("local")] }));
      const before = await service.call("pm_supportEntrypoint", [], { apiKey: service.keys.active });
      expect(before.status).to.equal(200);
      const key = await service.store.findApiKey(service.keys.active);
      const revoke = await runCli(["--config", configFile, "key", "revoke", key!.id]);
      expect(revoke.code, revoke.stderr).to.equal(0);
      const after = await service.call("pm_supportEntrypoint", [], { apiKey: service.keys.active });
      expect(after.json.data?.reason, after.text).to.equal("API_KEY_REVOKED");
      // A disabled project refuses its keys too, and enabling it restores them.
      const other = await service.store.createApiKey(key!.projectId, "other");
      await runCli(["--config", configFile, "project", "disable", key!.projectId]);
      const disabled = await service.call("pm_supportEntrypoint", [], { apiKey: other.plaintext });
      expect(disabled.json.data?.reason, disabled.text).to.equal("API_KEY_REVOKED");
      expect(disabled.json.message).to.contain("project is disabled");
      await runCli(["--config", configFile, "project", "enable", key!.projectId]);
      expect((await service.call("pm_supportEntrypoint", [], { apiKey: other.plaintext })).status).to.equal(200);
    } finally {
      await service.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("paymaster CLI when the database is away", () => {
  it("PostgreSQL refusing: one line naming the database's failure and its cause, exit code 1, no stack, no password", async () => {
    const port = await freeLoopbackPort(); // nothing listens there
    const result = await runCliInProcess(["project", "list"], { DATABASE_URL: `postgres://paymaster:s3cret-db-pw@127.0.0.1:${port}/paymaster` });
    expect(result.code).to.equal(1);
    const lines = result.stderr.trim().split("\n");
    expect(lines, result.stderr).to.have.length(1);
    expect(lines[0]).to.match(/^paymaster: The paymaster's database refuses connections \(refused\): .*ECONNREFUSED/);
    expect(result.stderr).to.not.include("s3cret-db-pw");
    expect(result.stderr).to.not.include("    at ");
  });
});
