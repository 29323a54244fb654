// The licence (issue 35.6): every package says what it is under, with a LICENSE file it ships, and every Solidity
// file's SPDX header is covered by its package's licence expression (files derived from GPL-3.0 sources keep it).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

const REPOSITORY = new URL("../../..", import.meta.url).pathname;
const PACKAGES = ["shared", "contracts", "console", "service"];

/** SPDX's deprecated identifiers, as the ones that replaced them. */
const DEPRECATED: Record<string, string> = { "GPL-3.0": "GPL-3.0-only", "GPL-2.0": "GPL-2.0-only", "LGPL-3.0": "LGPL-3.0-only" };

/** The licence identifiers an `A AND B` expression (the only form we use) puts every file under one of. */
function identifiers(expression: string): string[] {
  return expression.split(/\s+AND\s+/).map((id) => id.replace(/[()]/g, "").trim());
}

function manifest(dir: string): { license?: string; files?: string[] } {
  return JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { license?: string; files?: string[] };
}

describe("licences: every package's, and every Solidity file's SPDX header", () => {
  it("the root and every package have a LICENSE file; each package ships it and says its licence in SPDX", () => {
    expect(readFileSync(path.join(REPOSITORY, "LICENSE"), "utf8")).to.match(/^MIT License/);
    for (const name of PACKAGES) {
      const dir = path.join(REPOSITORY, "packages", name);
      const pkg = manifest(dir);
      expect(readFileSync(path.join(dir, "LICENSE"), "utf8"), name).to.match(/^MIT License/);
      expect(pkg.files, name).to.include("LICENSE");
      expect(pkg.license, name).to.be.a("string").and.not.equal("UNLICENSED");
      for (const id of identifiers(pkg.license!)) expect(id, `${name}: ${pkg.license}`).to.match(/^(MIT|GPL-3\.0-only)$/);
    }
    expect(readFileSync(path.join(REPOSITORY, "packages/contracts/LICENSE"), "utf8")).to.include("GNU GENERAL PUBLIC LICENSE\n                       Version 3, 29 June 2007");
  });

  it("every .sol file in the repository has an SPDX header its package's licence covers", () => {
    const files = execFileSync("git", ["ls-files", "*.sol"], { cwd: REPOSITORY, encoding: "utf8" }).split("\n").filter(Boolean);
    expect(files.length).to.be.greaterThan(20);
    const seen = new Set<string>();
    for (const file of files) {
      const [, name] = /^packages\/([^/]+)\//.exec(file) ?? [];
      expect(name, `${file} is in a package`).to.be.a("string");
      const license = manifest(path.join(REPOSITORY, "packages", name!)).license ?? "";
      const header = /^\/\/ SPDX-License-Identifier: (\S+)/m.exec(readFileSync(path.join(REPOSITORY, file), "utf8"))?.[1];
      expect(header, `${file} has an SPDX header`).to.be.a("string");
      const id = DEPRECATED[header!] ?? header!;
      seen.add(id);
      expect(identifiers(license), `${file} (${header}) under ${name}'s "${license}"`).to.include(id);
    }
    // Both licences occur: the expression names no licence that no file has.
    expect([...seen].sort()).to.deep.equal(["GPL-3.0-only", "MIT"]);
    expect(existsSync(path.join(REPOSITORY, "packages/contracts/contracts/simulation/EntryPointSimulatorV07.sol"))).to.equal(true);
  });
});
