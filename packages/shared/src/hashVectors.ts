// The frozen golden vectors of the paymaster hash (vectors/paymaster-hash.json): their JSON shape and the
// conversion back to typed inputs. Both the TypeScript mirror's tests and the contracts' getHash tests read
// the same committed file, so neither side can change the signed hash without a test failing.
import type { Erc20PaymasterHashParams, VerifyingPaymasterHashParams } from "./hash.ts";
import type { ChargeMode } from "./paymasterData.ts";
import type { Address, EntryPointVersion, Hex, UserOperationV06, UserOperationV07 } from "./types.ts";

/** One vector as committed: integers as decimal strings. */
export interface HashVectorJson {
  name: string;
  version: EntryPointVersion;
  kind: "verifying" | "erc20";
  chainId: string;
  paymaster: Address;
  validUntil: number;
  validAfter: number;
  token?: Address;
  exchangeRate?: string;
  chargeMode?: number;
  maxTokenCharge?: string;
  /**
   * A sender delegated by EIP-7702 (its code 0xef0100 ‖ delegate): its delegate, hashed instead of the v0.8
   * 0x7702 marker, and for an op without initCode (every version) instead of keccak256 of the empty initCode.
   */
  eip7702Delegate?: Address;
  /** The op's hashed fields (v0.6: UserOperation's; v0.7/v0.8: unpacked, with factory/factoryData). */
  userOp: Readonly<Record<string, string | undefined>>;
  hash: Hex;
}

/** A vector as typed inputs: `params` for verifyingPaymasterHash / erc20PaymasterHash. */
export type HashVector =
  | { name: string; kind: "verifying"; params: VerifyingPaymasterHashParams; hash: Hex }
  | { name: string; kind: "erc20"; params: Erc20PaymasterHashParams; hash: Hex };

const BIGINT_FIELDS = new Set([
  "nonce",
  "callGasLimit",
  "verificationGasLimit",
  "preVerificationGas",
  "maxFeePerGas",
  "maxPriorityFeePerGas",
  "paymasterVerificationGasLimit",
  "paymasterPostOpGasLimit",
]);

/** Typed inputs of a committed vector (paymasterAndData, paymasterData and signature are not hashed: empty). */
export function parseHashVector(json: HashVectorJson): HashVector {
  const present = Object.entries(json.userOp).filter((e): e is [string, string] => e[1] !== undefined);
  const fields = Object.fromEntries(present.map(([k, v]) => [k, BIGINT_FIELDS.has(k) ? BigInt(v) : v]));
  const common = {
    chainId: BigInt(json.chainId),
    paymaster: json.paymaster,
    validUntil: json.validUntil,
    validAfter: json.validAfter,
    eip7702Delegate: json.eip7702Delegate,
  };
  const packedOp = { ...fields, paymaster: json.paymaster, paymasterData: "0x", signature: "0x" } as unknown as UserOperationV07;
  const versioned =
    json.version === "v0.6"
      ? { version: "v0.6" as const, userOp: { ...fields, paymasterAndData: "0x", signature: "0x" } as unknown as UserOperationV06 }
      : { version: json.version, userOp: packedOp };
  if (json.kind === "verifying") return { name: json.name, kind: "verifying", params: { ...versioned, ...common }, hash: json.hash };
  return {
    name: json.name,
    kind: "erc20",
    params: { ...versioned, ...common, token: json.token!, exchangeRate: BigInt(json.exchangeRate!), chargeMode: json.chargeMode as ChargeMode, maxTokenCharge: BigInt(json.maxTokenCharge!) },
    hash: json.hash,
  };
}
