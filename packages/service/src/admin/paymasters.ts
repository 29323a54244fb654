/**
 * The paymasters on chain, as an operator manages them: status (EntryPoint deposit and stake, owner, signers,
 * token settings), deposit top-ups, withdrawals, stake and unstake, and the signer set (rotation without
 * downtime: docs/operator-guide.md). Reads go through the network's RPC; writes are sent with the owner's key
 * (deposits with the deploying key: anyone may deposit) and waited for.
 */
import { Contract, Interface, type Wallet } from "ethers";
import type { Address } from "@paymaster/shared";
import { AdminError } from "./context.ts";
import { oneLine, selectPaymasters, type ChainTarget, type PaymasterRef } from "./chainTarget.ts";

const ENTRY_POINT = new Interface([
  "function balanceOf(address account) view returns (uint256)",
  "function getDepositInfo(address account) view returns (uint256 deposit, bool staked, uint112 stake, uint32 unstakeDelaySec, uint48 withdrawTime)",
  "function depositTo(address account) payable",
]);
const PAYMASTER = new Interface([
  "function owner() view returns (address)",
  "function pendingOwner() view returns (address)",
  "function signerCount() view returns (uint256)",
  "function isSigner(address) view returns (bool)",
  "function addSigner(address signer)",
  "function removeSigner(address signer)",
  "function withdrawTo(address to, uint256 amount)",
  "function addStake(uint32 unstakeDelaySec) payable",
  "function unlockStake()",
  "function withdrawStake(address to)",
]);
const TOKEN_PAYMASTER = new Interface([
  "function treasury() view returns (address)",
  "function postOpGas() view returns (uint256)",
  "function minPostOpGasLimit() view returns (uint256)",
  "function isSupportedToken(address) view returns (bool)",
  "function accruedFees(address) view returns (uint256)",
]);

export interface PaymasterStatus {
  label: string;
  address: Address;
  entryPoint: Address;
  depositWei: string;
  staked: boolean;
  stakeWei: string;
  unstakeDelaySec: number;
  /** Unix seconds from which the stake can be withdrawn (0: locked, staked). */
  withdrawTime: number;
  owner: Address;
  pendingOwner: Address | null;
  signerCount: number;
  /** Whether each of the service's signer addresses is accepted (the service signs with the first). */
  serviceSigners: { address: Address; accepted: boolean }[];
  /** ERC-20 paymasters: treasury, postOp figures, and per configured token whether it is allowed and its accrued fees. */
  token?: { treasury: Address; postOpGas: string; minPostOpGasLimit: string; tokens: { symbol: string; address: Address; supported: boolean; accruedFees: string }[] };
  warnings: string[];
}

const ZERO = "0x0000000000000000000000000000000000000000";

