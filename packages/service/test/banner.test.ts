// The viem script the embedded default prints is a file as printed: the lines between its marks, saved as they
// are, parse as an ES module (`node --check`), with no `#` before them. (Running it against a stack with its
// bundler is localStack.test.ts's, inside the loopback-only namespace, and packed.test.ts's from the package.)
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { printedViemScript, viemScriptSection } from "../src/local/banner.ts";

describe("the printed viem script", function () {
  this.timeout(30_000);

  it("saved exactly as printed, parses as an ES module, and has no shell comment marks", async () => {
    const section = viemScriptSection({
      url: "http://127.0.0.1:3000/rpc/v1/local?apiKey=pk_test",
      chainUrl: "http://127.0.0.1:8545",
      chainId: 31337,
      simple7702Account: "0xe6Cae83BdE06E4c305530e199D7217f42808555B",
      strategyCode: "DEMO",
    });
    const printed = ["Try it:", "# a curl comment", ...section, "Ctrl-C stops everything."].join("\n");
    const script = printedViemScript(printed);
    expect(script, printed).to.be.a("string");
    const lines = script!.trimEnd().split("\n");
    expect(lines[0]).to.match(/^import /);
    expect(lines.filter((line) => line.startsWith("#")), "lines starting with #").to.deep.equal([]);
    const file = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-script-")), "send.mjs");
    writeFileSync(file, script!);
    const check = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(process.execPath, ["--check", file], { timeout: 20_000 }, (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr })),
    );
    expect(check.code, check.stderr).to.equal(0);
    // And the check can fail: the old way of printing (a `#` before each line) does not parse.
    writeFileSync(file, lines.map((line) => `#   ${line}`).join("\n"));
    const old = await new Promise<number>((resolve) => execFile(process.execPath, ["--check", file], { timeout: 20_000 }, (error) => resolve(error ? 1 : 0)));
    expect(old).to.equal(1);
  });
});
