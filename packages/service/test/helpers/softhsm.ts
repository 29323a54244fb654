// SoftHSM2 tokens for the PKCS#11 signer tests: one throwaway token directory per test process (SOFTHSM2_CONF
// points at a config of its own in a temp dir, so parallel runs never share a token), a token per test made with
// softhsm2-util, its user PIN in a file. SoftHSM2 is installed by scripts/ensure-softhsm.sh (npm test).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import path from "node:path";
import type * as Pkcs11 from "pkcs11js";
import type { Pkcs11Library } from "../../src/signer/pkcs11Api.ts";
import { findSlot, withTokenSession, type Pkcs11Config } from "../../src/signer/pkcs11Token.ts";

const CANDIDATES = [process.env.PAYMASTER_SOFTHSM2_MODULE, "/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so"];

/** The SoftHSM2 library, if installed. */
export const SOFTHSM_MODULE: string | undefined = CANDIDATES.find((p): p is string => p !== undefined && existsSync(p));

/** Skips the suite where SoftHSM2 is missing (fails it under CI, where scripts/ensure-softhsm.sh installed it). */
export function requireSoftHsm(context: Mocha.Context): string {
  if (SOFTHSM_MODULE !== undefined) return SOFTHSM_MODULE;
  if (process.env.CI === "true") throw new Error("SoftHSM2 is not installed: scripts/ensure-softhsm.sh should have installed it");
  context.skip();
}

let tokenRoot: string | undefined;

/** This process's token directory (SOFTHSM2_CONF set once, before the library is first initialised). */
function tokenDirectory(): string {
  if (tokenRoot) return tokenRoot;
  const dir = mkdtempSync(path.join(tmpdir(), "paymaster-softhsm-"));
  tokenRoot = path.join(dir, "tokens");
  execFileSync("mkdir", ["-p", tokenRoot]);
  const conf = path.join(dir, "softhsm2.conf");
  writeFileSync(conf, `directories.tokendir = ${tokenRoot}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
  process.env.SOFTHSM2_CONF = conf;
  return tokenRoot;
}

export interface SoftToken {
  /** The signer configuration: this token by label, key `keyLabel`, the PIN in `pinFile`. */
  config: Pkcs11Config;
  pin: string;
  pinFile: string;
  /** SoftHSM2's directory of this token (remove it and the token is gone). */
  dir: string;
}

let tokens = 0;

/** A fresh initialised token (label unique in this process unless given) with a user PIN; no key yet. */
export function newSoftToken({ keyLabel = "paymaster-signer", label, pin }: { keyLabel?: string; label?: string; pin?: string } = {}): SoftToken {
  const root = tokenDirectory();
  tokens++;
  label ??= `pm-${process.pid}-${tokens}`;
  pin ??= `pin-${tokens}-${Math.random().toString(36).slice(2, 8)}`;
  const before = new Set(readdirSync(root));
  // A throwaway test token: its PINs are no secret (softhsm2-util takes them on its command line).
  execFileSync("softhsm2-util", ["--init-token", "--free", "--label", label, "--so-pin", "so-pin-0", "--pin", pin], { env: process.env, stdio: "ignore" });
  const created = readdirSync(root).filter((d) => !before.has(d));
  if (created.length !== 1) throw new Error(`softhsm2-util made ${created.length} token directories`);
  const pinFile = path.join(path.dirname(root), `${label}.pin`);
  writeFileSync(pinFile, `${pin}\n`, { mode: 0o600 });
  return { config: { module: SOFTHSM_MODULE!, tokenLabel: label, keyLabel, pin: { file: pinFile } }, pin, pinFile, dir: path.join(root, created[0]!) };
}

/** pkcs11js whole, as its own types describe it (the service declares only the calls it makes: src/signer/pkcs11Api.ts). */
export function wholeBinding(): typeof Pkcs11 {
  return createRequire(import.meta.url)("pkcs11js") as typeof Pkcs11;
}

/** A library the service opened, with every call pkcs11js has (the same object). */
export function wholeLibrary(lib: Pkcs11Library): Pkcs11.PKCS11 {
  return lib as unknown as Pkcs11.PKCS11;
}

/** The token drops every session of this process (as an HSM restart does): a signer must log in again. */
export function dropSessions(token: SoftToken): void {
  withTokenSession({ ...token.config, pin: { env: "TEST", value: token.pin } }, (lib) => wholeLibrary(lib).C_CloseAllSessions(findSlot(lib, token.config)));
}
