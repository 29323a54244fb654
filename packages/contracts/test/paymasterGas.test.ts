// The gas limits the service gives our v0.7 paymasters without simulating (the ERC-7677 stub) are constants
// in @paymaster/shared: here each paymaster's worst case is measured as the least limit with which a real
// handleOps still passes (found by bisection), and each constant must cover it with
// PAYMASTER_GAS_MARGIN_PERCENT to spare. (v0.6 has no separate paymaster limits: the op's
// verificationGasLimit, which the bundler or the service's simulation measures, covers the paymaster. The
// ERC-20 paymaster's postOp limit is the contract's own minPostOpGasLimit: test/postOpGas.test.ts.)
import { expect } from "chai";
import { Wallet } from "ethers";
import { PAYMASTER_GAS_MARGIN_PERCENT, PAYMASTER_VERIFICATION_GAS } from "@paymaster/shared";
import { ethers, loadStack, networkHelpers, type Stack } from "./helpers/stack.ts";
import { accountCallData, draftOp, handleOps, newAccount, randomOwner, signAsOwner, sponsor, userOperationEvent, type TestOp, type TokenFields } from "./helpers/userOps.ts";
import { readyAccount, type ReadyAccount } from "./helpers/accounts.ts";

const VERSION = "v0.7";

/** The least value in [low, high] for which `passes` holds (it must hold at high and be monotonic). */
async function leastPassing(low: bigint, high: bigint, passes: (value: bigint) => Promise<boolean>): Promise<bigint> {
  expect(await passes(high), `passes at the upper bound ${high}`).to.equal(true);
  while (low < high) {
    const mid = (low + high) / 2n;
    if (await passes(mid)) high = mid;
    else low = mid + 1n;
  }
  return low;
}

/** The constant covers `measured` with the documented margin. */
function expectCovered(name: string, constant: bigint, measured: bigint) {
  if (process.env.PAYMASTER_GAS_REPORT) console.log(`      ${name}: measured ${measured}, constant ${constant}`);
  const needed = (measured * (100n + PAYMASTER_GAS_MARGIN_PERCENT)) / 100n;
  expect(constant >= needed, `${name} ${constant} must be >= ${measured} measured + ${PAYMASTER_GAS_MARGIN_PERCENT}% = ${needed}`).to.equal(true);
}

/** A treasury holding none of any token: the first payment's SSTORE to an empty slot is the worst case. */
async function emptyTreasury(stack: Stack): Promise<void> {
  const fresh = Wallet.createRandom().address;
  await (await stack.v[VERSION].erc20.getFunction("setTreasury")(fresh)).wait();
}

/** Sponsored with `kind`, signed by the account owner: the op exactly as a bundler would submit it. */
async function finished(stack: Stack, op: TestOp, owner: Wallet | ReadyAccount["owner"], tokenFields?: TokenFields): Promise<TestOp> {
  const kind = tokenFields ? "erc20" : "verifying";
  const paymaster = tokenFields ? stack.v[VERSION].erc20 : stack.v[VERSION].verifying;
  const sponsored = await sponsor(stack, VERSION, op, { kind, paymaster, signer: stack.signer, ...(tokenFields ? { tokenFields } : {}) });
  return signAsOwner(stack, VERSION, sponsored, owner as Wallet);
}

/** handleOps accepts the op (eth_call: nothing is mined). */
async function accepted(stack: Stack, op: TestOp): Promise<boolean> {
  try {
    await handleOps(stack, VERSION, [op]).then(() => undefined);
    return true;
  } catch {
    return false;
  }
}

describe("paymaster gas constants (v0.7): measured worst cases against @paymaster/shared", () => {
  it("VerifyingPaymaster: PAYMASTER_VERIFICATION_GAS.verifying covers its validation", async () => {
    const stack = await loadStack();
    const owner = randomOwner();
    const account = await newAccount(stack, VERSION, owner.address);
    const base = await draftOp({ sender: account.address, initCode: account.initCode, callData: accountCallData(VERSION, [{ to: owner.address, data: "0x" }]) });
    const snapshot = await networkHelpers.takeSnapshot();
    const measured = await leastPassing(1_000n, PAYMASTER_VERIFICATION_GAS.verifying, async (limit) => {
      const op = await finished(stack, { ...base, paymasterVerificationGasLimit: limit }, owner);
      const ok = await accepted(stack, op);
      await snapshot.restore();
      return ok;
    });
    expectCovered("PAYMASTER_VERIFICATION_GAS.verifying", PAYMASTER_VERIFICATION_GAS.verifying, measured);
  });

  it("ERC20Paymaster: PAYMASTER_VERIFICATION_GAS.erc20 covers a pre-charge validation paying an empty treasury", async () => {
    const stack = await loadStack();
    const account = await readyAccount(stack, VERSION);
    await emptyTreasury(stack);
    const tokenFields: TokenFields = { token: await stack.tokens.USDC.getAddress(), exchangeRate: 3_000n * 10n ** 6n, chargeMode: 1 };
    const base = await draftOp({ sender: account.address, callData: accountCallData(VERSION, [{ to: account.owner.address, data: "0x" }]) });
    const snapshot = await networkHelpers.takeSnapshot();
    const measured = await leastPassing(1_000n, PAYMASTER_VERIFICATION_GAS.erc20, async (limit) => {
      const op = await finished(stack, { ...base, paymasterVerificationGasLimit: limit }, account.owner, tokenFields);
      const ok = await accepted(stack, op);
      await snapshot.restore();
      return ok;
    });
    expectCovered("PAYMASTER_VERIFICATION_GAS.erc20", PAYMASTER_VERIFICATION_GAS.erc20, measured);
  });
});