/** Status of the network's paymasters; `minDepositWei` (default: the network's depositAlertWei) adds a warning below it. */
export async function paymasterStatus(target: ChainTarget, options: { paymaster?: string; minDepositWei?: bigint } = {}): Promise<PaymasterStatus[]> {
  const threshold = options.minDepositWei ?? target.config?.depositAlertWei;
  const statuses: PaymasterStatus[] = [];
  for (const p of selectPaymasters(target, options.paymaster)) {
    const code = await target.provider.getCode(p.address);
    if (code === "0x") {
      statuses.push(missing(p));
      continue;
    }
    const ep = new Contract(p.entryPoint, ENTRY_POINT, target.provider);
    const pm = new Contract(p.address, PAYMASTER, target.provider);
    const [info, owner, pendingOwner, signerCount] = (await Promise.all([
      ep.getFunction("getDepositInfo")(p.address),
      pm.getFunction("owner")(),
      pm.getFunction("pendingOwner")(),
      pm.getFunction("signerCount")(),
    ])) as [{ deposit: bigint; staked: boolean; stake: bigint; unstakeDelaySec: bigint; withdrawTime: bigint }, string, string, bigint];
    const serviceSigners = await Promise.all(
      target.serviceSigners.map(async (address) => ({ address, accepted: (await pm.getFunction("isSigner")(address)) as boolean })),
    );
    const warnings: string[] = [];
    if (threshold !== undefined && info.deposit < threshold) warnings.push(`deposit ${info.deposit} wei is below ${threshold} wei: top it up (paymaster deposit)`);
    if (!info.staked) warnings.push("not staked: bundlers refuse ops of a paymaster that reads its own storage in validation (paymaster stake)");
    else if (info.withdrawTime !== 0n) warnings.push(`stake unlocked (withdrawable from ${info.withdrawTime}): bundlers treat it as unstaked`);
    if (signerCount === 0n) warnings.push("no signer: the paymaster sponsors nothing (kill switch)");
    if (serviceSigners[0] && !serviceSigners[0].accepted) warnings.push(`the service's signer ${serviceSigners[0].address} is not accepted: every sponsorship will fail (AA34)`);
    const status: PaymasterStatus = {
      label: p.label,
      address: p.address,
      entryPoint: p.entryPoint,
      depositWei: info.deposit.toString(),
      staked: info.staked,
      stakeWei: info.stake.toString(),
      unstakeDelaySec: Number(info.unstakeDelaySec),
      withdrawTime: Number(info.withdrawTime),
      owner: owner as Address,
      pendingOwner: pendingOwner === ZERO ? null : (pendingOwner as Address),
      signerCount: Number(signerCount),
      serviceSigners,
      warnings,
    };
    if (p.kind === "erc20") {
      const tp = new Contract(p.address, TOKEN_PAYMASTER, target.provider);
      const tokens = await Promise.all(
        (target.config?.tokens ?? []).map(async (t) => ({
          symbol: t.symbol,
          address: t.address,
          supported: (await tp.getFunction("isSupportedToken")(t.address)) as boolean,
          accruedFees: ((await tp.getFunction("accruedFees")(t.address)) as bigint).toString(),
        })),
      );
      for (const t of tokens) if (!t.supported) warnings.push(`token ${t.symbol} is configured for the service but not allowed by the paymaster: every op paying with it fails (UnsupportedToken) until it is allowed (paymaster token allow ${t.symbol} --network ${target.network})`);
      status.token = {
        treasury: (await tp.getFunction("treasury")()) as Address,
        postOpGas: ((await tp.getFunction("postOpGas")()) as bigint).toString(),
        minPostOpGasLimit: ((await tp.getFunction("minPostOpGasLimit")()) as bigint).toString(),
        tokens,
      };
    }
    statuses.push(status);
  }
  return statuses;
}

function missing(p: PaymasterRef): PaymasterStatus {
  return {
    label: p.label,
    address: p.address,
    entryPoint: p.entryPoint,
    depositWei: "0",
    staked: false,
    stakeWei: "0",
    unstakeDelaySec: 0,
    withdrawTime: 0,
    owner: ZERO,
    pendingOwner: null,
    signerCount: 0,
    serviceSigners: [],
    warnings: [`no contract at ${p.address}: deploy it (paymaster deploy) or fix the configuration`],
  };
}

/** One sent transaction, as the commands print it. */
export interface SentChange {
  paymaster: string;
  action: string;
  txHash: string;
  blockNumber: number;
}

export async function send(label: string, action: string, pending: Promise<{ hash: string; wait(): Promise<{ status: number | null; blockNumber: number } | null> }>): Promise<SentChange> {
  let tx;
  try {
    tx = await pending;
  } catch (error) {
    throw new AdminError("INVALID_INPUT", `${label}.${action}: refused (${oneLine(error)})`);
  }
  const receipt = await tx.wait();
  if (receipt === null || receipt.status !== 1) throw new AdminError("CONFLICT", `${label}.${action}: transaction ${tx.hash} failed`);
  return { paymaster: label, action, txHash: tx.hash, blockNumber: receipt.blockNumber };
}

