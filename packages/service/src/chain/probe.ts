/**
 * The sponsorship probe: ONE eth_call to SponsorProbe (packages/contracts/contracts/simulation), whose code is
 * set by state override at PROBE_ADDRESS, that reads and simulates everything the service's estimate and its
 * check of the signed op need (docs/pipeline.md, "One round trip"):
 *   1. whether the paymaster accepts the service's signer (isSigner);
 *   2. ERC-20 mode: the sender's token balance, its allowance to the paymaster and the paymaster's balance,
 *      which select the charge mode the op runs in (pre-charge from `preChargeFrom` on);
 *   3. a variant of the op (other gas values and paymaster signature bytes) validated alone, its state
 *      discarded: the account's validation must cost the same and answer the same as the op's;
 *   4. the op simulated as it would land (simulateHandleOp: validation, execution, postOp), then, in ERC-20
 *      mode, the same holdings read right after it;
 *   5. v0.6: the op's calls alone (its EntryPoint does not tell whether the execution succeeded);
 *   6. the EIP-7702 delegate the sender's code names before the op (read with 1 and 2), which the paymaster
 *      hash binds: a deployed sender's sponsorship needs no eth_getCode of its own (src/sponsor/steps/delegate.ts).
 * v0.6 needs the override for the probe alone; v0.7 / v0.8 already simulate through one. A node that refuses
 * the call (no state overrides, another gas cap) raises ProbeRefused, and the caller takes the path without it.
 */
import { decodeErrorResult, keccak256, stringToHex, type Abi } from "viem";
import { EntryPointV06Artifact, SponsorProbeArtifact, SponsorProbeDeployment } from "@paymaster/contracts/artifacts";
import { type Address, type Hex } from "@paymaster/shared";
import { NodeError, type ChainRpc } from "./rpc.ts";
import { addressAt, bytesAt, word } from "./abiRead.ts";
import { addressWord, bytesPart, encodeParts, encodeSimulateValidation, selectorOf, uintWord } from "./userOpAbi.ts";
import {
  findDeployedCode,
  simulateCallsData,
  simulateCallsOutcome,
  simulateOpData,
  simulateOpOutcome,
  simulationOverride,
  entryPointFailure,
  wholeCodeOverride,
  type CallAnswer,
  type SimulatedOp,
  type SimulationFailure,
  type SimulationOutcome,
  type Simulator,
  type Simulators,
} from "./entryPoint.ts";

/** Where the probe's code is set for the call: an address no chain has code at (derived from a name, like a salt). */
export const PROBE_ADDRESS: Address = `0x${keccak256(stringToHex("@paymaster/contracts:SponsorProbe")).slice(-40)}`;
const probeAbi = SponsorProbeArtifact.abi as Abi;

const SPONSOR_PROBE = { artifact: SponsorProbeArtifact, deployment: SponsorProbeDeployment };

/** The probe's whole runtime code as the override: works on any node that takes state overrides. */
export const PROBE_CODE_OVERRIDE: Simulator = wholeCodeOverride(SPONSOR_PROBE);

/**
 * How the probe's code reaches PROBE_ADDRESS: a 45-byte delegating proxy when SponsorProbe is deployed at its
 * CREATE2 address (the local stack deploys it; anyone can elsewhere, as the simulators), else its whole code
 * (~3.7 kB, which the node reads on every call: about 0.3 ms, measured).
 */
export function findProbe(rpc: ChainRpc): Promise<Simulator> {
  return findDeployedCode(rpc, SPONSOR_PROBE);
}

/** A node's error message that refuses the override parameter itself (geth: "too many arguments, want at most 2"). */
const PARAMETER_REFUSED = /overrid|argument|param|not supported|unsupported|unknown field/i;

/**
 * Why the node does not take eth_call state overrides, or undefined when it does (the pre-flight: EntryPoint v0.7
 * and v0.8 simulations run the simulator at the EntryPoint's address by one). The probe's `holdings` for token 0,
 * its code set by `probe`, answers three zero words and reads nothing; a node that refuses the parameter answers an
 * error, one that ignores it runs an address without code and answers nothing.
 */
