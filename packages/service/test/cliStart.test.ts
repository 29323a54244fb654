// `paymaster start` is one command everywhere, as real child processes: `paymaster --help` lists it,
// `paymaster start --help` prints its help and starts nothing, `pnpm start` (src/main.ts) is the same command,
// and `pnpm paymaster start --config <file>` (src/cli/main.ts) serves the configured network and drains on SIGTERM.
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { tcpListeners } from "../src/local/ports.ts";
import { runCli, type CliResult } from "./helpers/cli.ts";
import { embeddedPortsEnv, spawnService, startProcess, writeLocalConfig } from "./helpers/serviceProcess.ts";
import { startTestStack, type Embedded } from "./helpers/stack.ts";

const SERVICE_MAIN = new URL("../src/main.ts", import.meta.url).pathname;

/** `node src/main.ts <args>` (what `pnpm start` runs) to its end, bounded to 30 s. */
function runServiceMain(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--disable-warning=ExperimentalWarning", SERVICE_MAIN, ...args], { env: { PATH: process.env.PATH ?? "", ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr, json: undefined });
    });
  });
}

/** The embedded default's ports (from `env`) that something listens on. */
function listening(env: Record<string, string>): number[] {
  return Object.values(env).map(Number).filter((port) => (tcpListeners(port) ?? []).length > 0);
}

describe("paymaster start: one command, the same everywhere", function () {
  this.timeout(120_000);

  it("paymaster --help lists start", async () => {
    const result = await runCli(["--help"]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.match(/^\s+start \[options\]\s+run the service/m);
  });

  it("paymaster start --help prints the start command's help, exits 0 and starts nothing", async () => {
    const ports = await embeddedPortsEnv();
    const started = performance.now();
    const result = await runCli(["start", "--help"], ports);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.match(/^Usage: paymaster start \[options\]/m);
    expect(result.stdout).to.include("--no-watch");
    expect(result.stdout).to.include("--config <file>");
    expect(result.stdout, "the embedded stack's banner").to.not.include("Paymaster service");
    // The embedded default takes seconds to come up; help is printed and done well before.
    expect(performance.now() - started).to.be.below(15_000);
    expect(listening(ports), "ports of the embedded default").to.deep.equal([]);
  });

  it("pnpm start (src/main.ts) is paymaster start: the same help, the same one-line configuration error", async () => {
    const ports = await embeddedPortsEnv();
    const help = await runServiceMain(["--help"], ports);
    expect(help.code, help.stderr).to.equal(0);
    expect(help.stdout).to.match(/^Usage: paymaster start \[options\]/m);
    const missing = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-start-")), "absent.json");
    for (const result of [await runServiceMain(["--config", missing], ports), await runCli(["start", "--config", missing], ports)]) {
      expect(result.code, "a configuration mistake is a usage error").to.equal(2);
      expect(result.stderr).to.match(/^paymaster: cannot start: invalid configuration \(.*absent\.json\):\n  - cannot read the configuration file/);
      expect(result.stderr, "no stack trace").to.not.match(/\n\s+at /);
    }
    const database = await runCli(["start", "--database", "x.sqlite"], ports);
    expect(database.code).to.equal(2);
    expect(database.stderr).to.match(/^paymaster: cannot start: --database is for the operator commands/);
    const unknown = await runCli(["start", "--port", "1"], ports);
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.include("unknown option '--port'");
    expect(listening(ports), "ports of the embedded default").to.deep.equal([]);
  });

  it("pnpm start with no configuration logs at info, configuration.md's default: a JSON line for each request", async () => {
    const { PAYMASTER_LOG_LEVEL: _unset, ...inherited } = process.env;
    const env = { ...inherited, ...(await embeddedPortsEnv()), PAYMASTER_LOCAL_BUNDLER_PORT: "off" };
    const { child, output } = await startProcess([SERVICE_MAIN], env, /Ctrl-C stops everything/);
    try {
      const endpoint = /^ {2}Endpoint +(http:\/\/\S+)/m.exec(output())![1]!;
      const answer = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" }) });
      expect(answer.status).to.equal(200);
      const requestLine = () =>
        output()
          .split("\n")
          .filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .find((line) => line.msg === "request" && line.rpcMethod === "pm_supportEntrypoint");
      const deadline = Date.now() + 5_000;
      while (requestLine() === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(requestLine(), output().slice(-2000)).to.include({ level: "info", status: 200, path: "/api/v1/paymaster/local" });
    } finally {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
  });

  describe("with a configuration", () => {
    let embedded: Embedded;
    before(async () => {
      embedded = await startTestStack();
    });
    after(async () => {
      await embedded?.close();
    });

    it("pnpm paymaster start --config <file> (src/cli/main.ts) serves the network, then drains and exits 0 on SIGTERM", async () => {
      const config = writeLocalConfig(embedded.stack.manifest, embedded.stack.chain.url);
      const cwd = mkdtempSync(path.join(tmpdir(), "paymaster-start-"));
      const service = await spawnService(config, { signerKey: embedded.stack.signer.privateKey }, ["--no-watch"], { cwd });
      try {
        const configuration = await service.waitFor((line) => line.msg === "configuration");
        expect(configuration.config.networks[0].name).to.equal("local");
        const ready = await fetch(`${service.metricsUrl}/ready`);
        expect(ready.status).to.equal(200);
      } finally {
        const exit = await service.kill("SIGTERM");
        expect(exit.code, "drained and exited 0").to.equal(0);
      }
    });
  });
});

describe("stopping on a signal (src/lifecycle/serve.ts stopOnSignals), in a process of its own", function () {
  this.timeout(30_000);
  const fixture = new URL("./fixtures/signals.ts", import.meta.url).pathname;
  /** Starts the fixture with a drain of `drainMs`; resolves once it is ready, with its exit. */
  async function stopping(drainMs: number) {
    const { child } = await startProcess([fixture, String(drainMs)], { ...process.env }, /^ready/);
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    return { child, exited };
  }
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("one Ctrl-C that reaches it twice (the terminal's group signal, then pnpm passing it on) still drains and exits 0", async () => {
    const { child, exited } = await stopping(800);
    child.kill("SIGINT");
    await pause(50); // the wrapper's copy comes a moment later (two signals sent at once merge into one)
    child.kill("SIGINT");
    expect(await exited, "drained, not cut short by the copy (was exit 1)").to.equal(0);
  });

  it("a second signal a while later still exits at once, with 1", async () => {
    const { child, exited } = await stopping(10_000);
    child.kill("SIGTERM");
    await pause(1_300);
    const sent = performance.now();
    child.kill("SIGTERM");
    expect(await exited).to.equal(1);
    expect(performance.now() - sent, "at once, not after the drain").to.be.below(5_000);
  });
});
