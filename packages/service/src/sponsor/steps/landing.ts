/**
 * Step: the final check of the op as it will land, in ONE simulation (validation with the real limits, fees
 * and paymaster data, the op's calls, postOp): the EntryPoint accepts it, our signature verifies (v0.7+ report
 * it), its calls do not revert, and in ERC-20 mode the paymaster's token balance grew (the fee stays in the
 * paymaster until swept, so the charge shows there). v0.7's simulator reports the execution outcome, so the
 * calls run again alone only to explain a failure; v0.6's EntryPoint has no such hook, so there the calls run
 * alone after it. Made through the sponsorship probe when the node takes it (one eth_call that also reads what
 * ERC-20 mode's check needs and the sender's code, which the signing pipeline then needs no read of its own for);
 * else as plain calls side by side (same latency).
 * Raises SIMULATION_FAILED (AAxx; AA34 when signed and our signature does not verify), PAYMASTER_DEPOSIT_LOW
 * (AA31), EXECUTION_REVERTED and TOKEN_ALLOWANCE_INSUFFICIENT (ERC-20: the paymaster could not charge).
 */
import { encodeFunctionData, decodeFunctionResult, erc20Abi, type Abi } from "viem";
import { simulateOp, type ExecutionResult, type SimulatedOp, type SimulationOutcome } from "../../chain/entryPoint.ts";
import { RpcError } from "../../errors.ts";
import { chainWait } from "../../timing.ts";
import { tracedChain } from "../../network/tracedChain.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { gasOf, paymasterOf } from "../op.ts";
import { callsRefusal, refuseRevertingCalls, simulationError, tokenRead } from "../simulation.ts";
import { probeUsable, runProbe, signedRun, type SenderCodeSink } from "../probe.ts";
import { ProbeRefused, type ProbeResult } from "../../chain/probe.ts";
import type { Target } from "./target.ts";
import type { TokenQuote } from "./tokenQuote.ts";

export interface LandingInput {
  target: Target;
  /** The op as it will land: signed (and packed once), or with stub paymaster data (the estimate). */
  op: SimulatedOp;
  token: TokenQuote | null;
  /** The op carries our real signature: a signature the paymaster refuses is an error then. */
  signed: boolean;
  /** Where the sender's code is reported when the simulation read it (the probe; src/sponsor/steps/delegate.ts). */
  senderCode?: SenderCodeSink | undefined;
}

export async function checkLanding(input: LandingInput, span: TraceSpan = NO_SPAN): Promise<void> {
  if (probeSavesACall(input) && probeUsable(input.target)) {
    try {
      return await probedLanding(input, span);
    } catch (error) {
      if (!(error instanceof ProbeRefused)) throw error; // a refusal is counted (runProbe): the plain calls below
    }
  }
  return plainLanding(input, span);
}

/**
 * Whether the probe folds into the one call what would be a request of its own: the sender's code (the pipeline
 * asks for it), v0.6's calls alone, or ERC-20 mode's balance read. Otherwise (v0.7+, Sponsor or User Sponsor mode,
 * an op that deploys its sender or names its delegate) the plain simulation is the one call, without the probe's
 * reads around it.
 */
function probeSavesACall({ target, op, senderCode }: LandingInput): boolean {
  return senderCode !== undefined || op.version === "v0.6" || target.mode.mode === "erc20";
}

/**
 * Through the sponsorship probe: the op as it will land, in ERC-20 mode the paymaster's token balance read around
 * it, v0.6 its calls alone after it, and the sender's code, all in ONE eth_call (the plain path: the simulation,
 * beside it v0.6's calls and the balance read, and the signing pipeline's code read).
 */
async function probedLanding({ target, op, token, signed, senderCode }: LandingInput, span: TraceSpan): Promise<void> {
  const run = signedRun(target, op);
  // The token's holdings are read before and after the op; a pre-charge from an allowance of 0 up runs `run` always.
  const erc20 = target.mode.mode === "erc20" ? { token: target.mode.token.address, preChargeFrom: 0n, preCharge: run } : undefined;
  const result = await runProbe(target, run, erc20, span, senderCode);
  await judgeProbedLanding({ target, op, token, signed, result }, span);
}

/**
 * The verdict on a probe's simulation of `op` as it will land (probedLanding's, and chargeLanding's for the charge
 * mode it selected): judgeLanding on its outcome, v0.6's calls alone, and ERC-20 mode's charge seen in the
 * paymaster's token balance the probe read around the op.
 */
