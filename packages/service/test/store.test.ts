import { expect } from "chai";
import { DatabaseSync } from "node:sqlite";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { Address } from "@paymaster/shared";

import { openStore } from "../src/store/index.ts";
import { isStoreError, StoreError } from "../src/store/errors.ts";
import { SQLITE_MIGRATIONS } from "../src/store/migrations.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { NewSponsorship, Store } from "../src/store/types.ts";

const NET = "base-sepolia";
const EP = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789" as Address;
const EP7 = "0x0000000071727De22E5E9d8BAf0edAc6f37da032" as Address;
const SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as Address;
const OTHER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" as Address;
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as Address;
const DAI = "0x9178a9844002240359454488bC593E68b604214E" as Address;
const HASH_A = `0x${"ab".repeat(32)}` as const;
const HASH_B = `0x${"cd".repeat(32)}` as const;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

describe("SQLite store", () => {
  let dir: string;
  let file: string;
  let store: Store;
  const opened: Store[] = [];

  function open(): Store {
    const s = openSqliteStore(file);
    opened.push(s);
    return s;
  }

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "pm-store-"));
    file = path.join(dir, "db", "paymaster.sqlite");
    store = open();
  });

  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A project + key to hang sponsorships on. */
  async function owner() {
    const project = await store.createProject("demo");
    const { apiKey } = await store.createApiKey(project.id, "ci");
    return { projectId: project.id, apiKeyId: apiKey.id };
  }

  function op(ids: { projectId: string; apiKeyId: string }, over: Partial<NewSponsorship> = {}): NewSponsorship {
    return {
      network: NET,
      entryPoint: EP,
      version: "v0.6",
      sender: SENDER,
      nonce: 0n,
      mode: "user",
      projectId: ids.projectId,
      apiKeyId: ids.apiKeyId,
      strategyId: null,
      token: null,
      exchangeRate: null,
      maxTokenCost: null,
      maxCostWei: 100n,
      validUntil: 2_000_000_000,
      validAfter: 1_700_000_000,
      ...over,
    };
  }

  describe("opening", () => {
    it("creates the directory, the file (owner-only), WAL mode and the migrations table", () => {
      expect(fs.existsSync(file)).to.equal(true);
      expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
      const raw = new DatabaseSync(file);
      try {
        expect(raw.prepare("PRAGMA journal_mode").get()).to.deep.equal({ journal_mode: "wal" });
        const versions = raw.prepare("SELECT version FROM schema_migrations ORDER BY version").all();
        expect(versions.map((r) => r.version)).to.deep.equal(SQLITE_MIGRATIONS.map((m) => m.version));
      } finally {
        raw.close();
      }
    });

    it("keeps data across close and re-open, applying no migration twice", async () => {
      const project = await store.createProject("persisted");
      const { plaintext } = await store.createApiKey(project.id);
      await store.creditGasTank(NET, SENDER, 5n * 10n ** 30n, "admin:1");
      await store.close();
      const again = open();
      expect(await again.getProject(project.id)).to.deep.equal(project);
      expect((await again.findApiKey(plaintext))?.projectId).to.equal(project.id);
      expect((await again.getGasTank(NET, SENDER)).balanceWei).to.equal(5n * 10n ** 30n);
      await again.close();
      open(); // a third open is still fine
      const raw = new DatabaseSync(file);
      try {
        expect(raw.prepare("SELECT COUNT(*) AS n FROM schema_migrations").get()).to.deep.equal({
          n: SQLITE_MIGRATIONS.length,
        });
      } finally {
        raw.close();
      }
    });

    it("refuses a database written by a newer schema", async () => {
      await store.close();
      const raw = new DatabaseSync(file);
      raw.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)").run();
      raw.close();
      let err: unknown;
      try {
        openSqliteStore(file);
      } catch (e) {
        err = e;
      }
      expect(isStoreError(err, "SCHEMA_TOO_NEW")).to.equal(true);
      expect((err as Error).message).to.match(/999/);
    });

    it("openStore opens the SQLite file named by databasePath", async () => {
      const other = path.join(dir, "other.sqlite");
      const s = openStore({ databasePath: other });
      opened.push(s);
      const p = await s.createProject("x");
      expect((await s.getProject(p.id))?.name).to.equal("x");
      expect(fs.existsSync(other)).to.equal(true);
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
      const bytes = Buffer.concat(
        [file, `${file}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)),
      ).toString("latin1");
      expect(bytes).to.include(apiKey.id); // the row is in these bytes...
      expect(bytes).to.not.include(plaintext); // ...the plaintext is not
      expect(bytes).to.not.include(plaintext.slice(10));
    });

    it("refuses a key for an unknown project", async () => {
      const err = await rejection(store.createApiKey("no-such-project"));
      expect(isStoreError(err, "NOT_FOUND")).to.equal(true);
    });

    it("a revoked key is still found, with status revoked", async () => {
      const p = await store.createProject("Acme");
      const { apiKey, plaintext } = await store.createApiKey(p.id);
      await store.revokeApiKey(apiKey.id);
      expect(await store.findApiKey(plaintext)).to.deep.equal({ ...apiKey, status: "revoked" });
      await store.revokeApiKey(apiKey.id); // idempotent
      expect((await store.findApiKey(plaintext))?.status).to.equal("revoked");
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
  });

  describe("sponsorships", () => {
    it("reserves (sponsor mode needs no tank), reads back every field, marks signed, finds by userOpHash", async () => {
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
        userOpHash: null,
        paymasterAndData: null,
        status: "reserved",
      });
      expect(await store.getSponsorship(record.id)).to.deep.equal(record);
      expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 0n, reservedWei: 0n });

      await store.markSigned(record.id, { userOpHash: HASH_A.toUpperCase().replace("0X", "0x") as `0x${string}`, paymasterAndData: "0x1234" });
      const signed = await store.getSponsorship(record.id);
      expect(signed).to.deep.equal({ ...record, status: "signed", userOpHash: HASH_A, paymasterAndData: "0x1234" });
      expect(await store.findSponsorshipByUserOpHash(HASH_A)).to.deep.equal(signed);
      expect(await store.findSponsorshipByUserOpHash(HASH_B)).to.equal(undefined);
      expect(await store.getSponsorship("missing")).to.equal(undefined);
    });

    it("markSigned only from reserved", async () => {
      const ids = await owner();
      const r = await store.reserveSponsorship(op(ids, { mode: "sponsor" }));
      if (!r.ok) throw new Error("expected ok");
      await store.markSigned(r.record.id, { userOpHash: HASH_A, paymasterAndData: "0x01" });
      const twice = await rejection(store.markSigned(r.record.id, { userOpHash: HASH_B, paymasterAndData: "0x02" }));
      expect(isStoreError(twice, "INVALID_STATE")).to.equal(true);
      expect((await store.getSponsorship(r.record.id))?.userOpHash).to.equal(HASH_A);

      const r2 = await store.reserveSponsorship(op(ids, { mode: "sponsor", nonce: 1n }));
      if (!r2.ok) throw new Error("expected ok");
      await store.releaseSponsorship(r2.record.id);
      const released = await rejection(store.markSigned(r2.record.id, { userOpHash: HASH_B, paymasterAndData: "0x" }));
      expect(isStoreError(released, "INVALID_STATE")).to.equal(true);
      expect((await store.getSponsorship(r2.record.id))?.status).to.equal("released");
      expect(isStoreError(await rejection(store.markSigned("nope", { userOpHash: HASH_B, paymasterAndData: "0x" })), "NOT_FOUND")).to.equal(true);
      const badHash = await rejection(store.markSigned(r2.record.id, { userOpHash: "0x12", paymasterAndData: "0x" }));
      expect(isStoreError(badHash, "INVALID_INPUT")).to.equal(true);
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
      const raw = new DatabaseSync(file);
      try {
        expect(raw.prepare("SELECT COUNT(*) AS n FROM sponsorships").get()).to.deep.equal({ n: 2 });
      } finally {
        raw.close();
      }

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
      expect((await store.getSponsorship(second.record.id))?.status).to.equal("reserved");
      expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(700n);

      // a signed one is replaced the same way
      await store.markSigned(second.record.id, { userOpHash: HASH_A, paymasterAndData: "0x01" });
      const third = await store.reserveSponsorship(op(ids, { nonce: 7n, maxCostWei: 300n }));
      if (!third.ok) throw new Error("expected ok");
      expect(third.replaced).to.equal(second.record.id);
      expect((await store.getSponsorship(second.record.id))?.status).to.equal("released");
      expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(300n);

      // too much even after giving the earlier one back: nothing changes, the earlier one stays active
      const fourth = await store.reserveSponsorship(op(ids, { nonce: 7n, maxCostWei: 1001n }));
      expect(fourth).to.deep.equal({ ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei: 1000n, requiredWei: 1001n });
      expect((await store.getSponsorship(third.record.id))?.status).to.equal("reserved");
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
      expect([otherNonce, otherEp, otherNet].map((r) => r.ok && r.replaced)).to.deep.equal([null, null, null]);
      expect((await store.getSponsorship(fifth.record.id))?.status).to.equal("reserved");
    });

    it("release frees the tank exactly once", async () => {
      const ids = await owner();
      await store.creditGasTank(NET, SENDER, 1000n, "c1");
      const a = await store.reserveSponsorship(op(ids, { nonce: 1n, maxCostWei: 400n }));
      const b = await store.reserveSponsorship(op(ids, { nonce: 2n, maxCostWei: 300n }));
      if (!a.ok || !b.ok) throw new Error("expected ok");
      await store.markSigned(b.record.id, { userOpHash: HASH_B, paymasterAndData: "0x" });
      expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(700n);
      await store.releaseSponsorship(a.record.id);
      expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(300n);
      await store.releaseSponsorship(a.record.id);
      await store.releaseSponsorship(a.record.id);
      expect((await store.getGasTank(NET, SENDER)).reservedWei).to.equal(300n);
      await store.releaseSponsorship(b.record.id); // signed ones can be released (expired unused)
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
      const a = await store.reserveSponsorship(op(ids, { mode: "sponsor" }));
      if (!a.ok) throw new Error("expected ok");
      await store.markSigned(a.record.id, { userOpHash: HASH_A, paymasterAndData: "0x" });
      const b = await store.reserveSponsorship(op(ids, { mode: "sponsor" }));
      if (!b.ok) throw new Error("expected ok");
      await store.markSigned(b.record.id, { userOpHash: HASH_A, paymasterAndData: "0x" });
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

    it("two store instances on one file never over-reserve one tank", async () => {
      const ids = await owner();
      await store.creditGasTank(NET, SENDER, 300n, "c1"); // exactly 3 reservations of 100
      const second = open();
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

    it("four threads (800 attempts) reserving concurrently against one tank never over-reserve", async () => {
      const ids = await owner();
      await store.creditGasTank(NET, SENDER, 10_000n, "c1"); // exactly 100 reservations of 100
      const workerFile = path.join(dir, "worker.ts");
      const sqliteModule = new URL("../src/store/sqlite.ts", import.meta.url).href;
      fs.writeFileSync(
        workerFile,
        `import { parentPort, workerData } from "node:worker_threads";
         const { openSqliteStore } = await import(${JSON.stringify(sqliteModule)});
         const store = openSqliteStore(workerData.file);
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
      const workers = [0, 1, 2, 3].map(
        (w) => new Worker(workerFile, { workerData: { file, gate, base: w * 1000, op: base } }),
      );
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
      await Promise.all(ready); // every worker has opened the file and waits at the gate
      Atomics.store(new Int32Array(gate), 0, 1);
      Atomics.notify(new Int32Array(gate), 0);
      const oks = await Promise.all(done);
      expect(oks.reduce((a, b) => a + b, 0)).to.equal(100);
      expect(await store.getGasTank(NET, SENDER)).to.deep.include({ balanceWei: 10_000n, reservedWei: 10_000n });
      const raw = new DatabaseSync(file);
      try {
        expect(raw.prepare("SELECT COUNT(*) AS n FROM sponsorships WHERE status = 'reserved'").get()).to.deep.equal({
          n: 100,
        });
      } finally {
        raw.close();
      }
    });
  });
});
