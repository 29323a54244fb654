/**
 * The pkcs11js binding, the one place that loads it. pkcs11js is a native addon (node-gyp: python3, make and a C++
 * compiler at install time) needed only by the optional PKCS#11 signer, so the package declares it as an optional
 * peer dependency: `npm i @paymaster/service` installs without a toolchain, and whoever keeps keys in a token adds
 * it. Loaded on first use; when it is absent the error says what to install, at the version this package is tested
 * with (its peerDependencies, read from our package.json: one place for the number).
 */
import { createRequire } from "node:module";
import type { Pkcs11Binding } from "./pkcs11Api.ts";

export type { Pkcs11Binding };

/** Why the binding is not there: the message is for the operator, whole (no stack needed). */
export class Pkcs11BindingUnavailable extends Error {
  override name = "Pkcs11BindingUnavailable";
}

/** `pkcs11js@<version>` as our package.json's peerDependencies name it. */
export function pkcs11jsSpecifier(): string {
  const manifest = createRequire(import.meta.url)("../../package.json") as { peerDependencies?: Record<string, string> };
  return `pkcs11js@${manifest.peerDependencies?.pkcs11js ?? "latest"}`;
}

/** The binding as resolved from `from` (a file URL or path: this module's own location, or a test's). */
export function loadPkcs11Binding(from: string | URL = import.meta.url): Pkcs11Binding {
  const require = createRequire(from);
  let resolved: string;
  try {
    resolved = require.resolve("pkcs11js");
  } catch {
    throw new Pkcs11BindingUnavailable(
      `the PKCS#11 signer needs the optional package pkcs11js, which is not installed: run \`npm i ${pkcs11jsSpecifier()}\` beside @paymaster/service (it compiles a native addon: python3, make and a C++ compiler are needed for that install)`,
    );
  }
  try {
    return require(resolved) as Pkcs11Binding;
  } catch (error) {
    throw new Pkcs11BindingUnavailable(`the pkcs11js binding is installed but does not load (${(error as Error).message.split("\n")[0]}): reinstall it with its build script (\`npm i ${pkcs11jsSpecifier()}\`, with python3, make and a C++ compiler)`);
  }
}
