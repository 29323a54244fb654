/**
 * Step: which EIP-7702 delegate the sender runs, for the strategy's `eip7702` rules. An op that carries an
 * authorization names it (eip7702Auth, with the 0x7702 marker). An already-delegated EOA may leave both out
 * (its code is 0xef0100 ‖ delegate): without this step its ops skipped the rules (re-audit N-5). So when the
 * strategy judges 7702 senders and the op deploys nothing, the sender's code at the request's block is read
 * (one eth_getCode at the latest block, only then) and a delegation found there is judged like an authorization.
 * Raises CHAIN_UNAVAILABLE-class RPC errors of the code read only.
 */
import { eip7702DelegateOfCode, type Address, type Hex } from "@paymaster/shared";
import { chainWait } from "../../timing.ts";
import type { Target } from "./target.ts";

/** The op's target with the delegate its sender runs, when the strategy's rules need it. */
export async function detectDelegate(target: Target): Promise<Target> {
  const { request, mode, chain, call } = target;
  const authorized = request.version === "v0.6" ? undefined : request.userOp.eip7702Auth?.address;
  if (authorized !== undefined) return { ...target, eip7702Delegate: authorized };
  if (mode.mode !== "sponsor" || mode.strategy.rules.eip7702 === undefined || deploys(target)) return target;
  const sender = request.userOp.sender;
  const code = await chainWait(call.timing, () => chain.rpc.request<Hex>("eth_getCode", [sender, "latest"]));
  const delegate: Address | undefined = eip7702DelegateOfCode(code);
  return delegate === undefined ? target : { ...target, eip7702Delegate: delegate };
}

/** Whether the op carries initCode (v0.6) or a factory (v0.7+): a counterfactual account, not a delegated EOA. */
function deploys({ request }: Target): boolean {
  const u = request.userOp as { initCode?: Hex; factory?: Address };
  return (u.initCode !== undefined && u.initCode !== "0x") || u.factory !== undefined;
}
