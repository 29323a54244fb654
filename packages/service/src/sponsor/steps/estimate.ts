/**
 * Step: estimate what the client left out. Decides callGasLimit and verificationGasLimit (when zero) from ONE
 * simulation with generous limits at a 1-wei price (and the paymaster's own final limits), and
 * preVerificationGas (when zero) from the op's bytes, EIP-7623's floor and, on a rollup, its L1 data (the
 * chain's oracle asked beside the simulation, on the op with the limits being estimated priced at their caps'
 * width: placeholderUpTo). The simulation goes through the sponsorship probe when the node takes it
 * (src/sponsor/probe.ts): in ERC-20 mode it also reads the sender's holdings, and it tells whether the signed
 * op needs a simulation of its own (src/sponsor/oneCall.ts). Returns new gas values (the given ones stay as
 * they are) and what the simulation found.
 * Raises SIMULATION_FAILED / PAYMASTER_DEPOSIT_LOW (the EntryPoint refuses the probe) and EXECUTION_REVERTED
 * (the op's calls revert, with their revert data).
 */
import type { ChargeMode, Hex } from "@paymaster/shared";
import { l1DataGas, l2GasPrice, placeholderUpTo } from "../../chain/l1Fee.ts";
import { chainWait } from "../../timing.ts";
import { tracedChain } from "../../network/tracedChain.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { limitsFromSimulation, preVerificationGas } from "../gas.ts";
import { buildOp, paymasterOf, type GasValues } from "../op.ts";
import { refuseRevertingCalls, simulationError } from "../simulation.ts";
import { ACCEPTED_SIGNATURE_GAS, simulateEstimate, type EstimateRun } from "../probe.ts";
import type { Target } from "./target.ts";

export interface EstimateInput {
  target: Target;
  /** The caps-checked values the client gave (zero: estimate it). */
  gas: GasValues;
  /** Stub paymaster data of the final length, whose bytes price preVerificationGas and the L1 fee. */
  paymasterData: Hex;
  /** ERC-20 mode: the charge mode to simulate when the sender's holdings were read already (else the probe's read selects it). */
  chargeMode?: ChargeMode;
}

export interface Estimate {
  gas: GasValues;
  /** The simulation, when the client left a limit to estimate. */
  run?: EstimateRun;
}

/** Whether the client left callGasLimit or verificationGasLimit to the service (then the estimate simulates). */
export function needsSimulation(gas: GasValues): boolean {
  return gas.callGasLimit === 0n || gas.verificationGasLimit === 0n;
}

export async function estimateGas({ target, gas: given, paymasterData, chargeMode }: EstimateInput, span: TraceSpan = NO_SPAN): Promise<Estimate> {
  const { request, call, entry, paymaster } = target;
  const chain = tracedChain(target.chain, span);
  const network = call.network.config;
  const gas = { ...given };
  const needsEstimate = needsSimulation(gas);
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
  const run = needsEstimate ? await measure(target, gas, chargeMode, span) : undefined;
  // EIP-7623's floor in preVerificationGas counts on the final call and postOp limits.
  if (estimatePreVerificationGas && needsEstimate) gas.preVerificationGas = preVerificationGas(buildOp(request, gas, paymaster, paymasterData));
  if (l1Part !== undefined) gas.preVerificationGas += await l1Part;
  return { gas, ...(run ? { run } : {}) };
}

/**
 * The limits left at zero (set on `gas`), from one simulation with generous limits (the caps) at a 1-wei
 * price; the paymaster's limits are the final ones (its verification limit less ACCEPTED_SIGNATURE_GAS), so that
 * its validation runs under the limit the signed op carries (src/sponsor/oneCall.ts counts on it).
 */
async function measure(target: Target, gas: GasValues, chargeMode: ChargeMode | undefined, span: TraceSpan): Promise<EstimateRun> {
  const { request, call, entry, paymaster } = target;
  const caps = call.network.config.caps;
  const generous: GasValues = {
    ...gas,
    callGasLimit: gas.callGasLimit || caps.maxCallGasLimit,
    verificationGasLimit: gas.verificationGasLimit || caps.maxVerificationGasLimit,
    maxFeePerGas: 1n,
    maxPriorityFeePerGas: 1n,
    paymasterVerificationGasLimit: gas.paymasterVerificationGasLimit > ACCEPTED_SIGNATURE_GAS ? gas.paymasterVerificationGasLimit - ACCEPTED_SIGNATURE_GAS : gas.paymasterVerificationGasLimit,
  };
  const run = await simulateEstimate({ target, gas: generous, ...(chargeMode === undefined ? {} : { chargeMode }) }, span);
  if (!run.outcome.ok) throw simulationError(run.outcome.failure);
  // v0.7 tells whether the op's calls ran through: a revert is refused here already (with its revert data),
  // whether or not the final simulation runs.
  const chain = tracedChain(target.chain, span);
  if (run.outcome.result.opSucceeded === false) await refuseRevertingCalls(call.timing, chain, entry.entryPoint, request, generous, paymaster, paymasterOf(run.op).paymasterData);
  const measured = limitsFromSimulation(run.op, run.outcome.result, target.minPostOpGasLimit);
  if (gas.callGasLimit === 0n) gas.callGasLimit = measured.callGasLimit;
  if (gas.verificationGasLimit === 0n) gas.verificationGasLimit = measured.verificationGasLimit;
  return run;
}
