/**
 * EntryPoint simulation through eth_call. v0.6: the EntryPoint's own simulateHandleOp (always reverts with
 * ExecutionResult or FailedOp). v0.7 / v0.8: our EntryPointSimulatorV07 / V08 (eth-infinitism's EntryPointSimulations plus
 * the op's execution outcome) run at the EntryPoint's address through a state override: a 45-byte delegating
 * proxy when the simulator's code is deployed on the chain (found at start-up at its CREATE2 address), else
 * the whole ~19 kB code on every call (see "Simulation" in the README for the measurements). It returns
 * ExecutionResult or reverts with FailedOp / FailedOpWithRevert. Both versions give the same result shape.
 */
import { decodeErrorResult, decodeFunctionResult, encodeFunctionData, type Abi } from "viem";
import {
  EntryPointSimulatorV07Artifact,
  EntryPointSimulatorV07Deployment,
  EntryPointSimulatorV08Artifact,
  EntryPointSimulatorV08Deployment,
  EntryPointV06Artifact,
} from "@paymaster/contracts/artifacts";
import { eip7702DelegationCode, type Address, type EntryPointVersion, type Hex, type PackedUserOperation, type UserOperationV06, type UserOperationV07, type UserOperationV08 } from "@paymaster/shared";
import { NodeError, type ChainRpc } from "./rpc.ts";
import { RpcError } from "../errors.ts";
import { addressWord, bytesPart, encodeParts, encodeSimulateHandleOp, selectorOf } from "./userOpAbi.ts";
import { bytesAt, word } from "./abiRead.ts";

export interface ExecutionResult {
  preOpGas: bigint;
  paid: bigint;
  /**
   * Whether the op's execution (and postOp) succeeded: known for v0.7 (the simulator records it), undefined
   * for v0.6 (its EntryPoint has no hook: run `simulateCalls` to learn it).
   */
  opSucceeded: boolean | undefined;
  /** v0.7: the paymaster's validation data says its signature failed (v0.6: always false, not reported). */
  paymasterSigFailed: boolean;
  /** v0.7 / v0.8 simulateOp: the account's validation data (undefined for v0.6, which does not report it apart). */
  accountValidationData: bigint | undefined;
  /** The read made after the op (simulateOp) or the raw target call (simulateCalls). */
  targetSuccess: boolean;
  targetResult: Hex;
}

/** A simulation the EntryPoint refused: its AAxx reason and, where there is one, the inner revert data. */
export interface SimulationFailure {
  /** e.g. "AA33 reverted", "AA31 paymaster deposit too low". */
  reason: string;
  /** The AAxx code alone, e.g. "AA33". */
  aaCode: string | null;
  inner: Hex | null;
}

export type SimulationOutcome = { ok: true; result: ExecutionResult } | { ok: false; failure: SimulationFailure };

/** An op to simulate; a v0.7 or v0.8 one may carry its packing (see EncodableOp in userOpAbi.ts). */
export type SimulatedOp =
  | { version: "v0.6"; userOp: UserOperationV06 }
  | { version: "v0.7"; userOp: UserOperationV07; packed?: PackedUserOperation }
  | { version: "v0.8"; userOp: UserOperationV08; packed?: PackedUserOperation };

/** How v0.7/v0.8 simulations reach the simulator's code: the state override each eth_call carries. */
export interface Simulator {
  /** "deployed": a delegating proxy to the simulator's deployed code; "override": the whole code each call. */
  readonly kind: "deployed" | "override";
  /** The override's `code` value, pre-serialized (JSON.stringify would rescan the 38k-character string each call). */
  readonly code: unknown;
}

/** The v0.7 simulator access (kept as a name: v0.7 came first). */
export type SimulatorV07 = Simulator;
/** One simulator per EntryPoint version that simulates through one (v0.6 uses its EntryPoint's own). */
export type Simulators = Readonly<Record<"v0.7" | "v0.8", Simulator>>;

