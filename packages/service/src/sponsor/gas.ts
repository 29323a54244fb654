/**
 * Gas: preVerificationGas from the op's calldata cost, and the limits derived from one simulation run with
 * generous limits at a 1-wei gas price (so `paid` is gas, and no deposit, prefund or token amount gets in the
 * way). Margins are deliberate: verification gas has no penalty for being unused; v0.7 charges 10% of unused
 * call gas, so the call gas limit stays close to what the calls used.
 */
import { UINT128_MAX, type Hex } from "@paymaster/shared";
import type { SimulatedOp, ExecutionResult } from "../chain/entryPoint.ts";
import { encodeUserOpParameter } from "../chain/userOpAbi.ts";

const UINT256_MAX = (1n << 256n) - 1n;

/** What bundlers charge an op's share of a one-op bundle for, besides its bytes (the sources name them). */
export const PVG_OVERHEAD = {
  /** The transaction's base cost (both models). */
  transaction: 21_000n,
  /** eth-infinitism's reference bundler (and Rundler): per op, and per 32-byte word of the encoded op. */
  reference: { perOp: 18_300n, perOpWord: 4n },
  /**
   * Alto (rpc/estimation/preVerificationGasCalculator.ts): the bundle's fixed cost and the per-op cost, plus
   * 9.2 per word of callData (or, for executeUserOp callData, 1610 + 8.2 per word of the encoded op).
   */
  alto: { perBundle: 9_830n, perOp: 7_260n, perCallDataWordMilli: 9_200n, executeUserOp: 1_610n, executeUserOpPerOpWordMilli: 8_200n },
  /** EIP-7702: the type-4 transaction's intrinsic cost per authorization (PER_EMPTY_ACCOUNT_COST), paid by the bundler. */
  eip7702Authorization: 25_000n,
  /** EIP-7623 (Prague): a transaction pays at least this much per calldata token (a zero byte is 1 token, others 4). */
  floorPerToken: 10n,
} as const;

/** IAccountExecute.executeUserOp: v0.7+ callData with this selector gets the whole op, which Alto prices per op word. */
const EXECUTE_USER_OP_SELECTOR = "0x8dd7712f";

const nonZeroBytes = (count: number): Hex => `0x${"ff".repeat(count)}`;
const byteCount = (data: Hex): number => (data.length - 2) / 2;

/**
 * The op as bundlers price it: every gas field at its full width and the paymaster data and signature as
 * non-zero bytes of their final lengths (the values are not final when preVerificationGas is priced, and Alto
 * checks eth_sendUserOperation against this filling too). Alto (0.0.20) fills a v0.6 op's paymasterAndData
 * and signature with as many bytes as their hex strings have characters (about twice their length); v0.6 is
 * priced the same, or Alto refuses the op.
 */
function filledForPricing(op: SimulatedOp): SimulatedOp {
  const gas = { callGasLimit: UINT128_MAX, verificationGasLimit: UINT128_MAX, preVerificationGas: UINT256_MAX, maxFeePerGas: UINT128_MAX, maxPriorityFeePerGas: UINT128_MAX };
  if (op.version === "v0.6") {
    const { paymasterAndData, signature } = op.userOp;
    return { version: "v0.6", userOp: { ...op.userOp, ...gas, paymasterAndData: nonZeroBytes(paymasterAndData.length), signature: nonZeroBytes(signature.length) } };
  }
  const u = op.userOp;
  const paymaster =
    u.paymaster === undefined
      ? {}
      : { paymasterVerificationGasLimit: UINT128_MAX, paymasterPostOpGasLimit: UINT128_MAX, paymasterData: nonZeroBytes(byteCount(u.paymasterData ?? "0x")) };
  return { version: op.version, userOp: { ...u, ...gas, ...paymaster, signature: nonZeroBytes(byteCount(u.signature)) } } as SimulatedOp;
}

