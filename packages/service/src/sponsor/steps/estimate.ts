/**
 * Step: estimate what the client left out. Decides callGasLimit and verificationGasLimit (when zero) from ONE
 * simulation with generous limits at a 1-wei price, and preVerificationGas (when zero) from the op's bytes,
 * EIP-7623's floor and, on a rollup, its L1 data (the chain's oracle asked beside the simulation, on the op
 * with the limits being estimated priced at their caps' width: placeholderUpTo). Returns new gas values; the
 * given ones stay as they are.
 * Raises SIMULATION_FAILED / PAYMASTER_DEPOSIT_LOW (the EntryPoint refuses the probe) and EXECUTION_REVERTED
 * (the op's calls revert, with their revert data).
 */
import type { Hex } from "@paymaster/shared";
import { simulateOp } from "../../chain/entryPoint.ts";
import { l1DataGas, l2GasPrice, placeholderUpTo } from "../../chain/l1Fee.ts";
import { chainWait } from "../../timing.ts";
import { tracedChain } from "../../chain/traced.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { limitsFromSimulation, preVerificationGas } from "../gas.ts";
import { buildOp, type GasValues } from "../op.ts";
import { refuseRevertingCalls, simulationError } from "../simulation.ts";
import type { Target } from "./target.ts";

export interface EstimateInput {
  target: Target;
  /** The caps-checked values the client gave (zero: estimate it). */
  gas: GasValues;
  /** Stub paymaster data of the final length (the estimate's charge mode). */
  paymasterData: Hex;
}

export async function estimateGas({ target, gas: given, paymasterData }: EstimateInput, span: TraceSpan = NO_SPAN): Promise<GasValues> {
  const { request, call, entry, paymaster } = target;
  const chain = tracedChain(target.chain, span);
  const network = call.network.config;
  const gas = { ...given };
  const needsEstimate = gas.callGasLimit === 0n || gas.verificationGasLimit === 0n;
  const estimatePreVerificationGas = gas.preVerificationGas === 0n;
  const caps = network.caps;
  // On a rollup the bundler pays for the bundle's L1 data and gets it back only through preVerificationGas.
  // The oracle prices the op's bytes: the limits still to be estimated are priced at their caps' width, so
  // the question goes out now, beside the simulation (its error is raised when it is awaited, below).
  const l1Part =
    estimatePreVerificationGas && network.gasKind !== "l1"
      ? chainWait(call.timing, () => {
          const priced = {
            ...gas,
            callGasLimit: gas.callGasLimit || placeholderUpTo(caps.maxCallGasLimit, 1),
            verificationGasLimit: gas.verificationGasLimit || placeholderUpTo(caps.maxVerificationGasLimit, 2),
          };
          const input = { chainId: network.chainId, entryPoint: entry.entryPoint, op: buildOp(request, priced, paymaster, paymasterData), l2GasPrice: l2GasPrice(gas, target.market.baseFeePerGas) };
          return l1DataGas(chain.rpc, network.gasKind, input);
        })
      : undefined;
  l1Part?.catch(() => undefined);
  if (estimatePreVerificationGas) gas.preVerificationGas = preVerificationGas(buildOp(request, gas, paymaster, paymasterData));
  if (needsEstimate) {
    const generous: GasValues = {
      ...gas,
      callGasLimit: gas.callGasLimit || caps.maxCallGasLimit,
      verificationGasLimit: gas.verificationGasLimit || caps.maxVerificationGasLimit,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      paymasterVerificationGasLimit: request.version !== "v0.6" ? caps.maxPaymasterVerificationGasLimit : 0n,
    };
    const probe = buildOp(request, generous, paymaster, paymasterData);
    const outcome = await chainWait(call.timing, () => simulateOp(chain.rpc, chain.simulator, entry.entryPoint, probe));
    if (!outcome.ok) throw simulationError(outcome.failure);
    // v0.7 tells whether the op's calls ran through: a revert is refused here already (with its revert data),
    // whether or not the final simulation runs.
    if (outcome.result.opSucceeded === false) await refuseRevertingCalls(call.timing, chain, entry.entryPoint, request, generous, paymaster, paymasterData);
    const measured = limitsFromSimulation(probe, outcome.result, target.postOpGas, target.minPostOpGasLimit);
    if (gas.callGasLimit === 0n) gas.callGasLimit = measured.callGasLimit;
    if (gas.verificationGasLimit === 0n) gas.verificationGasLimit = measured.verificationGasLimit;
  }
  // EIP-7623's floor in preVerificationGas counts on the final call and postOp limits.
  if (estimatePreVerificationGas && needsEstimate) gas.preVerificationGas = preVerificationGas(buildOp(request, gas, paymaster, paymasterData));
  if (l1Part !== undefined) gas.preVerificationGas += await l1Part;
  return gas;
}