export async function judgeProbedLanding({ target, op, token, signed, result }: Omit<LandingJudgement, "landing" | "callsRefusal" | "charged"> & { result: ProbeResult }, span: TraceSpan = NO_SPAN): Promise<void> {
  const holdings = result.holdings;
  const charged = () => holdings?.after !== undefined && holdings.after.paymasterBalance > holdings.before.paymasterBalance;
  await judgeLanding({ target, op, token, signed, landing: result.simulation, callsRefusal: result.calls && callsRefusal(result.calls), charged }, span);
}

/** Without the probe (a node that refused it): the simulation, and beside it v0.6's calls and ERC-20 mode's balance read. */
async function plainLanding({ target, op, token, signed }: LandingInput, span: TraceSpan): Promise<void> {
  const { call, request, mode } = target;
  const chain = tracedChain(target.chain, span);
  const entryPoint = target.entry.entryPoint;
  const gas = gasOf(op);
  const { paymaster, paymasterData } = paymasterOf(op);
  // Only ERC-20 mode reads the paymaster's balance: viem's generic encoder is not worth running for the others.
  const read = mode.mode === "erc20" ? { to: mode.token.address, data: encodeFunctionData({ abi: erc20Abi as Abi, functionName: "balanceOf", args: [paymaster] }) } : undefined;
  const [landing, callsFirst, heldBefore] = await chainWait(call.timing, () =>
    Promise.all([
      simulateOp(chain.rpc, chain.simulator, entryPoint, op, read),
      // v0.6: the calls' own run alongside; its refusal is raised after the EntryPoint's (as one simulation would).
      op.version === "v0.6"
        ? refuseRevertingCalls(undefined, chain, entryPoint, request, gas, paymaster, paymasterData).then( // counted by the wait around it
            () => undefined,
            (error: unknown) => error,
          )
        : undefined,
      mode.mode === "erc20" ? tokenRead(chain, mode.token.address, "balanceOf", [paymaster]) : Promise.resolve(0n),
    ]),
  );
  const charged = (result: ExecutionResult) => {
    const after = result.targetSuccess ? (decodeFunctionResult({ abi: erc20Abi as Abi, functionName: "balanceOf", data: result.targetResult }) as bigint) : 0n;
    return after > heldBefore;
  };
  await judgeLanding({ target, op, token, signed, landing, callsRefusal: callsFirst, charged }, span);
}

export interface LandingJudgement {
  target: Target;
  op: SimulatedOp;
  token: TokenQuote | null;
  signed: boolean;
  /** The op's simulation. */
  landing: SimulationOutcome;
  /** v0.6: the refusal its calls alone met (undefined: they passed). */
  callsRefusal: unknown;
  /** ERC-20 mode: whether the paymaster's token balance grew over the op. */
  charged: (result: ExecutionResult) => boolean;
}

/** The verdict on a simulation of the op as it will land, in the order one simulation would refuse in (see above). */
export async function judgeLanding({ target, op, token, signed, landing, callsRefusal, charged }: LandingJudgement, span: TraceSpan = NO_SPAN): Promise<void> {
  const { call, request, mode } = target;
  if (!landing.ok) throw simulationError(landing.failure);
  if (callsRefusal !== undefined) throw callsRefusal;
  const result: ExecutionResult = landing.result;
  if (signed && result.paymasterSigFailed) {
    throw new RpcError("SIMULATION_FAILED", "The EntryPoint would reject this user operation: AA34 signature error (the paymaster does not accept this service's signer)", {
      aaCode: "AA34",
      entryPointReason: "AA34 signature error",
    });
  }
  const { paymaster, paymasterData } = paymasterOf(op);
  if (result.opSucceeded === false) {
    await refuseRevertingCalls(call.timing, tracedChain(target.chain, span), target.entry.entryPoint, request, gasOf(op), paymaster, paymasterData);
    if (mode.mode !== "erc20") throw new RpcError("EXECUTION_REVERTED", "The user operation's execution would fail", {});
  }
  if (mode.mode === "erc20" && !charged(result)) {
    throw new RpcError("TOKEN_ALLOWANCE_INSUFFICIENT", "The paymaster could not charge the token: approve the paymaster first, or in this op's own calls", {
      token: mode.token.symbol,
      paymaster,
      required: token!.maxTokenCost.toString(),
    });
  }
}
