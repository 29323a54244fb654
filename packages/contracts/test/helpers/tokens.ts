// Extra tokens for the charge tests: a USDC-style blocklisting token, allowlisted on every ERC-20 paymaster.
import { Contract } from "ethers";
import { tokenCost, type EntryPointVersion } from "@paymaster/shared";
import { BlocklistToken__factory } from "../../types/ethers-contracts/index.ts";
import type { Stack } from "./stack.ts";
import { VERSIONS, type TestOp } from "./userOps.ts";

/** A fresh BlocklistToken (6 decimals), allowlisted on every ERC-20 paymaster. */
export async function blocklistToken(stack: Stack): Promise<Contract> {
  const token = (await new BlocklistToken__factory(stack.owner).deploy()) as unknown as Contract;
  for (const version of VERSIONS) {
    await (await stack.v[version].erc20.getFunction("setTokenSupport")(await token.getAddress(), true)).wait();
  }
  return token;
}

/** The token amount the version's ERC-20 paymaster pre-charges for `op` at `rate`. */
export async function preChargeOf(stack: Stack, version: EntryPointVersion, op: TestOp, rate: bigint): Promise<bigint> {
  const postOpGas: bigint = await stack.v[version].erc20.getFunction("postOpGas")();
  const gas =
    version === "v0.6"
      ? op.callGasLimit + 3n * op.verificationGasLimit + op.preVerificationGas + postOpGas
      : op.callGasLimit + op.verificationGasLimit + op.preVerificationGas + op.paymasterVerificationGasLimit + op.paymasterPostOpGasLimit;
  return tokenCost(gas * op.maxFeePerGas, rate);
}
