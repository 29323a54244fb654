/**
 * ERC-7562 validation-rule checker: given the default-tracer trace of `handleOps([op])` (debug_traceCall from a
 * bundler address, `enableMemory: true`), the op's entity addresses and which entities are staked, it lists
 * every step of the validation phase that breaks one of the rules below. Pure: no chain access; the same
 * input always gives the same answer.
 *
 * Validation phase: the EntryPoint's direct calls before its first self-call (innerHandleOp, where execution
 * starts). Each direct call belongs to an entity: a call to the sender is the account's validateUserOp, a call
 * to the paymaster its validatePaymasterUserOp, any other (the SenderCreator) the factory's deployment.
 * Everything below such a call (nested calls, delegate calls) is that entity's.
 *
 * Rules checked (names as in ERC-7562):
 * - OP-011  banned opcodes: ORIGIN, GASPRICE, BLOCKHASH, COINBASE, TIMESTAMP, NUMBER, PREVRANDAO/DIFFICULTY,
 *           GASLIMIT, BASEFEE, BLOBHASH, BLOBBASEFEE, SELFDESTRUCT, INVALID.
 * - OP-012  GAS only when the next opcode is CALL, DELEGATECALL, CALLCODE or STATICCALL.
 * - OP-020  no out-of-gas in validation.
 * - OP-031  CREATE2 only in the factory's phase, once, creating the sender; CREATE never.
 * - OP-054  no EXTCODESIZE / EXTCODEHASH / EXTCODECOPY of the EntryPoint.
 * - OP-061  no CALL with value, except to the EntryPoint.
 * - OP-070  TLOAD / TSTORE are judged exactly like SLOAD / SSTORE.
 * - OP-080  BALANCE and SELFBALANCE only from a staked entity.
 * - STO-010 the sender's own storage: always allowed.
 * - STO-021 storage associated with the sender in another contract: allowed if the sender exists (no
 *           factory) or the factory is staked.
 * - STO-031 the entity's own storage: staked entity only.
 * - STO-032 storage associated with the entity in a non-entity contract: staked entity only.
 * - STO-033 read-only access to any other non-entity contract's storage: staked entity only (never a write).
 * A slot is associated with address A if it equals A, or is keccak256(A ‖ x) + n with n in 0..128, where the
 * keccak input starts with A as a 32-byte word (or 20 packed bytes); keccak inputs are read from the trace.
 *
 * Not checked here (they need more than one op's trace, or the node's state): OP-013 unassigned opcodes,
 * OP-041/042 code existence of EXTCODE* targets, OP-051..053 EntryPoint call shapes, OP-062 precompile list,
 * STO-040/041 (cross-op mempool rules), reputation and the stake amounts themselves.
 */
import { buildFrames, stackItem, subtree, toAddress, type Frame, type StructLog, type StructTrace } from "./frames.ts";

export type EntityRole = "factory" | "account" | "paymaster";

/** The op's entities (any case; compared lowercase). */
export interface ValidationEntities {
  entryPoint: string;
  sender: string;
  /** The factory of the op's initCode; absent when the sender is already deployed. */
  factory?: string;
  paymaster?: string;
}

/** Whether each entity is staked (in the EntryPoint, with a stake and unstake delay bundlers accept). */
export interface EntityStakes {
  factory?: boolean;
  paymaster?: boolean;
  account?: boolean;
}

export interface Violation {
  /** The ERC-7562 rule, e.g. "OP-011" or "STO-031". */
  rule: string;
  /** The entity whose validation phase the step ran in. */
  entity: EntityRole;
  /** The contract executing the step (its code address). */
  contract: string;
  opcode: string;
  /** Index of the step in structLogs. */
  step: number;
  message: string;
}

export interface ValidationReport {
  violations: Violation[];
  /** The entity phases found, in order, with the gas each took (its whole call). */
  phases: { entity: EntityRole; address: string; gasUsed: number }[];
}

const BANNED = new Set([
  "ORIGIN",
  "GASPRICE",
  "BLOCKHASH",
  "COINBASE",
  "TIMESTAMP",
  "NUMBER",
  "PREVRANDAO",
  "DIFFICULTY",
  "GASLIMIT",
  "BASEFEE",
  "BLOBHASH",
  "BLOBBASEFEE",
  "SELFDESTRUCT",
  "INVALID",
]);
const CALL_AFTER_GAS = new Set(["CALL", "DELEGATECALL", "CALLCODE", "STATICCALL"]);
const EXTCODE = new Set(["EXTCODESIZE", "EXTCODEHASH", "EXTCODECOPY"]);
const STORAGE_READ = new Set(["SLOAD", "TLOAD"]);
const STORAGE_WRITE = new Set(["SSTORE", "TSTORE"]);
/** keccak(A ‖ x) + n counts as associated with A for n up to this (struct members, arrays). */
const ASSOCIATED_OFFSET = 128n;

