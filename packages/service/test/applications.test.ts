/**
 * The key application process end to end: a public POST (bounded, rate-limited), the operator's
 * `key applications|approve|reject`, and the applicant's claim — the key handed over exactly once, also under
 * concurrent claims, on SQLite (over HTTP) and PostgreSQL (two store instances).
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sha256Hex } from "../src/store/apiKeys.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { createTestDatabase, runCliInProcess } from "./helpers/cli.ts";
import { startTestService, type TestService } from "./helpers/rpcService.ts";

const APPLICATION = { contact: "dev@team.example", project: "Team dapp", networks: ["base-sepolia"], use: "Sponsor mints for new users" };

async function post(url: string, body: unknown, raw?: string) {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: raw ?? JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, json: text === "" ? undefined : JSON.parse(text), headers: response.headers };
}

describe("key applications", function () {
  this.timeout(60_000);
  let t: TestService;
  let dir: string;
  const cli = (...args: string[]) => runCliInProcess(["--config", path.join(dir, "paymaster.json"), ...args, "--json"]);

  before(async () => {
    t = await startTestService();
    dir = mkdtempSync(path.join(tmpdir(), "pm-applications-"));
    const network = (name: string) => ({
      name,
      rpcUrl: "http://127.0.0.1:1",
      entryPoints: { "v0.7": { verifyingPaymaster: "0x1111111111111111111111111111111111111111", erc20Paymaster: "0x2222222222222222222222222222222222222222" } },
      nativeUsdPrice: { type: "fixed", usd: "3000" },
    });
    writeFileSync(path.join(dir, "paymaster.json"), JSON.stringify({ databasePath: t.service.config.databasePath, networks: [network("local"), network("base-sepolia")] }));
  });
  after(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("apply -> approve -> claim once (concurrent claims: one key); reject; bad input named", async () => {
    const submitted = await post(`${t.url}/api/v1/applications`, APPLICATION);
    expect(submitted.status).to.equal(202);
    expect(submitted.json.status).to.equal("pending");
    const id = submitted.json.id as string;

    const bad = await post(`${t.url}/api/v1/applications`, { ...APPLICATION, networks: ["mars"] });
    expect(bad.status).to.equal(400);
    expect(bad.json.error.message).to.match(/^networks\[0\]: not a network of this service/);
    const big = await post(`${t.url}/api/v1/applications`, { ...APPLICATION, use: "x".repeat(20_000) });
    expect(big.status).to.equal(413);

    // The operator sees it; no project or key exists yet.
    const pending = (await cli("key", "applications")).json;
    expect(pending.map((a: { id: string }) => a.id)).to.deep.equal([id]);
    expect(pending[0]).to.include({ projectName: "Team dapp", contact: "dev@team.example", status: "pending", projectId: null });
    expect((await post(`${t.url}/api/v1/applications/claim`, { claimToken: "pmclaim_guess" })).status).to.equal(404);

    const approved = await cli("key", "approve", id);
    expect(approved.code, approved.stderr).to.equal(0);
    const { claimToken, projectId } = approved.json;
    expect(claimToken).to.match(/^pmclaim_/);
    expect((await t.store.getProject(projectId))?.name).to.equal("Team dapp");
    expect(await t.store.listApiKeys(projectId)).to.deep.equal([]);
    const again = await cli("key", "approve", id);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/is approved, not pending/);

    // Concurrent claims: exactly one key.
    const claims = await Promise.all([1, 2, 3, 4].map(() => post(`${t.url}/api/v1/applications/claim`, { claimToken })));
    const won = claims.filter((c) => c.status === 200);
    expect(won).to.have.length(1);
    expect(claims.filter((c) => c.status === 404)).to.have.length(3);
    const key = won[0]!.json;
    expect(key).to.include({ projectId });
    expect(key.apiKey).to.match(/^pm_/);
    expect((await t.call("pm_supportEntrypoint", [], { apiKey: key.apiKey })).status).to.equal(200);
    expect((await t.store.listApiKeys(projectId)).map((k) => k.id)).to.deep.equal([key.apiKeyId]);
    expect((await cli("key", "applications", "--status", "claimed")).json[0]).to.include({ id, status: "claimed", apiKeyId: key.apiKeyId });

    // Reject.
    const other = (await post(`${t.url}/api/v1/applications`, { ...APPLICATION, project: "Spam" })).json.id;
    const rejected = await cli("key", "reject", other, "--reason", "not a real team");
    expect(rejected.json).to.include({ status: "rejected", reason: "not a real team" });
    expect((await cli("key", "approve", other)).stderr).to.match(/is rejected, not pending/);
    const noReason = await runCliInProcess(["--config", path.join(dir, "paymaster.json"), "key", "reject", other]);
    expect(noReason.code).to.equal(2);

    const audit = (await cli("audit")).json.map((e: { action: string }) => e.action);
    expect(audit).to.include.members(["application.approve", "application.claim", "application.reject"]);
    expect(JSON.stringify((await cli("audit")).json)).not.to.contain(key.apiKey).and.not.to.contain(claimToken);
  });

  it("is rate-limited per client address (a burst of 5, then one every 12 s)", async () => {
    const fresh = await startTestService(); // its own buckets
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await post(`${fresh.url}/api/v1/applications`, { ...APPLICATION, contact: `c${i}@x.io` })).status);
      expect(statuses).to.deep.equal([202, 202, 202, 202, 202]);
      const limited = await post(`${fresh.url}/api/v1/applications`, APPLICATION);
      expect(limited.status).to.equal(429);
      expect(limited.json.error.code).to.equal("RATE_LIMITED");
      expect(Number(limited.headers.get("retry-after"))).to.be.at.least(1);
      expect(await fresh.store.countKeyApplications("pending")).to.equal(5);
    } finally {
      await fresh.close();
    }
  });
});

describe("key applications on PostgreSQL: a claim hands the key out once across store instances", () => {
  it("eight concurrent claims from two stores: one key", async function () {
    this.timeout(60_000);
    const db = await createTestDatabase("paymaster_applications");
    const a = await openPostgresStore(db.url);
    const b = await openPostgresStore(db.url);
    try {
      const application = await a.createKeyApplication({ contact: "x@y.z", projectName: "P", networks: ["local"], intendedUse: "tests" });
      const approved = await a.approveKeyApplication(application.id, { decidedBy: "test", claimTokenHash: sha256Hex("pmclaim_t") });
      await b.approveKeyApplication(application.id, { decidedBy: "test", claimTokenHash: sha256Hex("pmclaim_u") }).then(
        () => expect.fail("approved twice"),
        (err: Error) => expect(err.message).to.match(/is approved, not pending/),
      );
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).claimKeyApplication(sha256Hex("pmclaim_t"))));
      expect(results.filter((r) => r !== undefined)).to.have.length(1);
      expect(await a.listApiKeys(approved.projectId!)).to.have.length(1);
      expect((await a.listProjects()).map((p) => p.name)).to.deep.equal(["P"]);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
    }
  });
});
