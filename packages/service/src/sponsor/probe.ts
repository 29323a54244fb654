/**
 * The estimate's simulation, made through the sponsorship probe (src/chain/probe.ts) when the node takes it:
 * one eth_call that also reads what ERC-20 mode needs (the sender's holdings: they select the charge mode the
 * op is simulated in) and what decides whether the signed op needs a simulation of its own
 * (src/sponsor/oneCall.ts). Without the probe (a node that refused it), the same simulation as a plain
 * eth_call, after the sender's holdings are read in ERC-20 mode.
 *
 * The probe's op is the estimate's: generous limits at a 1-wei price, the paymaster's final gas limits, stub
 * paymaster data of the final length. In ERC-20 mode its exchange rate and charge cap are chosen so that the
 * paymaster takes the signed op's path with amounts of a unit or two: a pre-charge of 2 units of which 1 is
 * refunded (the signed op's pre-charge always leaves a refund, whose transfer its postOp pays for), a postOp
 * charge of 1 unit; so the sender's holdings read after it tell what the op itself did with the token
 * (docs/pipeline.md, "One round trip").
 */
import { ChargeMode, EXCHANGE_RATE_SCALE, STUB_SIGNATURE, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { simulateOp, type SimulatedOp, type SimulationOutcome } from "../chain/entryPoint.ts";
import { ProbeRefused, probeSponsorship, type Holdings, type ProbeInput, type ProbeResult, type ProbeRun } from "../chain/probe.ts";
import { tracedChain } from "../network/tracedChain.ts";
import { chainWait } from "../timing.ts";
import { NO_SPAN, type TraceSpan } from "../telemetry/trace.ts";
import type { NetworkConfig } from "../config/types.ts";
import { buildOp, buildOpWithoutCalls, gasOf, paymasterDataFor, paymasterOf, preChargeWeiOf, type GasValues } from "./op.ts";
import { callsRefusal, readHoldings, type SenderHoldings } from "./simulation.ts";
import type { Target } from "./steps/target.ts";

/** The paymaster signature of the probe's variant: STUB_SIGNATURE with one bit of s flipped (it recovers too). */
const VARIANT_SIGNATURE: Hex = `${STUB_SIGNATURE.slice(0, 128)}${(parseInt(STUB_SIGNATURE.slice(128, 130), 16) ^ 1).toString(16).padStart(2, "0")}${STUB_SIGNATURE.slice(130)}` as Hex;

/**
 * How much more gas our paymasters' validation may use with a signature they accept than with the stub: the
 * branch that leaves the failure bit unset (PaymasterBase._validationData) costs 9 gas more, measured in every
 * version (test/oneCall.test.ts). The estimate runs the paymaster under its final verification limit less this, so
 * that the signed op's paymaster validation fits whenever the estimate's did.
 */
export const ACCEPTED_SIGNATURE_GAS = 100n;

/** The charge cap of the probe's paymaster data: it pre-charges 2 units (and refunds 1), or charges 1 in postOp. */
export const PROBE_MAX_TOKEN_CHARGE = 2n;

/** What the estimate's simulation found. */
export interface EstimateRun {
  outcome: SimulationOutcome;
  /** The op it ran (ERC-20: charged in the mode the sender's allowance selected). */
  op: SimulatedOp;
  /** ERC-20 mode: the sender's balance and allowance to the paymaster before the op. */
  holdings?: SenderHoldings;
  /** Set when it ran through the probe: what oneCall.ts decides on. */
  findings?: ProbeFindings;
}

/** What the probe tells beyond the estimate (src/sponsor/oneCall.ts reads it). */
export interface ProbeFindings {
  signerAccepted: boolean;
  /** A variant of the op (other gas values, fees and paymaster signature bytes) was validated at the same cost, with the same answer from the account. */
  accountAgnostic: boolean;
  /** v0.7 / v0.8: the execution and postOp succeeded; v0.6: the op's calls alone did. */
  executionSucceeded: boolean;
  /** ERC-20 mode: the op ran charged up front (else in postOp). */
  preCharge: boolean;
  /** ERC-20 mode: the sender's holdings before the op and right after it (undefined when it failed). */
  holdings?: { before: Holdings; after: Holdings | undefined };
  /** The EIP-7702 delegate the sender's code named (undefined: none); absent when the probe's reads did not answer. */
  senderCode?: { delegate: Address | undefined };
}

export interface EstimateSimulationInput {
  target: Target;
  /** The estimate's generous gas values at a 1-wei price. */
  gas: GasValues;
  /** ERC-20 mode: the charge mode to simulate when the sender's holdings were read already (else they select it). */
  chargeMode?: ChargeMode;
}

/** The estimate's simulation: through the probe when the node takes it, else a plain eth_call. */
export async function simulateEstimate({ target, gas, chargeMode }: EstimateSimulationInput, span: TraceSpan = NO_SPAN): Promise<EstimateRun> {
  if (probeUsable(target)) {
    try {
      return await probeEstimate(target, gas, span);
    } catch (error) {
      if (!(error instanceof ProbeRefused)) throw error; // a refusal is counted (runProbe): the plain path below
    }
  }
  return plainEstimate(target, gas, chargeMode, span);
}

/** Where a simulation that reads the sender's code (the probe) reports the EIP-7702 delegate it named (src/sponsor/steps/delegate.ts). */
export type SenderCodeSink = (delegate: Address | undefined) => void;

/**
 * The probe's one call for `target`'s op: `run`, and in ERC-20 mode `erc20`'s run charged up front (the sender's
 * holdings select one), timed as a chain wait and traced; the sender's code it read goes to `senderCode` (when
 * its reads' frame answered). A node's refusal is counted for the network and version (refuseProbe: refused
 * PROBE_REFUSALS_IN_A_ROW times in a row, the probe is left off), then raised: the caller takes the path without it.
 */
export async function runProbe(
  target: Target,
  run: ProbeRun,
  erc20: ProbeInput["erc20"],
  span: TraceSpan,
  senderCode?: SenderCodeSink | undefined,
): Promise<ProbeResult> {
  const { request, entry, chain, call } = target;
  const input: ProbeInput = { entryPoint: entry.entryPoint, paymaster: target.paymaster, signer: chain.signer.address, sender: request.userOp.sender, callData: request.userOp.callData, run, ...(erc20 ? { erc20 } : {}) };
  try {
    const result = await chainWait(call.timing, () => probeSponsorship(tracedChain(chain, span).rpc, chain.simulator, chain.probe, input));
    probeAnswered(target);
    if (result.senderCode) senderCode?.(result.senderCode.delegate); // the code read goes where the caller asked (delegate.ts)
    return result;
  } catch (error) {
    if (error instanceof ProbeRefused) refuseProbe(target, error);
    throw error;
  }
}

async function probeEstimate(target: Target, gas: GasValues, span: TraceSpan): Promise<EstimateRun> {
  const { mode } = target;
  const rate = probeRate(target, gas);
  const runFor = (chargeMode: ChargeMode) => probeRun(target, gas, chargeMode, rate);
  const run = runFor(ChargeMode.InPostOp);
  const erc20 = mode.mode === "erc20" ? { token: mode.token.address, preChargeFrom: 1n, preCharge: runFor(ChargeMode.PreCharge) } : undefined;
  const result = await runProbe(target, run, erc20, span);
  const made = result.preCharge && erc20 ? erc20.preCharge : run;
  return {
    outcome: result.simulation,
    op: made.op,
    ...(result.holdings ? { holdings: result.holdings.before } : {}),
    findings: findingsOf(result),
  };
}

/** The probe's run for a signed op: simulated as it will land (no account check: what runs is what is signed); v0.6 with its calls alone beside. */
export function signedRun(target: Target, op: SimulatedOp): ProbeRun {
  if (op.version !== "v0.6") return { op };
  const { paymaster, paymasterData } = paymasterOf(op);
  return { op, withoutCalls: buildOpWithoutCalls(target.request, gasOf(op), paymaster, paymasterData) };
}

/** One charge mode's run: the op, the account check (its variant), and (v0.6) the op without its calls. */
function probeRun(target: Target, gas: GasValues, chargeMode: ChargeMode, rate: bigint): ProbeRun {
  const { request } = target;
  const data = paymasterDataFor(target, rate, chargeMode, STUB_SIGNATURE, PROBE_MAX_TOKEN_CHARGE);
  const variantGas = { ...gas, verificationGasLimit: gas.verificationGasLimit + 1n, callGasLimit: gas.callGasLimit + 1n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n };
  // The variant's rate is the op's: at twice the price its pre-charge reaches the same cap of 2 units.
  const variantData = paymasterDataFor(target, rate, chargeMode, VARIANT_SIGNATURE, PROBE_MAX_TOKEN_CHARGE);
  const run: ProbeRun = { op: buildOp(request, gas, target.paymaster, data), variant: buildOp(request, variantGas, target.paymaster, variantData) };
  if (request.version === "v0.6") run.withoutCalls = buildOpWithoutCalls(request, gas, target.paymaster, data);
  return run;
}

/**
 * The estimate's exchange rate for `gas` (a 1-wei price; ERC-20 mode, else 0): the rate at which the most the op
 * may be charged (its pre-charge's wei at this price) is just over one token unit, so that the pre-charge,
 * capped at PROBE_MAX_TOKEN_CHARGE, is 2 units and what the op really costs is 1 (a refund of 1, as the signed
 * op's pre-charge leaves one); a charge in postOp is 1 unit.
 */
function probeRate(target: Target, gas: GasValues): bigint {
  if (target.mode.mode !== "erc20") return 0n;
  const op = buildOp(target.request, gas, target.paymaster, paymasterDataFor(target, 1n, ChargeMode.PreCharge, STUB_SIGNATURE, PROBE_MAX_TOKEN_CHARGE));
  // EXCHANGE_RATE_SCALE: tokenCost's scale, an exchange rate is token units per 1e18 wei.
  return EXCHANGE_RATE_SCALE / preChargeWeiOf(op, target.postOpGas) + 1n;
}

function findingsOf(result: ProbeResult): ProbeFindings {
  const { simulation, variant, calls } = result;
  const executed = simulation.ok ? simulation.result : undefined;
  const accountAgnostic = executed !== undefined && variant?.ok === true && sameValidation(variant, executed);
  const executionSucceeded = executed !== undefined && (calls !== undefined ? callsRefusal(calls) === undefined : executed.opSucceeded === true);
  return {
    signerAccepted: result.signerAccepted,
    accountAgnostic,
    executionSucceeded,
    preCharge: result.preCharge,
    ...(result.holdings ? { holdings: result.holdings } : {}),
    ...(result.senderCode ? { senderCode: result.senderCode } : {}),
  };
}

/**
 * How far apart the same validation's gas may be in simulateValidation and simulateHandleOp: the two enter
 * validation with different amounts of memory in use, and memory costs quadratically, so identical code costs
 * a few gas more or less in one than in the other (0-2 gas measured with SimpleAccount, v0.6 to v0.8).
 */
export const VALIDATION_GAS_TOLERANCE = 100n;

/** The variant's validation cost what the op's did (within the tolerance) and the account answered the same. */
function sameValidation(variant: { preOpGas: bigint; accountValidationData: bigint | undefined }, executed: { preOpGas: bigint; accountValidationData: bigint | undefined }): boolean {
  const apart = variant.preOpGas - executed.preOpGas;
  return apart <= VALIDATION_GAS_TOLERANCE && -apart <= VALIDATION_GAS_TOLERANCE && variant.accountValidationData === executed.accountValidationData;
}

/** The estimate's simulation without the probe: ERC-20 mode reads the holdings first when not read yet. */
async function plainEstimate(target: Target, gas: GasValues, known: ChargeMode | undefined, span: TraceSpan): Promise<EstimateRun> {
  const { request, entry, paymaster, chain, call } = target;
  const holdings = target.mode.mode === "erc20" && known === undefined ? await readHoldings(target, span) : undefined;
  const chargeMode = known ?? estimateChargeMode(holdings);
  const paymasterData = paymasterDataFor(target, probeRate(target, gas), chargeMode, STUB_SIGNATURE, PROBE_MAX_TOKEN_CHARGE);
  const op = buildOp(request, gas, paymaster, paymasterData);
  const traced = tracedChain(chain, span);
  const outcome = await chainWait(call.timing, () => simulateOp(traced.rpc, chain.simulator, entry.entryPoint, op));
  return { outcome, op, ...(holdings ? { holdings } : {}) };
}

/** The charge mode an estimate runs in: at a 1-wei price any allowance covers a pre-charge. */
export function estimateChargeMode(holdings: SenderHoldings | undefined): ChargeMode {
  return holdings === undefined || holdings.allowance === 0n ? ChargeMode.InPostOp : ChargeMode.PreCharge;
}


// ---- the node's refusals, counted: a node without state overrides refuses every probe, an error in passing only one.
/** How long the probe stays off for the network's version, once left off, before it is tried again. */
export const PROBE_RETRY_MS = 10 * 60_000;
/**
 * Refusals in a row (no probe answered between them) that leave the probe off: a node without state overrides
 * refuses every one, while an error a node gives in passing (its EVM's timeout under load, a lagging node behind a
 * load balancer) must not double every sponsorship's chain calls for ten minutes, least of all when the provider is
 * already struggling. Each refused request takes the path without the probe by itself either way. Once off, the
 * first try after PROBE_RETRY_MS that is refused again leaves it off again (the count stands until a probe answers).
 */
export const PROBE_REFUSALS_IN_A_ROW = 3;

/** The probe's standing on one network's version: refusals since the last answer, and until when it is off. */
interface ProbeStanding {
  refusals: number;
  offUntil: number;
}

// By the network's configuration: a call sees its network's chain through a view of its own (src/network/callDeadline.ts).
const standings = new WeakMap<NetworkConfig, Map<EntryPointVersion, ProbeStanding>>();

/** The target's network and version's standing, made on first use. */
function standingOf(target: Target): ProbeStanding {
  const versions = standings.get(target.call.network.config) ?? new Map<EntryPointVersion, ProbeStanding>();
  standings.set(target.call.network.config, versions);
  const standing = versions.get(target.request.version) ?? { refusals: 0, offUntil: 0 };
  versions.set(target.request.version, standing);
  return standing;
}

/** Whether the probe may be tried for the target's network and version. */
export function probeUsable(target: Target): boolean {
  const standing = standings.get(target.call.network.config)?.get(target.request.version);
  return standing === undefined || Date.now() >= standing.offUntil;
}

/** The node answered a probe: the refusals before it were errors in passing. */
function probeAnswered(target: Target): void {
  const standing = standings.get(target.call.network.config)?.get(target.request.version);
  if (standing !== undefined) standing.refusals = 0;
}

/**
 * Counts the node's refusal; at PROBE_REFUSALS_IN_A_ROW, leaves the probe off for 10 minutes (one warning each time).
 * Refusals of probes still in flight when it went off change nothing: a burst of them is one warning, not one each.
 */
function refuseProbe(target: Target, error: ProbeRefused): void {
  const standing = standingOf(target);
  standing.refusals++;
  if (standing.refusals < PROBE_REFUSALS_IN_A_ROW || Date.now() < standing.offUntil) return;
  standing.offUntil = Date.now() + PROBE_RETRY_MS;
  target.call.service.logger.warn(
    { network: target.call.network.config.name, version: target.request.version, refusals: standing.refusals, err: error.message },
    "the node refused the sponsorship probe (state overrides?): sponsorships estimate and simulate apart for the next 10 minutes",
  );
}
