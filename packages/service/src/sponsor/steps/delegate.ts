/**
 * Step: which EIP-7702 delegate the sender runs, for the strategy's `eip7702` rules and for the paymaster hash.
 * An op that carries an authorization names it (eip7702Auth, with or without the 0x7702 marker): the bundler
 * applies it before validation. An already-delegated EOA may leave both out (its code is 0xef0100 ‖ delegate).
 * Re-audit N-5: such an op's rules were skipped, and its sponsorship named no delegate, so the EOA could
 * re-delegate before inclusion. Now the paymaster hash of an op that deploys nothing binds the delegate the
 * sender's code points to (every EntryPoint version), so when the op deploys nothing and carries no
 * authorization, the sender's code is read (one eth_getCode at the latest block) whenever the request signs or
 * the strategy judges 7702 senders; a delegation found there is judged like an authorization and signed into
 * the hash. Raises CHAIN_UNAVAILABLE-class RPC errors of the code read only.
 *
 * The signature need not wait for that read (issue 38): the paymaster contract hashes the delegate the sender's
 * code names when it validates, so the final simulation of the signed op (run at the latest block) refuses a
 * signature made for any other delegate (AA34). So when the final simulation runs and no rule judges the
 * delegate, the op is signed for the delegate last read for this sender (none, if never read:
 * src/sponsor/senderDelegates.ts) while the read goes on beside the simulation; should the simulation refuse
 * the signature and the read name another delegate, the op is signed and simulated again for that one
 * (`correctedDelegate`). Without the final simulation (skipFinalSimulation, or when the estimate's one
 * simulation decided: src/sponsor/oneCall.ts) the read is awaited before signing; it ran beside the estimate.
 */
import { eip7702DelegateOfCode, type Address, type Hex } from "@paymaster/shared";
import { RpcError } from "../../errors.ts";
import { chainWait } from "../../timing.ts";
import { tracedRpc } from "../../network/tracedChain.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { lastDelegate, rememberDelegate } from "../senderDelegates.ts";
import type { Target } from "./target.ts";
import type { SenderCodeSink } from "../probe.ts";

/**
 * The op's target with the delegate its sender runs, when the request signs (`signs`: the paymaster hash needs
 * it) or the strategy's rules need it.
 */
export async function detectDelegate(target: Target, signs: boolean, span: TraceSpan = NO_SPAN): Promise<Target> {
  const { request, chain, call } = target;
  const authorized = authorizedDelegate(target);
  // An authorization is the client's claim, not a read of the chain (the service does not apply or verify it), so
  // it is not remembered: a request naming any delegate for someone else's sender would make that sender's next
  // guess wrong. A freshly delegated EOA's first op without it is guessed from the last read (none), and the
  // final simulation's read corrects that once.
  if (authorized !== undefined) return { ...target, eip7702Delegate: authorized };
  if ((!signs && !judgesDelegates(target)) || !codeNamesDelegate(target)) return target;
  const sender = request.userOp.sender;
  const code = await chainWait(call.timing, () => tracedRpc(chain.rpc, span).request<Hex>("eth_getCode", [sender, "latest"]));
  const delegate: Address | undefined = eip7702DelegateOfCode(code);
  rememberDelegate(call.network.config, sender, delegate);
  return withDelegate(target, delegate);
}

/** `target` (whose op names no delegate itself) with the delegate its sender's code names. */
function withDelegate(target: Target, delegate: Address | undefined): Target {
  return delegate === undefined ? target : { ...target, eip7702Delegate: delegate };
}

/** The target to sign for, and (when its delegate is a guess) the code read it is to be checked against. */
export interface DelegateToSign {
  target: Target;
  /** The code read (in flight, or made when asked): set only when `target`'s delegate is the one last read for the sender. */
  read?: () => Promise<Target>;
  /** Set when the final simulation is to read the sender's code itself (the probe): what it read there goes here. */
  senderCode?: SenderCodeSink;
}

const NOT_YET = Symbol("not yet read");

/**
 * The delegate to sign for (`detected`: detectDelegate's read for the same target): the read's when it is back
 * or must be waited for; else (the final simulation will check the signature and no rule needs the read) the
 * one last read for this sender, without waiting.
 */
