// Item 1 of the contract audit: a pre-charge must never be locked by a failing postOp. The fee stays in the
// paymaster, the surplus goes back to the sender or is owed to it, and the owner can move what is not owed.
import { expect } from "chai";
import { Contract, ZeroAddress, type TransactionResponse } from "ethers";
import { tokenCost, type EntryPointVersion } from "@paymaster/shared";
import { ethers, loadStack, type Stack } from "./helpers/stack.ts";
import { VERSIONS, accountCallData, draftOp, handleOps, signAsOwner, sponsor, userOperationEvent, type TestOp } from "./helpers/userOps.ts";
import { accountWithToken, ownerExecute, readyAccount, type ReadyAccount } from "./helpers/accounts.ts";
import { blocklistToken, preChargeOf } from "./helpers/tokens.ts";
import { networkHelpers } from "./helpers/stack.ts";

const RATE = 3_000n * 10n ** 6n; // 6-decimal tokens: 1 ETH = 3000

/** The paymaster's events in a handleOps transaction, and the EntryPoint's PostOpRevertReason if any. */
async function eventsOf(stack: Stack, version: EntryPointVersion, tx: TransactionResponse) {
  const receipt = await tx.wait();
  const paymaster = stack.v[version].erc20;
  const pm = (await paymaster.getAddress()).toLowerCase();
  const ep = (await stack.v[version].entryPoint.getAddress()).toLowerCase();
  const names: string[] = [];
  const args: Record<string, Record<string, unknown>> = {};
  for (const log of receipt!.logs) {
    const from = log.address.toLowerCase();
    const parsed = from === pm ? paymaster.interface.parseLog(log) : from === ep ? stack.v[version].entryPoint.interface.parseLog(log) : null;
    if (!parsed) continue;
    names.push(parsed.name);
    args[parsed.name] = parsed.args.toObject();
  }
  return { names, args };
}


async function preChargeOp(stack: Stack, version: EntryPointVersion, account: ReadyAccount, token: Contract, calls: { to: string; data: string }[], extra: Partial<TestOp> = {}) {
  const draft = await draftOp({ sender: account.address, callData: accountCallData(version, calls), callGasLimit: 80_000n, ...extra });
  const op = await sponsor(stack, version, draft, {
    kind: "erc20",
    paymaster: stack.v[version].erc20,
    signer: stack.signer,
    tokenFields: { token: await token.getAddress(), exchangeRate: RATE, chargeMode: 1 },
  });
  return signAsOwner(stack, version, op, account.owner);
}

