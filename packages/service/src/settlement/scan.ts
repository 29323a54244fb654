/**
 * Scan step of the settlement pass: one range of confirmed blocks read from the chain, with the EntryPoints'
 * UserOperationEvents of our paymasters (and the ERC-20 paymasters' token charges of those ops), the blocks with
 * their transactions when a deposit address is watched, and the deposit contract's Deposited events. The range
 * is read against its end block's hash, before and after: a chain that moved under the read throws
 * ChainMovedError and nothing of the range is used.
 */
import type { Hex } from "@paymaster/shared";
import type { ChainRpc } from "../chain/rpc.ts";
import {
  DEPOSITED_TOPIC,
  TOKEN_CHARGED_TOPIC,
  TOKEN_CHARGE_UNPAID_TOPIC,
  USER_OPERATION_EVENT_TOPIC,
  decodeDeposited,
  decodeTokenCharge,
  getBlockHeader,
  getBlockWithTransactions,
  getLogs,
  matchTokenCharges,
  type BlockWithTransactions,
  type DepositedLog,
  type LogPosition,
  type TokenChargeLog,
  type UserOperationEventLog,
} from "./logs.ts";
import { erc20Ops, ourOpEvents } from "./match.ts";
import { ChainMovedError, type WatcherState } from "./state.ts";

/** Block fetches in flight at once while scanning for deposits. */
const BLOCK_FETCH_CONCURRENCY = 8;

/** What one range holds for us, all of one fork (the one whose block `to` has `endHash`). */
export interface ScannedRange {
  endHash: Hex;
  /** Our paymasters' ops, in chain order. */
  events: UserOperationEventLog[];
  /** The token charge of each ERC-20 op's event, by logKey. */
  chargeOf: Map<string, TokenChargeLog>;
  /** With a deposit address: every block of the range with its transactions; else none. */
  blocks: BlockWithTransactions[];
  contractDeposits: DepositedLog[];
}

/** Reads the range `from`..`to`, whose blocks must extend `previousHash` (the cursor block's, when known). */
export async function scanRange(state: WatcherState, from: bigint, to: bigint, previousHash: Hex | null): Promise<ScannedRange> {
  const endBefore = await getBlockHeader(state.rpc, to);
  if (endBefore === null) throw new ChainMovedError(`block ${to} is gone`);
  const events = await readOpEvents(state, from, to);
  const chargeOf = await readTokenCharges(state, events);
  const blocks = state.watched.depositAddress === undefined ? [] : await fetchBlocks(state.rpc, from, to);
  checkChained(blocks, previousHash, to, endBefore.hash);
  const contractDeposits = await readContractDeposits(state, from, to);
  await checkUnmoved(state.rpc, to, endBefore.hash, [...events, ...contractDeposits]);
  return { endHash: endBefore.hash, events, chargeOf, blocks, contractDeposits };
}

async function readOpEvents(state: WatcherState, from: bigint, to: bigint): Promise<UserOperationEventLog[]> {
  const { entryPoints, paymasters, paymasterTopics } = state.watched;
  if (entryPoints.length === 0) return [];
  const logs = await getLogs(state.rpc, { address: entryPoints, topics: [USER_OPERATION_EVENT_TOPIC, null, null, paymasterTopics], fromBlock: from, toBlock: to });
  return ourOpEvents(logs, paymasters);
}

/** The token charges of the ERC-20 ops among `events`, read over the blocks those ops are in. */
async function readTokenCharges(state: WatcherState, events: readonly UserOperationEventLog[]): Promise<Map<string, TokenChargeLog>> {
  const ops = erc20Ops(events, state.watched.erc20Set);
  let charges: TokenChargeLog[] = [];
  if (ops.length > 0) {
    const first = ops[0]!.blockNumber;
    const last = ops[ops.length - 1]!.blockNumber;
    const logs = await getLogs(state.rpc, { address: state.watched.erc20Paymasters, topics: [[TOKEN_CHARGED_TOPIC, TOKEN_CHARGE_UNPAID_TOPIC]], fromBlock: first, toBlock: last });
    charges = logs.map(decodeTokenCharge);
  }
  return matchTokenCharges(ops, charges);
}

async function readContractDeposits(state: WatcherState, from: bigint, to: bigint): Promise<DepositedLog[]> {
  const contract = state.watched.depositContract;
  if (contract === undefined) return [];
  return (await getLogs(state.rpc, { address: [contract], topics: [DEPOSITED_TOPIC], fromBlock: from, toBlock: to })).map(decodeDeposited);
}

/** The blocks `from`..`to` with their transactions, BLOCK_FETCH_CONCURRENCY requests at a time. */
async function fetchBlocks(rpc: ChainRpc, from: bigint, to: bigint): Promise<BlockWithTransactions[]> {
  const numbers: bigint[] = [];
  for (let n = from; n <= to; n++) numbers.push(n);
  const blocks: BlockWithTransactions[] = new Array(numbers.length);
  let next = 0;
  const worker = async () => {
    while (next < numbers.length) {
      const i = next++;
      const block = await getBlockWithTransactions(rpc, numbers[i]!);
      if (block === null) throw new ChainMovedError(`block ${numbers[i]} is gone`);
      blocks[i] = block;
    }
  };
  await Promise.all(Array.from({ length: Math.min(BLOCK_FETCH_CONCURRENCY, numbers.length) }, worker));
  return blocks;
}

/** The blocks must form one chain from the cursor block to the range's end. */
function checkChained(blocks: readonly BlockWithTransactions[], previousHash: Hex | null, to: bigint, endHash: Hex): void {
  let parent = previousHash;
  for (const block of blocks) {
    if (parent !== null && block.parentHash !== parent) throw new ChainMovedError(`block ${block.number} does not extend ${parent}`);
    parent = block.hash;
  }
  if (blocks.length > 0 && blocks[blocks.length - 1]!.hash !== endHash) throw new ChainMovedError(`block ${to} changed`);
}

/** The range's end block is still `endHash` after the reads, and the logs read of it are of that block. */
async function checkUnmoved(rpc: ChainRpc, to: bigint, endHash: Hex, logs: readonly LogPosition[]): Promise<void> {
  const endAfter = await getBlockHeader(rpc, to);
  if (endAfter === null || endAfter.hash !== endHash) throw new ChainMovedError(`block ${to} changed during the scan`);
  for (const log of logs) {
    if (log.blockNumber === to && log.blockHash !== endHash) throw new ChainMovedError(`logs of block ${to} are from another fork`);
  }
}
