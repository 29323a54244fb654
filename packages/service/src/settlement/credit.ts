/**
 * Credit step of the settlement pass: the confirmed deposits of a scanned range credited to their sender's gas
 * tank, each journaled with its block (journal.ts) so a reorg that removes it can revert the credit. With a
 * deposit address, its successful top-level transfers (a failed one is logged, not credited); with a deposit
 * contract (GasTankDeposit), its Deposited events, credited to the event's sender.
 */
import { getAddress } from "viem";
import type { Address, Hex } from "@paymaster/shared";
import { getReceiptStatus, type BlockWithTransactions, type DepositedLog } from "./logs.ts";
import { transfersTo } from "./match.ts";
import { depositReference } from "./options.ts";
import { ChainMovedError, type TickResult, type WatcherState } from "./state.ts";

interface Deposit {
  sender: Address;
  /** A contract deposit's payer (may differ from the tank's owner). */
  from?: Address;
  amount: bigint;
  txHash: Hex;
  /** A contract deposit's log index; absent for a plain transfer. */
  logIndex?: number;
  blockNumber: bigint;
  blockHash: Hex;
}

/** Credits the range's transfers to the deposit address, block by block, then its contract deposits. */
export async function creditDeposits(
  state: WatcherState,
  range: { blocks: readonly BlockWithTransactions[]; contractDeposits: readonly DepositedLog[] },
  result: TickResult,
): Promise<void> {
  const depositAddress = state.watched.depositAddress;
  if (depositAddress !== undefined) {
    for (const block of range.blocks) await creditTransfers(state, block, depositAddress, result);
  }
  for (const deposit of range.contractDeposits) {
    await credit(state, { sender: deposit.sender, from: deposit.from, amount: deposit.amount, txHash: deposit.txHash, logIndex: deposit.logIndex, blockNumber: deposit.blockNumber, blockHash: deposit.blockHash }, result);
  }
}

/** Credits one block's successful transfers to the deposit address to their senders. */
async function creditTransfers(state: WatcherState, block: BlockWithTransactions, depositAddress: string, result: TickResult): Promise<void> {
  for (const { tx, value } of transfersTo(block, depositAddress)) {
    const receipt = await getReceiptStatus(state.rpc, tx.hash);
    if (receipt === null || receipt.blockHash !== block.hash) throw new ChainMovedError(`the receipt of ${tx.hash} is not in block ${block.number}`);
    if (!receipt.success) {
      state.logger.info({ txHash: tx.hash, block: block.number.toString() }, "failed transaction to the deposit address: not credited");
      continue;
    }
    const sender = getAddress(tx.from) as Address;
    await credit(state, { sender, amount: value, txHash: tx.hash.toLowerCase() as Hex, blockNumber: block.number, blockHash: block.hash }, result);
  }
}

/**
 * Credits one confirmed deposit to `sender`'s tank and journals it (for a reorg to revert). creditGasTank is
 * idempotent by reference, so a rescanned deposit leaves the balance as it was and counts nothing.
 */
async function credit(state: WatcherState, deposit: Deposit, result: TickResult): Promise<void> {
  const { sender, amount, txHash, logIndex, blockNumber, blockHash } = deposit;
  const before = await state.store.getGasTank(state.name, sender);
  const after = await state.store.creditGasTank(state.name, sender, amount, depositReference(state.name, txHash, logIndex));
  await state.journal.append({ txHash, ...(logIndex === undefined ? {} : { logIndex }), blockNumber, blockHash });
  if (after.balanceWei === before.balanceWei) return;
  result.deposits++;
  if (logIndex !== undefined) result.contractDeposits++;
  state.logger.info(
    { sender, wei: amount.toString(), txHash, block: blockNumber.toString(), ...(logIndex === undefined ? { via: "transfer" } : { via: "contract", from: deposit.from, logIndex }) },
    "deposit credited to the gas tank",
  );
}