for (const version of VERSIONS) {
  describe(`ERC20Paymaster ${version}: a pre-charge is never locked (audit item 1)`, () => {
    it("(a) at the lowest accepted postOp gas limit, a token the paymaster never held and a sender left with 0: postOp pays and refunds", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const token = await blocklistToken(stack); // fresh: the paymaster and its treasury never held it
      const min: bigint = await paymaster.getFunction("minPostOpGasLimit")();
      // v0.6 runs validation and postOp each under verificationGasLimit, and validation needs more than postOp.
      const limits: Partial<TestOp> = version !== "v0.6" ? { paymasterPostOpGasLimit: min } : { verificationGasLimit: min + 60_000n };
      const probe = await draftOp({ sender: ZeroAddress, callData: "0x", callGasLimit: 80_000n, ...limits });
      const account = await accountWithToken(stack, version, token, await preChargeOf(stack, version, probe, RATE));
      const op = await preChargeOp(stack, version, account, token, [{ to: account.owner.address, data: "0x" }], limits);
      const before = await token.getFunction("balanceOf")(account.address);

      const tx = await handleOps(stack, version, [op]);
      const { names, args } = await eventsOf(stack, version, tx);
      expect(names).to.not.include("PostOpRevertReason");
      expect(names).to.not.include("RefundDeferred");
      expect(names).to.include("TokenCharged");
      expect((await userOperationEvent(stack, version, tx)).success).to.equal(true);
      const charged = args.TokenCharged!.tokenAmount as bigint;
      expect(charged).to.equal(tokenCost(args.TokenCharged!.gasCostWei as bigint, RATE));
      expect(before - (await token.getFunction("balanceOf")(account.address))).to.equal(charged);
      expect(await token.getFunction("balanceOf")(await paymaster.getAddress())).to.equal(charged);
      expect(await paymaster.getFunction("accruedFees")(await token.getAddress())).to.equal(charged);
    });

    if (version !== "v0.6") {
      it("(a) the audit's reproduction: paymasterPostOpGasLimit equal to postOpGas is refused in validation, before anything is pre-charged", async () => {
        const stack = await loadStack();
        const paymaster = stack.v[version].erc20;
        const postOpGas: bigint = await paymaster.getFunction("postOpGas")();
        const min: bigint = await paymaster.getFunction("minPostOpGasLimit")();
        expect(min > postOpGas).to.equal(true);
        const account = await readyAccount(stack, version);
        const op = await preChargeOp(stack, version, account, stack.tokens.USDC as unknown as Contract, [{ to: account.owner.address, data: "0x" }], { paymasterPostOpGasLimit: postOpGas });
        await expect(handleOps(stack, version, [op])).to.be.revertedWithCustomError(stack.v[version].entryPoint, "FailedOpWithRevert");
      });
    }

    it("(b) a USDC-style token that blocklists the treasury: the op pays normally, the fee stays in the paymaster, and the owner can still move it", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const token = await blocklistToken(stack);
      await (await token.getFunction("setBlocklisted")(stack.treasury, true)).wait();
      const account = await accountWithToken(stack, version, token, 10n ** 9n);
      const op = await preChargeOp(stack, version, account, token, [{ to: account.owner.address, data: "0x" }]);
      const tx = await handleOps(stack, version, [op]);
      const { names, args } = await eventsOf(stack, version, tx);
      expect(names).to.include("TokenCharged");
      expect(names).to.not.include("TokenChargeUnpaid");
      expect(names).to.not.include("PostOpRevertReason");
      const fee = args.TokenCharged!.tokenAmount as bigint;
      expect(await paymaster.getFunction("accruedFees")(await token.getAddress())).to.equal(fee);
      expect(10n ** 9n - (await token.getFunction("balanceOf")(account.address))).to.equal(fee);

      // Sweeping to the blocklisted treasury fails (outside any op); the owner withdraws elsewhere instead.
      await expect(paymaster.getFunction("sweepFees")(await token.getAddress())).to.be.revertedWithCustomError(paymaster, "TokenTransferFailed");
      await expect(paymaster.getFunction("withdrawTokens")(await token.getAddress(), stack.beneficiary, fee))
        .to.emit(paymaster, "TokensWithdrawn")
        .withArgs(await token.getAddress(), stack.beneficiary, fee);
      expect(await token.getFunction("balanceOf")(stack.beneficiary)).to.equal(fee);
      expect(await paymaster.getFunction("accruedFees")(await token.getAddress())).to.equal(0n);
    });

    it("(b) a token that refuses the refund (the sender got blocklisted during its op): the refund is owed, never lost, and claimable later", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const token = await blocklistToken(stack);
      const tokenAddress = await token.getAddress();
      const account = await accountWithToken(stack, version, token, 10n ** 9n);
      const blocklistSelf = token.interface.encodeFunctionData("setBlocklisted", [account.address, true]);
      const op = await preChargeOp(stack, version, account, token, [{ to: tokenAddress, data: blocklistSelf }]);
      const preCharged = await preChargeOf(stack, version, op, RATE);

      const tx = await handleOps(stack, version, [op]);
      const { names, args } = await eventsOf(stack, version, tx);
      expect((await userOperationEvent(stack, version, tx)).success).to.equal(true);
      expect(names).to.include("TokenCharged");
      expect(names).to.include("RefundDeferred");
      const fee = args.TokenCharged!.tokenAmount as bigint;
      const owed = preCharged - fee;
      expect(args.RefundDeferred!.amount).to.equal(owed);
      expect(await paymaster.getFunction("owedRefunds")(tokenAddress, account.address)).to.equal(owed);
      expect(await paymaster.getFunction("totalOwedRefunds")(tokenAddress)).to.equal(owed);
      expect(await token.getFunction("balanceOf")(await paymaster.getAddress())).to.equal(preCharged);

      // The owner can take the fee but never what is owed.
      expect(await paymaster.getFunction("withdrawableTokens")(tokenAddress)).to.equal(fee);
      await expect(paymaster.getFunction("withdrawTokens")(tokenAddress, stack.beneficiary, fee + 1n))
        .to.be.revertedWithCustomError(paymaster, "InsufficientWithdrawable")
        .withArgs(tokenAddress, fee + 1n, fee);

      // Once unblocked, the account claims its refund (to itself, through its owner).
      await (await token.getFunction("setBlocklisted")(account.address, false)).wait();
      const claim = paymaster.interface.encodeFunctionData("claimRefund", [tokenAddress, account.address]);
      const before: bigint = await token.getFunction("balanceOf")(account.address);
      await ownerExecute(version, account, [{ to: await paymaster.getAddress(), data: claim }]);
      expect((await token.getFunction("balanceOf")(account.address)) - before).to.equal(owed);
      expect(await paymaster.getFunction("owedRefunds")(tokenAddress, account.address)).to.equal(0n);
      await expect(paymaster.getFunction("claimRefund")(tokenAddress, stack.beneficiary))
        .to.be.revertedWithCustomError(paymaster, "NothingToClaim");
    });

    it("withdrawTokens: owner only, never to the zero address, and recovers any token sent to the paymaster", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const dai = stack.tokens.DAI;
      await (await dai.mint(await paymaster.getAddress(), 5n * 10n ** 18n)).wait(); // sent by mistake
      const stranger = paymaster.connect(stack.signer) as Contract;
      await networkHelpers.setBalance(stack.signer.address, 10n ** 18n);
      await expect(stranger.getFunction("withdrawTokens")(await dai.getAddress(), stack.signer.address, 1n))
        .to.be.revertedWithCustomError(paymaster, "OwnableUnauthorizedAccount");
      await expect(paymaster.getFunction("withdrawTokens")(await dai.getAddress(), ZeroAddress, 1n)).to.be.revertedWithCustomError(paymaster, "ZeroAddress");
      await (await paymaster.getFunction("withdrawTokens")(await dai.getAddress(), stack.beneficiary, 5n * 10n ** 18n)).wait();
      expect(await dai.balanceOf(stack.beneficiary)).to.equal(5n * 10n ** 18n);
    });

    it("sweepFees sends the accrued fees but one base unit to the treasury, whoever calls it (audit 4, R4-1)", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const usdc = stack.tokens.USDC;
      const account = await readyAccount(stack, version);
      await (await handleOps(stack, version, [await preChargeOp(stack, version, account, usdc as unknown as Contract, [{ to: account.owner.address, data: "0x" }])])).wait();
      const fees: bigint = await paymaster.getFunction("accruedFees")(await usdc.getAddress());
      expect(fees > 1n).to.equal(true);
      const stranger = paymaster.connect(stack.signer) as Contract;
      await networkHelpers.setBalance(stack.signer.address, 10n ** 18n);
      await expect(stranger.getFunction("sweepFees")(await usdc.getAddress()))
        .to.emit(paymaster, "FeesSwept")
        .withArgs(await usdc.getAddress(), stack.treasury, fees - 1n);
      expect(await usdc.balanceOf(stack.treasury)).to.equal(fees - 1n);
      // The unit kept holds accruedFees and the paymaster's balance above zero: the next fee sets neither from zero.
      expect(await paymaster.getFunction("accruedFees")(await usdc.getAddress())).to.equal(1n);
      expect(await usdc.balanceOf(await paymaster.getAddress())).to.equal(1n);
      // A second sweep has nothing to send; the owner's withdrawTokens can still take the last unit.
      await expect(stranger.getFunction("sweepFees")(await usdc.getAddress())).to.emit(paymaster, "FeesSwept").withArgs(await usdc.getAddress(), stack.treasury, 0n);
      await (await paymaster.getFunction("withdrawTokens")(await usdc.getAddress(), stack.treasury, 1n)).wait();
      expect(await usdc.balanceOf(stack.treasury)).to.equal(fees);
      expect(await paymaster.getFunction("accruedFees")(await usdc.getAddress())).to.equal(0n);
    });
  });
}

export { ethers };
