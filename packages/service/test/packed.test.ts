// The npm packages from their packed tarballs, installed with plain npm into a fresh project outside the
// monorepo (scripts/packed-test.sh prepares it and runs this file, in a loopback-only network namespace where one
// can be made): `paymaster start` runs the embedded default (chain, alto, service) from the installed package
// and its printed viem script lands an op; the operator CLI deploys, checks and administers with a configuration
// file; the project's own node:test file starts the testkit's stack in two parallel workers.
import { execFile, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { freeLoopbackPort } from "../src/local/ports.ts";
import { startProcess } from "./helpers/serviceProcess.ts";

const CONSUMER = process.env.PACKED_CONSUMER ?? "";
const BIN = path.join(CONSUMER, "node_modules/.bin/paymaster");

interface Run {
  code: number;
  out: string;
  json: any;
}

/** Runs `file args` in the consumer project to its end (not through a shell). */
function run(file: string, args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: CONSUMER, env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, out: `${stdout}${stderr}`, json });
    });
  });
}

describe("the packed npm packages, installed with npm into a fresh project", function () {
  this.timeout(240_000);
  let service: Awaited<ReturnType<typeof startProcess>> | undefined;
  let banner = "";

  before(async function () {
    if (!existsSync(BIN)) throw new Error(`no installed consumer project at PACKED_CONSUMER=${CONSUMER || "(unset)"}: run scripts/packed-test.sh`);
    // Not our monorepo: nothing of the workspace is reachable from it.
    expect(existsSync(path.join(CONSUMER, "pnpm-workspace.yaml"))).to.equal(false);
    const env = {
      ...process.env,
      PAYMASTER_LOCAL_CHAIN_PORT: String(await freeLoopbackPort()),
      PAYMASTER_PORT: String(await freeLoopbackPort()),
      PAYMASTER_METRICS_PORT: String(await freeLoopbackPort()),
      PAYMASTER_ADMIN_PORT: String(await freeLoopbackPort()),
      PAYMASTER_LOCAL_BUNDLER_PORT: String(await freeLoopbackPort()),
    };
    // `npx paymaster start` runs exactly this file (the package's bin), from the project folder.
    service = await startProcess([BIN, "start"], env, /Ctrl-C stops everything/);
    banner = service.output();
  });

  after(async () => {
    if (service && service.child.exitCode === null) {
      service.child.kill("SIGTERM");
      await new Promise((resolve) => service!.child.once("exit", resolve));
    }
  });

  it("the installed service is compiled JavaScript with engines declared, and npx finds its bin", async () => {
    const pkg = (await import(path.join(CONSUMER, "node_modules/@paymaster/service/package.json"), { with: { type: "json" } })).default as { engines?: { node?: string }; private?: boolean };
    expect(pkg.engines?.node).to.be.a("string");
    expect(pkg.private).to.equal(undefined);
    expect(existsSync(path.join(CONSUMER, "node_modules/@paymaster/service/dist/main.js"))).to.equal(true);
    expect(existsSync(path.join(CONSUMER, "node_modules/@paymaster/service/src"))).to.equal(false);
    const version = await run("npx", ["--no-install", "paymaster", "--version"]);
    expect(version.code, version.out).to.equal(0);
    expect(version.out.trim()).to.equal("0.1.0");
  });

  it("paymaster start: the embedded default with its bundler; the printed viem script, saved in the project and run, lands a sponsored op", async () => {
    expect(banner).to.match(/Bundler +http:\/\/127\.0\.0\.1:\d+ /);
    const lines = banner.split("\n");
    const header = lines.findIndex((line) => line.startsWith("# From viem"));
    expect(header, banner).to.be.greaterThan(0);
    const script = path.join(CONSUMER, "send.mjs");
    writeFileSync(script, `${lines.slice(header + 1).filter((l) => l.startsWith("#   ")).map((l) => l.slice(4)).join("\n")}\n`);
    const sent = await run(process.execPath, [script], {}, 90_000);
    expect(sent.code, sent.out).to.equal(0);
    expect(JSON.parse(sent.out.trim().split("\n").pop()!).success).to.equal(true);
  });

  it("paymaster deploy, status, project and key with a configuration file, from the installed package", async () => {
    const chainUrl = /Chain RPC +(http:\/\/127\.0\.0\.1:\d+)/.exec(banner)![1]!;
    const config = path.join(CONSUMER, "paymaster.json");
    writeFileSync(config, JSON.stringify({ databasePath: path.join(CONSUMER, "admin.sqlite"), networks: [] }));
    const deployments = path.join(CONSUMER, "deployments");
    const env = {
      PAYMASTER_NETWORK_LOCAL_RPC_URL: chainUrl,
      PAYMASTER_NETWORK_LOCAL_SIGNER_KEYS: generatePrivateKey(),
      // Hardhat's dev account #4 (the embedded stack leaves it alone).
      PAYMASTER_DEPLOYER_KEY: "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
    };
    const cli = (...args: string[]) => run(BIN, ["--config", config, ...args, "--json"], env);
    const deployed = await cli("deploy", "--network", "local", "--treasury", privateKeyToAccount(generatePrivateKey()).address, "--stake", "0.1eth", "--deposit", "0.1eth", "--versions", "v0.7", "--deployments", deployments);
    expect(deployed.code, deployed.out).to.equal(0);
    expect(deployed.json.sent.length).to.be.greaterThan(0);
    const status = await cli("status", "--network", "local", "--deployments", deployments);
    expect(status.code, status.out).to.equal(0);
    for (const p of status.json) expect([p.staked, p.serviceSigners[0].accepted], p.label).to.deep.equal([true, true]);
    const project = await cli("project", "create", "Team");
    expect(project.code, project.out).to.equal(0);
    const key = await cli("key", "create", "--project", project.json.id);
    expect(key.code, key.out).to.equal(0);
    expect(key.json.key).to.match(/^pm_/);
  });

  it("the testkit: the project's own node:test file, run twice in parallel workers, starts its own stack each time and lands a sponsored op", async () => {
    const started = performance.now();
    const result = await run(process.execPath, ["--test", "--test-concurrency=2", "a.test.mjs", "b.test.mjs"], {}, 180_000);
    expect(result.code, result.out).to.equal(0);
    expect(result.out).to.match(/# pass 2\b/);
    expect(result.out).to.match(/# fail 0\b/);
    const starts = [...result.out.matchAll(/local stack up in (\d+) ms/g)].map((m) => Number(m[1]));
    expect(starts).to.have.length(2);
    console.log(`      (two workers in parallel: stacks up in ${starts.join(" ms and ")} ms; both files done in ${Math.round(performance.now() - started)} ms)`);
  });
});
