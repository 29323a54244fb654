// The contracts README's Foundry set-up is the one the packed test runs: its foundry.toml and solc-from-npm.mjs
// blocks are the fixture's files (test/fixtures/packed/foundry/, used by scripts/packed-test.sh with forge from
// npm), so a reader who copies them gets what is tested.
import { readFileSync, statSync } from "node:fs";
import { expect } from "chai";

const README = readFileSync(new URL("../../contracts/README.md", import.meta.url), "utf8");
const FIXTURE = new URL("./fixtures/packed/foundry/", import.meta.url);

/** The fenced blocks of `lang` in the README, in order. */
function blocks(lang: string): string[] {
  return [...README.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
}

describe("the contracts README's Foundry set-up", () => {
  it("its foundry.toml is the tested project's", () => {
    expect(blocks("toml")).to.include(readFileSync(new URL("foundry.toml", FIXTURE), "utf8"));
  });

  it("its solc-from-npm.mjs is the tested wrapper, and the fixture is executable as forge needs", () => {
    const wrapper = new URL("solc-from-npm.mjs", FIXTURE);
    expect(blocks("js")).to.include(readFileSync(wrapper, "utf8"));
    expect(statSync(wrapper).mode & 0o111, "executable bits").to.not.equal(0);
  });

  it("every typechain export it lists exists in the package's exports, v0.8 included", () => {
    const exports = (JSON.parse(readFileSync(new URL("../../contracts/package.json", import.meta.url), "utf8")) as { exports: Record<string, unknown> }).exports;
    for (const version of ["v06", "v07", "v08"]) {
      expect(exports, version).to.have.property(`./typechain/${version}`);
      expect(README).to.include(`/typechain/${version}`);
    }
  });
});
