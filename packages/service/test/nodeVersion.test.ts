// Too old a Node (issue 35.2): the packages say what to install, before anything fails on what that Node lacks.
// The comparison (pure), the engines fields that must say the same, and the checks as a user meets them: the
// `paymaster` bin and the testkit's import in a child process on a Node that reports an old version (a preload
// that rewrites process.versions), and on a real old Node when one is on PATH (CI has Node 20 there).
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { isSupportedNode, NODE_ENGINES_RANGE, parseNodeVersion, unsupportedNodeMessage } from "../src/runtime/nodeVersion.ts";

const SERVICE = new URL("..", import.meta.url).pathname;
const PACKAGES = path.join(SERVICE, "..");
const BIN = path.join(SERVICE, "bin/paymaster.js");

/** A preload that makes the process report Node `version`. */
function fakeVersion(version: string): string {
  const code = `Object.defineProperty(process.versions, "node", { value: ${JSON.stringify(version)} }); Object.defineProperty(process, "version", { value: "v" + ${JSON.stringify(version)} });`;
  return `data:text/javascript,${encodeURIComponent(code)}`;
}

/** `node args…` from the service folder, without the flags this test process runs with; its exit code and output. */
function node(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { NODE_OPTIONS: _, ...env } = process.env;
  return new Promise((resolve) => {
    execFile(file, args, { cwd: SERVICE, env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

const IMPORT_TESTKIT = ["--input-type=module", "-e", 'await import("@paymaster/service/testkit"); console.log("imported")'];

describe("the Node version: checked first, saying what to install", function () {
  this.timeout(120_000);

  it("supports 22.16+ on the 22 line and 24+; not 20, not 22 before 22.16, not 23 (whose node:sqlite lacks isTransaction)", () => {
    const verdicts = Object.fromEntries(["20.20.2", "22.12.0", "22.15.1", "22.16.0", "v22.23.3", "23.11.0", "24.0.0", "25.2.1", "22.16", "nonsense"].map((v) => [v, isSupportedNode(v)]));
    expect(verdicts).to.deep.equal({
      "20.20.2": false,
      "22.12.0": false,
      "22.15.1": false,
      "22.16.0": true,
      "v22.23.3": true,
      "23.11.0": false,
      "24.0.0": true,
      "25.2.1": true,
      "22.16": false,
      nonsense: false,
    });
    expect(parseNodeVersion("v22.16.0-nightly")).to.deep.equal([22, 16, 0]);
    expect(unsupportedNodeMessage("22.23.3")).to.equal(undefined);
    expect(unsupportedNodeMessage("20.20.2")).to.match(/needs Node\.js 22\.16 or later.*this is Node\.js v20\.20\.2.*install Node\.js 22 LTS/);
  });

  it("every package's engines field says the same range", () => {
    for (const name of ["shared", "contracts", "console", "service"]) {
      const manifest = JSON.parse(readFileSync(path.join(PACKAGES, name, "package.json"), "utf8")) as { engines?: { node?: string } };
      expect(manifest.engines?.node, name).to.equal(NODE_ENGINES_RANGE);
    }
  });

  it("the paymaster bin on a Node reporting 20.20.2: what to install, exit 1, no stack; on this Node it runs", async () => {
    const old = await node(process.execPath, ["--import", fakeVersion("20.20.2"), BIN, "--version"]);
    expect(old.code, old.stderr).to.equal(1);
    expect(old.stderr.trim()).to.equal(`paymaster: ${unsupportedNodeMessage("20.20.2")}`);
    expect(old.stdout).to.equal("");
    const current = await node(process.execPath, [BIN, "--version"]);
    expect(current.code, current.stderr).to.equal(0);
    expect(current.stdout.trim()).to.match(/^\d+\.\d+\.\d+$/);
  });

  it("the testkit's import on a Node reporting 22.15.1: an UnsupportedNodeError saying what to install, whose stack is only that", async () => {
    const old = await node(process.execPath, ["--import", fakeVersion("22.15.1"), ...IMPORT_TESTKIT]);
    expect(old.code).to.equal(1);
    expect(old.stderr).to.include(`UnsupportedNodeError: ${unsupportedNodeMessage("22.15.1")}`);
    expect(old.stderr).to.not.match(/^\s+at /m);
    expect(old.stdout).to.equal("");
  });

  it("on a real Node older than 22.16 found on PATH: the bin and the testkit say what to install", async function () {
    const candidates = (process.env.PATH ?? "").split(path.delimiter).map((dir) => path.join(dir, "node")).filter((file) => existsSync(file));
    let old: { file: string; version: string } | undefined;
    for (const file of new Set(candidates)) {
      const version = (await node(file, ["-p", "process.versions.node"])).stdout.trim();
      if (version && !isSupportedNode(version)) {
        old = { file, version };
        break;
      }
    }
    if (!old) this.skip(); // nothing to try here (CI has Node 20 on PATH)
    const bin = await node(old.file, [BIN, "--version"]);
    expect(bin.code, bin.stderr).to.equal(1);
    expect(bin.stderr.trim()).to.equal(`paymaster: ${unsupportedNodeMessage(old.version)}`);
    const testkit = await node(old.file, IMPORT_TESTKIT);
    expect(testkit.code).to.equal(1);
    expect(testkit.stderr).to.include(`UnsupportedNodeError: ${unsupportedNodeMessage(old.version)}`);
  });
});

describe("node:sqlite loaded quietly: importing the testkit prints nothing", function () {
  this.timeout(120_000);

  it("plain node (no --disable-warning) importing the built testkit: empty stderr, while any other warning still shows", async () => {
    const quiet = await node(process.execPath, IMPORT_TESTKIT);
    expect(quiet.code, quiet.stderr).to.equal(0);
    expect(quiet.stdout.trim()).to.equal("imported");
    expect(quiet.stderr).to.equal("");
    // The same import, then node:sqlite's own warning text from elsewhere and another experimental warning: both
    // printed (only the warning of that one load was dropped, and process.emitWarning is Node's own again).
    const others = await node(process.execPath, [
      "--input-type=module",
      "-e",
      'await import("@paymaster/service/testkit"); process.emitWarning("SQLite is an experimental feature (a later one)", "ExperimentalWarning"); process.emitWarning("something else", "ExperimentalWarning");',
    ]);
    expect(others.code, others.stderr).to.equal(0);
    expect(others.stderr).to.include("ExperimentalWarning: SQLite is an experimental feature (a later one)");
    expect(others.stderr).to.include("ExperimentalWarning: something else");
  });
});
