// Traces through the local chain's debug_traceCall / debug_traceTransaction (default struct logger).
import type { EntryPointVersion } from "@paymaster/shared";
import type { StructTrace } from "../../src/erc7562/index.ts";
import { ethers, type Stack } from "./stack.ts";
import { toChainOp, type TestOp } from "./userOps.ts";

/** debug_traceCall of handleOps([op]) from the beneficiary (a bundler EOA), with memory for keccak inputs. */
export async function traceHandleOps(stack: Stack, version: EntryPointVersion, op: TestOp): Promise<StructTrace> {
  const entryPoint = stack.v[version].entryPoint;
  const data = entryPoint.interface.encodeFunctionData("handleOps", [[toChainOp(version, op)], stack.beneficiary]);
  return ethers.provider.send("debug_traceCall", [
    { from: stack.beneficiary, to: await entryPoint.getAddress(), data, gas: "0x989680" },
    "latest",
    { enableMemory: true },
  ]);
}

/** debug_traceTransaction of a mined transaction (no memory: gas and frames only). */
export async function traceTransaction(hash: string): Promise<StructTrace> {
  return ethers.provider.send("debug_traceTransaction", [hash, { disableMemory: true }]);
}

/** Whether `address` is staked in the version's EntryPoint, and its unstake delay. */
export async function stakeInfo(stack: Stack, version: EntryPointVersion, address: string) {
  const info = await stack.v[version].entryPoint.getFunction("getDepositInfo")(address);
  return { staked: info.staked as boolean, stake: info.stake as bigint, unstakeDelaySec: info.unstakeDelaySec as bigint };
}
