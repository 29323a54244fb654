// The store at scale (issue 43; docs/scale.md): a batch is one transaction in one round trip; a reservation is one
// round trip to PostgreSQL, counted on the wire through a TCP proxy; every cap, bound, balance and tank stays exact
// with two replicas and 64 reservations each in flight at its edge. Both databases unless said.
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Address, Hex } from "@paymaster/shared";
import { holdFor, type BillingTerms } from "../src/billing/charge.ts";
import type { CapCheck } from "../src/policy/types.ts";
import { POSTGRES_DIALECT, openPostgresDb } from "../src/store/db/postgres.ts";
import { SQLITE_DIALECT, openSqliteDb } from "../src/store/db/sqlite.ts";
import { Refusal, type Db } from "../src/store/db/types.ts";
import { migrationsFor } from "../src/store/migrations.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { NewSponsorship, ReserveResult, Store } from "../src/store/types.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";
import { storeBackends } from "./helpers/storeBackends.ts";
import { startTcpProxy, type TcpProxy } from "./helpers/tcpProxy.ts";

const SENDER = "0x1111111111111111111111111111111111111111" as Address;
const NOW = 1_700_000_000;
let hashes = 0;
const hash = (): Hex => `0x${(++hashes).toString(16).padStart(64, "0")}` as Hex;

/** Two stores on one database: two replicas (SQLite: one file, as replicas on one host share it). */
interface Replicas {
  a: Store;
  b: Store;
  /** PostgreSQL: the database behind a proxy that counts round trips, and `a` connected through it. */
  proxy?: TcpProxy;
  close(): Promise<void>;
}

/** A project, its API key and a strategy (its code `prefix` and a random tail), made in `store`: whom the reservations are for. */
interface Sponsor {
  projectId: string;
  apiKeyId: string;
  strategyId: string;
}

async function sponsorIn(store: Store, name: string, prefix: string): Promise<Sponsor> {
  const project = await store.createProject(name);
  const key = await store.createApiKey(project.id);
  const strategy = await store.createStrategy({ projectId: project.id, code: `${prefix}${Math.random().toString(36).slice(2, 8)}`, name: name.slice(0, 1) });
  return { projectId: project.id, apiKeyId: key.apiKey.id, strategyId: strategy.id };
}

async function replicas(backend: "sqlite" | "postgres"): Promise<Replicas> {
  if (backend === "sqlite") {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "store-scale-")), "db.sqlite");
    const a = openSqliteStore(file);
    const b = openSqliteStore(file);
    return { a, b, close: async () => void (await a.close(), await b.close()) };
  }
  const database: TestDatabase = await createTestDatabase("paymaster_scale");
  const url = new URL(database.url);
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
  const through = new URL(database.url);
  through.port = String(proxy.port);
  const a = await openPostgresStore(through.href);
  const b = await openPostgresStore(database.url);
  return {
    a,
    b,
    proxy,
    async close() {
      await a.close();
      await b.close();
      await proxy.close();
      await database.drop();
    },
  };
}

/** `count` reservations of fresh ops at once, half through each replica (64 each in flight for 128). */
async function burst(r: Replicas, count: number, op: (i: number) => NewSponsorship, caps?: readonly CapCheck[]): Promise<ReserveResult[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => (i % 2 === 0 ? r.a : r.b).reserveSponsorship(op(i), caps)));
}

