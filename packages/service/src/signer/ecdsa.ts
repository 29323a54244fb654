/**
 * secp256k1 ECDSA as a PKCS#11 token speaks it, turned into what the paymaster contracts accept: the curve's
 * DER OID (CKA_EC_PARAMS), the public point (CKA_EC_POINT), and a raw r ‖ s signature (CKM_ECDSA) made low-s
 * and given the recovery id that recovers the token's own public key. Pure functions, except the recovery.
 */
import { getAddress, keccak256, type Address, type Hex } from "viem";
import { recoverPublicKey } from "./signer.ts";

/** DER of the OID 1.3.132.0.10 (secp256k1): CKA_EC_PARAMS of the keys we create and accept. */
export const SECP256K1_EC_PARAMS = Buffer.from("06052b8104000a", "hex");

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = N >> 1n;

/**
 * The 65-byte uncompressed point 04 ‖ X ‖ Y of a CKA_EC_POINT: PKCS#11 wraps it in a DER OCTET STRING
 * (04 41 04 …); some libraries return it bare. Throws on anything else (a compressed point, another curve's size).
 */
export function uncompressedPoint(ecPoint: Uint8Array): Buffer {
  const bytes = Buffer.from(ecPoint);
  if (bytes.length === 67 && bytes[0] === 0x04 && bytes[1] === 0x41 && bytes[2] === 0x04) return bytes.subarray(2);
  if (bytes.length === 65 && bytes[0] === 0x04) return bytes;
  throw new Error(`the key's CKA_EC_POINT is not an uncompressed secp256k1 point (${bytes.length} bytes)`);
}

/** The Ethereum address of an uncompressed public key (04 ‖ X ‖ Y). */
export function addressOfPoint(point: Uint8Array): Address {
  return getAddress(`0x${keccak256(Buffer.from(point).subarray(1)).slice(-40)}`);
}

/** r ‖ s with s in the lower half of the order (the EntryPoints' OpenZeppelin ECDSA refuses high s). */
export function lowS(rs: Uint8Array): Buffer {
  if (rs.length !== 64) throw new Error(`the token's ECDSA signature is ${rs.length} bytes, not r ‖ s (64)`);
  const s = BigInt(`0x${Buffer.from(rs.subarray(32)).toString("hex")}`);
  if (s <= HALF_N) return Buffer.from(rs);
  return Buffer.concat([rs.subarray(0, 32), Buffer.from((N - s).toString(16).padStart(64, "0"), "hex")]);
}

/**
 * The 65-byte r ‖ s ‖ v signature the contracts expect, from the token's raw signature of `digest`: low-s,
 * v = 27 + the recovery id that recovers `point`. Undefined when neither does: the token did not sign `digest`
 * with that key, and such a signature must never leave.
 */
export async function ethereumSignature(rs: Uint8Array, digest: Uint8Array, point: Uint8Array): Promise<Hex | undefined> {
  const normal = lowS(rs);
  for (const recid of [0, 1] as const) {
    const recovered = await recoverPublicKey(normal, recid, digest);
    if (recovered !== undefined && Buffer.from(recovered).equals(Buffer.from(point))) {
      return `0x${normal.toString("hex")}${(27 + recid).toString(16)}`;
    }
  }
  return undefined;
}
