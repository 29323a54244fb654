// Webhooks as the operator administers them: `paymaster webhook …` (a real child process on SQLite) and the
// admin API's routes call the same operations (src/admin/webhooks.ts); the secret is shown once, never listed
// nor audited; dead letters are listed and replayed.
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { openStore } from "../src/store/index.ts";
import { ADMIN_ROUTES } from "../src/adminApi/routes.ts";
import { runCli } from "./helpers/cli.ts";

describe("paymaster webhook … and the admin API's webhook routes", function () {
  this.timeout(60_000);
  const dir = mkdtempSync(path.join(tmpdir(), "paymaster-webhook-cli-"));
  const database = path.join(dir, "db.sqlite");
  const cli = (...args: string[]) => runCli(["--database", database, ...args]);

  it("creates (secret once), lists without secrets, deletes, lists dead letters, replays, audits without the secret", async () => {
    const store = await openStore({ databasePath: database });
    const project = await store.createProject("hooks");
    await store.close();

    const created = await cli("webhook", "create", "--project", project.id, "--url", "https://receiver.example/hook", "--event", "sponsorship.settled", "--json");
    expect(created.code, created.stderr).to.equal(0);
    expect(created.json.secret).to.match(/^whsec_/);
    expect(created.json.endpoint.events).to.deep.equal(["sponsorship.settled"]);
    const text = await cli("webhook", "create", "--project", project.id, "--url", "https://receiver.example/approve", "--approval", "--default", "allow");
    expect(text.code, text.stderr).to.equal(0);
    expect(text.stdout).to.match(/The secret is shown once/);

    const listed = await cli("webhook", "list", "--project", project.id, "--json");
    expect(listed.json).to.have.length(2);
    expect(JSON.stringify(listed.json)).to.not.include("whsec_");

    const dead = await cli("webhook", "deliveries", "--status", "dead", "--json");
    expect(dead.code, dead.stderr).to.equal(0);
    expect(dead.json).to.deep.equal([]);
    const unknown = await cli("webhook", "replay", "evt_nope");
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.match(/webhook event evt_nope not found/);
    const badUrl = await cli("webhook", "create", "--project", project.id, "--url", "ftp://x");
    expect(badUrl.code).to.equal(2);
    expect(badUrl.stderr).to.match(/url must be an absolute http:\/\/ or https:\/\/ URL/);
    const badStatus = await cli("webhook", "deliveries", "--status", "lost");
    expect(badStatus.code).to.equal(2);

    const removed = await cli("webhook", "delete", created.json.endpoint.id, "--json");
    expect(removed.code, removed.stderr).to.equal(0);
    expect((await cli("webhook", "list", "--project", project.id, "--json")).json).to.have.length(1);

    const audit = await cli("audit", "--json");
    expect(audit.json.map((a: { action: string }) => a.action)).to.include.members(["webhook.create", "webhook.delete"]);
    expect(JSON.stringify(audit.json)).to.not.include("whsec_");
  });

  it("the admin API serves the same operations", () => {
    const paths = ADMIN_ROUTES.map((r) => `${r.method.toUpperCase()} ${r.path}`);
    expect(paths).to.include.members([
      "GET /projects/:id/webhooks",
      "POST /projects/:id/webhooks",
      "POST /webhooks/:id/delete",
      "GET /webhook-deliveries",
      "POST /webhook-deliveries/:id/replay",
    ]);
  });
});
