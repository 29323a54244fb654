// pkcs11js is an optional peer dependency (a native addon needing a compiler to install): loaded on first use,
// and where it is not installed the error says what to install, at the version this package declares.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import type { Pkcs11Binding, Pkcs11Library } from "../src/signer/pkcs11Api.ts";
import { loadPkcs11Binding, Pkcs11BindingUnavailable, pkcs11jsSpecifier } from "../src/signer/pkcs11Binding.ts";
import manifest from "../package.json" with { type: "json" };
import { wholeBinding } from "./helpers/softhsm.ts";

describe("the pkcs11js binding, an optional peer dependency", () => {
  it("is declared optional for users and installed for this repository's own tests, at one version", () => {
    expect((manifest as { dependencies: Record<string, string> }).dependencies).to.not.have.property("pkcs11js");
    expect(manifest.peerDependenciesMeta.pkcs11js.optional).to.equal(true);
    expect(manifest.devDependencies.pkcs11js).to.equal(manifest.peerDependencies.pkcs11js);
    expect(pkcs11jsSpecifier()).to.equal(`pkcs11js@${manifest.peerDependencies.pkcs11js}`);
  });

  it("the published types do not name it (a project without it type-checks them): no source file imports its types; the shapes declared instead are its own", () => {
    const src = fileURLToPath(new URL("../src/", import.meta.url));
    const importers = readdirSync(src, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts"))
      .filter((file) => /from\s+["']pkcs11js["']|import\(["']pkcs11js["']\)/.test(readFileSync(path.join(src, file), "utf8")));
    expect(importers, "files importing pkcs11js's types").to.deep.equal([]);
    // Compile time: pkcs11js's own types are assignable to the declared ones (a binding that changed a call we
    // make fails the typecheck); run time: the loaded binding is what they say.
    const declared: Pkcs11Binding = wholeBinding();
    const library: Pkcs11Library = new declared.PKCS11();
    expect(library.C_SignAsync).to.be.a("function");
    expect(declared.CKM_ECDSA).to.equal(loadPkcs11Binding().CKM_ECDSA);
  });

  it("loads where it is installed", () => {
    const binding = loadPkcs11Binding();
    expect(binding.PKCS11).to.be.a("function");
    expect(binding.CKM_ECDSA).to.be.a("number");
  });

  it("where it is not installed: an error naming the package and version to install, and why it is optional", () => {
    // Resolved from a folder with no node_modules, in a process without NODE_PATH (pnpm's scripts put the
    // workspace's hoisted packages there, which a stranger's process does not have).
    const dir = mkdtempSync(path.join(tmpdir(), "paymaster-no-pkcs11js-"));
    try {
      const probe = path.join(dir, "probe.mjs");
      writeFileSync(
        probe,
        `import { loadPkcs11Binding } from ${JSON.stringify(new URL("../src/signer/pkcs11Binding.ts", import.meta.url).href)};
try { loadPkcs11Binding(import.meta.url); console.log(JSON.stringify({ loaded: true })); }
catch (error) { console.log(JSON.stringify({ name: error.name, message: error.message })); }`,
      );
      const { NODE_PATH: _, ...env } = process.env;
      const outcome = JSON.parse(execFileSync(process.execPath, [probe], { env, encoding: "utf8" })) as { name?: string; message?: string };
      expect(outcome.name, JSON.stringify(outcome)).to.equal(Pkcs11BindingUnavailable.name);
      expect(outcome.message).to.include(`npm i pkcs11js@${manifest.peerDependencies.pkcs11js}`);
      expect(outcome.message).to.match(/optional package pkcs11js, which is not installed.*C\+\+ compiler/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