export async function stateOverridesRefusal(rpc: ChainRpc, probe: Simulator): Promise<string | undefined> {
  let answer: Hex;
  try {
    answer = await rpc.request<Hex>("eth_call", [{ to: PROBE_ADDRESS, data: holdingsCall(ZERO, ZERO, ZERO) }, "latest", { [PROBE_ADDRESS]: { code: probe.code } }]);
  } catch (error) {
    // The parameter refused (invalid params, or a message naming it) is the node's verdict; any other error is one in
    // passing, which the start-up check meets again at its next try (src/network/start.ts).
    if (error instanceof NodeError && (error.code === -32602 || PARAMETER_REFUSED.test(error.message))) return `it refused the call with an override: ${error.message.slice(0, 200)}`;
    throw error;
  }
  return answer === `0x${"0".repeat(3 * 64)}` ? undefined : `it ignored the override (the call answered ${answeredBytes(answer)} bytes, not 96)`;
}

/** How many bytes a node's eth_call answer holds (0 for one that is not a hex string). */
function answeredBytes(answer: unknown): number {
  return typeof answer === "string" ? Math.max(0, (answer.length - 2) / 2) : 0;
}

const PROBE_SELECTOR = selectorOf(probeAbi, "probe");

/** A token holder's balance, its allowance to the paymaster, and the paymaster's own balance of the token. */
export interface Holdings {
  balance: bigint;
  allowance: bigint;
  paymasterBalance: bigint;
}

/** What the probe runs in one charge mode. */
export interface ProbeRun {
  /** The op, simulated as it would land. */
  op: SimulatedOp;
  /**
   * The same op with other values, validated first and alone (its cost and answer compared with the op's): the
   * account's validation against other values. None for an op already signed (its simulation is its own).
   */
  variant?: SimulatedOp;
  /** v0.6: the op without its callData, after whose validation the EntryPoint runs the calls alone. */
  withoutCalls?: SimulatedOp;
}

export interface ProbeInput {
  entryPoint: Address;
  paymaster: Address;
  signer: Address;
  sender: Address;
  /** The op's callData (what `withoutCalls` runs alone). */
  callData: Hex;
  /** Sponsor and User Sponsor mode; ERC-20 mode: the op charged in postOp. */
  run: ProbeRun;
  /** ERC-20 mode: the token, and the op charged up front, run when the sender's allowance is at least `preChargeFrom`. */
  erc20?: { token: Address; preChargeFrom: bigint; preCharge: ProbeRun };
}

/** A validation alone: its gas (preOpGas) and the account's validation data (v0.7 / v0.8), or its refusal. */
export type ValidationOutcome = { ok: true; preOpGas: bigint; accountValidationData: bigint | undefined } | { ok: false; failure: SimulationFailure };

export interface ProbeResult {
  signerAccepted: boolean;
  /** ERC-20 mode: the sender's holdings before the op, and right after it (undefined when the op failed). */
  holdings?: { before: Holdings; after: Holdings | undefined };
  /** ERC-20 mode: the run charged up front was made. */
  preCharge: boolean;
  /** The variant's validation (undefined when the run had none). */
  variant?: ValidationOutcome;
  simulation: SimulationOutcome;
  /** v0.6: the op's calls alone. */
  calls?: SimulationOutcome;
  /**
   * The delegate the sender's code named before the op (undefined: its code is no EIP-7702 delegation), read at
   * the block the simulations ran on; absent when the reads' frame did not answer (it tells `signerAccepted` true
   * only when it did, so a false one leaves the read untrusted).
   */
  senderCode?: { delegate: Address | undefined };
}

/** The node did not run the probe (it takes no state overrides, or refused the call otherwise). */
export class ProbeRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProbeRefused";
  }
}

