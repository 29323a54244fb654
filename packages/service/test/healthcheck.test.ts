// The container image's HEALTHCHECK (src/healthcheck.ts) as the container runs it, a process of its own: exit 0 when
// the service's /ready says ready, 1 with one line (no stack) when it says not ready or nothing answers.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { freeLoopbackPort } from "./helpers/throwawayServers.ts";
import { startTestStack, type Embedded } from "./helpers/stack.ts";

const HEALTHCHECK = new URL("../src/healthcheck.ts", import.meta.url).pathname;

/** Runs the health check against the embedded default's port (no configuration file), as the image's HEALTHCHECK does. */
function healthcheck(port: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", HEALTHCHECK], {
      env: { PATH: process.env.PATH, PAYMASTER_PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("container HEALTHCHECK (src/healthcheck.ts)", function () {
  this.timeout(120_000);
  let embedded: Embedded | undefined;
  after(async () => {
    await embedded?.close();
  });

  it("fails with one line when nothing answers on the service's port", async () => {
    const result = await healthcheck(await freeLoopbackPort());
    expect(result.code).to.equal(1);
    expect(result.stderr.trim()).to.match(/^not ready: /);
    expect(result.stderr.trim().split("\n")).to.have.length(1);
  });

  it("passes when the service is ready", async () => {
    embedded = await startTestStack();
    const result = await healthcheck(Number(new URL(embedded.running.url).port));
    expect(result.code, result.stderr).to.equal(0);
    expect(JSON.parse(result.stdout).status).to.equal("ready");
  });
});