for (const backend of ["sqlite", "postgres"] as const) {
  describe(`the store at scale (${backend})`, function () {
    this.timeout(60_000);

    describe("Db.batch", () => {
      let db: Db;
      let database: TestDatabase | undefined;
      beforeEach(async () => {
        if (backend === "sqlite") {
          db = openSqliteDb(path.join(mkdtempSync(path.join(tmpdir(), "batch-")), "db.sqlite"), migrationsFor(SQLITE_DIALECT), NOW);
        } else {
          database = await createTestDatabase("paymaster_batch");
          db = await openPostgresDb(database.url, migrationsFor(POSTGRES_DIALECT), NOW);
        }
        await db.run("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
      });
      afterEach(async () => {
        await db.close();
        await database?.drop();
        database = undefined;
      });
      const count = async () => Number((await db.one<{ n: number | string }>("SELECT COUNT(*) AS n FROM t"))!.n);
      const insert = (k: string, v: number) => ({ sql: "INSERT INTO t (k, v) VALUES (?, ?)", params: [k, v] });

      it("answers each statement's rows, in order, and commits them together", async () => {
        const rows = await db.batch([insert("a", 1), { sql: "UPDATE t SET v = v + ? WHERE k = ? RETURNING v", params: [41, "a"] }, { sql: "SELECT k, v FROM t", params: [] }]);
        expect(rows[0]).to.deep.equal([]);
        expect(rows[1]).to.deep.equal([{ v: 42 }]);
        expect(rows[2]!.map((r) => ({ ...(r as object) }))).to.deep.equal([{ k: "a", v: 42 }]);
        expect(await count()).to.equal(1);
      });

      it("a refusal after writes rolls every one of them back and says why, with the value the database saw", async () => {
        const refusing = { sql: "SELECT CASE WHEN v > ? THEN pm_refuse(?, CAST(v AS TEXT)) END AS refused FROM t WHERE k = ?", params: [10, '{"reason":"TOO_BIG"}', "b"] };
        const error = await db.batch([insert("a", 1), insert("b", 11), refusing, insert("c", 3)]).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(Refusal);
        expect((error as Refusal).reason).to.equal('{"reason":"TOO_BIG"}');
        expect((error as Refusal).value).to.equal("11");
        expect(await count()).to.equal(0);
      });

      it("a constraint violation mid-batch rolls it back; a statement that does not parse too, and later batches run", async () => {
        await db.batch([insert("a", 1)]);
        const violation = await db.batch([insert("b", 2), insert("a", 3)]).then(() => undefined, (e: unknown) => e);
        expect(db.violation(violation)?.kind).to.equal("unique");
        const broken = await db.batch([insert("c", 3), { sql: "INSERT INTO no_such_table VALUES (?)", params: [1] }, insert("d", 4)]).then(() => undefined, (e: unknown) => e);
        expect(broken).to.be.instanceOf(Error);
        expect(await count()).to.equal(1);
        // The same statements again, on whatever connection: prepared once, still known.
        await db.batch([insert("c", 3), insert("d", 4), { sql: "SELECT CASE WHEN v > ? THEN pm_refuse(?, NULL) END AS refused FROM t WHERE k = ?", params: [10, "{}", "c"] }]);
        expect(await count()).to.equal(3);
      });
    });

    describe("caps, bounds, balances and tanks at their edge: two replicas, 64 in flight each", () => {
      let r: Replicas;
      let ids: Sponsor;
      beforeEach(async () => {
        r = await replicas(backend);
        ids = await sponsorIn(r.a, "scale", "S");
      });
      afterEach(() => r.close());

      const op = (i: number, over: Partial<NewSponsorship> = {}): NewSponsorship =>
        sponsorshipInput(ids, { strategyId: ids.strategyId, nonce: BigInt(i), maxCostWei: 100n, maxCostUsdMicros: 30n, userOpHash: hash(), ...over });
      const admitted = (results: readonly ReserveResult[]) => results.filter((x) => x.ok).length;
      const day = new Date(NOW * 1000).toISOString().slice(0, 10);

      const caps: [string, CapCheck][] = [
        ["global ops", { scope: "global", key: "", rulePrefix: "caps.global", maxOps: 37 }],
        ["global wei", { scope: "global", key: "", rulePrefix: "caps.global", maxWei: 3700n }],
        ["global USD", { scope: "global", key: "", rulePrefix: "caps.global", maxUsdMicros: 37n * 30n }],
        ["daily ops", { scope: "daily", key: day, rulePrefix: "caps.daily", maxOps: 37 }],
        ["daily wei", { scope: "daily", key: day, rulePrefix: "caps.daily", maxWei: 3700n }],
        ["daily USD", { scope: "daily", key: day, rulePrefix: "caps.daily", maxUsdMicros: 37n * 30n }],
        ["per-sender ops", { scope: "perSender", key: SENDER, rulePrefix: "caps.perSender", maxOps: 37 }],
        ["per-sender wei", { scope: "perSender", key: SENDER, rulePrefix: "caps.perSender", maxWei: 3700n }],
      ];
      for (const [name, cap] of caps) {
        it(`${name}: exactly 37 of 128 admitted, and the row holds exactly theirs`, async () => {
          const results = await burst(r, 128, (i) => op(i), [cap]);
          expect(admitted(results)).to.equal(37);
          for (const x of results) if (!x.ok) expect(x).to.include({ reason: "CAP_EXCEEDED" });
          const usage = await r.b.getUsage(ids.strategyId, cap.scope, cap.key);
          expect(usage).to.deep.include({ ops: 37, reservedWei: 3700n, reservedUsdMicros: 37n * 30n });
        });
      }

      it("the project's billing balance: exactly what it covers, and it holds exactly that", async () => {
        const terms: BillingTerms = { basis: "gas", nativeUsd: { numerator: 3000n, denominator: 1n }, markupBps: 0, feeUsdMicros: 7n };
        const hold = holdFor(terms, 10n ** 12n);
        await r.a.addBillingEntry({ projectId: ids.projectId, kind: "credit", amountUsdMicros: 37n * hold, reference: "scale-credit", actor: "test" });
        const results = await burst(r, 128, (i) => op(i, { maxCostWei: 10n ** 12n, billing: terms }));
        expect(admitted(results)).to.equal(37);
        for (const x of results) if (!x.ok) expect(x).to.include({ reason: "BALANCE_EXHAUSTED" });
        expect(await r.b.getBillingAccount(ids.projectId)).to.deep.include({ balanceUsdMicros: 37n * hold, heldUsdMicros: 37n * hold });
      });

      it("a sender's gas tank: exactly what it covers, and it reserves exactly that", async () => {
        await r.a.creditGasTank("local", SENDER, 3700n, "scale-tank");
        const results = await burst(r, 128, (i) => op(i, { mode: "user", strategyId: null }));
        expect(admitted(results)).to.equal(37);
        expect(await r.b.getGasTank("local", SENDER)).to.deep.include({ balanceWei: 3700n, reservedWei: 3700n });
      });

      it("a billed browser key's share of the balance: per client address and per key, exactly (third review, finding 2)", async () => {
        const terms: BillingTerms = { basis: "gas", nativeUsd: { numerator: 3000n, denominator: 1n }, markupBps: 0, feeUsdMicros: 0n };
        const hold = holdFor(terms, 10n ** 12n);
        await r.a.addBillingEntry({ projectId: ids.projectId, kind: "credit", amountUsdMicros: 100n * hold, reference: "share-credit", actor: "test" });
        const shares = { perClientBps: 1_000, perKeyBps: 5_000 }; // 10 holds per client, 50 per key
        const from = (client: string) => (i: number) =>
          op(i + Number.parseInt(client.split(".")[3]!) * 1000, { maxCostWei: 10n ** 12n, billing: terms, clientBucket: client, outstanding: { maxPerSender: 1000, maxPerClientIp: 1000 }, billingShares: shares, sender: `0x${(i + 1).toString(16).padStart(40, "0")}` as Address });
        const one = await burst(r, 128, from("192.0.2.1"));
        expect(admitted(one)).to.equal(10);
        for (const x of one) if (!x.ok) expect(x).to.deep.include({ reason: "HOLD_SHARE_EXCEEDED", scope: "clientIp", shareBps: 1_000 });
        for (const client of ["192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6"]) await burst(r, 16, from(client));
        expect((await r.b.getBillingAccount(ids.projectId)).heldUsdMicros, "the key's half of the balance, not one hold more").to.equal(50n * hold);
        const past = await r.a.reserveSponsorship(from("192.0.2.7")(0));
        expect(past).to.deep.include({ ok: false, reason: "HOLD_SHARE_EXCEEDED", scope: "apiKey", shareBps: 5_000 });
      });

      it("open sponsorships of one sender on 2-D nonces, of one browser client, and postOp charges: exactly their bound", async () => {
        const parallel = await burst(r, 128, (i) => op(i, { nonce: (BigInt(i) + 1n) << 64n, outstanding: { maxPerSender: 5 } }));
        expect(admitted(parallel)).to.equal(5);
        const clients = await burst(r, 128, (i) => op(i, { sender: `0x${(i + 1).toString(16).padStart(40, "0")}` as Address, clientBucket: "192.0.2.7", outstanding: { maxPerSender: 5, maxPerClientIp: 6 } }));
        expect(admitted(clients)).to.equal(6);
        const postOp = await burst(r, 128, (i) => op(i + 1000, { mode: "erc20", strategyId: null, sender: "0x2222222222222222222222222222222222222222", postOpCharge: true }));
        expect(admitted(postOp)).to.equal(1);
      });
    });

    it("kill -9 of a replica in the middle of a burst at a cap's edge: nothing lost, nothing admitted over it, every counter equal to its rows", async () => {
      const database = backend === "postgres" ? await createTestDatabase("paymaster_kill") : undefined;
      const target = database?.url ?? path.join(mkdtempSync(path.join(tmpdir(), "store-kill-")), "db.sqlite");
      const store = backend === "sqlite" ? openSqliteStore(target) : await openPostgresStore(target);
      const children: ChildProcess[] = [];
      try {
        const project = await store.createProject("kill");
        const key = await store.createApiKey(project.id);
        const strategy = await store.createStrategy({ projectId: project.id, code: "KILL", name: "k" });
        const ids = { projectId: project.id, apiKeyId: key.apiKey.id, strategyId: strategy.id };
        const caps = [{ scope: "global", key: "", rulePrefix: "caps.global", maxOps: 400 }];
        const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "reserveBurst.ts");
        for (const base of [0, 1_000_000]) {
          const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", script, JSON.stringify({ backend, target, ids, caps, base, lanes: 16 })], { stdio: ["pipe", "pipe", "inherit"] });
          children.push(child);
          const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
          expect((await lines.next()).value).to.equal("ready");
          (child as ChildProcess & { lines?: typeof lines }).lines = lines;
        }
        for (const child of children) child.stdin!.write("go\n");
        // Mid-burst: the first replica dies with batches on their way; the second goes on past the cap's edge.
        const until = async (ops: number) => {
          const deadline = Date.now() + 20_000;
          while ((await store.getUsage(strategy.id, "global", "")).ops < ops) {
            if (Date.now() > deadline) throw new Error(`the burst did not reach ${ops} ops in 20 s`);
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
        };
        await until(150);
        children[0]!.kill("SIGKILL");
        await until(400);
        await new Promise((resolve) => setTimeout(resolve, 300)); // refusals only, now
        children[1]!.stdin!.write("stop\n");
        const survivor = (children[1] as ChildProcess & { lines: AsyncIterator<string> }).lines;
        const { ok } = JSON.parse((await survivor.next()).value as string) as { ok: number };
        expect(ok, "the survivor reserved some").to.be.greaterThan(0);

        const rows = await store.listSponsorships({ strategyId: strategy.id, limit: 1000 });
        const open = rows.filter((x) => x.status === "signed");
        expect(open, "exactly the cap, not one over").to.have.length(400);
        expect(await store.getUsage(strategy.id, "global", "")).to.deep.include({ ops: 400, reservedWei: 400n * 100n, reservedUsdMicros: 400n * 30n });
      } finally {
        for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await store.close();
        await database?.drop();
      }
    });

    it("an upgrade to migration 17: open sponsorships' usage links and running holds are carried over exactly", async () => {
      const t = backend === "sqlite" ? "1" : "TRUE";
      const sender = "0x3333333333333333333333333333333333333333";
      const backends = storeBackends("scale_upgrade");
      const opened = await backends[backend === "sqlite" ? 0 : 1]!.openUpgradedFrom(16, async (sql) => {
        await sql("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'p', 1)");
        await sql("INSERT INTO api_keys (id, project_id, key_hash, prefix, label, status, created_at) VALUES ('k1', 'p1', 'h1', 'pm_x', NULL, 'active', 1)");
        await sql("INSERT INTO strategies (id, project_id, code, name, status, created_at) VALUES ('s1', 'p1', 'UPG', 's', 'enabled', 1)");
        await sql(`INSERT INTO strategy_usage (strategy_id, scope, key, reserved_wei, spent_wei, reserved_usd_micros, spent_usd_micros, ops, updated_at)
          VALUES ('s1', 'global', '', '300', '0', '30', '0', 2, 1), ('s1', 'perSender', '${sender}', '300', '0', '30', '0', 2, 1)`);
        // Two open sponsorships of one sender on 2-D nonces from one browser client, one of them charging in postOp.
        for (const [id, nonce] of [["a", (1n << 64n) + 1n], ["b", (2n << 64n) + 1n]] as const) {
          await sql(`INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id, api_key_id, strategy_id,
              max_cost_wei, max_cost_usd_micros, valid_until, valid_after, user_op_hash, paymaster_and_data, status, created_at, updated_at,
              client_ip, parallel_nonce)
            VALUES ('${id}', 'local', '0x0000000071727De22E5E9d8BAf0edAc6f37da032', 'v0.7', '${sender}', '${nonce}', 'sponsor', 'p1', 'k1', 's1',
              '150', '15', 2000000000, 1, '0x${id.repeat(64)}', '0x12', 'signed', 1, 1, '192.0.2.1', ${t})`);
          await sql(`INSERT INTO sponsorship_usage (sponsorship_id, strategy_id, scope, key) VALUES ('${id}', 's1', 'global', ''), ('${id}', 's1', 'perSender', '${sender}')`);
        }
        await sql(`INSERT INTO token_charge_flags (sponsorship_id, network, sender, postop_charge, unpaid, updated_at) VALUES ('b', 'local', '${sender}', ${t}, ${backend === "sqlite" ? "0" : "FALSE"}, 1)`);
      });
      try {
        const { store } = opened;
        // The bounds see them: a third parallel op of the sender over 2 is refused, so is a second postOp charge.
        const ids = { projectId: "p1", apiKeyId: "k1" };
        const third = await store.reserveSponsorship(sponsorshipInput(ids, { sender, nonce: (3n << 64n) + 1n, userOpHash: hash(), outstanding: { maxPerSender: 2 } }));
        expect(third).to.deep.include({ ok: false, reason: "TOO_MANY_OUTSTANDING", scope: "sender" });
        const postOp = await store.reserveSponsorship(sponsorshipInput(ids, { sender, nonce: 7n, mode: "erc20", userOpHash: hash(), postOpCharge: true }));
        expect(postOp).to.deep.include({ ok: false, reason: "POSTOP_CHARGE_PENDING" });
        // Released, they give back exactly what they held: the usage rows and every hold back to zero.
        await store.releaseSponsorship("a");
        await store.releaseSponsorship("b");
        expect(await store.getUsage("s1", "global", "")).to.deep.include({ reservedWei: 0n, reservedUsdMicros: 0n, ops: 0 });
        expect(await store.getUsage("s1", "perSender", sender)).to.deep.include({ reservedWei: 0n, ops: 0 });
        expect((await store.reserveSponsorship(sponsorshipInput(ids, { sender, nonce: 8n, mode: "erc20", userOpHash: hash(), postOpCharge: true }))).ok).to.equal(true);
      } finally {
        await opened.close();
      }
    });

    if (backend === "postgres") {
      describe("round trips to the database, counted on the wire", () => {
        let r: Replicas;
        let ids: Sponsor;
        beforeEach(async () => {
          r = await replicas(backend);
          ids = await sponsorIn(r.b, "trips", "T");
        });
        afterEach(() => r.close());

        it("a capped, billed reservation is one; replacing one is three; settling a block's ops or expiring any number is two", async () => {
          const caps: CapCheck[] = [
            { scope: "global", key: "", rulePrefix: "caps.global", maxOps: 1000 },
            { scope: "daily", key: "2023-11-14", rulePrefix: "caps.daily", maxUsdMicros: 10n ** 12n },
            { scope: "perSender", key: SENDER, rulePrefix: "caps.perSender", maxOps: 1000 },
          ];
          const billing: BillingTerms = { basis: "gas", nativeUsd: { numerator: 3000n, denominator: 1n }, markupBps: 1500, feeUsdMicros: 5000n };
          await r.b.addBillingEntry({ projectId: ids.projectId, kind: "credit", amountUsdMicros: 10n ** 15n, reference: "trips", actor: "test" });
          const configVersion = await r.b.configVersion();
          const op = (nonce: bigint) => sponsorshipInput(ids, { strategyId: ids.strategyId, nonce, userOpHash: hash(), billing, configVersion, webhookEndpoints: [] });
          await r.a.reserveSponsorship(op(0n), caps); // the pool's connection and its prepared statements
          const trips = async (work: () => Promise<unknown>) => {
            r.proxy!.roundTrips(true);
            await work();
            return r.proxy!.roundTrips();
          };
          const reserved: string[] = [];
          for (let i = 1n; i <= 5n; i++) {
            expect(await trips(async () => reserved.push(((await r.a.reserveSponsorship(op(i), caps)) as { record: { id: string } }).record.id))).to.equal(1);
          }
          expect(await trips(() => r.a.reserveSponsorship(op(5n), caps)), "a replacement: the refused first try, the read, the batch").to.equal(3);
          const settlement = (i: number) => ({ actualGasCostWei: 60n, actualCostUsdMicros: 18n, actualTokenCost: null, success: true, txHash: hash(), blockNumber: 10n, blockHash: hash(), logIndex: i });
          const signed = await Promise.all(reserved.slice(0, 3).map((id) => r.b.getSponsorship(id)));
          expect(
            await trips(() => r.a.settleSponsorships(signed.map((s, i) => ({ userOpHash: s!.userOpHash!, network: "local", entryPoint: s!.entryPoint, settlement: settlement(i) })))),
            "a block's three ops: the read of their sponsorships and what they count in, the batch",
          ).to.equal(2);
          expect(await trips(() => r.a.releaseExpired(2_100_000_000, 0)), "every open one at once: the read of the expired ones, the batch").to.equal(2);
          expect((await r.b.getUsage(ids.strategyId, "global", "")).ops, "3 settled and the replaced one's op counted once, none open").to.equal(3);
        });

        it("a User Sponsor reservation that checks the tank's consent, and an ERC-20 postOp-charge one that checks for an unpaid charge, are one each", async () => {
          const configVersion = await r.b.configVersion();
          await r.b.creditGasTank("local", SENDER, 10n ** 18n, "trips");
          await r.b.setGasTankConsent({ network: "local", sender: SENDER, projectId: ids.projectId, allowed: true, changedBy: "test" });
          const user = (nonce: bigint) => sponsorshipInput(ids, { mode: "user", strategyId: null, sender: SENDER, nonce, userOpHash: hash(), configVersion, webhookEndpoints: [], requires: { tankConsent: true } });
          const erc20 = (nonce: bigint) =>
            sponsorshipInput(ids, { mode: "erc20", strategyId: null, nonce, userOpHash: hash(), token: SENDER, exchangeRate: 1n, maxTokenCost: 1n, postOpCharge: true, configVersion, webhookEndpoints: [], requires: { noUnpaidCharge: true } });
          await r.a.reserveSponsorship(user(0n)); // the pool's connection and its prepared statements
          for (const [label, input] of [["user", user(1n)], ["erc20", erc20(2n)]] as const) {
            r.proxy!.roundTrips(true);
            const reserved = await r.a.reserveSponsorship(input);
            expect(reserved.ok, `${label}: ${reserved.ok ? "" : reserved.reason}`).to.equal(true);
            expect(r.proxy!.roundTrips(), label).to.equal(1);
          }
        });
      });
    }
  });
}
