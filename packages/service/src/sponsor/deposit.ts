/**
 * Never sign what the paymaster cannot pay. A signed op may be charged up to its maximum cost from the
 * paymaster's EntryPoint deposit; every reserved or signed sponsorship that has not settled may still be. So a
 * new op is refused (PAYMASTER_DEPOSIT_LOW) unless
 *
 *     deposit - outstanding maximum costs of that paymaster >= this op's maximum cost.
 *
 * The deposit is read once per block (the market snapshot's); the outstanding total once per block from the store (all replicas'
 * reservations), plus what this process let through since (so a burst within one block is counted). Other
 * replicas' reservations within the current block are the one thing not seen: the margin is at most one
 * block's worth of their traffic. Ops that landed but are not settled yet count twice (in the lower deposit
 * and as outstanding): the check errs on the side of refusing.
 */
import { decodeFunctionResult, encodeFunctionData, erc20Abi, type Abi } from "viem";
import type { Address, Hex } from "@paymaster/shared";
import type { ChainRpc } from "../chain/rpc.ts";
import { RpcError } from "../rpc/errors.ts";
import type { SponsorMode, Store } from "../store/types.ts";

/** EntryPoint.balanceOf(account): the deposit (same selector as ERC-20's balanceOf, in v0.6 and v0.7). */
export async function readDeposit(rpc: ChainRpc, entryPoint: Address, paymaster: Address, block: bigint | "latest" = "latest"): Promise<bigint> {
  const data = encodeFunctionData({ abi: erc20Abi as Abi, functionName: "balanceOf", args: [paymaster] });
  const tag = block === "latest" ? "latest" : `0x${block.toString(16)}`;
  const output = await rpc.request<Hex>("eth_call", [{ to: entryPoint, data }, tag]);
  return decodeFunctionResult({ abi: erc20Abi as Abi, functionName: "balanceOf", data: output }) as bigint;
}

/** The sponsor modes a paymaster pays for: the verifying one Sponsor and User Sponsor, the ERC-20 one ERC-20. */
export function modesPaidBy(kind: "verifying" | "erc20"): SponsorMode[] {
  return kind === "erc20" ? ["erc20"] : ["sponsor", "user"];
}

export interface DepositGuard {
  /** The deposit at `block` (cached per block). */
  deposit(entryPoint: Address, paymaster: Address, block: bigint): Promise<bigint>;
  /** Throws PAYMASTER_DEPOSIT_LOW unless the paymaster can cover `maxCostWei` on top of what is outstanding. */
  check(args: { entryPoint: Address; paymaster: Address; kind: "verifying" | "erc20"; block: bigint; maxCostWei: bigint }): Promise<void>;
}

export function createDepositGuard(rpc: ChainRpc, store: Store, network: string): DepositGuard {
  const deposits = new Map<string, { block: bigint; value: Promise<bigint> }>();
  /** Per paymaster: the store's outstanding total at a block, and what this process admitted since. */
  const outstanding = new Map<string, { block: bigint; base: Promise<bigint>; admitted: bigint }>();

  function deposit(entryPoint: Address, paymaster: Address, block: bigint): Promise<bigint> {
    const key = `${entryPoint}:${paymaster}`.toLowerCase();
    const cached = deposits.get(key);
    if (cached && cached.block === block) return cached.value;
    // Read at "latest" (what the simulation sees too); `block` only keys the cache, so a snapshot a little
    // behind the chain never pins an old deposit.
    const value = readDeposit(rpc, entryPoint, paymaster, "latest");
    value.catch(() => deposits.delete(key)); // a failed read is not cached
    deposits.set(key, { block, value });
    return value;
  }

  return {
    deposit,
    async check({ entryPoint, paymaster, kind, block, maxCostWei }) {
      const key = `${entryPoint}:${paymaster}`.toLowerCase();
      let entry = outstanding.get(key);
      if (!entry || entry.block !== block) {
        entry = { block, base: store.outstandingMaxCost(network, entryPoint, modesPaidBy(kind)), admitted: 0n };
        entry.base.catch(() => outstanding.delete(key));
        outstanding.set(key, entry);
      }
      const [available, base] = await Promise.all([deposit(entryPoint, paymaster, block), entry.base]);
      const held = base + entry.admitted;
      if (available - held < maxCostWei) {
        throw new RpcError("PAYMASTER_DEPOSIT_LOW", "The paymaster's deposit, less what outstanding sponsorships may still cost, cannot cover this user operation", {
          paymaster,
          depositWei: available.toString(),
          outstandingWei: held.toString(),
          requiredWei: maxCostWei.toString(),
        });
      }
      entry.admitted += maxCostWei;
    },
  };
}
