// The store methods operations use, on SQLite and on PostgreSQL: strategies listed, sponsorships counted by
// status, gas tanks added up, outstanding maximum costs per EntryPoint and mode, and leadership (a PostgreSQL
// advisory lock on a connection of its own: one holder at a time, freed by release or by the connection dying).
import { expect } from "chai";
import pg from "pg";
import type { Address } from "@paymaster/shared";
import { openPostgresStore } from "../src/store/postgres.ts";
import type { NewSponsorship, Store } from "../src/store/types.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";
import { storeBackends } from "./helpers/storeBackends.ts";

const EP = "0x0000000071727De22E5E9d8BAf0edAc6f37da032" as Address;
const OTHER_EP = "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789" as Address;
const SENDER = "0x1111111111111111111111111111111111111111" as Address;

const backends = storeBackends("storeops");

for (const backend of backends) {
  describe(`store operations methods (${backend.name})`, () => {
    let store: Store;
    let url: string | undefined;
    let close: () => Promise<void>;
    let ids: { projectId: string; apiKeyId: string };

    beforeEach(async () => {
      ({ store, url, close } = await backend.open());
      const project = await store.createProject("ops");
      const { apiKey } = await store.createApiKey(project.id);
      ids = { projectId: project.id, apiKeyId: apiKey.id };
    });
    afterEach(async () => {
      await close();
    });

    const op = (over: Partial<NewSponsorship>): NewSponsorship => sponsorshipInput(ids, { entryPoint: EP, sender: SENDER, ...over });

    it("adds up outstanding maximum costs exactly across the 9-digit parts the database sums", async () => {
      // SQLite's integers are 64-bit: the database sums 9-digit parts; values on every part boundary.
      const edges = [1n, 999_999_999n, 10n ** 9n, 10n ** 18n - 1n, 10n ** 18n, 123_456_789_012_345_678_901_234_567n];
      for (const [i, maxCostWei] of edges.entries()) {
        const edge = await store.reserveSponsorship(op({ nonce: 100n + BigInt(i), mode: "erc20", maxCostWei }));
        if (!edge.ok) throw new Error("reservation refused");
      }
      expect(await store.outstandingMaxCost("local", EP, ["erc20"])).to.equal(edges.reduce((a, b) => a + b, 0n));
      expect(await store.outstandingMaxCost("local", EP, ["sponsor"])).to.equal(0n);
    });

    it("lists strategies, counts sponsorships by status, adds up gas tanks and outstanding maximum costs", async () => {
      await store.createStrategy({ projectId: ids.projectId, code: "A", name: "a" });
      await store.createStrategy({ projectId: ids.projectId, code: "B", name: "b", rules: { caps: { daily: { maxOps: 3 } } } });
      expect((await store.listStrategies()).map((s) => s.code)).to.deep.equal(["A", "B"]);

      const big = 10n ** 30n; // beyond 64 bits: summed exactly
      await store.creditGasTank("local", SENDER, big, "r1");
      await store.creditGasTank("local", "0x2222222222222222222222222222222222222222", 5n, "r2");
      const signed = await store.reserveSponsorship(op({ nonce: 1n, maxCostWei: big }));
      const other = await store.reserveSponsorship(op({ nonce: 2n, maxCostWei: 7n }));
      await store.reserveSponsorship(op({ nonce: 3n, mode: "erc20", maxCostWei: 1000n }));
      await store.reserveSponsorship(op({ nonce: 4n, entryPoint: OTHER_EP, version: "v0.6", maxCostWei: 1000n }));
      const user = await store.reserveSponsorship(op({ nonce: 5n, mode: "user", maxCostWei: 11n }));
      const released = await store.reserveSponsorship(op({ nonce: 6n, maxCostWei: 5000n }));
      if (!signed.ok || !other.ok || !user.ok || !released.ok) throw new Error("reservation refused");
      await store.releaseSponsorship(released.record.id);

      expect(await store.outstandingMaxCost("local", EP, ["sponsor", "user"])).to.equal(big + 7n + 11n);
      expect(await store.outstandingMaxCost("local", EP, ["erc20"])).to.equal(1000n);
      expect(await store.outstandingMaxCost("other", EP, ["sponsor"])).to.equal(0n);

      const counts = (await store.sponsorshipCounts()).map((c) => `${c.network} ${c.version} ${c.mode} ${c.status} ${c.count}`).sort();
      expect(counts).to.deep.equal([
        "local v0.6 sponsor signed 1",
        "local v0.7 erc20 signed 1",
        "local v0.7 sponsor released 1",
        "local v0.7 sponsor signed 2",
        "local v0.7 user signed 1",
      ]);
      expect(await store.gasTankTotals()).to.deep.equal([{ network: "local", balanceWei: big + 5n, reservedWei: 11n, tanks: 2 }]);
    });

    it("leadership: one holder at a time; release frees it", async () => {
      const first = await store.tryLeadership("settlement:local");
      expect(first, "the first asker leads").to.not.equal(undefined);
      if (backend.name === "SQLite") {
        expect(await store.tryLeadership("settlement:local"), "SQLite: one process, always the leader").to.not.equal(undefined);
        return;
      }
      const other = await openPostgresStore(url!);
      try {
        expect(await other.tryLeadership("settlement:local"), "held by the first").to.equal(undefined);
        const elsewhere = await other.tryLeadership("settlement:base-sepolia");
        expect(elsewhere, "another name is free").to.not.equal(undefined);
        await elsewhere!.release();
        await first!.release();
        const second = await other.tryLeadership("settlement:local");
        expect(second, "free after release").to.not.equal(undefined);

        // The holder's connection dies (as with a killed process or a dropped link): the lock goes with it,
        // and the holder learns it lost.
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'paymaster-leader' AND datname = current_database()");
        await admin.end();
        const lost = await Promise.race([second!.lost.then(() => "lost"), new Promise((resolve) => setTimeout(() => resolve("still leading"), 5_000))]);
        expect(lost).to.equal("lost");
        const third = await store.tryLeadership("settlement:local");
        expect(third, "another process can lead now").to.not.equal(undefined);
        await third!.release();
      } finally {
        await other.close();
      }
    });
  });
}
