/**
 * What the settlement watcher reads from the chain: `eth_getLogs` of the EntryPoints' UserOperationEvent, of
 * the ERC-20 paymasters' TokenCharged / TokenChargeUnpaid and of GasTankDeposit's Deposited, decoded with the
 * contracts' ABIs, and blocks (headers, or with full transactions for plain-transfer deposits). Raw node JSON
 * in, bigints and checksummed addresses out.
 */
import { decodeEventLog, getAddress, pad, toEventSelector, type Abi, type AbiEvent } from "viem";
import { EntryPointV06Artifact, ERC20PaymasterV06Artifact, GasTankDepositArtifact } from "@paymaster/contracts/artifacts";
import type { Address, Hex } from "@paymaster/shared";
import type { ChainRpc } from "../chain/rpc.ts";

// UserOperationEvent is identical in EntryPoint v0.6 and v0.7; TokenCharged/TokenChargeUnpaid are identical in
// both ERC-20 paymasters (TokenChargeBase).
const entryPointAbi = EntryPointV06Artifact.abi as Abi;
const erc20PaymasterAbi = ERC20PaymasterV06Artifact.abi as Abi;
const gasTankDepositAbi = GasTankDepositArtifact.abi as Abi;

function eventTopic(abi: Abi, name: string): Hex {
  const event = abi.find((item): item is AbiEvent => item.type === "event" && item.name === name);
  if (!event) throw new Error(`the ABI has no event ${name}`);
  return toEventSelector(event);
}

export const USER_OPERATION_EVENT_TOPIC = eventTopic(entryPointAbi, "UserOperationEvent");
export const TOKEN_CHARGED_TOPIC = eventTopic(erc20PaymasterAbi, "TokenCharged");
export const TOKEN_CHARGE_UNPAID_TOPIC = eventTopic(erc20PaymasterAbi, "TokenChargeUnpaid");
export const DEPOSITED_TOPIC = eventTopic(gasTankDepositAbi, "Deposited");

/** A log as nodes return it. */
export interface RpcLog {
  address: string;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: Hex;
  removed?: boolean;
}

/** An address as a 32-byte topic (for filtering on an indexed address). */
export function addressTopic(address: Address): Hex {
  return pad(address.toLowerCase() as Hex, { size: 32 });
}

export interface LogFilter {
  address: readonly Address[];
  /** Per position: one topic, any of several, or null (any). */
  topics: readonly (Hex | readonly Hex[] | null)[];
  fromBlock: bigint;
  toBlock: bigint;
}

const hex = (n: bigint): Hex => `0x${n.toString(16)}`;

/** Log ranges and full blocks can take a node seconds to serve: the watcher (in the background) waits longer than a sponsor call. */
const HEAVY_CALL = Object.freeze({ timeoutMs: 10_000, deadlineMs: 15_000 });

/** eth_getLogs over [fromBlock, toBlock]; logs flagged `removed` are dropped. */
export async function getLogs(rpc: ChainRpc, filter: LogFilter): Promise<RpcLog[]> {
  const logs = await rpc.request<RpcLog[]>("eth_getLogs", [
    {
      address: filter.address,
      topics: filter.topics,
      fromBlock: hex(filter.fromBlock),
      toBlock: hex(filter.toBlock),
    },
  ], HEAVY_CALL);
  return logs.filter((log) => log.removed !== true);
}

/** Where a log is. */
export interface LogPosition {
  txHash: Hex;
  blockNumber: bigint;
  blockHash: Hex;
  logIndex: number;
}

function position(log: RpcLog): LogPosition {
  return {
    txHash: log.transactionHash.toLowerCase() as Hex,
    blockNumber: BigInt(log.blockNumber),
    blockHash: log.blockHash.toLowerCase() as Hex,
    logIndex: Number(BigInt(log.logIndex)),
  };
}

export interface UserOperationEventLog extends LogPosition {
  entryPoint: Address;
  userOpHash: Hex;
  sender: Address;
  paymaster: Address;
  nonce: bigint;
  success: boolean;
  actualGasCost: bigint;
  actualGasUsed: bigint;
}

export function decodeUserOperationEvent(log: RpcLog): UserOperationEventLog {
  const decoded = decodeEventLog({ abi: entryPointAbi, eventName: "UserOperationEvent", data: log.data, topics: log.topics as [Hex, ...Hex[]] });
  const args = decoded.args as unknown as {
    userOpHash: Hex;
    sender: Address;
    paymaster: Address;
    nonce: bigint;
    success: boolean;
    actualGasCost: bigint;
    actualGasUsed: bigint;
  };
  return {
    ...position(log),
    entryPoint: getAddress(log.address) as Address,
    userOpHash: args.userOpHash.toLowerCase() as Hex,
    sender: getAddress(args.sender) as Address,
    paymaster: getAddress(args.paymaster) as Address,
    nonce: args.nonce,
    success: args.success,
    actualGasCost: args.actualGasCost,
    actualGasUsed: args.actualGasUsed,
  };
}

/** An ERC-20 paymaster's TokenCharged (paid) or TokenChargeUnpaid (v0.6: the charge failed) event. */
export interface TokenChargeLog extends LogPosition {
  paymaster: Address;
  sender: Address;
  token: Address;
  paid: boolean;
  /** What was charged (paid), or what could not be charged (unpaid). */
  tokenAmount: bigint;
}

