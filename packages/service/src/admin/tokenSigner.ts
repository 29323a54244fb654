/**
 * The PKCS#11 key a network's service signs with (its configuration's `pkcs11` block), for `paymaster signer add
 * --pkcs11`: the address of the key in the token, the key created first with `create`. The key never leaves the
 * token; the PIN comes from the environment or a file, as for the service.
 */
import type { Address } from "@paymaster/shared";
import { findKey, generateKey, Pkcs11Failure, withTokenSession } from "../signer/pkcs11Token.ts";
import type { ChainTarget } from "./chainTarget.ts";
import { AdminError } from "./context.ts";

/** The token key's address (created now with `create`); INVALID_INPUT naming what is missing or wrong. */
export function tokenSignerAddress(target: ChainTarget, { create }: { create: boolean }): { address: Address; created: boolean } {
  const pkcs11 = target.config?.pkcs11;
  if (pkcs11 === undefined) {
    throw new AdminError("INVALID_INPUT", `--pkcs11: network ${target.network} has no pkcs11 block in the configuration (module, tokenLabel or slot, keyLabel)`);
  }
  try {
    return withTokenSession(pkcs11, (lib, session) => {
      if (create) return { address: generateKey(lib, session, pkcs11).address, created: true };
      const key = findKey(lib, session, pkcs11);
      if (key === undefined) throw new Pkcs11Failure("key", `no key labelled "${pkcs11.keyLabel}" in the token: give --create to create it`);
      return { address: key.address, created: false };
    });
  } catch (error) {
    if (error instanceof Pkcs11Failure) throw new AdminError("INVALID_INPUT", `--pkcs11: ${error.message}`);
    throw error;
  }
}
