// A rolling upgrade: a newer version of the service migrates the database while this one runs. From its next
// sponsorship on, the running replica reserves and signs nothing (503 STORE_UNAVAILABLE, cause schema_too_new,
// nothing written), /ready goes red for good so a load balancer drains it, one error line says what to do, and
// calls that write nothing are still served. The newer build is played by the row its migration would record.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { expect } from "chai";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { startService, type RunningService } from "../src/server.ts";
import { newWallet, projectEndpoints, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

describe("a rolling upgrade: a newer version migrates the database under a running replica", function () {
  this.timeout(120_000);
  let embedded: Embedded | undefined;
  let running: RunningService | undefined;
  const logs: Record<string, any>[] = [];
  after(async () => {
    await running?.close();
    await embedded?.close();
  });

  it("the running replica signs nothing from then on (503 schema_too_new, nothing written) and /ready stays red", async () => {
    embedded = await startTestStack();
    const logger = createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line)) });
    const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const config = embeddedConfig(network, path.join(mkdtempSync(path.join(tmpdir(), "paymaster-upgrade-")), "data"), 0, "info");
    running = await startService(config, { logger, pollMs: 100, watch: false });
    await running.initialised;
    const { v1 } = await projectEndpoints(running.service.store, running.url, "upgrade", "UPGRADE");
    const post = async (body: unknown) => {
      const response = await fetch(v1, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
      return { status: response.status, body: (await response.json()) as any };
    };
    const sponsor = async () => {
      const wallet = await newWallet(embedded!, "v0.7");
      return post({ id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: "UPGRADE", version: "v0.7" }] });
    };
    const ready = async () => {
      const response = await fetch(`${running!.url}/ready`);
      return { status: response.status, body: (await response.json()) as any };
    };
    const sponsorships = () => {
      const db = new DatabaseSync(config.databasePath, { readOnly: true });
      try {
        return (db.prepare("SELECT COUNT(*) AS n FROM sponsorships").get() as { n: number }).n;
      } finally {
        db.close();
      }
    };

    const before = await sponsor();
    expect(before.status, JSON.stringify(before.body)).to.equal(200);
    expect((await ready()).status).to.equal(200);
    const mark = logs.length;

    // The newer build's migration, committed by another process while this one runs.
    const other = new DatabaseSync(config.databasePath);
    other.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'a newer build', 0)");
    other.close();

    for (let i = 0; i < 2; i++) {
      const refused = await sponsor();
      expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
      expect(refused.body.data).to.deep.equal({ reason: "STORE_UNAVAILABLE", cause: "schema_too_new" });
    }
    expect(sponsorships(), "nothing written after the migration").to.equal(1);
    // What writes nothing is still served.
    expect((await post({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" })).status).to.equal(200);
    const red = await ready();
    expect(red.status).to.equal(503);
    expect(red.body.checks.store).to.match(/^failing: the database: migrated by a newer version of the service \(schema_too_new\) since .*: this replica reserves nothing; upgrade it$/);
    const lines = logs.slice(mark).filter((l) => l.component === "store");
    expect(lines, JSON.stringify(lines)).to.have.length(1);
    expect(lines[0]).to.include({ level: "error", cause: "schema_too_new" });
    expect(lines[0]!.msg).to.match(/^a newer version of the service migrated the database: this replica reserves and signs nothing/);
    // For good: no probe brings it back (the schema does not go back).
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await ready()).status, "still red").to.equal(503);
  });
});
