// The embedded store's disk fills up under a running service: its SQLite file on a small tmpfs (mounted here, as
// root; skipped with a line saying why elsewhere) filled by a file until writes fail. Reads keep working, so
// pm_supportEntrypoint is served; a signing call gets STORE_UNAVAILABLE with cause disk_full (503 / -32002), never
// a 500; /ready says the store cannot write, the metrics and one log line say so. Deleting the filler brings it
// back without a restart, and the database passes PRAGMA integrity_check with every signature given recorded.
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { expect } from "chai";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { startService, type RunningService } from "../src/server.ts";
import { newWallet, projectEndpoints, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

/** Fills the file system under `file` until a write fails (ENOSPC): big chunks first, then pages. */
function fill(file: string): number {
  const fd = openSync(file, "w");
  let written = 0;
  try {
    for (const size of [1024 * 1024, 4096, 512]) {
      const chunk = Buffer.alloc(size, 0xaa);
      for (;;) {
        try {
          written += writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}

describe("store faults: the SQLite store's disk fills up (a small tmpfs)", function () {
  this.timeout(120_000);
  let mountPoint: string | undefined;
  let embedded: Embedded | undefined;
  let running: RunningService | undefined;
  const logs: Record<string, any>[] = [];

  before(function () {
    if (process.getuid?.() !== 0) {
      console.log("      skipped: mounting a tmpfs needs root (the disk-full test runs as root, e.g. in the CI container)");
      this.skip();
    }
    const dir = mkdtempSync(path.join(tmpdir(), "paymaster-disk-full-"));
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", dir], { stdio: "pipe" });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      console.log(`      skipped: mount -t tmpfs was refused (${String((error as { stderr?: Buffer }).stderr ?? error).trim()})`);
      this.skip();
    }
    mountPoint = dir;
  });
  after(async () => {
    await running?.close();
    await embedded?.close();
    if (mountPoint !== undefined) {
      try {
        execFileSync("umount", [mountPoint], { stdio: "pipe" });
      } catch {
        execFileSync("umount", ["-l", mountPoint], { stdio: "pipe" }); // something still holds it: detach it anyway
      }
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });

  it("writes fail with STORE_UNAVAILABLE disk_full while reads are served; /ready says the store cannot write; space back: recovery, integrity intact", async () => {
    embedded = await startTestStack();
    const logger = createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line)) });
    const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const config = { ...embeddedConfig(network, path.join(mountPoint!, "data"), 0, "info" as const), metrics: { host: "127.0.0.1", port: 0 } };
    running = await startService(config, { logger, pollMs: 100, watch: false });
    await running.initialised;
    const { v1, standard } = await projectEndpoints(running.service.store, running.url, "disk full", "DISK");
    const post = async (url: string, body: unknown) => {
      const started = performance.now();
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
      return { status: response.status, body: (await response.json()) as any, ms: performance.now() - started };
    };
    const sponsor = async (url: string) => {
      const wallet = await newWallet(embedded!, "v0.7");
      const op = wireOp(wallet, executeCallData(wallet.owner.address));
      return url === v1
        ? post(v1, { id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [op, { strategy_code: "DISK", version: "v0.7" }] })
        : post(standard, { jsonrpc: "2.0", id: 1, method: "pm_sponsorUserOperation", params: [op, { strategy_code: "DISK", version: "v0.7" }] });
    };
    const ready = async () => {
      const response = await fetch(`${running!.url}/ready`);
      return { status: response.status, body: (await response.json()) as any };
    };
    const before = await sponsor(v1);
    expect(before.status, JSON.stringify(before.body)).to.equal(200);

    const filler = path.join(mountPoint!, "filler");
    expect(fill(filler)).to.be.greaterThan(0);
    const mark = logs.length;

    const full = await sponsor(v1);
    expect(full.status, JSON.stringify(full.body)).to.equal(503);
    expect(full.body.data).to.deep.equal({ reason: "STORE_UNAVAILABLE", cause: "disk_full" });
    expect(full.ms).to.be.below(2_000);
    const fullStandard = await sponsor(standard);
    expect(fullStandard.body.error?.code, JSON.stringify(fullStandard.body)).to.equal(-32002);
    expect(fullStandard.body.error.data).to.deep.equal({ reason: "STORE_UNAVAILABLE", cause: "disk_full" });
    // Reads still work: what needs no write is served.
    const support = await post(v1, { id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" });
    expect(support.status, JSON.stringify(support.body)).to.equal(200);

    const down = await ready();
    expect(down.status, JSON.stringify(down.body)).to.equal(503);
    expect(down.body.checks.store).to.match(/^failing: the database: writes fail \(disk_full\) since /);
    const downMetrics = await (await fetch(`${running.metricsUrl}/metrics`)).text();
    expect(downMetrics).to.include("paymaster_store_up 0");
    expect(downMetrics).to.match(/paymaster_store_errors_total\{cause="disk_full"\} [1-9]/);
    const lines = logs.slice(mark).filter((l) => l.component === "store");
    expect(lines, JSON.stringify(lines)).to.have.length(1);
    expect(lines[0]).to.include({ level: "warn", cause: "disk_full", scope: "writes" });
    expect(lines[0]!.msg).to.match(/^store cannot write/);
    expect(logs.slice(mark).filter((l) => l.err !== undefined || l.level === "error"), "no stack, no internal error").to.deep.equal([]);

    unlinkSync(filler);
    const started = performance.now();
    while ((await ready()).status !== 200 && performance.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await ready()).status, "ready again without a restart").to.equal(200);
    expect(performance.now() - started, "within a few probes").to.be.below(2_000);
    const after = await sponsor(v1);
    expect(after.status, JSON.stringify(after.body)).to.equal(200);
    expect(logs.slice(mark).filter((l) => l.msg === "store available again")).to.have.length(1);

    // Integrity: the file is sound, and every signature given has its sponsorship.
    const check = new DatabaseSync(config.databasePath, { readOnly: true });
    try {
      expect(check.prepare("PRAGMA integrity_check").all()).to.deep.equal([{ integrity_check: "ok" }]);
      const signedRows = check.prepare("SELECT paymaster_and_data AS p FROM sponsorships WHERE status = 'signed'").all() as { p: string }[];
      const recorded = signedRows.map((r) => r.p.toLowerCase());
      for (const answer of [before, after]) expect(recorded).to.include(answer.body.data.userOpResponse.paymasterAndData.toLowerCase());
      expect(recorded).to.have.length(2);
    } finally {
      check.close();
    }
  });
});
