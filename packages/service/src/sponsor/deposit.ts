/**
 * Never sign what the paymaster cannot pay. A signed op may be charged up to its maximum cost from the
 * paymaster's EntryPoint deposit; every reserved or signed sponsorship that has not settled may still be. So a
 * new op is refused (PAYMASTER_DEPOSIT_LOW) unless
 *
 *     deposit - outstanding maximum costs of that paymaster >= this op's maximum cost.
 *
 * The deposit is kept in memory per block (src/chain/blockReads.ts: read again in the background as each new
 * block is seen, so a request does not wait for it); the outstanding total is read once per block from the
 * store (all replicas' reservations), plus what this process let through since (so a burst within one block is
 * counted). Other replicas' reservations within the current block are the one thing not seen: the margin is at
 * most one block's worth of their traffic. Ops that landed but are not settled yet count twice (in the lower
 * deposit and as outstanding): the check errs on the side of refusing.
 *
 * Near its limit the deposit is read fresh: when what the op would leave of the kept deposit is below
 * FRESH_READ_MARGIN_BPS of it, a withdrawal or a charge the snapshot has not seen yet (it lags the chain by up
 * to a poll interval) could turn the verdict, so the verdict is made on a read made now (one round trip, before
 * the reservation; rare, since it takes an op that would leave less than a tenth of the deposit).
 */
import { decodeFunctionResult, encodeFunctionData, erc20Abi, type Abi } from "viem";
import type { Address, Hex } from "@paymaster/shared";
import type { ChainRpc } from "../chain/rpc.ts";
import type { BlockReads } from "../chain/blockReads.ts";
import { RpcError } from "../errors.ts";
import type { Store } from "../store/types.ts";
import type { SponsorMode } from "../policy/types.ts";

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

/** The share of the kept deposit under which what an op would leave of it is "near the limit": then it is read fresh. */
export const FRESH_READ_MARGIN_BPS = 1_000n;

/** Whether `left` (the deposit less what is held and the op) is within the margin of `deposit`: a stale deposit could turn the verdict. */
export function nearLimit(deposit: bigint, left: bigint): boolean {
  return left * 10_000n < deposit * FRESH_READ_MARGIN_BPS;
}

export interface DepositGuard {
  /** The deposit at `block` or later (kept per block, refreshed as blocks come). */
  deposit(entryPoint: Address, paymaster: Address, block: bigint): Promise<bigint>;
  /** Throws PAYMASTER_DEPOSIT_LOW unless the paymaster can cover `maxCostWei` on top of what is outstanding. */
  check(args: { entryPoint: Address; paymaster: Address; kind: "verifying" | "erc20"; block: bigint; maxCostWei: bigint }): Promise<void>;
}

export function createDepositGuard(rpc: ChainRpc, store: Store, network: string, reads: BlockReads): DepositGuard {
  /** Per paymaster: the store's outstanding total at a block, and what this process admitted since. */
  const outstanding = new Map<string, { block: bigint; base: Promise<bigint>; admitted: bigint }>();
  const depositKey = (entryPoint: Address, paymaster: Address) => `deposit:${entryPoint}:${paymaster}`.toLowerCase();
  // Read at "latest" (what the simulation sees too): a snapshot a little behind the chain never pins an old deposit.
  const readLatest = (entryPoint: Address, paymaster: Address) => () => readDeposit(rpc, entryPoint, paymaster, "latest");

  function deposit(entryPoint: Address, paymaster: Address, block: bigint): Promise<bigint> {
    return reads.value(depositKey(entryPoint, paymaster), block, readLatest(entryPoint, paymaster));
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
      const [kept, base] = await Promise.all([deposit(entryPoint, paymaster, block), entry.base]);
      const available = nearLimit(kept, kept - base - entry.admitted - maxCostWei) ? await reads.fresh(depositKey(entryPoint, paymaster), block, readLatest(entryPoint, paymaster)) : kept;
      // Counted after the last wait: what concurrent checks admitted meanwhile is held too.
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
