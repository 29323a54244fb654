/**
 * The sponsor pipeline: per method, the list of its steps (src/sponsor/steps/, one decision per file; each step
 * takes one typed input and returns one typed output, its doc comment says what it decides and which errors it
 * raises). docs/pipeline.md lists the steps per method and how to add one.
 *   stub      pm_getPaymasterStubData: policy, caps and the paymasters' constant gas limits; no simulation, no
 *             estimate (the wallet's bundler estimates the op's own gas next), nothing reserved or signed.
 *   dry run   pm_checkPolicy, pm_getTokenQuotes: every policy verdict collected instead of refusing on the first,
 *             the caps' current totals; no final simulation, nothing reserved or signed.
 *   estimate  pm_estimateUserOperationGas: as sponsoring, then the final simulation of the op with stub data.
 *   sponsor   pm_sponsorUserOperation, pm_getPaymasterData: approval, sign, then (unless the estimate's one
 *             simulation decided: src/sponsor/oneCall.ts) the final simulation (ONE run of the op as it will land,
 *             our real paymaster data), then the reservation of its maximum cost; the signature leaves only
 *             after both passed. ERC-20 mode with the client's gas: the op signed for both charge modes, one
 *             probe reads the holdings and simulates the one they select (steps/chargeLanding.ts).
 * No step waits on a read that does not depend on the op (fees, deposits, token allowlists, prices: kept in
 * memory, docs/pipeline.md "Reads kept in memory"); the reads that do overlap the chain work beside them.
 */