/** The probe's one call; `probe`: how its code reaches PROBE_ADDRESS (findProbe). */
export async function probeSponsorship(rpc: ChainRpc, simulators: Simulators, probe: Simulator, input: ProbeInput): Promise<ProbeResult> {
  const { run, erc20 } = input;
  const readAfter = erc20 ? { to: PROBE_ADDRESS, data: holdingsCall(erc20.token, input.sender, input.paymaster) } : undefined;
  const calls = (r: ProbeRun) => probeCalls(input, r, readAfter);
  const data = `0x${PROBE_SELECTOR}${encodeParts([
    addressWord(input.paymaster, "paymaster"),
    addressWord(input.signer, "signer"),
    addressWord(erc20?.token ?? ZERO, "token"),
    addressWord(input.sender, "sender"),
    uintWord(erc20?.preChargeFrom ?? 0n, "preChargeFrom"),
    { dynamic: callList(erc20 ? calls(erc20.preCharge) : []) },
    { dynamic: callList(calls(run)) },
  ])}` as Hex;
  const override = { ...simulationOverride(simulators, input.entryPoint, run.op), [PROBE_ADDRESS]: { code: probe.code } };
  let output: Hex;
  try {
    output = await rpc.request<Hex>("eth_call", [{ to: PROBE_ADDRESS, data }, "latest", override]);
  } catch (error) {
    if (error instanceof NodeError) throw new ProbeRefused(error.message.slice(0, 200));
    throw error;
  }
  return decodedAnswer(output, input);
}

/** The words of the probe's answer before its dynamic parts: signerAccepted, Holdings (3), preCharge, the results' offset, senderDelegate. */
const ANSWER_HEAD_WORDS = 7;

/**
 * The probe's answer decoded, or ProbeRefused when it is not one: a node that ignores state overrides (takes the
 * parameter and drops it) runs the call on an address without code, which answers nothing, and must count as a
 * refusal (the path without the probe), not fail every sponsorship.
 */
function decodedAnswer(output: Hex, input: ProbeInput): ProbeResult {
  const refused = (why: string) => new ProbeRefused(`the probe's answer ${why}: does the node ignore state overrides?`);
  if (answeredBytes(output) < ANSWER_HEAD_WORDS * 32) throw refused(`has ${answeredBytes(output)} bytes`);
  try {
    return decodeProbe(output, input);
  } catch (error) {
    throw refused(`does not decode (${String((error as Error)?.message ?? error).slice(0, 120)})`);
  }
}

const ZERO: Address = "0x0000000000000000000000000000000000000000";

/** A SponsorProbe.Call: whom to call, the calldata, whether its state is discarded. */
interface ProbeCall {
  target: Address;
  data: Hex;
  isolated: boolean;
}

/** The calls of one run, in order: the variant's validation (isolated), the op, and (v0.6) its calls alone. */
function probeCalls(input: ProbeInput, run: ProbeRun, readAfter: { to: Address; data: Hex } | undefined): ProbeCall[] {
  const target = input.entryPoint;
  const simulation: ProbeCall = { target, data: simulateOpData(target, run.op, readAfter), isolated: false };
  const calls = run.variant === undefined ? [simulation] : [{ target, data: encodeSimulateValidation(run.variant), isolated: true }, simulation];
  if (run.withoutCalls) calls.push({ target, data: simulateCallsData(run.withoutCalls, input.sender, input.callData), isolated: false });
  return calls;
}

/** abi.encode of a Call[] (no 0x): the length, then each (address, bytes, bool) tuple by offset. */
function callList(calls: ProbeCall[]): string {
  const tuples = calls.map((c) => ({ dynamic: encodeParts([addressWord(c.target, "target"), bytesPart(c.data, "data"), uintWord(c.isolated ? 1n : 0n, "isolated")]) }));
  return uintWord(BigInt(calls.length), "length") + encodeParts(tuples);
}

const HOLDINGS_SELECTOR = selectorOf(probeAbi, "holdings");

/** SponsorProbe.holdings(token, owner, spender) calldata (three static words: no generic encoder needed). */
function holdingsCall(token: Address, owner: Address, spender: Address): Hex {
  return `0x${HOLDINGS_SELECTOR}${addressWord(token, "token")}${addressWord(owner, "owner")}${addressWord(spender, "spender")}`;
}