/** Tops each selected paymaster's EntryPoint deposit up to `targetWei` (nothing for those at or above it). Anyone may deposit. */
export async function topUpDeposits(target: ChainTarget, funder: Wallet, options: { paymaster?: string; targetWei: bigint }): Promise<SentChange[]> {
  const sent: SentChange[] = [];
  for (const p of selectPaymasters(target, options.paymaster)) {
    const ep = new Contract(p.entryPoint, ENTRY_POINT, funder);
    const deposit = (await ep.getFunction("balanceOf")(p.address)) as bigint;
    if (deposit >= options.targetWei) continue;
    sent.push(await send(p.label, `deposit ${options.targetWei - deposit} wei`, ep.getFunction("depositTo")(p.address, { value: options.targetWei - deposit })));
  }
  return sent;
}

/** Withdraws `amountWei` of one paymaster's deposit to `to` (owner only). */
export async function withdrawDeposit(target: ChainTarget, owner: Wallet, options: { paymaster: string; to: Address; amountWei: bigint }): Promise<SentChange> {
  const [p] = selectPaymasters(target, options.paymaster);
  const pm = new Contract(p!.address, PAYMASTER, owner);
  return send(p!.label, `withdraw ${options.amountWei} wei to ${options.to}`, pm.getFunction("withdrawTo")(options.to, options.amountWei));
}

/** Adds stake (owner only) so each selected paymaster holds at least `amountWei` with at least `unstakeDelaySec`. */
export async function addStake(target: ChainTarget, owner: Wallet, options: { paymaster?: string; amountWei: bigint; unstakeDelaySec: number }): Promise<SentChange[]> {
  const sent: SentChange[] = [];
  for (const p of selectPaymasters(target, options.paymaster)) {
    const ep = new Contract(p.entryPoint, ENTRY_POINT, owner);
    const info = (await ep.getFunction("getDepositInfo")(p.address)) as { stake: bigint; unstakeDelaySec: bigint; withdrawTime: bigint };
    const value = info.stake < options.amountWei ? options.amountWei - info.stake : 0n;
    const delay = Math.max(Number(info.unstakeDelaySec), options.unstakeDelaySec);
    if (value === 0n && delay === Number(info.unstakeDelaySec) && info.withdrawTime === 0n) continue;
    const pm = new Contract(p.address, PAYMASTER, owner);
    sent.push(await send(p.label, `stake +${value} wei, delay ${delay} s`, pm.getFunction("addStake")(delay, { value })));
  }
  return sent;
}

/** Unlocks the stake (owner only); with `withdrawTo`, withdraws an unlocked stake whose delay has passed instead. */
export async function unstake(target: ChainTarget, owner: Wallet, options: { paymaster?: string; withdrawTo?: Address }): Promise<SentChange[]> {
  const sent: SentChange[] = [];
  for (const p of selectPaymasters(target, options.paymaster)) {
    const pm = new Contract(p.address, PAYMASTER, owner);
    sent.push(
      options.withdrawTo === undefined
        ? await send(p.label, "unlockStake", pm.getFunction("unlockStake")())
        : await send(p.label, `withdrawStake to ${options.withdrawTo}`, pm.getFunction("withdrawStake")(options.withdrawTo)),
    );
  }
  return sent;
}

/** Whether each selected paymaster accepts `signer`. */
export async function listSigner(target: ChainTarget, signer: Address, paymaster?: string): Promise<{ paymaster: string; address: Address; accepted: boolean }[]> {
  return Promise.all(
    selectPaymasters(target, paymaster).map(async (p) => ({
      paymaster: p.label,
      address: p.address,
      accepted: (await new Contract(p.address, PAYMASTER, target.provider).getFunction("isSigner")(signer)) as boolean,
    })),
  );
}

/** Adds (`accept`) or removes a signer on each selected paymaster where it is not already so (owner only). */
export async function setSigner(target: ChainTarget, owner: Wallet, options: { paymaster?: string; signer: Address; accept: boolean }): Promise<SentChange[]> {
  const sent: SentChange[] = [];
  for (const p of selectPaymasters(target, options.paymaster)) {
    const pm = new Contract(p.address, PAYMASTER, owner);
    if (((await pm.getFunction("isSigner")(options.signer)) as boolean) === options.accept) continue;
    const action = options.accept ? "addSigner" : "removeSigner";
    sent.push(await send(p.label, `${action} ${options.signer}`, pm.getFunction(action)(options.signer)));
  }
  return sent;
}
