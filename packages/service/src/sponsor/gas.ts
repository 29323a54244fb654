/**
 * Gas: preVerificationGas from the op's calldata cost, and the limits derived from one simulation run with
 * generous limits at a 1-wei gas price (so `paid` is gas, and no deposit, prefund or token amount gets in the
 * way). Margins are deliberate: verification gas has no penalty for being unused; v0.7 charges 10% of unused
 * call gas, so the call gas limit stays close to what the calls used.
 */
import type { SimulatedOp, ExecutionResult } from "../chain/entryPoint.ts";
import { encodeUserOpParameter } from "../chain/userOpAbi.ts";

/**
 * The calldata cost of the op inside a one-op bundle, the way eth-infinitism's bundler prices it: 21000 for
 * the transaction, 18300 per op, 4 per word of the encoded op, 16 per non-zero and 4 per zero byte. The op
 * must already carry its final-length paymaster data and signature. (L2 data fees are not included.)
 */
export function preVerificationGas(op: SimulatedOp): bigint {
  const encoded =
    op.version === "v0.6"
      ? encodeUserOpParameter({ version: "v0.6", userOp: { ...op.userOp, preVerificationGas: 0xffffffn } })
      : encodeUserOpParameter({ version: op.version, userOp: { ...op.userOp, preVerificationGas: 0xffffffn } });
  // Zero bytes straight off the hex digits ("00" pairs): no byte array is built.
  const bytes = (encoded.length - 2) / 2;
  let zeros = 0;
  for (let i = 2; i < encoded.length; i += 2) {
    if (encoded.charCodeAt(i) === 48 && encoded.charCodeAt(i + 1) === 48) zeros++;
  }
  const words = Math.ceil(bytes / 32);
  return BigInt(4 * zeros + 16 * (bytes - zeros) + 4 * words) + 21_000n + 18_300n;
}

export interface MeasuredLimits {
  verificationGasLimit: bigint;
  callGasLimit: bigint;
}

/**
 * Limits from an estimation run (`result`) of `op` (its generous limits, 1-wei price).
 * - verification: everything validation used (account creation, account and paymaster validation) + 25% + 15k;
 *   v0.6 also runs postOp under this limit, so it is at least `minPostOpGasLimit` (the ERC-20 paymaster's
 *   worst-case postOp, which its validation requires; 0 for the verifying paymaster).
 * - call: what execution used (v0.7: solved out of the 10% penalty on the unused part) less postOp's share,
 *   + 20% + 10k for the 63/64 rule of nested calls.
 */
export function limitsFromSimulation(op: SimulatedOp, result: ExecutionResult, postOpGas: bigint, minPostOpGasLimit: bigint): MeasuredLimits {
  const { preVerificationGas: pvg, callGasLimit } = op.userOp;
  const validation = result.preOpGas - pvg;
  let executionAndPostOp = result.paid - result.preOpGas;
  // v0.8 penalises the call and postOp parts separately and waives each up to 40k unused; with the estimate's
  // generous limits both exceed that, so v0.7's combined solve holds (within the margins below).
  if (op.version !== "v0.6") {
    const limit = callGasLimit + (op.userOp.paymasterPostOpGasLimit ?? 0n);
    const solved = ((executionAndPostOp - limit / 10n) * 10n) / 9n;
    if (solved < limit) executionAndPostOp = solved;
  }
  const execution = executionAndPostOp > postOpGas ? executionAndPostOp - postOpGas : 0n;
  let verificationGasLimit = (validation * 125n) / 100n + 15_000n;
  if (op.version === "v0.6" && verificationGasLimit < minPostOpGasLimit) verificationGasLimit = minPostOpGasLimit;
  return { verificationGasLimit, callGasLimit: (execution * 120n) / 100n + 10_000n };
}
