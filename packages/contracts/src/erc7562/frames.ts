/**
 * Call frames of a transaction from the default (struct logger) trace of `debug_traceCall` /
 * `debug_traceTransaction`: which contract executes each step, and whose storage it touches. Pure: the input
 * is the tracer's output, nothing is fetched. Used by the ERC-7562 checker (checker.ts) and by the tests that
 * measure how much gas a paymaster's validation or postOp takes.
 */

/** One step of the default tracer (geth / Hardhat EDR `structLogs`). Stack: bottom first, top last. */
export interface StructLog {
  pc: number;
  op: string;
  gas: number;
  gasCost: number;
  depth: number;
  stack?: string[];
  /** 32-byte words, only with `enableMemory: true`. */
  memory?: string[];
  error?: string;
}

/** The default tracer's result. */
export interface StructTrace {
  failed: boolean;
  gas: number;
  returnValue: string;
  structLogs: StructLog[];
}

export type FrameKind = "CALL" | "STATICCALL" | "DELEGATECALL" | "CALLCODE" | "CREATE" | "CREATE2" | "ROOT";

/** A call frame: the steps it executed directly (not those of its children). */
export interface Frame {
  /** Index in `frames` order (0 = the transaction's root frame). */
  id: number;
  parent: Frame | null;
  kind: FrameKind;
  depth: number;
  /** The code running (lowercase); for CREATE frames the new contract's address once known ("" before). */
  codeAddress: string;
  /** The address whose storage and balance the frame uses: the caller's for DELEGATECALL / CALLCODE. */
  storageAddress: string;
  /** ETH sent with the call (CALL / CALLCODE / CREATE*), as a bigint. */
  value: bigint;
  /** Index of the frame's first and last step in structLogs. */
  firstStep: number;
  lastStep: number;
  /** Gas available at the frame's first step, and left after its last step. */
  gasAtStart: number;
  gasAtEnd: number;
  children: Frame[];
}

const CALLS = new Set(["CALL", "STATICCALL", "DELEGATECALL", "CALLCODE", "CREATE", "CREATE2"]);

/** The stack item `n` places below the top (0 = top), lowercase hex. */
export function stackItem(step: StructLog, n: number): string {
  const stack = step.stack ?? [];
  const item = stack[stack.length - 1 - n];
  if (item === undefined) throw new Error(`step at pc ${step.pc} (${step.op}) has no stack item ${n}`);
  return item.toLowerCase();
}

/** A stack word as a 20-byte lowercase address. */
export function toAddress(word: string): string {
  const digits = BigInt(word).toString(16).padStart(40, "0");
  return `0x${digits.slice(-40)}`;
}

/** The frames of a trace, and for each step the frame that executed it. */
export interface TraceFrames {
  frames: Frame[];
  /** frameOf[i]: the frame that executed structLogs[i]. */
  frameOf: Frame[];
}

/**
 * Rebuilds the call frames. `to` is the address the transaction (or traced call) was sent to. A call to an
 * address without code (an EOA or a precompile) executes no step, so it has no frame.
 */
export function buildFrames(structLogs: readonly StructLog[], to: string): TraceFrames {
  const frames: Frame[] = [];
  const frameOf: Frame[] = [];
  if (structLogs.length === 0) return { frames, frameOf };
  const root: Frame = newFrame(0, null, "ROOT", structLogs[0]!.depth, to.toLowerCase(), to.toLowerCase(), 0n, 0, structLogs[0]!.gas);
  frames.push(root);
  let current = root;
  for (let i = 0; i < structLogs.length; i++) {
    const step = structLogs[i]!;
    frameOf.push(current);
    current.lastStep = i;
    current.gasAtEnd = step.gas - step.gasCost;
    const next = structLogs[i + 1];
    if (next === undefined) break;
    if (next.depth > step.depth && CALLS.has(step.op)) {
      const kind = step.op as FrameKind;
      let codeAddress = "";
      let storageAddress = "";
      let value = 0n;
      if (kind === "CALL" || kind === "CALLCODE") value = BigInt(stackItem(step, 2));
      if (kind === "CREATE" || kind === "CREATE2") value = BigInt(stackItem(step, 0));
      if (kind !== "CREATE" && kind !== "CREATE2") {
        codeAddress = toAddress(stackItem(step, 1));
        storageAddress = kind === "DELEGATECALL" || kind === "CALLCODE" ? current.storageAddress : codeAddress;
      }
      const child = newFrame(frames.length, current, kind, next.depth, codeAddress, storageAddress, value, i + 1, next.gas);
      frames.push(child);
      current.children.push(child);
      current = child;
    } else if (next.depth < step.depth) {
      // Returned (possibly unwinding several frames on an exceptional halt).
      while (current.parent !== null && current.depth > next.depth) {
        const done = current;
        current = current.parent;
        if ((done.kind === "CREATE" || done.kind === "CREATE2") && done.codeAddress === "") {
          // The caller's next step has the new address (or 0 on failure) on top of its stack.
          const created = next.stack && next.stack.length > 0 ? toAddress(stackItem(next, 0)) : "";
          done.codeAddress = created;
          done.storageAddress = created;
        }
      }
    }
  }
  // A delegate call into a contract that was still being created had no storage address yet: frames come in
  // call order (parents first), so one forward pass settles every chain of delegate calls.
  for (const frame of frames) {
    if ((frame.kind === "DELEGATECALL" || frame.kind === "CALLCODE") && frame.parent !== null) frame.storageAddress = frame.parent.storageAddress;
  }
  return { frames, frameOf };
}

/** Gas a frame (with its children) used: what it had at its first step less what was left after its last. */
export function frameGasUsed(frame: Frame): number {
  return frame.gasAtStart - frame.gasAtEnd;
}

/** Every frame below `frame`, itself included, depth first. */
export function subtree(frame: Frame): Frame[] {
  const out: Frame[] = [frame];
  for (const child of frame.children) out.push(...subtree(child));
  return out;
}

function newFrame(
  id: number,
  parent: Frame | null,
  kind: FrameKind,
  depth: number,
  codeAddress: string,
  storageAddress: string,
  value: bigint,
  firstStep: number,
  gasAtStart: number,
): Frame {
  return { id, parent, kind, depth, codeAddress, storageAddress, value, firstStep, lastStep: firstStep, gasAtStart, gasAtEnd: gasAtStart, children: [] };
}