export function decodeTokenCharge(log: RpcLog): TokenChargeLog {
  const decoded = decodeEventLog({ abi: erc20PaymasterAbi, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
  if (decoded.eventName !== "TokenCharged" && decoded.eventName !== "TokenChargeUnpaid") {
    throw new Error(`not a token charge event: ${decoded.eventName}`);
  }
  const args = decoded.args as unknown as { sender: Address; token: Address; tokenAmount: bigint };
  return {
    ...position(log),
    paymaster: getAddress(log.address) as Address,
    sender: getAddress(args.sender) as Address,
    token: getAddress(args.token) as Address,
    paid: decoded.eventName === "TokenCharged",
    tokenAmount: args.tokenAmount,
  };
}

/** GasTankDeposit's Deposited: `from` paid `amount` wei into the gas tank of `sender`. */
export interface DepositedLog extends LogPosition {
  contract: Address;
  sender: Address;
  from: Address;
  amount: bigint;
}

export function decodeDeposited(log: RpcLog): DepositedLog {
  const decoded = decodeEventLog({ abi: gasTankDepositAbi, eventName: "Deposited", data: log.data, topics: log.topics as [Hex, ...Hex[]] });
  const args = decoded.args as unknown as { sender: Address; from: Address; amount: bigint };
  return {
    ...position(log),
    contract: getAddress(log.address) as Address,
    sender: getAddress(args.sender) as Address,
    from: getAddress(args.from) as Address,
    amount: args.amount,
  };
}

/** "<txHash>:<logIndex>": a log's identity within a chain. */
export function logKey(log: LogPosition): string {
  return `${log.txHash}:${log.logIndex}`;
}

/**
 * Pairs each UserOperationEvent paid by an ERC-20 paymaster with its token charge. The paymaster's postOp emits
 * the charge before the EntryPoint emits the op's UserOperationEvent, so an op's charge is the last charge of
 * that paymaster in the same transaction after the previous op it paid for, and before the op's own event.
 * Returns the charge by the event's logKey (absent: no charge was emitted for that op).
 */
export function matchTokenCharges(events: readonly UserOperationEventLog[], charges: readonly TokenChargeLog[]): Map<string, TokenChargeLog> {
  type Item = { kind: "event"; log: UserOperationEventLog } | { kind: "charge"; log: TokenChargeLog };
  const byTx = new Map<string, Item[]>();
  const add = (item: Item) => {
    const list = byTx.get(item.log.txHash) ?? [];
    list.push(item);
    byTx.set(item.log.txHash, list);
  };
  for (const log of events) add({ kind: "event", log });
  for (const log of charges) add({ kind: "charge", log });
  const matched = new Map<string, TokenChargeLog>();
  for (const items of byTx.values()) {
    items.sort((a, b) => a.log.logIndex - b.log.logIndex);
    const pending = new Map<string, TokenChargeLog>(); // by paymaster
    for (const item of items) {
      if (item.kind === "charge") {
        pending.set(item.log.paymaster, item.log);
        continue;
      }
      const charge = pending.get(item.log.paymaster);
      pending.delete(item.log.paymaster);
      if (charge !== undefined && charge.sender === item.log.sender) matched.set(logKey(item.log), charge);
    }
  }
  return matched;
}

// ---- blocks

export interface RpcTransaction {
  hash: Hex;
  from: string;
  to: string | null;
  value: Hex;
}

export interface RpcBlock<T = Hex> {
  number: Hex;
  hash: Hex;
  parentHash: Hex;
  timestamp: Hex;
  transactions: T[];
}

export interface BlockHeader {
  number: bigint;
  hash: Hex;
  parentHash: Hex;
  timestamp: number;
}

function header(block: RpcBlock<unknown>): BlockHeader {
  return {
    number: BigInt(block.number),
    hash: block.hash.toLowerCase() as Hex,
    parentHash: block.parentHash.toLowerCase() as Hex,
    timestamp: Number(BigInt(block.timestamp)),
  };
}

/** The block's header, or null when the chain has no such block (yet, or any more). */
export async function getBlockHeader(rpc: ChainRpc, block: bigint | "latest"): Promise<BlockHeader | null> {
  const raw = await rpc.request<RpcBlock | null>("eth_getBlockByNumber", [block === "latest" ? block : hex(block), false]);
  return raw === null ? null : header(raw);
}

export interface BlockWithTransactions extends BlockHeader {
  transactions: RpcTransaction[];
}

/** The block with its full transactions, or null when the chain has no such block. */
export async function getBlockWithTransactions(rpc: ChainRpc, block: bigint): Promise<BlockWithTransactions | null> {
  const raw = await rpc.request<RpcBlock<RpcTransaction> | null>("eth_getBlockByNumber", [hex(block), true], HEAVY_CALL);
  return raw === null ? null : { ...header(raw), transactions: raw.transactions };
}

/** The receipt's status: true (1), false (0), or null when the node has no receipt for it. */
export async function getReceiptStatus(rpc: ChainRpc, txHash: Hex): Promise<{ success: boolean; blockHash: Hex } | null> {
  const receipt = await rpc.request<{ status?: Hex; blockHash: Hex } | null>("eth_getTransactionReceipt", [txHash]);
  if (receipt === null) return null;
  return { success: receipt.status !== undefined && BigInt(receipt.status) === 1n, blockHash: receipt.blockHash.toLowerCase() as Hex };
}
