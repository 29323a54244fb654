/**
 * The signer of a network, from its configuration: the PKCS#11 token's key when `pkcs11` is set, else the
 * first signer key in memory (the embedded default).
 */
import type { NetworkConfig } from "../config/types.ts";
import { openPkcs11Signer } from "./pkcs11Signer.ts";
import { createSigner, type PaymasterSigner } from "./signer.ts";

/** Throws RpcError SIGNER_UNAVAILABLE when the token cannot be used now (the network's pre-flight retries). */
export async function openNetworkSigner(config: NetworkConfig): Promise<PaymasterSigner> {
  return config.pkcs11 ? openPkcs11Signer(config.pkcs11, config.name) : createSigner(config.signerKeys[0]!);
}