const ZERO: Address = "0x0000000000000000000000000000000000000000";
const entryPointV06Abi = EntryPointV06Artifact.abi as Abi;
const SIMULATOR_ARTIFACTS = {
  "v0.7": { artifact: EntryPointSimulatorV07Artifact, deployment: EntryPointSimulatorV07Deployment },
  "v0.8": { artifact: EntryPointSimulatorV08Artifact, deployment: EntryPointSimulatorV08Deployment },
} as const;
const simulatorAbi = (version: "v0.7" | "v0.8"): Abi => SIMULATOR_ARTIFACTS[version].artifact.abi as Abi;
/** `code` as a pre-serialized JSON value (JSON.stringify would rescan a long code string on every call). */
function rawJsonCode(code: string): unknown {
  return (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(JSON.stringify(code));
}

/** A contract the service sets by state override for one call: its artifact's runtime code, and its CREATE2 address. */
interface OverriddenContract {
  artifact: { deployedBytecode: string };
  deployment: { address: Address };
}

/** The contract's whole runtime code as the override: works on any node that takes state overrides. */
export function wholeCodeOverride({ artifact }: OverriddenContract): Simulator {
  return Object.freeze({ kind: "override", code: rawJsonCode(artifact.deployedBytecode) });
}

/**
 * The cheapest way this chain offers to set `contract` for a call: a delegating proxy when its exact runtime code
 * is deployed at its CREATE2 address (the local stack deploys it; anyone can on a real network), else the whole code.
 */
export async function findDeployedCode(rpc: ChainRpc, contract: OverriddenContract): Promise<Simulator> {
  const code = await rpc.request<string>("eth_getCode", [contract.deployment.address, "latest"]);
  if (code.toLowerCase() !== contract.artifact.deployedBytecode.toLowerCase()) return wholeCodeOverride(contract);
  return Object.freeze({ kind: "deployed", code: delegatingProxyCode(contract.deployment.address) });
}

const codeOverride = (version: "v0.7" | "v0.8"): Simulator => wholeCodeOverride(SIMULATOR_ARTIFACTS[version]);

/** The v0.7 simulator's whole runtime code as the override: works on any node that takes state overrides. */
export const SIMULATOR_CODE_OVERRIDE: Simulator = codeOverride("v0.7");
/** The same for v0.8. */
export const SIMULATOR_V08_CODE_OVERRIDE: Simulator = codeOverride("v0.8");
/** Both simulators as whole-code overrides (a network without v0.7/v0.8 never uses them). */
export const CODE_OVERRIDE_SIMULATORS: Simulators = Object.freeze({ "v0.7": SIMULATOR_CODE_OVERRIDE, "v0.8": SIMULATOR_V08_CODE_OVERRIDE });

/** An EIP-1167 minimal proxy: delegates every call (with all its gas) to `target`, returning or reverting its data. */
function delegatingProxyCode(target: Address): Hex {
  return `0x363d3d373d3d3d363d73${target.slice(2).toLowerCase()}5af43d82803e903d91602b57fd5bf3`;
}

/**
 * The cheapest way this chain offers: the proxy when the simulator's exact runtime code is deployed at its
 * CREATE2 address (the local stack deploys it; anyone can on a real network), else the whole code.
 */
export async function findSimulatorV07(rpc: ChainRpc): Promise<Simulator> {
  return findSimulator(rpc, "v0.7");
}

/** findSimulatorV07 for any simulated version. */
export function findSimulator(rpc: ChainRpc, version: "v0.7" | "v0.8"): Promise<Simulator> {
  return findDeployedCode(rpc, SIMULATOR_ARTIFACTS[version]);
}

function failureOf(reason: string, inner: Hex | null): SimulationFailure {
  const match = /^(AA\d\d)/.exec(reason);
  return { reason, aaCode: match ? match[1]! : null, inner };
}

function decodeFailure(abi: Abi, data: Hex): SimulationFailure | undefined {
  try {
    const decoded = decodeErrorResult({ abi, data });
    const args = (decoded.args ?? []) as readonly unknown[];
    if (decoded.errorName === "FailedOp") return failureOf(String(args[1]), null);
    if (decoded.errorName === "FailedOpWithRevert") return failureOf(String(args[1]), args[2] as Hex);
  } catch {
    // not an EntryPoint error: handled by the caller
  }
  return undefined;
}

/** The low 160 bits of validation data: 1 means the signature failed (0 success, else an aggregator). */
const sigFailed = (validationData: bigint): boolean => (validationData & ((1n << 160n) - 1n)) === 1n;

interface RawExecution {
  preOpGas: bigint;
  paid: bigint;
  paymasterValidationData: bigint;
  targetSuccess: boolean;
  targetResult: Hex;
}

type RawOutcome = { ok: true; result: RawExecution } | { ok: false; failure: SimulationFailure };

/** What an eth_call answered: its returned data, or its revert (the data, and the node's message). */
export type CallAnswer = { ok: true; data: Hex } | { ok: false; revert: Hex | undefined; message: string };

/** One simulation as an eth_call to the EntryPoint's address: its calldata and the code it needs set per address. */
export interface SimulationCall {
  data: Hex;
  /** v0.6: none (its EntryPoint simulates itself). */
  override: Record<string, { code: unknown }>;
}

/** `call` to the EntryPoint at the latest block; a JSON-RPC error from the node is an answer too (a revert). */
async function ask(rpc: ChainRpc, entryPoint: Address, call: SimulationCall): Promise<CallAnswer> {
  const params: unknown[] = [{ to: entryPoint, data: call.data }, "latest"];
  if (Object.keys(call.override).length > 0) params.push(call.override);
  try {
    return { ok: true, data: await rpc.request<Hex>("eth_call", params) };
  } catch (error) {
    if (!(error instanceof NodeError)) throw error;
    return { ok: false, revert: error.revertData, message: error.message };
  }
}

/** simulateHandleOp's ExecutionResult in `answer`: v0.6 reverts with it, the v0.7 / v0.8 simulators return it. */
function rawExecution(version: EntryPointVersion, answer: CallAnswer): RawOutcome {
  if (version === "v0.6") {
    const revert = answer.ok ? undefined : answer.revert;
    if (!revert) throw new RpcError("CHAIN_UNAVAILABLE", "simulateHandleOp gave no result");
    const failure = decodeFailure(entryPointV06Abi, revert);
    if (failure) return { ok: false, failure };
    const decoded = decodeErrorResult({ abi: entryPointV06Abi, data: revert });
    if (decoded.errorName !== "ExecutionResult") return { ok: false, failure: failureOf("unexpected revert", revert) };
    const [preOpGas, paid, , , targetSuccess, targetResult] = decoded.args as [bigint, bigint, number, number, boolean, Hex];
    return { ok: true, result: { preOpGas, paid, paymasterValidationData: 0n, targetSuccess, targetResult } };
  }
  const abi = simulatorAbi(version);
  if (!answer.ok) return { ok: false, failure: simulatorFailure(abi, answer) };
  return { ok: true, result: decodeFunctionResult({ abi, functionName: "simulateHandleOp", data: answer.data }) as RawExecution };
}

/** A refused simulation: the EntryPoint's FailedOp / FailedOpWithRevert, else the revert, or what the node said. */
export function entryPointFailure(version: EntryPointVersion, answer: CallAnswer): SimulationFailure {
  if (answer.ok) return failureOf("unexpected result", null);
  return version === "v0.6" ? (decodeFailure(entryPointV06Abi, answer.revert ?? "0x") ?? failureOf("unexpected revert", answer.revert ?? null)) : simulatorFailure(simulatorAbi(version), answer);
}

/** A reverted v0.7/v0.8 simulation: FailedOp / FailedOpWithRevert, else whatever the node said. */
function simulatorFailure(abi: Abi, answer: { revert: Hex | undefined; message: string }): SimulationFailure {
  const { revert } = answer;
  const failure = revert ? decodeFailure(abi, revert) : undefined;
  return failure ?? failureOf(`simulation reverted${revert ? "" : ": " + answer.message.slice(0, 200)}`, revert ?? null);
}

/**
 * The code a simulation of `op` needs set: v0.7 / v0.8, the simulator at the EntryPoint's address and, for a
 * v0.8 op carrying an EIP-7702 authorization, the sender's code as the authorization will set it
 * (0xef0100 ‖ delegate), as bundlers simulate such ops; v0.6, nothing.
 */
export function simulationOverride(simulators: Simulators, entryPoint: Address, op: SimulatedOp): Record<string, { code: unknown }> {
  if (op.version === "v0.6") return {};
  const override: Record<string, { code: unknown }> = { [entryPoint]: { code: simulators[op.version].code } };
  const auth = op.version === "v0.8" ? op.userOp.eip7702Auth : undefined;
  if (auth !== undefined) override[op.userOp.sender] = { code: eip7702DelegationCode(auth.address) };
  return override;
}

/** The simulators' opOutcome(address, bytes) selector (the same in v0.7's and v0.8's). */
const OP_OUTCOME_SELECTOR = selectorOf(simulatorAbi("v0.7"), "opOutcome");

/** opOutcome(target, data) calldata, written out (encodeFunctionData walks the ABI on every call). */
function opOutcomeCall(target: Address, data: Hex): Hex {
  return `0x${OP_OUTCOME_SELECTOR}${encodeParts([addressWord(target, "target"), bytesPart(data, "data")])}`;
}

/** opOutcome(0, "") calldata: the same for every op without a read, so encoded once. */
const OUTCOME_WITHOUT_READ = opOutcomeCall(ZERO, "0x");

/**
 * ExecutionResult and the opOutcome it carries, read straight off the fixed ABI layout (viem's generic
 * decoders cost more than the rest of the service's work on this path): simulateHandleOp returns the struct
 * (preOpGas, paid, accountValidationData, paymasterValidationData, targetSuccess, targetResult); targetResult
 * is opOutcome's (bool opSucceeded, bool readSuccess, bytes readResult).
 */
function decodeLanding(output: Hex): ExecutionResult {
  const base = Number(word(output, 0)); // the struct's offset
  if (word(output, 4, base) !== 1n) throw new RpcError("CHAIN_UNAVAILABLE", "the simulator's opOutcome failed");
  const outcome = bytesAt(output, 5, base);
  const inner = outcome.value;
  return {
    preOpGas: word(output, 0, base),
    paid: word(output, 1, base),
    accountValidationData: word(output, 2, base),
    paymasterSigFailed: sigFailed(word(output, 3, base)),
    opSucceeded: word(inner, 0) === 1n,
    targetSuccess: word(inner, 1) === 1n,
    targetResult: bytesAt(inner, 2).value,
  };
}

/**
 * simulateOp as an eth_call: validation, execution and postOp, then (optionally) `read` called right after
 * the op (v0.7 / v0.8 through the simulator's opOutcome, which also records whether the execution succeeded).
 */
export function simulateOpCall(simulators: Simulators, entryPoint: Address, op: SimulatedOp, read?: { to: Address; data: Hex }): SimulationCall {
  return { data: simulateOpData(entryPoint, op, read), override: simulationOverride(simulators, entryPoint, op) };
}

/** simulateOpCall's calldata alone (the probe sets the code once for all its calls). */
export function simulateOpData(entryPoint: Address, op: SimulatedOp, read?: { to: Address; data: Hex }): Hex {
  if (op.version === "v0.6") return encodeSimulateHandleOp(op, read?.to ?? ZERO, read?.data ?? "0x");
  // The EntryPoint calls itself after the op: the simulator's opOutcome(read.to, read.data).
  return encodeSimulateHandleOp(op, entryPoint, read ? opOutcomeCall(read.to, read.data) : OUTCOME_WITHOUT_READ);
}

/** What a simulateOpCall answered. */
export function simulateOpOutcome(version: EntryPointVersion, answer: CallAnswer): SimulationOutcome {
  // v0.6's EntryPoint reverts with ExecutionResult, which says nothing of the op's own success.
  if (version === "v0.6") return executionOutcome(version, answer);
  if (!answer.ok) return { ok: false, failure: simulatorFailure(simulatorAbi(version), answer) };
  return { ok: true, result: decodeLanding(answer.data) };
}

/**
 * The op as it would land: validation, execution and postOp, then (optionally) `read` called right after the
 * op, e.g. the treasury's token balance. v0.7 and v0.8 also tell whether the execution and postOp succeeded.
 */
export async function simulateOp(rpc: ChainRpc, simulators: Simulators, entryPoint: Address, op: SimulatedOp, read?: { to: Address; data: Hex }): Promise<SimulationOutcome> {
  return simulateOpOutcome(op.version, await ask(rpc, entryPoint, simulateOpCall(simulators, entryPoint, op, read)));
}

/**
 * simulateCalls as an eth_call: `op` must carry empty callData; the EntryPoint then calls `sender` with
 * `callData` right after validation (as the op's execution would).
 */
function simulateCallsCall(simulators: Simulators, entryPoint: Address, op: SimulatedOp, sender: Address, callData: Hex): SimulationCall {
  return { data: simulateCallsData(op, sender, callData), override: simulationOverride(simulators, entryPoint, op) };
}

/** simulateCallsCall's calldata alone (the probe sets the code once for all its calls). */
export function simulateCallsData(op: SimulatedOp, sender: Address, callData: Hex): Hex {
  return encodeSimulateHandleOp(op, sender, callData);
}

/** What a simulateCallsCall answered. */
export function simulateCallsOutcome(version: EntryPointVersion, answer: CallAnswer): SimulationOutcome {
  return executionOutcome(version, answer);
}

/** simulateHandleOp's ExecutionResult as an outcome that tells nothing of the op's own success or the account's answer. */
function executionOutcome(version: EntryPointVersion, answer: CallAnswer): SimulationOutcome {
  const raw = rawExecution(version, answer);
  if (!raw.ok) return raw;
  return { ok: true, result: { ...raw.result, accountValidationData: undefined, opSucceeded: undefined, paymasterSigFailed: false } };
}

/** The op's calls alone, with their revert data (see simulateCallsCall). */
export async function simulateCalls(rpc: ChainRpc, simulators: Simulators, entryPoint: Address, op: SimulatedOp, sender: Address, callData: Hex): Promise<SimulationOutcome> {
  return simulateCallsOutcome(op.version, await ask(rpc, entryPoint, simulateCallsCall(simulators, entryPoint, op, sender, callData)));
}
