// Assertions on how the EntryPoint and the paymasters refuse an op.
import { expect } from "chai";
import { Contract, ZeroHash, type BaseContract } from "ethers";
import type { EntryPointVersion } from "@paymaster/shared";
import { ethers, networkHelpers, type Stack } from "./stack.ts";
import { handleOps, toChainOp, type TestOp } from "./userOps.ts";

/** handleOps reverts with FailedOp(0, reason) — the EntryPoint's AAxx verdict. */
export async function expectFailedOp(stack: Stack, version: EntryPointVersion, op: TestOp, reason: string) {
  await expect(handleOps(stack, version, [op]))
    .to.be.revertedWithCustomError(stack.v[version].entryPoint, "FailedOp")
    .withArgs(0n, reason);
}

/** handleOps refuses the op because the paymaster's validation reverted (AA33). */
export async function expectPaymasterReverted(stack: Stack, version: EntryPointVersion, op: TestOp) {
  const entryPoint = stack.v[version].entryPoint;
  if (version === "v0.6") {
    await expect(handleOps(stack, version, [op]))
      .to.be.revertedWithCustomError(entryPoint, "FailedOp")
      .withArgs(0n, "AA33 reverted (or OOG)");
  } else {
    await expect(handleOps(stack, version, [op])).to.be.revertedWithCustomError(entryPoint, "FailedOpWithRevert");
  }
}

/** The paymaster's validatePaymasterUserOp, called as the EntryPoint would call it (static). */
export async function validateAsEntryPoint(stack: Stack, version: EntryPointVersion, paymaster: Contract, op: TestOp, maxCost = 10n ** 17n) {
  const entryPointAddress = await stack.v[version].entryPoint.getAddress();
  await networkHelpers.impersonateAccount(entryPointAddress);
  await networkHelpers.setBalance(entryPointAddress, 10n ** 18n);
  const asEntryPoint = paymaster.connect(await ethers.getSigner(entryPointAddress)) as Contract;
  return asEntryPoint.getFunction("validatePaymasterUserOp").staticCall(toChainOp(version, op), ZeroHash, maxCost);
}

/** validationData fields: sigFailed (aggregator == 1), validUntil, validAfter. */
export function parseValidationData(validationData: bigint) {
  const mask48 = (1n << 48n) - 1n;
  return {
    sigFailed: (validationData & ((1n << 160n) - 1n)) === 1n,
    validUntil: Number((validationData >> 160n) & mask48),
    validAfter: Number((validationData >> 208n) & mask48),
  };
}

export type { BaseContract };