/**
 * The gas the op surely pays the bundler back besides preVerificationGas, as Alto counts it against EIP-7623's
 * floor (with its default multipliers): a tenth of the call gas limit and of the postOp limit unscaled by 120%
 * (v0.6: of the call and verification gas limits).
 */
function surelyRepaid(op: SimulatedOp): bigint {
  if (op.version === "v0.6") return (op.userOp.callGasLimit + op.userOp.verificationGasLimit) / 10n;
  return (op.userOp.callGasLimit + ((op.userOp.paymasterPostOpGasLimit ?? 0n) * 100n) / 120n) / 10n;
}

/**
 * preVerificationGas for the op's share of a one-op bundle: its bytes (4 per zero, 16 per non-zero byte of
 * the encoded op, priced as filled above) plus the larger of the two bundler overhead models in PVG_OVERHEAD,
 * plus 25,000 when the op carries an EIP-7702 authorization — or, when more, EIP-7623's floor (Prague: the
 * bundle pays at least 10 gas per calldata token) less what the op surely repays through its own gas. The
 * floor depends on the op's call and postOp limits: price the op again once they are final. The op must
 * already carry its final-length paymaster data and signature. (L2 data fees are not included.)
 */
export function preVerificationGas(op: SimulatedOp): bigint {
  const encoded = encodeUserOpParameter(filledForPricing(op));
  // Zero bytes straight off the hex digits ("00" pairs): no byte array is built.
  const bytes = (encoded.length - 2) / 2;
  let zeros = 0;
  for (let i = 2; i < encoded.length; i += 2) {
    if (encoded.charCodeAt(i) === 48 && encoded.charCodeAt(i + 1) === 48) zeros++;
  }
  const tokens = BigInt(zeros + 4 * (bytes - zeros));
  const words = BigInt(Math.ceil(bytes / 32));
  const { transaction, reference, alto, eip7702Authorization, floorPerToken } = PVG_OVERHEAD;
  const referenceOverhead = reference.perOp + reference.perOpWord * words;
  const callData = op.userOp.callData;
  const altoPerOp =
    op.version !== "v0.6" && callData.slice(0, 10).toLowerCase() === EXECUTE_USER_OP_SELECTOR
      ? alto.executeUserOp + (alto.executeUserOpPerOpWordMilli * words) / 1000n
      : (alto.perCallDataWordMilli * BigInt(Math.ceil((callData.length - 2) / 64))) / 1000n;
  const altoOverhead = alto.perBundle + alto.perOp + altoPerOp;
  const authorization = op.version === "v0.8" && op.userOp.eip7702Auth !== undefined ? eip7702Authorization : 0n;
  const standard = transaction + 4n * tokens + (referenceOverhead > altoOverhead ? referenceOverhead : altoOverhead) + authorization;
  const floor = transaction + floorPerToken * tokens - surelyRepaid(op);
  return standard > floor ? standard : floor;
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
 * - call: what execution and postOp used together (v0.7: solved out of the 10% penalty on the unused part),
 *   + 20% + 10k for the 63/64 rule of nested calls. postOp's share is not taken off: the run does not tell it
 *   apart, and the paymaster's postOpGas (what its usual postOp costs) is no bound on it — a pre-charge that
 *   refunds nothing, as an estimate's tiny one may, costs postOp half as much — so taking it off could leave
 *   the signed op's calls short of gas. In ERC-20 mode that costs the sender the 10% penalty on postOp's share
 *   (v0.7, v0.8: a few thousand gas); the other modes have no postOp.
 */
export function limitsFromSimulation(op: SimulatedOp, result: ExecutionResult, minPostOpGasLimit: bigint): MeasuredLimits {
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
  const execution = executionAndPostOp > 0n ? executionAndPostOp : 0n;
  let verificationGasLimit = (validation * 125n) / 100n + 15_000n;
  if (op.version === "v0.6" && verificationGasLimit < minPostOpGasLimit) verificationGasLimit = minPostOpGasLimit;
  return { verificationGasLimit, callGasLimit: (execution * 120n) / 100n + 10_000n };
}
