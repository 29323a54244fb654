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
 */
import { eip7702DelegateOfCode, type Address, type Hex } from "@paymaster/shared";
import { chainWait } from "../../timing.ts";
import type { Target } from "./target.ts";

/**
 * The op's target with the delegate its sender runs, when the request signs (`signs`: the paymaster hash needs
 * it) or the strategy's rules need it.
 */
export async function detectDelegate(target: Target, signs: boolean): Promise<Target> {
  const { request, chain, call } = target;
  const authorized = request.version === "v0.6" ? undefined : request.userOp.eip7702Auth?.address;
  if (authorized !== undefined) return { ...target, eip7702Delegate: authorized };
  if ((!signs && !judgesDelegates(target)) || deploys(target)) return target;
  const sender = request.userOp.sender;
  const code = await chainWait(call.timing, () => chain.rpc.request<Hex>("eth_getCode", [sender, "latest"]));
  const delegate: Address | undefined = eip7702DelegateOfCode(code);
  return delegate === undefined ? target : { ...target, eip7702Delegate: delegate };
}

/** Whether the strategy's rules judge the delegate (so the policy needs it before any other step). */
export function judgesDelegates({ mode }: Target): boolean {
  return mode.mode === "sponsor" && mode.strategy.rules.eip7702 !== undefined;
}

/** Whether the op carries initCode (v0.6) or a factory (v0.7+): a counterfactual account, not a delegated EOA. */
function deploys({ request }: Target): boolean {
  const u = request.userOp as { initCode?: Hex; factory?: Address };
  return (u.initCode !== undefined && u.initCode !== "0x") || u.factory !== undefined;
}