/** Checks the validation phase of a traced one-op handleOps against the rules listed above. */
export function checkValidationTrace(trace: StructTrace, entities: ValidationEntities, stakes: EntityStakes): ValidationReport {
  const entryPoint = entities.entryPoint.toLowerCase();
  const sender = entities.sender.toLowerCase();
  const factory = entities.factory?.toLowerCase();
  const paymaster = entities.paymaster?.toLowerCase();
  const logs = trace.structLogs;
  const { frames, frameOf } = buildFrames(logs, entryPoint);
  const root = frames[0];
  if (root === undefined) return { violations: [], phases: [] };

  // ---- the entity phases: the EntryPoint's direct calls until execution starts
  const phaseOf = new Map<Frame, { entity: EntityRole; address: string }>();
  const phases: ValidationReport["phases"] = [];
  let validationEnd = logs.length - 1;
  for (const child of root.children) {
    if (child.codeAddress === entryPoint) {
      validationEnd = child.firstStep - 1;
      break;
    }
    const entity: EntityRole = child.codeAddress === sender ? "account" : child.codeAddress === paymaster ? "paymaster" : "factory";
    const address = entity === "account" ? sender : entity === "paymaster" ? paymaster! : (factory ?? child.codeAddress);
    for (const frame of subtree(child)) phaseOf.set(frame, { entity, address });
    phases.push({ entity, address, gasUsed: child.gasAtStart - child.gasAtEnd });
  }

  // ---- keccak preimages seen during validation: hash -> the first 32 bytes of its input
  const preimages = new Map<bigint, string>();
  for (let i = 0; i <= validationEnd; i++) {
    const step = logs[i]!;
    if (step.op !== "KECCAK256" && step.op !== "SHA3") continue;
    const next = logs[i + 1];
    if (next === undefined || next.depth !== step.depth) continue;
    const input = readMemory(step, Number(BigInt(stackItem(step, 0))), Math.min(Number(BigInt(stackItem(step, 1))), 32));
    preimages.set(BigInt(stackItem(next, 0)), input);
  }
  const associated = (slot: bigint, address: string): boolean => {
    if (slot === BigInt(address)) return true;
    const word = address.slice(2).padStart(64, "0");
    const packed = address.slice(2);
    for (let n = 0n; n <= ASSOCIATED_OFFSET && n <= slot; n++) {
      const input = preimages.get(slot - n);
      if (input !== undefined && (input.startsWith(word) || input.startsWith(packed))) return true;
    }
    return false;
  };

  const entityAddresses = new Set([sender, factory, paymaster].filter((a): a is string => a !== undefined));
  const staked = (entity: EntityRole) => stakes[entity] === true;
  const violations: Violation[] = [];
  let creates = 0;

  for (let i = 0; i <= validationEnd; i++) {
    const frame = frameOf[i]!;
    const phase = phaseOf.get(frame);
    if (phase === undefined) continue; // the EntryPoint's own steps
    const step = logs[i]!;
    const op = step.op;
    const flag = (rule: string, message: string) =>
      violations.push({ rule, entity: phase.entity, contract: frame.codeAddress, opcode: op, step: i, message });

    // geth says "out of gas", Hardhat EDR "Some(OutOfGas)".
    if (step.error !== undefined && /out ?of ?gas/i.test(step.error)) flag("OP-020", "out of gas during validation");
    if (BANNED.has(op)) flag("OP-011", `${op} is banned in validation`);
    if (op === "GAS" && !CALL_AFTER_GAS.has(logs[i + 1]?.op ?? "")) flag("OP-012", `GAS not followed by a call (next: ${logs[i + 1]?.op ?? "end"})`);
    if ((op === "BALANCE" || op === "SELFBALANCE") && !staked(phase.entity)) flag("OP-080", `${op} by an unstaked ${phase.entity}`);
    if (op === "CREATE") flag("OP-031", "CREATE is not allowed in validation");
    if (op === "CREATE2") {
      creates++;
      const child = frames.find((f) => f.parent === frame && f.firstStep === i + 1);
      if (phase.entity !== "factory") flag("OP-031", `CREATE2 outside the factory's phase (${phase.entity})`);
      else if (creates > 1) flag("OP-031", "CREATE2 more than once");
      else if (child !== undefined && child.codeAddress !== "" && child.codeAddress !== sender) flag("OP-031", `CREATE2 created ${child.codeAddress}, not the sender`);
    }
    if (EXTCODE.has(op) && toAddress(stackItem(step, 0)) === entryPoint) flag("OP-054", `${op} of the EntryPoint`);
    if (op === "CALL" && BigInt(stackItem(step, 2)) !== 0n && toAddress(stackItem(step, 1)) !== entryPoint) {
      flag("OP-061", `CALL with value to ${toAddress(stackItem(step, 1))}`);
    }

    const read = STORAGE_READ.has(op);
    if (!read && !STORAGE_WRITE.has(op)) continue;
    const owner = frame.storageAddress;
    const slot = BigInt(stackItem(step, 0));
    const what = `${read ? "read" : "write"} of slot 0x${slot.toString(16)} of ${owner}${op.startsWith("T") ? " (transient, OP-070)" : ""}`;
    if (owner === sender) continue; // STO-010
    if (associated(slot, sender)) {
      if (factory !== undefined && !stakes.factory) flag("STO-021", `${what}: associated with a sender that is not deployed yet, and the factory is unstaked`);
      continue;
    }
    if (owner === phase.address) {
      if (!staked(phase.entity)) flag("STO-031", `${what}: the ${phase.entity}'s own storage needs a stake`);
      continue;
    }
    if (entityAddresses.has(owner)) {
      flag("STO-033", `${what}: another entity's storage`);
      continue;
    }
    if (associated(slot, phase.address)) {
      if (!staked(phase.entity)) flag("STO-032", `${what}: associated with the ${phase.entity}, which needs a stake`);
      continue;
    }
    if (!read) flag("STO-033", `${what}: writes to unassociated storage of a non-entity contract are never allowed`);
    else if (!staked(phase.entity)) flag("STO-033", `${what}: reading a non-entity contract's unassociated storage needs a stake`);
  }
  return { violations, phases };
}

/** `size` bytes of the step's memory from `offset`, as hex digits without 0x (zero-filled past the end). */
function readMemory(step: StructLog, offset: number, size: number): string {
  const memory = (step.memory ?? []).map((w) => w.replace(/^0x/, "").padStart(64, "0")).join("");
  const start = offset * 2;
  return memory.slice(start, start + size * 2).padEnd(size * 2, "0");
}