function holdingsAt(hex: Hex, base: number): Holdings {
  return { balance: word(hex, 0, base), allowance: word(hex, 1, base), paymasterBalance: word(hex, 2, base) };
}

/**
 * probe's return: (bool signerAccepted, Holdings before, bool preCharge, Result[] results, address senderDelegate),
 * each Result a (bool success, bytes data) of one call of the run that was made, in probeCalls' order.
 */
function decodeProbe(output: Hex, input: ProbeInput): ProbeResult {
  const preCharge = word(output, 4) === 1n;
  const run = preCharge && input.erc20 ? input.erc20.preCharge : input.run;
  const arrayBase = Number(word(output, 5));
  const elements = arrayBase + 32;
  const answers: CallAnswer[] = [];
  for (let i = 0; i < Number(word(output, 0, arrayBase)); i++) {
    const at = elements + Number(word(output, i, elements));
    const data = bytesAt(output, 1, at).value;
    answers.push(word(output, 0, at) === 1n ? { ok: true, data } : { ok: false, revert: data === "0x" ? undefined : data, message: "reverted" });
  }
  const version = run.op.version;
  const checked = run.variant !== undefined;
  const simulation = simulateOpOutcome(version, answers[checked ? 1 : 0]!);
  const signerAccepted = word(output, 0) === 1n;
  const result: ProbeResult = {
    signerAccepted,
    // The reads' frame answered when it told that the paymaster accepts the signer: only then is its code read trusted.
    ...(signerAccepted ? { senderCode: { delegate: addressAt(output, 6) } } : {}),
    preCharge,
    simulation,
    ...(checked ? { variant: validationOutcome(version, answers[0]!) } : {}),
    ...(run.withoutCalls ? { calls: simulateCallsOutcome(version, answers.at(-1)!) } : {}),
  };
  if (input.erc20) {
    const after = simulation.ok && simulation.result.targetSuccess ? holdingsAt(simulation.result.targetResult, 0) : undefined;
    result.holdings = { before: holdingsAt(output, 32), after };
  }
  return result;
}

/**
 * simulateValidation's answer. v0.6 always reverts: ValidationResult(ReturnInfo(preOpGas, ...), ...), or
 * FailedOp. v0.7 / v0.8 return ValidationResult(ReturnInfo returnInfo, ...), whose ReturnInfo (preOpGas,
 * prefund, accountValidationData, paymasterValidationData, paymasterContext) is dynamic: the struct's first
 * head word is its offset.
 */
function validationOutcome(version: SimulatedOp["version"], answer: CallAnswer): ValidationOutcome {
  if (version === "v0.6") {
    const revert = answer.ok ? undefined : answer.revert;
    if (revert) {
      try {
        const decoded = decodeErrorResult({ abi: EntryPointV06Artifact.abi as Abi, data: revert });
        if (decoded.errorName === "ValidationResult" || decoded.errorName === "ValidationResultWithAggregation") {
          const [returnInfo] = decoded.args as [{ preOpGas: bigint }];
          return { ok: true, preOpGas: returnInfo.preOpGas, accountValidationData: undefined };
        }
      } catch {
        // not an EntryPoint result: a refusal, below
      }
    }
    return { ok: false, failure: entryPointFailure(version, answer) };
  }
  if (!answer.ok) return { ok: false, failure: entryPointFailure(version, answer) };
  // A ValidationResult is at least its head (ten words) and ReturnInfo's five: anything shorter is not one.
  if (answer.data.length < 2 + 64 * 15) return { ok: false, failure: { reason: "simulateValidation gave no result", aaCode: null, inner: null } };
  const base = Number(word(answer.data, 0));
  const returnInfo = base + Number(word(answer.data, 0, base));
  return { ok: true, preOpGas: word(answer.data, 0, returnInfo), accountValidationData: word(answer.data, 2, returnInfo) };
}
