// Pending reservations (the pipeline reserves while the final simulation runs): recorded "reserved" with no
// webhook event; confirmSponsorship makes them "signed" with their event; withdrawSponsorship deletes them and
// frees exactly what they held. On SQLite and PostgreSQL.
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Address } from "@paymaster/shared";
import { capChecks } from "../src/policy/rules.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { NewSponsorship, Store, Strategy } from "../src/store/types.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";

const SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as Address;
const NOW = Math.floor(Date.now() / 1000);

for (const backend of ["sqlite", "postgres"] as const) {
  describe(`pending reservations (${backend})`, function () {
    this.timeout(30_000);
    let store: Store;
    let database: TestDatabase | undefined;
    let projectId: string;
    let apiKeyId: string;
    let strategy: Strategy;

    beforeEach(async () => {
      if (backend === "sqlite") {
        store = await openSqliteStore(path.join(mkdtempSync(path.join(tmpdir(), "pending-")), "paymaster.sqlite"));
      } else {
        database = await createTestDatabase("paymaster_pending");
        store = await openPostgresStore(database.url);
      }
      projectId = (await store.createProject("p")).id;
      apiKeyId = (await store.createApiKey(projectId)).apiKey.id;
      strategy = await store.createStrategy({ projectId, code: "S", name: "s", rules: { caps: { global: { maxOps: 2 }, perSender: { maxWei: 3_000_000_000_000_000n } } } });
      await store.createWebhookEndpoint({ projectId, kind: "events", url: "https://hooks.example/e", events: ["sponsorship.signed", "sponsorship.released"], secret: "s".repeat(32) });
      await store.creditGasTank("local", SENDER, 10n ** 16n, "test");
    });
    afterEach(async () => {
      await store.close();
      await database?.drop();
      database = undefined;
    });

    const caps = () => capChecks(strategy.rules, { now: NOW, sender: SENDER });
    const op = (nonce: bigint, mode: "sponsor" | "user", pending: boolean): NewSponsorship =>
      sponsorshipInput(
        { projectId, apiKeyId },
        { sender: SENDER, nonce, mode, strategyId: mode === "sponsor" ? strategy.id : null, maxCostWei: 10n ** 15n, maxCostUsdMicros: 3_000_000n, userOpHash: `0x${nonce.toString(16).padStart(64, "0")}`, pending },
      );
    /** What the caps and the tank hold now. */
    const held = async () => {
      const [usage] = await Promise.all(caps().map((c) => store.getUsage(strategy.id, c.scope, c.key)));
      const perSender = await store.getUsage(strategy.id, caps()[1]!.scope, caps()[1]!.key);
      const tank = await store.getGasTank("local", SENDER);
      return { ops: usage!.ops, senderWei: perSender.reservedWei, tankWei: tank.reservedWei };
    };
    const events = async () => (await store.listWebhookDeliveries({ projectId })).map((d) => d.type).sort();

    it("a pending reservation holds its cost with no event; confirmed, it is signed with its event, once", async () => {
      const reserved = await store.reserveSponsorship(op(1n, "sponsor", true), caps());
      if (!reserved.ok) throw new Error(reserved.reason);
      expect((await store.getSponsorship(reserved.record.id))?.status).to.equal("reserved");
      expect(await held()).to.deep.equal({ ops: 1, senderWei: 10n ** 15n, tankWei: 0n });
      expect(await events()).to.deep.equal([]);
      expect(await store.confirmSponsorship(reserved.record.id)).to.equal(true);
      expect((await store.getSponsorship(reserved.record.id))?.status).to.equal("signed");
      expect(await events()).to.deep.equal(["sponsorship.signed"]);
      expect(await store.confirmSponsorship(reserved.record.id), "already signed").to.equal(false);
      expect(await events()).to.deep.equal(["sponsorship.signed"]);
    });

    it("withdrawn, it leaves no record and frees exactly what it held (caps and tank); a signed one cannot be", async () => {
      const before = await held();
      for (const mode of ["sponsor", "user"] as const) {
        const reserved = await store.reserveSponsorship(op(mode === "sponsor" ? 2n : 3n, mode, true), mode === "sponsor" ? caps() : []);
        if (!reserved.ok) throw new Error(reserved.reason);
        expect(await held()).to.not.deep.equal(before);
        expect(await store.withdrawSponsorship(reserved.record.id)).to.equal(true);
        expect(await store.getSponsorship(reserved.record.id)).to.equal(undefined);
        expect(await held()).to.deep.equal(before);
        expect(await store.withdrawSponsorship(reserved.record.id), "gone").to.equal(false);
      }
      // The global cap of 2 ops still has room for two: the withdrawn ones count nowhere.
      for (const nonce of [4n, 5n]) {
        const r = await store.reserveSponsorship(op(nonce, "sponsor", false), caps());
        expect(r.ok, `nonce ${nonce}`).to.equal(true);
        if (r.ok) expect(await store.withdrawSponsorship(r.record.id), "a signed reservation is not withdrawn").to.equal(false);
      }
      expect(await events()).to.deep.equal(["sponsorship.signed", "sponsorship.signed"]);
    });

    it("a pending reservation replaced by another request for the same op is not confirmed", async () => {
      const first = await store.reserveSponsorship(op(7n, "sponsor", true), caps());
      const second = await store.reserveSponsorship(op(7n, "sponsor", true), caps());
      if (!first.ok || !second.ok) throw new Error("refused");
      expect(second.replaced).to.equal(first.record.id);
      expect(await store.confirmSponsorship(first.record.id)).to.equal(false);
      expect(await store.confirmSponsorship(second.record.id)).to.equal(true);
      expect(await held()).to.deep.equal({ ops: 1, senderWei: 10n ** 15n, tankWei: 0n });
      // The replaced pending one was never signed: no event for it.
      expect(await events()).to.deep.equal(["sponsorship.signed"]);
    });
  });
}
