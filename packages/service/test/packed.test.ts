// The npm packages from their packed tarballs, installed with plain npm into a fresh project outside the
// monorepo (scripts/packed-test.sh prepares it and runs this file, in a loopback-only network namespace where one
// can be made): `paymaster start` runs the embedded default (chain, alto, service) from the installed package
// and its printed viem script lands an op; the operator CLI deploys, checks and administers with a configuration
// file; the project's own node:test file starts the testkit's stack in two parallel workers; its TypeScript
// type-checks against the packages' declarations (skipLibCheck false, no pkcs11js).
import { execFile, execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { printedViemScript } from "../src/local/banner.ts";
import { embeddedPortsEnv, startProcess } from "./helpers/serviceProcess.ts";

const CONSUMER = process.env.PACKED_CONSUMER ?? "";
const BIN = path.join(CONSUMER, "node_modules/.bin/paymaster");
const HARDHAT = process.env.PACKED_HARDHAT ?? "";
const FOUNDRY = process.env.PACKED_FOUNDRY ?? "";
const SLIM = process.env.PACKED_SLIM ?? "";
const PACKS = process.env.PACKED_PACKS ?? "";

interface Run {
  code: number;
  out: string;
  json: any;
}

/** Runs `file args` in the consumer project to its end (not through a shell). */
/**
 * The environment of a stranger's shell: this run's own, less what pnpm and npm put there for the monorepo's
 * scripts (npm_config_*, npm_package_*, …), which a consumer's npm would warn about or act on.
 */
function strangerEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm|pnpm)_/i.test(name)));
}