import { ChargeMode, STUB_SIGNATURE, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import type { CallContext } from "../context.ts";
import type { SponsorRequest } from "../wire/schemas.ts";
import type { RuleVerdict } from "../policy/types.ts";
import type { FailingVerdicts, ResolvedMode } from "./policy.ts";
import { paymasterAndDataOf, paymasterDataFor, type GasValues } from "./op.ts";
import { resolveTarget, type Target } from "./steps/target.ts";
import { cheapPolicy } from "./steps/cheapPolicy.ts";
import { correctedDelegate, delegateForProbedLanding, delegateFromProbe, delegateToSign, detectDelegate, judgesDelegates, type DelegateToSign } from "./steps/delegate.ts";
import { tokenPrice, type TokenPrice } from "./steps/tokenPrice.ts";
import { clientGas } from "./steps/clientGas.ts";
import { checkCaps } from "./steps/caps.ts";
import { estimateGas, needsSimulation } from "./steps/estimate.ts";
import { estimateChargeMode, probeUsable, type EstimateRun, type ProbeFindings } from "./probe.ts";

import { oneCallVerdict, type OneCallVerdict } from "./oneCall.ts";
import { quoteToken, type TokenQuote } from "./steps/tokenQuote.ts";
import { chargeToken } from "./steps/tokenCharge.ts";
import { maxCost, type MaxCost } from "./steps/maxCost.ts";
import { gasPolicy } from "./steps/gasPolicy.ts";
import { capTotals } from "./steps/capTotals.ts";
import { checkLanding } from "./steps/landing.ts";
import { requireApproval } from "./steps/approval.ts";
import { signLanding } from "./steps/sign.ts";
import { commitSponsorship, type Committed } from "./steps/commit.ts";
import { chargeLanding, type ChargeLanded } from "./steps/chargeLanding.ts";
import { ProbeRefused } from "../chain/probe.ts";
import { readHoldings, type SenderHoldings } from "./simulation.ts";
import { NO_SPAN, traced, type TraceSpan } from "../telemetry/trace.ts";
import type { ChainClocks } from "../chain/market.ts";
import { onTheChainsClock, type WindowCheck } from "./chainClock.ts";

export type { GasValues } from "./op.ts";
export type { TokenQuote } from "./steps/tokenQuote.ts";

export interface PipelineResult {
  version: EntryPointVersion;
  entryPoint: Address;
  paymaster: Address;
  mode: ResolvedMode;
  gas: GasValues;
  maxCostWei: bigint;
  token: TokenQuote | null;
  /** Final (signed) or stub paymasterAndData, full field (v0.7 packed with the gas limits). */
  paymasterAndData: Hex;
  /** Set when signed: the EntryPoint's hash of the returned op. */
  userOpHash: Hex | null;
  validUntil: number;
  validAfter: number;
  sponsorshipId: string | null;
  /** Sponsor mode: every policy verdict (all passing unless this is a dry run). */
  verdicts: RuleVerdict[];
  maxCostUsdMicros: bigint;
}

/** pm_getPaymasterStubData. */
export async function stubPipeline(request: SponsorRequest, call: CallContext): Promise<PipelineResult> {
  const trace = call.trace;
  const target = await traced(trace, "step.detectDelegate", detectWithoutSigning, await resolve(request, call));
  const verdicts = cheapPolicy({ target, failing: "refuse" });
  const price = await traced(trace, "step.tokenPrice", tokenPrice, { target, holdings: false });
  const { gas, complete } = clientGas(target);
  checkCaps({ target, gas });
  const chargeMode = estimateChargeMode(price?.holdings);
  const paymasterData = stubPaymasterData(target, price, chargeMode);
  const token = price && quoteToken({ target, gas, price, chargeMode, paymasterData });
  const cost = await traced(trace, "step.maxCost", maxCost, { target, gas, paymasterData, nativeUsd: price?.nativeUsd });
  // The gas rules judge the client's own gas only: the stub estimates none.
  if (complete) verdicts.push(...gasPolicy({ target, gas, cost, failing: "refuse" }));
  return pipelineResult({ target, gas, cost, token, verdicts });
}

/** pm_checkPolicy and pm_getTokenQuotes: every verdict, and the caps' current totals. */
export async function dryRunPipeline(request: SponsorRequest, call: CallContext): Promise<PipelineResult> {
  const quoted = await quote(request, call, "collect", false);
  quoted.verdicts.push(...(await traced(call.trace, "step.capTotals", capTotals, quoted)));
  return pipelineResult(quoted);
}

/**
 * pm_estimateUserOperationGas: the op's gas and cost, checked by the final simulation (unsigned) unless the estimate's
 * one simulation already decided that the op signed with them lands (oneCallVerdict: then the same op with stub
 * data lands too, its signature aside). On a chain whose clock moves, once more on fresh clocks when its simulation
 * met them outside the window (src/sponsor/chainClock.ts).
 */
export function estimatePipeline(request: SponsorRequest, call: CallContext): Promise<PipelineResult> {
  return onTheChainsClock(call, async (clocks) => {
    const quoted = await quote(request, call, "refuse", false, clocks);
    const decided = quoted.estimated && verdictOf(quoted).oneCall;
    if (call.network.config.skipFinalSimulation !== true && !decided) await traced(call.trace, "step.checkLanding", checkLanding, { ...quoted, op: quoted.cost.op, signed: false });
    return pipelineResult(quoted);
  });
}

/**
 * pm_sponsorUserOperation and pm_getPaymasterData: reserve the maximum cost and sign. Nothing is reserved, and no
 * signature leaves, before the window is known to hold the chain's clocks (src/sponsor/chainClock.ts: a chain whose
 * clock moves at will; the check waits right before the reservation, so its read overlaps the request's chain call).
 */
export function sponsorPipeline(request: SponsorRequest, call: CallContext): Promise<PipelineResult> {
  return onTheChainsClock(call, (clocks, check) => sponsorOnce(request, call, clocks, check));
}

async function sponsorOnce(request: SponsorRequest, call: CallContext, clocks: ChainClocks | undefined, check: WindowCheck): Promise<PipelineResult> {
  const quoted = await quote(request, call, "refuse", true, clocks, check);
  await traced(call.trace, "step.requireApproval", requireApproval, quoted);
  const { committed, token } = quoted.deferredCharge ? await chargeAndCommit(quoted, quoted.deferredCharge) : { committed: await signAndCommit(quoted), token: quoted.token };
  const { target } = quoted;
  call.service.metrics?.sponsorshipsSigned.inc({ network: call.network.config.name, mode: target.mode.mode, version: request.version });
  return pipelineResult({ ...quoted, token }, committed);
}

/**
 * ERC-20 mode with the client's gas: the charge decided, signed and simulated on one probe (chargeLanding). A
 * signature for a guessed delegate the simulation refuses is made again for the one the code read names, as in
 * signAndCommit; a node without state overrides gets the holdings read, then the usual signature and final
 * simulation.
 */
async function chargeAndCommit(quoted: Quoted, price: TokenPrice): Promise<ChargeLanded> {
  const trace = quoted.target.call.trace;
  const land = (q: Quoted) =>
    traced(trace, "step.chargeLanding", chargeLanding, { ...q, price, paymasterData: stubPaymasterData(q.target, price, ChargeMode.PreCharge), senderCode: q.delegate.senderCode });
  try {
    return await land(quoted);
  } catch (refusal) {
    if (refusal instanceof ProbeRefused) {
      const holdings = await readHoldings(quoted.target, NO_SPAN);
      const token = await traced(trace, "step.chargeToken", chargeToken, { ...quoted, price, holdings, paymasterData: stubPaymasterData(quoted.target, price, ChargeMode.PreCharge) });
      return { committed: await signAndCommit({ ...quoted, token }), token };
    }
    return againForReadDelegate(quoted, refusal, land);
  }
}

/**
 * After the simulation refused a signature: `again` for the delegate the sender's code read names, when the one
 * signed for was a guess the read contradicts (src/sponsor/steps/delegate.ts correctedDelegate); else the refusal stands.
 */
async function againForReadDelegate<T>(quoted: Quoted, refusal: unknown, again: (q: Quoted) => Promise<T>): Promise<T> {
  const target = await correctedDelegate(quoted.delegate, refusal);
  if (target === undefined) throw refusal;
  return again({ ...quoted, target });
}

/**
 * Sign, then (when the estimate's one simulation did not decide: src/sponsor/oneCall.ts) the final simulation,
 * then the reservation. Without the final simulation nothing would check a delegate guessed for the sender, so
 * the code read is waited for (it ran beside the estimate). When the signed delegate was the one last read for
 * the sender (not waited for) and the final simulation refuses the signature for another one the read names,
 * once more for that one.
 */
async function signAndCommit(quoted: Quoted): Promise<Committed> {
  const trace = quoted.target.call.trace;
  const commit = async (q: Quoted, simulate: boolean) =>
    traced(trace, "step.commitSponsorship", commitSponsorship, { ...q, simulate, landing: await traced(trace, "step.signLanding", signLanding, q), senderCode: q.delegate.senderCode });
  if (!needsFinalSimulation(quoted)) return commit({ ...quoted, target: quoted.delegate.read ? await quoted.delegate.read() : quoted.target }, false);
  try {
    return await commit(quoted, true);
  } catch (refusal) {
    return againForReadDelegate(quoted, refusal, (q) => commit(q, true));
  }
}

/**
 * Whether the signed op is simulated before its signature leaves: never with skipFinalSimulation; always for
 * the client's gas (that simulation is the request's one chain call); after an estimate, unless its one
 * simulation decided (oneCallVerdict), counted either way.
 */
function needsFinalSimulation(quoted: Quoted): boolean {
  const { target, estimated } = quoted;
  const network = target.call.network.config;
  if (network.skipFinalSimulation === true) return false;
  if (!estimated) return true;
  const { request, mode } = target;
  const verdict = verdictOf(quoted);
  const labels = { network: network.name, mode: mode.mode, version: request.version };
  const metrics = target.call.service.metrics;
  if (verdict.oneCall) metrics?.oneCallSponsorships.inc(labels);
  else metrics?.oneCallFallbacks.inc({ ...labels, reason: verdict.reason });
  return !verdict.oneCall;
}

/** Whether the estimate's one simulation decided that the op, signed with the quoted gas, lands (src/sponsor/oneCall.ts). Pure. */
function verdictOf({ target, token, findings }: Quoted): OneCallVerdict {
  const { request, entry, window } = target;
  return oneCallVerdict({ version: request.version, entryPoint: entry.entryPoint, window, findings, token });
}

/** What every method but the stub decides before its own last steps. */
interface Quoted {
  target: Target;
  gas: GasValues;
  token: TokenQuote | null;
  cost: MaxCost;
  verdicts: RuleVerdict[];
  /** The delegate `target` signs for, and the code read still in flight when that one is a guess. */
  delegate: DelegateToSign;
  /** The estimate simulated (the client left a limit out), and what its probe found when it ran through one. */
  estimated: boolean;
  findings: ProbeFindings | undefined;
  /** ERC-20 mode with the client's gas, signing: the charge is decided on the probe's holdings (chargeLanding), at this price. */
  deferredCharge?: TokenPrice;
}

/**
 * The steps up to the maximum cost and the gas rules, shared by the dry run, the estimate and sponsoring
 * (`signs`: the paymaster hash will be signed, so the sender's EIP-7702 delegate is needed).
 */
async function quote(request: SponsorRequest, call: CallContext, failing: FailingVerdicts, signs: boolean, clocks?: ChainClocks, clockCheck?: WindowCheck): Promise<Quoted> {
  const trace = call.trace;
  const resolved = await resolve(request, call, clocks, clockCheck, signs);
  const client = clientGas(resolved); // the client's gas never depends on the sender's delegate
  // The estimate's probe reads the sender's token holdings in its one call, and so does the final simulation's
  // (chargeLanding) when an ERC-20 sponsorship with the client's gas is signed; otherwise the price step reads them.
  const estimates = needsSimulation(client.gas);
  const usable = probeUsable(resolved);
  const probing = estimates && usable;
  // The sender's code: read by the estimate's probe in its one call when it runs and no rule on 7702 delegates
  // needs it first (delegateFromProbe). Else its own read starts now; only those rules wait for it here, otherwise
  // the hash is the first to need it, so the read overlaps the price and estimate steps' chain calls, and when the
  // final simulation checks the signature, that simulation too (delegateToSign).
  // With the client's gas, the final simulation of the signed op runs through the probe and reads the code there:
  // signed for the delegate last read for the sender, the simulation checks it (delegateForProbedLanding).
  const codeInProbe = signs && usable && !judgesDelegates(resolved) && (estimates || call.network.config.skipFinalSimulation !== true);
  const delegated = codeInProbe ? undefined : traced(trace, "step.detectDelegate", signs ? detectForSigning : detectWithoutSigning, resolved);
  delegated?.catch(() => undefined); // a failed read is raised where it is awaited, never unhandled meanwhile
  let target = judgesDelegates(resolved) ? await delegated! : resolved;
  const verdicts = cheapPolicy({ target, failing });
  const deferCharge = signs && !estimates && target.mode.mode === "erc20" && call.network.config.skipFinalSimulation !== true && usable;
  const price = await traced(trace, "step.tokenPrice", tokenPrice, { target, holdings: !probing && !deferCharge });
  checkCaps({ target, gas: client.gas }); // the client's own values first: an over-cap limit must never reach the simulation
  const estimateData = stubPaymasterData(target, price, ChargeMode.PreCharge);
  const known = price?.holdings && { chargeMode: estimateChargeMode(price.holdings) };
  const estimate = await traced(trace, "step.estimateGas", estimateGas, { target, gas: client.gas, paymasterData: estimateData, ...known });
  const { gas, run } = estimate;
  checkCaps({ target, gas });
  const token =
    price &&
    (deferCharge
      ? quoteToken({ target, gas, price, chargeMode: ChargeMode.PreCharge, paymasterData: estimateData })
      : await traced(trace, "step.chargeToken", chargeToken, { target, gas, price, holdings: holdingsOf(price, run), paymasterData: estimateData }));
  const cost = await traced(trace, "step.maxCost", maxCost, { target, gas, paymasterData: stubPaymasterData(target, price, token?.chargeMode), nativeUsd: price?.nativeUsd });
  verdicts.push(...gasPolicy({ target, gas, cost, failing }));
  const delegate = await delegateFor(target, { delegated, signs, estimates, probed: run?.findings?.senderCode });
  return { target: delegate.target, gas, token, cost, verdicts, delegate, estimated: run !== undefined, findings: run?.findings, ...(deferCharge && price ? { deferredCharge: price } : {}) };
}

/**
 * The delegate step's answer for the quote (src/sponsor/steps/delegate.ts): with a code read of its own in flight
 * (`delegated`), the read (or, when signing, the last-read guess beside it); without one, the probe's read — the
 * estimate's (`probed`) or, with the client's gas, the final simulation's to come.
 */
async function delegateFor(
  target: Target,
  { delegated, signs, estimates, probed }: { delegated: Promise<Target> | undefined; signs: boolean; estimates: boolean; probed: { delegate: Address | undefined } | undefined },
): Promise<DelegateToSign> {
  if (delegated !== undefined) return signs ? delegateToSign(target, delegated) : { target: await delegated };
  const readApart = (t: Target) => traced(target.call.trace, "step.detectDelegate", detectForSigning, t);
  return estimates ? delegateFromProbe(target, probed, readApart) : delegateForProbedLanding(target, readApart);
}

/** ERC-20 mode: the sender's holdings, read by the price step, else by the estimate's simulation (one of them always does). */
function holdingsOf(price: TokenPrice, run: EstimateRun | undefined): SenderHoldings {
  const holdings = price.holdings ?? run?.holdings;
  if (holdings === undefined) throw new TypeError("ERC-20 mode: neither the price step nor the estimate read the sender's holdings");
  return holdings;
}

/**
 * The first step, resolveTarget, whose answer names what the call's root span carries: the EntryPoint
 * version and the mode (sponsor, erc20, user-sponsor).
 */
async function resolve(request: SponsorRequest, call: CallContext, clocks?: ChainClocks, clockCheck?: WindowCheck, signs = false): Promise<Target> {
  const target = await traced(call.trace, "step.resolveTarget", resolveTarget, { request, call, clocks, clockCheck, signs });
  call.trace?.set("paymaster.entry_point_version", request.version);
  call.trace?.set("paymaster.mode", target.mode.mode);
  return target;
}

/** detectDelegate as a step (the stub and the dry runs: the read only when a rule needs it). */
function detectWithoutSigning(target: Target, span: TraceSpan): Promise<Target> {
  return detectDelegate(target, false, span);
}

/** detectDelegate as a step (signing methods: the hash needs the delegate). */
function detectForSigning(target: Target, span: TraceSpan): Promise<Target> {
  return detectDelegate(target, true, span);
}

/** Paymaster data with the stub signature (the final data's length), for the given charge mode. */
function stubPaymasterData(target: Target, price: TokenPrice | null, chargeMode: ChargeMode | undefined): Hex {
  return paymasterDataFor(target, price?.rate ?? 0n, chargeMode ?? ChargeMode.PreCharge, STUB_SIGNATURE);
}

/** The answer: the signed op's fields once committed, else the op's stub paymasterAndData. */
function pipelineResult({ target, gas, cost, token, verdicts }: Pick<Quoted, "target" | "gas" | "cost" | "token" | "verdicts">, committed?: Committed): PipelineResult {
  return {
    version: target.request.version,
    entryPoint: target.entry.entryPoint,
    paymaster: target.paymaster,
    mode: target.mode,
    gas,
    maxCostWei: cost.maxCostWei,
    token,
    paymasterAndData: committed ? committed.paymasterAndData : paymasterAndDataOf(cost.op),
    userOpHash: committed ? committed.userOpHash : null,
    validUntil: target.window.validUntil,
    validAfter: target.window.validAfter,
    sponsorshipId: committed ? committed.sponsorshipId : null,
    verdicts,
    maxCostUsdMicros: cost.maxCostUsdMicros,
  };
}