export async function delegateToSign(target: Target, detected: Promise<Target>): Promise<DelegateToSign> {
  if (!codeNamesDelegate(target) || judgesDelegates(target) || target.call.network.config.skipFinalSimulation === true) return { target: await detected };
  // A read already back wins the race (its reaction was queued first): then nothing is guessed.
  const back = await Promise.race([detected, Promise.resolve(NOT_YET)]);
  if (back !== NOT_YET) return { target: back };
  return { target: withDelegate(target, lastDelegate(target.call.network.config, target.request.userOp.sender)), read: () => detected };
}

/**
 * The delegate to sign for when the final simulation runs through the sponsorship probe, which reads the sender's
 * code in the same call (the client's gas, no rule on delegates): the one last read for the sender, checked by that
 * simulation; the probe's read (`senderCode`, remembered as any code read is) corrects a guess the simulation refused
 * (correctedDelegate). When the probe did not read it (the node refused the probe for this call), `readApart` reads
 * the code then.
 */
export async function delegateForProbedLanding(target: Target, readApart: (target: Target) => Promise<Target>): Promise<DelegateToSign> {
  if (!codeNamesDelegate(target)) return { target: await readApart(target) }; // its authorization, or nothing to read
  const sender = target.request.userOp.sender;
  let probed: { delegate: Address | undefined } | undefined;
  return {
    target: withDelegate(target, lastDelegate(target.call.network.config, sender)),
    read: () => (probed ? Promise.resolve(withDelegate(target, probed.delegate)) : readApart(target)),
    senderCode: (delegate) => {
      probed = { delegate };
      rememberDelegate(target.call.network.config, sender, delegate);
    },
  };
}

/**
 * The delegate to sign for when the estimate's probe was to read the sender's code (ProbeFindings.senderCode, at
 * the block its simulations ran on): the delegate it read, remembered as a code read's is. When the probe could not
 * tell (the node refused it for this call, or its reads' frame did not answer), `read` reads the code now.
 */
export async function delegateFromProbe(target: Target, senderCode: { delegate: Address | undefined } | undefined, read: (target: Target) => Promise<Target>): Promise<DelegateToSign> {
  if (senderCode === undefined || !codeNamesDelegate(target)) return { target: await read(target) };
  rememberDelegate(target.call.network.config, target.request.userOp.sender, senderCode.delegate);
  return { target: withDelegate(target, senderCode.delegate) };
}

/**
 * After the final simulation refused a signature: the target to sign again for when that signature's delegate
 * was a guess the code read contradicts; undefined when the refusal stands (no guess, another refusal than the
 * signature's, or the read names the same delegate). The read's own error is raised when it failed.
 */
export async function correctedDelegate(signed: DelegateToSign, refusal: unknown): Promise<Target | undefined> {
  if (signed.read === undefined || !(refusal instanceof RpcError) || refusal.reason !== "SIMULATION_FAILED" || refusal.details["aaCode"] !== "AA34") return undefined;
  const read = await signed.read();
  return read.eip7702Delegate?.toLowerCase() === signed.target.eip7702Delegate?.toLowerCase() ? undefined : read;
}

/** Whether the strategy's rules judge the delegate (so the policy needs it before any other step). */
export function judgesDelegates({ mode }: Target): boolean {
  return mode.mode === "sponsor" && mode.strategy.rules.eip7702 !== undefined;
}

/** The delegate the op's authorization names (v0.7+ eip7702Auth), if it carries one. */
function authorizedDelegate({ request }: Target): Address | undefined {
  return request.version === "v0.6" ? undefined : request.userOp.eip7702Auth?.address;
}

/** Whether only the sender's code can name its delegate: the op carries no authorization and deploys nothing. */
function codeNamesDelegate(target: Target): boolean {
  return authorizedDelegate(target) === undefined && !deploys(target);
}

/** Whether the op carries initCode (v0.6) or a factory (v0.7+): a counterfactual account, not a delegated EOA. */
function deploys({ request }: Target): boolean {
  const u = request.userOp as { initCode?: Hex; factory?: Address };
  return (u.initCode !== undefined && u.initCode !== "0x") || u.factory !== undefined;
}
