/**
 * Match step of the settlement pass: of what the scan read, what is ours to settle or credit. The store then
 * matches each op to its sponsorship by userOpHash (settle.ts); a rescanned op or deposit matches again and is
 * counted as already done.
 */
import type { Address } from "@paymaster/shared";
import { decodeUserOperationEvent, type BlockWithTransactions, type RpcLog, type RpcTransaction, type UserOperationEventLog } from "./logs.ts";

/** The UserOperationEvents paid by one of `paymasters`, in chain order (block, then log index). */
export function ourOpEvents(logs: readonly RpcLog[], paymasters: readonly Address[]): UserOperationEventLog[] {
  const events = logs.map(decodeUserOperationEvent).filter((e) => paymasters.some((p) => p === e.paymaster));
  events.sort((a, b) => (a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1));
  return events;
}

/** The ops paid by an ERC-20 paymaster (`erc20Paymasters` lowercase): each carries a token charge. */
export function erc20Ops(events: readonly UserOperationEventLog[], erc20Paymasters: ReadonlySet<string>): UserOperationEventLog[] {
  return events.filter((e) => erc20Paymasters.has(e.paymaster.toLowerCase()));
}

/** A block's transactions that send value to the deposit address (lowercase), with the value sent. */
export function transfersTo(block: BlockWithTransactions, depositAddress: string): { tx: RpcTransaction; value: bigint }[] {
  const transfers: { tx: RpcTransaction; value: bigint }[] = [];
  for (const tx of block.transactions) {
    if (tx.to === null || tx.to.toLowerCase() !== depositAddress) continue;
    const value = BigInt(tx.value);
    if (value > 0n) transfers.push({ tx, value });
  }
  return transfers;
}