function run(file: string, args: string[], env: Record<string, string> = {}, timeoutMs = 60_000, cwd = CONSUMER): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env: { ...strangerEnv(), ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
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

describe("the packed npm packages, installed with npm into fresh projects", function () {
  this.timeout(300_000);

  before(function () {
    for (const [name, dir] of Object.entries({ PACKED_CONSUMER: CONSUMER, PACKED_HARDHAT: HARDHAT, PACKED_FOUNDRY: FOUNDRY })) {
      if (!dir || !existsSync(path.join(dir, "node_modules"))) throw new Error(`no installed project at ${name}=${dir || "(unset)"}: run scripts/packed-test.sh`);
      // Not our monorepo: nothing of the workspace is reachable from it.
      expect(existsSync(path.join(dir, "pnpm-workspace.yaml")), name).to.equal(false);
    }
  });

  describe("the service: paymaster start and the operator CLI", () => {
    let service: Awaited<ReturnType<typeof startProcess>> | undefined;
    let banner = "";

    before(async function () {
      const env = { ...strangerEnv(), ...(await embeddedPortsEnv()) };
      // `npx paymaster start` runs exactly this file (the package's bin), from the project folder.
      // Generous: on a loaded CI machine the stack (chain, deployments, alto) takes long to come up.
      service = await startProcess([BIN, "start"], env, /Ctrl-C stops everything/, 180_000);
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
      // One command line: start is listed, and `start --help` prints help (it starts nothing).
      const help = await run("npx", ["--no-install", "paymaster", "--help"]);
      expect(help.out).to.match(/^\s+start \[options\]\s+run the service/m);
      const startHelp = await run("npx", ["--no-install", "paymaster", "start", "--help"]);
      expect(startHelp.code, startHelp.out).to.equal(0);
      expect(startHelp.out).to.match(/^Usage: paymaster start \[options\]/m);
      expect(startHelp.out).to.not.include("Paymaster service");
    });

    it("paymaster start: the embedded default with its bundler; the printed viem script, saved in the project and run, lands a sponsored op", async () => {
      expect(banner).to.match(/Bundler +http:\/\/127\.0\.0\.1:\d+ /);
      // The console's pages come from the packed @paymaster/console.
      const consoleUrl = /Console +(http:\/\/127\.0\.0\.1:\d+\/console\/)/.exec(banner)![1]!;
      const page = await fetch(consoleUrl);
      expect(page.status).to.equal(200);
      expect(await page.text()).to.match(/<html/i);
      // Saved as printed: the lines between its two marks.
      const printed = printedViemScript(banner);
      expect(printed, banner).to.be.a("string");
      const script = path.join(CONSUMER, "send.mjs");
      writeFileSync(script, printed!);
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
  });

  describe("the testkit", () => {
    it("the project's own node:test file, run twice in parallel workers, starts its own stack each time and lands sponsored ops (an EIP-7702 account; the testkit's SimpleAccount on v0.6, v0.7, v0.8)", async () => {
      const started = performance.now();
      const result = await run(process.execPath, ["--test", "--test-concurrency=2", "a.test.mjs", "b.test.mjs"], {}, 180_000);
      expect(result.code, result.out).to.equal(0);
      expect(result.out).to.match(/# pass 4\b/);
      expect(result.out).to.match(/# fail 0\b/);
      const starts = [...result.out.matchAll(/local stack up in (\d+) ms/g)].map((m) => Number(m[1]));
      expect(starts).to.have.length(2);
      console.log(`      (two workers in parallel: stacks up in ${starts.join(" ms and ")} ms; both files done in ${Math.round(performance.now() - started)} ms)`);
    });
  });

  describe("the packages' declarations, type-checked by a TypeScript project", () => {
    it("a consumer's strict nodenext code against the testkit, the contracts and shared, with skipLibCheck false and without pkcs11js (the PKCS#11 signer's optional peer): no error", async () => {
      expect(existsSync(path.join(CONSUMER, "node_modules/pkcs11js")), "pkcs11js installed").to.equal(false);
      writeFileSync(
        path.join(CONSUMER, "tsconfig.json"),
        JSON.stringify({ compilerOptions: { strict: true, module: "nodenext", moduleResolution: "nodenext", target: "es2022", skipLibCheck: false, noEmit: true, types: ["node"] }, files: ["consumer.ts"] }),
      );
      writeFileSync(
        path.join(CONSUMER, "consumer.ts"),
        [
          'import { startLocalStack, toLocalSimpleAccount, type LocalStack, type LocalStackOptions } from "@paymaster/service/testkit";',
          'import { VerifyingPaymasterV07Artifact } from "@paymaster/contracts/artifacts";',
          'import { getUserOpHash, type Address } from "@paymaster/shared";',
          "export async function paymasterOf(options: LocalStackOptions = { bundler: false }): Promise<Address> {",
          "  const stack: LocalStack = await startLocalStack(options);",
          "  try {",
          '    return stack.manifest.entryPoints["v0.7"].verifyingPaymaster;',
          "  } finally {",
          "    await stack.stop();",
          "  }",
          "}",
          "export const abiLength: number = VerifyingPaymasterV07Artifact.abi.length;",
          "export const helpers = [typeof getUserOpHash, typeof toLocalSimpleAccount];",
        ].join("\n"),
      );
      const checked = await run(path.join(CONSUMER, "node_modules/.bin/tsc"), ["-p", "."], {}, 120_000);
      expect(checked.code, checked.out).to.equal(0);
    });
  });

  describe("the tarballs' licences", () => {
    it("each packed package says its licence in SPDX and ships its LICENSE file", () => {
      const expected: Record<string, string> = { shared: "MIT", console: "MIT", service: "MIT", contracts: "MIT AND GPL-3.0-only" };
      const tarballs = readdirSync(PACKS).filter((name) => name.endsWith(".tgz"));
      expect(tarballs).to.have.length(4);
      for (const [name, license] of Object.entries(expected)) {
        const tarball = path.join(PACKS, tarballs.find((file) => file.startsWith(`paymaster-${name}-`))!);
        const manifest = JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" })) as { license?: string };
        expect(manifest.license, name).to.equal(license);
        const licenseText = execFileSync("tar", ["-xzOf", tarball, "package/LICENSE"], { encoding: "utf8" });
        expect(licenseText, name).to.match(/^MIT License/);
        if (license.includes("GPL-3.0-only")) expect(licenseText, name).to.include("GNU GENERAL PUBLIC LICENSE");
      }
    });
  });

  describe("installed with npm in node:22-bookworm-slim, which has no compiler", () => {
    const outcome = (file: string) => readFileSync(path.join(SLIM, "outcome", file), "utf8").trim();

    before(function () {
      if (existsSync(path.join(SLIM, "skipped"))) {
        const reason = readFileSync(path.join(SLIM, "skipped"), "utf8");
        if (process.env.CI === "true") throw new Error(`CI must install the tarballs in node:22-bookworm-slim, but podman cannot run here: ${reason}`);
        console.log(`      skipped: podman cannot run here (${reason.trim().split("\n").pop()})`);
        this.skip();
      }
      expect(readFileSync(path.join(SLIM, "podman.rc"), "utf8").trim(), readFileSync(path.join(SLIM, "podman.log"), "utf8")).to.equal("0");
    });

    it("the image has no python3, make or C++ compiler, and npm install of the packed tarballs succeeds there", () => {
      expect(outcome("compilers"), "compilers in the slim image").to.equal("");
      expect(outcome("install.rc"), outcome("install.log")).to.equal("0");
      console.log(`      (npm install in node:22-bookworm-slim, ${outcome("node.version")}: ${outcome("install.ms")} ms)`);
      expect(outcome("version.rc"), outcome("version.out")).to.equal("0");
      expect(outcome("version.out")).to.equal("0.1.0");
    });

    it("importing the testkit there prints nothing", () => {
      expect(outcome("testkit.rc"), outcome("testkit.err")).to.equal("0");
      expect(outcome("testkit.out")).to.equal("imported");
      expect(outcome("testkit.err")).to.equal("");
    });

    it("pkcs11js (an optional peer) is not installed, and the PKCS#11 signer's loader says what to install", () => {
      const pkcs11 = JSON.parse(outcome("pkcs11.json")) as { resolved: boolean; loaded: boolean; name?: string; kind?: string; message?: string };
      expect(pkcs11.resolved, "pkcs11js resolves").to.equal(false);
      expect(pkcs11.loaded).to.equal(false);
      expect(pkcs11.name).to.equal("Pkcs11Failure");
      expect(pkcs11.kind).to.equal("module");
      expect(pkcs11.message).to.include("npm i pkcs11js@2.1.7");
    });
  });

  describe("the contracts: Hardhat, Foundry, ABIs and bindings", () => {
    it("the contracts package: ABIs as typed consts for viem, ethers v6 bindings and deploy helpers import from the installed package", async () => {
      const script = path.join(CONSUMER, "contracts-imports.mjs");
      writeFileSync(
        script,
        [
          'import { VerifyingPaymasterV07Artifact, ENTRY_POINT_V07_ADDRESS } from "@paymaster/contracts/artifacts";',
          'import { VerifyingPaymasterV07__factory } from "@paymaster/contracts/typechain/v07";',
          'import { VerifyingPaymasterV08__factory } from "@paymaster/contracts/typechain/v08";',
          'import { predictCreate2Address } from "@paymaster/contracts/deploy";',
          'const names = VerifyingPaymasterV07Artifact.abi.filter((item) => item.type === "function").map((item) => item.name);',
          "console.log(JSON.stringify({ getHash: names.includes(\"getHash\"), factory: typeof VerifyingPaymasterV07__factory.connect, factoryV08: typeof VerifyingPaymasterV08__factory.connect, predict: typeof predictCreate2Address, entryPoint: ENTRY_POINT_V07_ADDRESS }));",
        ].join("\n"),
      );
      const result = await run(process.execPath, [script]);
      expect(result.code, result.out).to.equal(0);
      expect(JSON.parse(result.out.trim())).to.deep.equal({ getHash: true, factory: "function", factoryV08: "function", predict: "function", entryPoint: "0x0000000071727De22E5E9d8BAf0edAc6f37da032" });
    });

    it("a fresh Hardhat 3 project compiles a paymaster that extends ours, imported from the package's Solidity sources", async () => {
      const built = await run(path.join(HARDHAT, "node_modules/.bin/hardhat"), ["build"], {}, 300_000, HARDHAT);
      expect(built.code, built.out).to.equal(0);
      const artifact = JSON.parse(readFileSync(path.join(HARDHAT, "artifacts/contracts/MyPaymaster.sol/MyPaymaster.json"), "utf8")) as { abi: { name?: string }[]; bytecode: string };
      const names = artifact.abi.map((item) => item.name);
      expect(names).to.include.members(["NAME", "getHash", "validatePaymasterUserOp", "addSigner"]);
      expect(artifact.bytecode.length).to.be.greaterThan(2);
    });

    it("a fresh Foundry project (forge from npm) compiles it and its forge test sponsors an op through the canonical EntryPoint", async () => {
      const tested = await run(path.join(FOUNDRY, "node_modules/.bin/forge"), ["test"], {}, 300_000, FOUNDRY);
      expect(tested.code, tested.out).to.equal(0);
      expect(tested.out).to.include("[PASS] testSponsorsAnOpThroughTheCanonicalEntryPoint()");
      expect(tested.out).to.include("[PASS] testRefusesAnOpItsSignerDidNotSign()");
      expect(tested.out).to.match(/2 tests passed, 0 failed/);
    });
  });
});
