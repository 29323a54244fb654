/**
 * Pending key applications expire (issue 20, finding 4), on SQLite and PostgreSQL: one older than
 * `applicationExpiryDays` is rejected by "expiry" (with a reason saying so) when the form is next used or the
 * operator lists applications, so undecided ones cannot hold the pending limit for good; younger ones stay.
 */
import { expect } from "chai";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { listApplications } from "../src/admin/applications.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { startTestService, type TestService } from "./helpers/rpcService.ts";

const APPLICATION = { contact: "dev@team.example", project: "Team dapp", networks: ["local"], use: "Sponsor mints" };
const DAY = 86_400;

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`pending key applications expire (${backend})`, function () {
    this.timeout(60_000);
    let database: TestDatabase | undefined;
    let t: TestService;

    before(async () => {
      if (backend === "PostgreSQL") database = await createTestDatabase("paymaster_app_expiry");
      t = await startTestService(database ? { databaseUrl: database.url } : {});
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    /** Moves an application's creation `days` into the past, straight in the database (as time passing would). */
    async function age(id: string, days: number): Promise<void> {
      const sql = "UPDATE key_applications SET created_at = created_at - ";
      if (database) {
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        await client.query(`${sql}$1 WHERE id = $2`, [days * DAY, id]);
        await client.end();
      } else {
        const db = new DatabaseSync(t.service.config.databasePath);
        db.prepare(`${sql}? WHERE id = ?`).run(days * DAY, id);
        db.close();
      }
    }

    const submit = async () => {
      const response = await fetch(`${t.url}/api/v1/applications`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(APPLICATION) });
      expect(response.status).to.equal(202);
      return ((await response.json()) as { id: string }).id;
    };

    it("the form's next use rejects the stale ones by expiry (default 14 days) and keeps the young ones", async () => {
      const stale = await submit();
      const young = await submit();
      await age(stale, 15);
      await age(young, 13);
      const fresh = await submit();
      const after = await t.store.getKeyApplication(stale);
      expect(after).to.deep.include({ status: "rejected", decidedBy: "expiry", reason: "expired: not decided within 14 day(s)" });
      expect((await t.store.getKeyApplication(young))?.status).to.equal("pending");
      expect((await t.store.listKeyApplications("pending")).map((a) => a.id)).to.deep.equal([young, fresh]);
      expect(await t.store.countKeyApplications("pending")).to.equal(2);
    });

    it("the operator's list applies the configured expiry too (applicationExpiryDays)", async () => {
      const id = await submit();
      await age(id, 3);
      const ctx = { store: t.store, networks: ["local"], actor: "cli:test", role: "admin" as const };
      expect((await listApplications({ ...ctx, applicationExpiryDays: 7 }, { status: "pending" })).map((a) => a.id)).to.include(id);
      const pending = await listApplications({ ...ctx, applicationExpiryDays: 2 }, { status: "pending" });
      expect(pending.map((a) => a.id)).to.not.include(id);
      expect((await t.store.getKeyApplication(id))?.reason).to.equal("expired: not decided within 2 day(s)");
    });
  });
}
