/**
 * Gas: preVerificationGas from the op's calldata cost, and the limits derived from one simulation run with
 * generous limits at a 1-wei gas price (so `paid` is gas, and no deposit, prefund or token amount gets in the
 * way). Margins are deliberate: verification gas has no penalty for being unused; v0.7 charges 10% of unused
 * call gas, so the call gas limit stays close to what the calls used.
 */
import { encodeAbiParameters, hexToBytes, type Hex } from "viem";
import { packUserOpV07 } from "@paymaster/shared";
import type { SimulatedOp, ExecutionResult } from "../chain/entryPoint.ts";

/** Gas the paymasters' own validation may take (v0.7 paymasterVerificationGasLimit), measured by the tests. */
export const PAYMASTER_VERIFICATION_GAS = { verifying: 50_000n, erc20: 120_000n } as const;
/** v0.7 paymasterPostOpGasLimit on top of the ERC-20 paymaster's postOpGas (covers a first payment to an empty treasury). */
export const ERC20_POST_OP_HEADROOM = 25_000n;

const USER_OP_V06_TUPLE = {
  type: "tuple",
  components: [
    { name: "sender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "initCode", type: "bytes" },
    { name: "callData", type: "bytes" },
    { name: "callGasLimit", type: "uint256" },
    { name: "verificationGasLimit", type: "uint256" },
    { name: "preVerificationGas", type: "uint256" },
    { name: "maxFeePerGas", type: "uint256" },
    { name: "maxPriorityFeePerGas", type: "uint256" },
    { name: "paymasterAndData", type: "bytes" },
    { name: "signature", type: "bytes" },
  ],
} as const;

const USER_OP_V07_TUPLE = {
  type: "tuple",
  components: [
    { name: "sender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "initCode", type: "bytes" },
    { name: "callData", type: "bytes" },
    { name: "accountGasLimits", type: "bytes32" },
    { name: "preVerificationGas", type: "uint256" },
    { name: "gasFees", type: "bytes32" },
    { name: "paymasterAndData", type: "bytes" },
    { name: "signature", type: "bytes" },
  ],
} as const;

/**
 * The calldata cost of the op inside a one-op bundle, the way eth-infinitism's bundler prices it: 21000 for
 * the transaction, 18300 per op, 4 per word of the encoded op, 16 per non-zero and 4 per zero byte. The op
 * must already carry its final-length paymaster data and signature. (L2 data fees are not included.)
 */
export function preVerificationGas(op: SimulatedOp): bigint {
  const encoded: Hex =
    op.version === "v0.6"
      ? encodeAbiParameters([USER_OP_V06_TUPLE], [{ ...op.userOp, preVerificationGas: 0xffffffn }])
      : encodeAbiParameters([USER_OP_V07_TUPLE], [packUserOpV07({ ...op.userOp, preVerificationGas: 0xffffffn })]);
  const bytes = hexToBytes(encoded);
  let cost = 0n;
  for (const byte of bytes) cost += byte === 0 ? 4n : 16n;
  const words = BigInt(Math.ceil(bytes.length / 32));
  return cost + 21_000n + 18_300n + 4n * words;
}

export interface MeasuredLimits {
  verificationGasLimit: bigint;
  callGasLimit: bigint;
}

/**
 * Limits from an estimation run (`result`) of `op` (its generous limits, 1-wei price).
 * - verification: everything validation used (account creation, account and paymaster validation) + 25% + 15k;
 *   v0.6 also runs postOp under this limit, so it covers `postOpGas` too.
 * - call: what execution used (v0.7: solved out of the 10% penalty on the unused part) less postOp's share,
 *   + 20% + 10k for the 63/64 rule of nested calls.
 */
export function limitsFromSimulation(op: SimulatedOp, result: ExecutionResult, postOpGas: bigint): MeasuredLimits {
  const { preVerificationGas: pvg, callGasLimit } = op.userOp;
  const validation = result.preOpGas - pvg;
  let executionAndPostOp = result.paid - result.preOpGas;
  if (op.version === "v0.7") {
    const limit = callGasLimit + (op.userOp.paymasterPostOpGasLimit ?? 0n);
    const solved = ((executionAndPostOp - limit / 10n) * 10n) / 9n;
    if (solved < limit) executionAndPostOp = solved;
  }
  const execution = executionAndPostOp > postOpGas ? executionAndPostOp - postOpGas : 0n;
  let verificationGasLimit = (validation * 125n) / 100n + 15_000n;
  if (op.version === "v0.6" && verificationGasLimit < postOpGas * 2n) verificationGasLimit = postOpGas * 2n;
  return { verificationGasLimit, callGasLimit: (execution * 120n) / 100n + 10_000n };
}
