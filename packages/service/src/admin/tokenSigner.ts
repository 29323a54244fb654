/**
 * The PKCS#11 key a network's service signs with (its configuration's `pkcs11` block), for `paymaster signer add
 * --pkcs11`: the address of the key in the token, the key created first with `create`, or imported first from a
 * key file (a migration keeping the address). The key never leaves the token; the PIN comes from the environment
 * or a file, as for the service.
 */
import { readFileSync } from "node:fs";
import type { Address, Hex } from "@paymaster/shared";
import { signerKeySchema } from "../config/schema.ts";
import { findKey, generateKey, importKey, Pkcs11Failure, withTokenSession } from "../signer/pkcs11Token.ts";
import type { ChainTarget } from "./chainTarget.ts";
import { AdminError } from "./context.ts";

/** The one private key of a key file (as the service's key files: `#` comments and blank lines ignored), never echoed. */
export function readImportKey(file: string): Hex {
  let lines: string[];
  try {
    lines = readFileSync(file, "utf8").split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"));
  } catch (error) {
    throw new AdminError("INVALID_INPUT", `--import-key-file: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  if (lines.length !== 1) throw new AdminError("INVALID_INPUT", `--import-key-file: ${file} must hold exactly one key (it holds ${lines.length})`);
  const parsed = signerKeySchema.safeParse(lines[0]);
  if (!parsed.success) throw new AdminError("INVALID_INPUT", `--import-key-file: the key in ${file} ${parsed.error.issues[0]?.message ?? "is not a private key"}`);
  return parsed.data;
}

/** The token key's address (created now with `create`, imported with `importFrom`); INVALID_INPUT naming what is missing or wrong. */
export function tokenSignerAddress(target: ChainTarget, { create, importFrom }: { create: boolean; importFrom?: string }): { address: Address; created: boolean } {
  const pkcs11 = target.config?.pkcs11;
  if (pkcs11 === undefined) {
    throw new AdminError("INVALID_INPUT", `--pkcs11: network ${target.network} has no pkcs11 block in the configuration (module, tokenLabel or slot, keyLabel)`);
  }
  try {
    return withTokenSession(pkcs11, (lib, session) => {
      if (create) return { address: generateKey(lib, session, pkcs11).address, created: true };
      if (importFrom !== undefined) return { address: importKey(lib, session, pkcs11, readImportKey(importFrom)).address, created: true };
      const key = findKey(lib, session, pkcs11);
      if (key === undefined) throw new Pkcs11Failure("key", `no key labelled "${pkcs11.keyLabel}" in the token: give --create to create it`);
      return { address: key.address, created: false };
    });
  } catch (error) {
    if (error instanceof Pkcs11Failure) throw new AdminError("INVALID_INPUT", `--pkcs11: ${error.message}`);
    throw error;
  }
}
