/**
 * The signer of a network, from its configuration: the PKCS#11 token's key when `pkcs11` is set, else the
 * first signer key in memory (the embedded default).
 */
import type { Logger } from "pino";
import { privateKeyToAddress } from "viem/accounts";
import type { Address } from "@paymaster/shared";
import type { NetworkConfig } from "../config/types.ts";
import { openPkcs11Signer } from "./pkcs11Signer.ts";
import { findKey, withTokenSession } from "./pkcs11Token.ts";
import { createSigner, type PaymasterSigner } from "./signer.ts";

/**
 * Throws RpcError SIGNER_UNAVAILABLE when the token cannot be used now (the network's pre-flight retries).
 * `logger`: where a token signer reports losing and regaining its key.
 */
export async function openNetworkSigner(config: NetworkConfig, logger?: Logger): Promise<PaymasterSigner> {
  return config.pkcs11 ? openPkcs11Signer(config.pkcs11, config.name, logger) : createSigner(config.signerKeys[0]!);
}

/**
 * The addresses of a network's configured signers, for the administration (deploy, status, signer list): the
 * signer keys', or the token key's, read from the token (none when the token cannot be read from here).
 */
export function configuredSignerAddresses(config: NetworkConfig): Address[] {
  if (config.pkcs11) {
    const pkcs11 = config.pkcs11;
    try {
      const key = withTokenSession(pkcs11, (lib, session) => findKey(lib, session, pkcs11));
      return key ? [key.address] : [];
    } catch {
      return [];
    }
  }
  return config.signerKeys.map((key) => privateKeyToAddress(key) as Address);
}
