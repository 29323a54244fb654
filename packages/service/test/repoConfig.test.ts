// The repository's own configuration as the tools read it: npm (behind every `npx pnpm …`) finds nothing it
// does not know in the project's .npmrc (a warning on every command otherwise, beside the "one line on stderr"
// convention), and pnpm still checks engines against the Node the project installs (nodeVersion in
// pnpm-workspace.yaml, where pnpm reads its settings and npm does not look).
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { parse } from "yaml";

const ROOT = path.resolve(new URL("../../..", import.meta.url).pathname);

describe("repository configuration", () => {
  it("npm reads the project's .npmrc without a warning", async function () {
    this.timeout(30_000);
    const { stderr } = await promisify(execFile)("npm", ["config", "list"], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" } });
    expect(stderr.trim(), "npm's stderr").to.equal("");
  });

  it("pnpm's nodeVersion is the Node the project installs", () => {
    const workspace = parse(readFileSync(path.join(ROOT, "pnpm-workspace.yaml"), "utf8")) as { nodeVersion?: string };
    const rootPackage = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
    expect(workspace.nodeVersion).to.equal(rootPackage.devDependencies.node);
  });
});
