// The image's build context (issue 33.7): the Containerfile copies an allow-list, so what a checkout may hold beside
// the code (a paymaster.json, a .env, a PIN file, a token folder, a stray package) is never copied into the image.
// Read from the Containerfile itself (fast, no podman); test/container.test.ts proves it on a built image.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

const REPOSITORY = new URL("../../..", import.meta.url).pathname;

/** Every COPY from the build context (not --from another stage): its sources, as written. */
function contextCopies(containerfile: string): string[][] {
  const instructions = containerfile.replace(/\\\n/g, " ").split("\n").map((line) => line.trim());
  return instructions
    .filter((line) => /^COPY\s/i.test(line))
    .map((line) => line.split(/\s+/).slice(1))
    .filter((words) => !words.some((word) => word.startsWith("--from=")))
    .map((words) => words.filter((word) => !word.startsWith("--")).slice(0, -1));
}

/** Whether copying `source` (a file or folder of the context) brings `file` into the image. */
function covers(source: string, file: string): boolean {
  const normal = path.posix.normalize(source).replace(/\/$/, "");
  return normal === "." || normal === "" || file === normal || file.startsWith(`${normal}/`);
}

describe("the Containerfile copies an allow-list from the build context", () => {
  const copies = contextCopies(readFileSync(path.join(REPOSITORY, "Containerfile"), "utf8"));
  const sources = copies.flat();

  it("names each file and folder it copies: no `.`, no wildcard, each one present in the repository", () => {
    expect(copies.length).to.be.greaterThan(5);
    for (const source of sources) {
      expect(source, "a source").to.not.match(/[*?[]/);
      expect(path.posix.normalize(source).replace(/\/$/, ""), "the whole context").to.not.equal(".");
      expect(existsSync(path.join(REPOSITORY, source)), `${source} exists`).to.equal(true);
    }
  });

  it("copies none of what an operator may keep in a checkout, nor a stray package", () => {
    const stray = [
      ".env",
      "paymaster.json",
      "pin",
      "tokens/softhsm/token.db",
      ".data/paymaster.sqlite",
      "packages/service/.env",
      "packages/service/paymaster.json",
      "packages/service/pin.txt",
      "packages/stray/package.json",
      "deployments/local.json",
    ];
    for (const file of stray) {
      const copiedBy = sources.filter((source) => covers(source, file));
      expect(copiedBy, `${file} reaches the image`).to.deep.equal([]);
    }
  });
});
