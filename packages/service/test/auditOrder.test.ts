// Issue 46, item 9: GET /admin/v1/audit is newest first, the docs say, but rows written in the same second came
// back in the order of their random ids. On both databases, over real HTTP on 127.0.0.1: many rows written in one
// second come back exactly in the reverse of their writing; and rows written before the upgrade keep their order.
import { expect } from "chai";
import { listen, type RunningServer } from "../src/app.ts";
import { createAdminApp } from "../src/adminApi/app.ts";
import { adminApiOptionsFromEnv } from "../src/adminApi/options.ts";
import type { AdminContext } from "../src/admin/context.ts";
import { createProject } from "../src/admin/projects.ts";
import { createLogger } from "../src/log.ts";
import { storeBackends, type OpenedStore } from "./helpers/storeBackends.ts";

const TOKEN = "audit-order-viewer-token-0123456789abcdef";
/** Rows written back to back: dozens fit in one second on either database. */
const ROWS = 40;

for (const backend of storeBackends("audit_order")) {
  describe(`the audit log, newest first (${backend.name})`, function () {
    this.timeout(60_000);
    let opened: OpenedStore;
    let server: RunningServer;

    before(async () => {
      opened = await backend.open();
      const options = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `watch:viewer=${TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })!;
      server = await listen(createAdminApp({ store: opened.store, networks: ["local"], logger: createLogger("silent") }, options), options);
    });
    after(async () => {
      await server?.close();
      await opened?.close();
    });

    const listed = async (query: string) => {
      const answer = await fetch(`${server.url}/admin/v1/audit?${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(answer.status).to.equal(200);
      return (await answer.json()) as { at: number; target: string | null; after: { name?: string } | null }[];
    };

    it(`${ROWS} rows written in one second come back in the reverse of their writing`, async () => {
      const ctx: AdminContext = { store: opened.store, networks: ["local"], actor: "cli:test", role: "admin" };
      const written: string[] = [];
      for (let i = 0; i < ROWS; i++) written.push((await createProject(ctx, { name: `project ${i}` })).id);
      const rows = await listed(`action=project.create&limit=${ROWS}`);
      const perSecond = new Map<number, number>();
      for (const row of rows) perSecond.set(row.at, (perSecond.get(row.at) ?? 0) + 1);
      expect(Math.max(...perSecond.values()), "most rows share a second (else the test shows nothing)").to.be.at.least(ROWS / 2);
      expect(rows.map((r) => r.target)).to.deep.equal([...written].reverse());
    });
  });

  describe(`the audit log's order after the upgrade to migration 16 (${backend.name})`, function () {
    this.timeout(60_000);
    it("rows written in one second before it keep the order they were written in; new rows come first", async () => {
      const opened = await backend.openUpgradedFrom(15, async (sql) => {
        for (let i = 0; i < 12; i++) await sql(`INSERT INTO audit_log (id, at, actor, role, action, target, before, after) VALUES ('${(15 - i).toString(16).padStart(2, "0")}-old', 1000, 'cli:alice', 'admin', 'project.create', 'old ${i}', NULL, NULL)`);
      });
      try {
        await createProject({ store: opened.store, networks: ["local"], actor: "cli:test", role: "admin" }, { name: "after the upgrade" });
        const rows = await opened.store.listAudit({ action: "project.create", limit: 100 });
        expect(rows.map((r) => r.target).slice(1)).to.deep.equal(Array.from({ length: 12 }, (_, i) => `old ${11 - i}`));
        expect((rows[0]!.after as { name: string }).name).to.equal("after the upgrade");
      } finally {
        await opened.close();
      }
    });
  });
}
