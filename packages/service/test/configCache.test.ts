// The config version (store migration 10: triggers bump it on every change of projects, API keys, strategies
// and webhook endpoints; 15 billing plans; 18 tokens) and the request path's lookups kept per version (src/store/configCache.ts), on SQLite
// and PostgreSQL: two store instances on one database stand for two replicas (or the CLI next to the service).
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Address } from "@paymaster/shared";
import { createConfigCache } from "../src/store/configCache.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { Store } from "../src/store/types.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";

const SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as Address;
const USDC = { network: "local", symbol: "USDC", address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as Address, decimals: 6, priceSource: { type: "fixed", usd: "1.00" }, markupBps: 0, enabled: true } as const;

/** `store` with a count of the lookups that reach it (the database behind it is real). */
function counting(store: Store): { store: Store; reads: () => number } {
  let reads = 0;
  const counted = new Set(["findApiKeyWithProject", "getStrategyByCode", "getApprovalEndpoint", "findToken", "listTokens"]);
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (counted.has(String(name))) reads++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, reads: () => reads };
}

for (const backend of ["sqlite", "postgres"] as const) {
  describe(`config version and the per-version lookups (${backend})`, function () {
    this.timeout(30_000);
    let replicaA: Store;
    let replicaB: Store;
    let database: TestDatabase | undefined;

    beforeEach(async () => {
      if (backend === "sqlite") {
        const file = path.join(mkdtempSync(path.join(tmpdir(), "config-cache-")), "paymaster.sqlite");
        replicaA = await openSqliteStore(file);
        replicaB = await openSqliteStore(file);
      } else {
        database = await createTestDatabase("paymaster_config");
        replicaA = await openPostgresStore(database.url);
        replicaB = await openPostgresStore(database.url);
      }
    });
    afterEach(async () => {
      await replicaA.close();
      await replicaB.close();
      await database?.drop();
      database = undefined;
    });

    it("every change of a project, key, strategy, webhook endpoint or token bumps it; sponsorships, usage and tanks do not", async () => {
      const bumps = async (change: () => Promise<unknown>): Promise<number> => {
        const before = await replicaA.configVersion();
        await change();
        return (await replicaA.configVersion()) - before;
      };
      let projectId = "";
      expect(await bumps(async () => (projectId = (await replicaB.createProject("p")).id))).to.be.greaterThan(0);
      let keyId = "";
      expect(await bumps(async () => (keyId = (await replicaB.createApiKey(projectId)).apiKey.id))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.setApiKeyAccess(keyId, { allowedOrigins: ["https://app.example"], allowedIps: null }))).to.be.greaterThan(0);
      let strategyId = "";
      expect(await bumps(async () => (strategyId = (await replicaB.createStrategy({ projectId, code: "S1", name: "s" })).id))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.setStrategyStatus(strategyId, "disabled"))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.setStrategyRules(strategyId, { senderDenylist: [SENDER] }))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.updateStrategy(strategyId, { name: "renamed" }))).to.be.greaterThan(0);
      let endpointId = "";
      expect(
        await bumps(async () => (endpointId = (await replicaB.createWebhookEndpoint({ projectId, kind: "approval", url: "https://hooks.example/a", secret: "s".repeat(32) })).id)),
      ).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.deleteWebhookEndpoint(endpointId))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.revokeApiKey(keyId))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.setProjectStatus(projectId, "disabled"))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.upsertToken(USDC))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.upsertToken({ ...USDC, address: USDC.address.toLowerCase() as Address })), "the same token again (a replica's start): nothing written").to.equal(0);
      expect(await bumps(() => replicaB.upsertToken({ ...USDC, enabled: false }))).to.be.greaterThan(0);
      expect(await bumps(() => replicaB.upsertToken({ ...USDC, enabled: false, priceSource: { type: "fixed", usd: "1.01" } }))).to.be.greaterThan(0);

      // The request path's own writes leave it alone (else the cache would start over on every sponsorship).
      await replicaB.setProjectStatus(projectId, "active");
      const key2 = await replicaB.createApiKey(projectId);
      await replicaB.setStrategyStatus(strategyId, "enabled");
      expect(
        await bumps(async () => {
          await replicaB.creditGasTank("local", SENDER, 10n ** 18n, "test");
          const reserved = await replicaB.reserveSponsorship(
            sponsorshipInput({ projectId, apiKeyId: key2.apiKey.id }, { sender: SENDER, nonce: 1n, mode: "user", strategyId: null, maxCostWei: 10n ** 15n }),
          );
          expect(reserved.ok).to.equal(true);
          if (reserved.ok) await replicaB.releaseSponsorship(reserved.record.id);
        }),
      ).to.equal(0);
    });

    it("a replica reads each lookup once per version, and sees another replica's revocation, pause or new key on its next request", async () => {
      const project = await replicaB.createProject("p");
      const key = await replicaB.createApiKey(project.id);
      const strategy = await replicaB.createStrategy({ projectId: project.id, code: "S1", name: "s" });
      const { store, reads } = counting(replicaA);
      const cache = createConfigCache(store);

      // Unchanged version: the second request reads nothing but the version.
      for (let i = 0; i < 2; i++) {
        const lookups = await cache.current();
        expect((await lookups.apiKey(key.plaintext))?.apiKey.status).to.equal("active");
        expect((await lookups.strategyByCode("S1"))?.status).to.equal("enabled");
        expect(await lookups.approvalEndpoint(project.id)).to.equal(undefined);
        expect(await lookups.apiKey("pk_unknown_key")).to.equal(undefined);
        expect(await lookups.token("local", "USDC")).to.equal(undefined);
      }
      expect(reads(), "5 lookups read once, then served under the same version").to.equal(5);

      // Cached values are frozen: one request cannot change what the next one reads.
      const cached = (await (await cache.current()).strategyByCode("S1"))!;
      expect(() => {
        (cached as { status: string }).status = "disabled";
      }).to.throw(TypeError);

      await replicaB.revokeApiKey(key.apiKey.id);
      expect((await (await cache.current()).apiKey(key.plaintext))?.apiKey.status).to.equal("revoked");
      await replicaB.setStrategyStatus(strategy.id, "disabled");
      expect((await (await cache.current()).strategyByCode("S1"))?.status).to.equal("disabled");
      await replicaB.setProjectStatus(project.id, "disabled");
      const other = await replicaB.createApiKey(project.id);
      const lookups = await cache.current();
      expect((await lookups.apiKey(other.plaintext))?.projectStatus).to.equal("disabled");
      expect((await lookups.apiKey(key.plaintext))?.projectStatus).to.equal("disabled");
    });

    it("a token is looked up once per version, by symbol in any ASCII case or address; another replica's change is seen on the next request", async () => {
      const { store, reads } = counting(replicaA);
      const cache = createConfigCache(store);
      await replicaB.upsertToken(USDC);
      for (const asked of ["USDC", "usdc", "uSdC"]) expect((await (await cache.current()).token("local", asked))?.address).to.equal(USDC.address);
      expect(await (await cache.current()).token("other", "USDC"), "another network's").to.equal(undefined);
      expect(reads(), "one read for the symbol in every case, one for the other network").to.equal(2);
      expect((await (await cache.current()).token("local", USDC.address.toLowerCase()))?.symbol).to.equal("USDC");
      expect((await (await cache.current()).tokens("local")).map((t) => t.symbol)).to.deep.equal(["USDC"]);
      await replicaB.upsertToken({ ...USDC, enabled: false });
      expect((await (await cache.current()).token("local", "usdc"))?.enabled, "disabled elsewhere: seen at once").to.equal(false);
      expect((await (await cache.current()).tokens("local")).map((t) => t.enabled), "and in the list").to.deep.equal([false]);
    });
  });
}
