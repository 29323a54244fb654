// Relative paths in a configuration file resolve against the file's own directory: the operator CLI and the
// service, started from different working directories (as `pnpm paymaster` at the repository root and
// `pnpm start` in packages/service are), open the same SQLite file, so a key the CLI makes works at the service.
import { expect } from "chai";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { executeCallData } from "../src/local/embedded.ts";
import { runCli, type CliResult } from "./helpers/cli.ts";
import { spawnService, writeLocalConfig, type ServiceProcess } from "./helpers/serviceProcess.ts";
import { call, newWallet, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

function ok(r: CliResult): any {
  expect(r.code, `${r.stderr}\n${r.stdout}`).to.equal(0);
  return r.json;
}

describe("configuration: relative paths resolve against the file's directory", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let service: ServiceProcess | undefined;
  const dirs: string[] = [];
  const scratch = () => {
    const dir = mkdtempSync(path.join(tmpdir(), "paymaster-cwd-"));
    dirs.push(dir);
    return dir;
  };

  before(async () => {
    embedded = await startTestStack();
  });
  after(async () => {
    await service?.kill("SIGKILL");
    await embedded?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("the CLI in one directory and the service in another see the same projects, keys and strategies", async () => {
    const configFile = writeLocalConfig(embedded.stack.manifest, embedded.stack.chain.url, { service: { databasePath: "data/paymaster.sqlite" } });
    dirs.push(path.dirname(configFile));
    const cliDir = scratch();
    const serviceDir = scratch();
    const cli = (...args: string[]) => runCli(["--config", configFile, ...args, "--json"], {}, { cwd: cliDir });

    const project = ok(await cli("project", "create", "Relative"));
    const key = ok(await cli("key", "create", "--project", project.id));
    const strategyFile = path.join(cliDir, "free.yaml");
    writeFileSync(strategyFile, `code: rel-free\nname: Free\nproject: ${project.id}\nnetworks: [local]\nrules: {}\n`);
    ok(await cli("strategy", "create", "-f", strategyFile));

    const expected = path.join(path.dirname(configFile), "data", "paymaster.sqlite");
    expect(existsSync(expected), `the database is beside the configuration file (${expected})`).to.equal(true);
    expect(existsSync(path.join(cliDir, "data")), "nothing written under the CLI's working directory").to.equal(false);

    service = await spawnService(configFile, { signerKey: embedded.stack.signer.privateKey }, ["--no-watch"], { cwd: serviceDir });
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const answer = await call(`${service.url}/api/v1/paymaster/local?apiKey=${key.key}`, "pm_sponsorUserOperation", [wire, { strategy_code: "rel-free", version: "v0.7" }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(answer.body.data?.userOpResponse?.paymasterAndData, JSON.stringify(answer.body)).to.match(/^0x[0-9a-fA-F]+$/);
    expect(existsSync(path.join(serviceDir, "data")), "nothing written under the service's working directory").to.equal(false);

    // The sponsorship the service recorded is the CLI's to read.
    const listed = ok(await runCli(["--config", configFile, "sponsorship", "list", "--json"], {}, { cwd: scratch() }));
    expect(JSON.stringify(listed).toLowerCase()).to.contain(wallet.sender.toLowerCase());
    expect(readFileSync(configFile, "utf8")).to.contain('"databasePath":"data/paymaster.sqlite"');
  });

  it("PAYMASTER_DB_PATH, given in the environment, stays relative to the working directory", async () => {
    const configFile = writeLocalConfig(embedded.stack.manifest, embedded.stack.chain.url, { service: { databasePath: "data/paymaster.sqlite" } });
    dirs.push(path.dirname(configFile));
    const cwd = scratch();
    ok(await runCli(["--config", configFile, "project", "create", "Env", "--json"], { PAYMASTER_DB_PATH: "env.sqlite" }, { cwd }));
    expect(existsSync(path.join(cwd, "env.sqlite"))).to.equal(true);
    expect(existsSync(path.join(path.dirname(configFile), "data"))).to.equal(false);
  });
});
