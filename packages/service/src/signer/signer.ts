/**
 * The paymaster signer in memory: EIP-191 personal-message signatures over the 32-byte paymaster hash, with the
 * native secp256k1 addon (libsecp256k1, ~8x faster than pure JS on this machine: signing is the hot path)
 * and viem's pure-JS signer as the fallback when the addon cannot load. The key never leaves this module
 * and is never logged. The other implementation of PaymasterSigner keeps the key in a PKCS#11 token
 * (src/signer/pkcs11Signer.ts); src/signer/open.ts picks one from a network's configuration.
 */
import { createRequire } from "node:module";
import { recoverPublicKey as recoverPublicKeyJs } from "viem";
import { privateKeyToAccount, sign as signJs } from "viem/accounts";
import { toEthSignedMessageHash, type Address, type Hex } from "@paymaster/shared";
import type { Timing } from "../timing.ts";

export interface PaymasterSigner {
  readonly address: Address;
  /**
   * 65-byte r ‖ s ‖ v (v = 27 | 28) EIP-191 signature of `hash`, low-s. A signer that waits on a device (a
   * PKCS#11 token) adds that wait to `timing` as signer time; signing in memory is the service's own work.
   */
  signHash(hash: Hex, timing?: Timing): Promise<Hex>;
  /** Which implementation signs: "native" (libsecp256k1), "js" (viem/noble), or "pkcs11" (a token). */
  readonly implementation: "native" | "js" | "pkcs11";
  /**
   * Why the signer cannot sign now, while its last attempt failed (a token's: the PIN refused, the token gone):
   * `cause` for clients and /ready, `detail` (the library's path, the CKR code) for the log and the operator.
   * Absent or undefined: it signs.
   */
  failing?(): { cause: string; detail: string } | undefined;
  /** Releases what the signer holds (a token's sessions); the in-memory signer holds nothing. */
  close?(): void;
}

interface NativeSecp256k1 {
  ecdsaSign(message: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number };
  ecdsaRecover(signature: Uint8Array, recid: number, message: Uint8Array, compressed: boolean): Uint8Array;
}

function loadNative(): NativeSecp256k1 | undefined {
  try {
    const require = createRequire(import.meta.url);
    // The package's own entry picks the prebuilt N-API binary and falls back to elliptic (pure JS) itself;
    // require the binding directly so we know which one runs.
    return require("secp256k1/bindings") as NativeSecp256k1;
  } catch {
    return undefined;
  }
}

const native = loadNative();

/** A signer for `privateKey`; `prefer: "js"` forces the pure-JS path (tests compare both). */
export function createSigner(privateKey: Hex, { prefer = "native" }: { prefer?: "native" | "js" } = {}): PaymasterSigner {
  const address = privateKeyToAccount(privateKey).address;
  if (native && prefer === "native") {
    // Buffers for the hex conversions: native and far cheaper than viem's per-byte JS loops.
    const keyBytes = Buffer.from(privateKey.slice(2), "hex");
    return {
      address,
      implementation: "native",
      async signHash(hash) {
        const digest = Buffer.from(toEthSignedMessageHash(hash).slice(2), "hex");
        const { signature, recid } = native.ecdsaSign(digest, keyBytes);
        const rs = Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength).toString("hex");
        return `0x${rs}${(27 + recid).toString(16)}`;
      },
    };
  }
  return {
    address,
    implementation: "js",
    async signHash(hash) {
      return signJs({ hash: toEthSignedMessageHash(hash), privateKey, to: "hex" });
    },
  };
}

/**
 * The uncompressed public key (0x04 ‖ X ‖ Y, 65 bytes) that signed `digest` with r ‖ s and `recid`, or undefined
 * when none does (libsecp256k1 when loaded, else viem/noble).
 */
export async function recoverPublicKey(rs: Uint8Array, recid: 0 | 1, digest: Uint8Array): Promise<Uint8Array | undefined> {
  try {
    if (native) return native.ecdsaRecover(rs, recid, digest, false);
    const signature = `0x${Buffer.from(rs).toString("hex")}${(27 + recid).toString(16)}` as Hex;
    const key = await recoverPublicKeyJs({ hash: `0x${Buffer.from(digest).toString("hex")}`, signature });
    return Buffer.from(key.slice(2), "hex");
  } catch {
    return undefined;
  }
}
