/**
 * Step: the gas the client gave. Decides the op's starting gas values: the client's non-zero limits and fees
 * (zero or missing means "estimate it"), the market's fees where it gave none, and the paymaster's limits
 * (v0.7+: the client's, else the paymaster's constant verification gas; in ERC-20 mode a postOp limit no lower
 * than the paymaster accepts). Raises nothing: the caps step checks these values next.
 */
import { PAYMASTER_VERIFICATION_GAS } from "@paymaster/shared";
import { given, type GasValues } from "../op.ts";
import type { Target } from "./target.ts";

export interface ClientGas {
  /** A fresh object: the estimate step fills in what is zero. */
  gas: GasValues;
  /** The client gave the op's own gas (call, verification, preVerification): the stub checks gas rules only then. */
  complete: boolean;
}

export function clientGas(target: Target): ClientGas {
  const { request, market, mode } = target;
  const u = request.userOp;
  const clientPmVerification = request.version !== "v0.6" ? given(request.userOp.paymasterVerificationGasLimit) : undefined;
  const clientPmPostOp = request.version !== "v0.6" ? given(request.userOp.paymasterPostOpGasLimit) : undefined;
  const gas: GasValues = {
    callGasLimit: given(u.callGasLimit) ?? 0n,
    verificationGasLimit: given(u.verificationGasLimit) ?? 0n,
    preVerificationGas: given(u.preVerificationGas) ?? 0n,
    maxFeePerGas: given(u.maxFeePerGas) ?? market.maxFeePerGas,
    maxPriorityFeePerGas: given(u.maxPriorityFeePerGas) ?? market.maxPriorityFeePerGas,
    paymasterVerificationGasLimit:
      request.version === "v0.6" ? 0n : (clientPmVerification ?? PAYMASTER_VERIFICATION_GAS[mode.mode === "erc20" ? "erc20" : "verifying"]),
    paymasterPostOpGasLimit:
      request.version === "v0.6" ? 0n : mode.mode === "erc20" ? maxOf(clientPmPostOp ?? 0n, target.minPostOpGasLimit) : (clientPmPostOp ?? 0n),
  };
  if (gas.maxPriorityFeePerGas > gas.maxFeePerGas && given(u.maxPriorityFeePerGas) === undefined) gas.maxPriorityFeePerGas = gas.maxFeePerGas;
  return { gas, complete: gas.callGasLimit !== 0n && gas.verificationGasLimit !== 0n && gas.preVerificationGas !== 0n };
}

function maxOf(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
