// The operator's reference against the code it describes: cli.md's table row of each on-chain command names
// every option the command takes (--deployments, common to all, in the section's text; deploy's row too); the operator guide's "Configure the service" step names every field of the
// `service-network.<net>.json` that `paymaster deploy` writes, and allows the configured tokens before the
// service is checked and started.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import type { Command } from "commander";
import { serviceNetworkBlock, type NetworkManifest } from "@paymaster/contracts/deploy";
import { buildProgram } from "../src/cli/program.ts";

const CLI_MD = readFileSync(new URL("../docs/cli.md", import.meta.url), "utf8");
const GUIDE = readFileSync(new URL("../../../docs/operator-guide.md", import.meta.url), "utf8");

/** The table row of cli.md whose first cell starts with `` `name `` (e.g. "deploy --network"). */
function row(name: string): string {
  const line = CLI_MD.split("\n").find((l) => l.startsWith(`| \`${name}`));
  expect(line, `cli.md has a row for ${name}`).to.be.a("string");
  return line!;
}

function command(path: string[]): Command {
  let cmd = buildProgram({ env: {}, out: () => undefined, err: () => undefined });
  for (const name of path) cmd = cmd.commands.find((c) => c.name() === name)!;
  return cmd;
}

describe("operator docs match the commands", () => {
  for (const path of [["deploy"], ["status"], ["deposit"], ["stake"], ["unstake"], ["token", "list"], ["token", "allow"]]) {
    it(`cli.md's row of \`${path.join(" ")}\` names each of its options`, () => {
      const text = row(`${path.join(" ")}${path[0] === "token" && path[1] !== "list" ? "" : " --network"}`.replace("token allow", "token allow\\|disallow"));
      // --deployments is where every on-chain command reads the manifest (the section says so once); deploy writes
      // there, so its row names it.
      const options = command(path).options.map((o) => o.long!).filter((o) => path[0] === "deploy" || o !== "--deployments");
      const missing = options.filter((o) => !text.includes(o));
      expect(missing, `options of ${path.join(" ")} missing from cli.md`).to.deep.equal([]);
    });
  }

  it("the guide's configure step names every field of service-network.<net>.json, and tokens are allowed before the check", () => {
    const manifest = {
      network: "base-sepolia",
      chainId: 84532,
      paymasters: [
        { version: "v0.7", kind: "verifying", entryPoint: "0x0000000071727De22E5E9d8BAf0edAc6f37da032", address: "0x1111111111111111111111111111111111111111" },
        { version: "v0.7", kind: "erc20", entryPoint: "0x0000000071727De22E5E9d8BAf0edAc6f37da032", address: "0x2222222222222222222222222222222222222222" },
      ],
      gasTankDeposit: { address: "0x3333333333333333333333333333333333333333" },
    } as unknown as NetworkManifest;
    const fields = Object.keys(serviceNetworkBlock(manifest));
    const deploySection = GUIDE.slice(GUIDE.indexOf("## Deploying the paymasters"), GUIDE.indexOf("## A chain that is not in the registry"));
    const configure = deploySection.slice(deploySection.indexOf("**Configure the service**"));
    const step = configure.slice(0, configure.search(/\n\d+\. \*\*/));
    expect(fields.filter((f) => !step.includes(`\`${f}\``)), "fields the configure step does not name").to.deep.equal([]);
    const allow = deploySection.indexOf("paymaster token allow");
    expect(allow, "the deploy section allows the tokens").to.be.greaterThan(deploySection.indexOf("**Configure the service**"));
    expect(allow, "before the status check").to.be.lessThan(deploySection.indexOf("**Check**"));
  });
});
