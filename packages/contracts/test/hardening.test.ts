// Items 6 and 7 of the contract audit, for every paymaster: windows the EntryPoint would read as unbounded
// fail like a bad signature; ownership cannot be renounced; funds never go to the zero address; removing the
// last signer is the documented kill switch.
import { expect } from "chai";
import { Contract, ZeroAddress } from "ethers";
import { ethers, loadStack } from "./helpers/stack.ts";
import { VERSIONS, accountCallData, draftOp, handleOps, signAsOwner, sponsor, userOperationEvent, type PaymasterKind } from "./helpers/userOps.ts";
import { readyAccount } from "./helpers/accounts.ts";
import { expectFailedOp, parseValidationData, validateAsEntryPoint } from "./helpers/expectations.ts";

const KINDS: PaymasterKind[] = ["verifying", "erc20"];

for (const version of VERSIONS) {
  for (const kind of KINDS) {
    describe(`${kind} paymaster ${version}: hardening`, () => {
      async function setup() {
        const stack = await loadStack();
        const account = await readyAccount(stack, version);
        const paymaster = stack.v[version][kind];
        const tokenFields = kind === "erc20" ? { token: await stack.tokens.USDC.getAddress(), exchangeRate: 3_000n * 10n ** 6n, chargeMode: 1 as const } : undefined;
        const opWith = async (window: { validUntil: number; validAfter: number }) =>
          sponsor(stack, version, await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]) }), {
            kind,
            paymaster,
            signer: stack.signer,
            tokenFields,
            window,
          });
        return { stack, account, paymaster, opWith };
      }

      it("validUntil = 0 (\"never expires\" to the EntryPoint) is a failed signature (AA34), even correctly signed (item 6)", async () => {
        const { stack, account, paymaster, opWith } = await setup();
        const op = await opWith({ validUntil: 0, validAfter: 0 });
        const [, validationData] = await validateAsEntryPoint(stack, version, paymaster, op);
        expect(parseValidationData(validationData).sigFailed).to.equal(true);
        await expectFailedOp(stack, version, await signAsOwner(stack, version, op, account.owner), "AA34 signature error");
      });

      it("a window longer than MAX_VALIDITY_WINDOW (1 day) fails; exactly 1 day passes (item 6)", async () => {
        const { stack, account, paymaster, opWith } = await setup();
        const max = Number(await paymaster.getFunction("MAX_VALIDITY_WINDOW")());
        expect(max).to.equal(86_400);
        const now = (await ethers.provider.getBlock("latest"))!.timestamp;
        const long = await opWith({ validAfter: now - 60, validUntil: now - 60 + max + 1 });
        expect(parseValidationData((await validateAsEntryPoint(stack, version, paymaster, long))[1]).sigFailed).to.equal(true);
        await expectFailedOp(stack, version, await signAsOwner(stack, version, long, account.owner), "AA34 signature error");
        const ok = await signAsOwner(stack, version, await opWith({ validAfter: now - 60, validUntil: now - 60 + max }), account.owner);
        expect((await userOperationEvent(stack, version, await handleOps(stack, version, [ok]))).success).to.equal(true);
      });

      it("renounceOwnership always reverts; withdrawTo and withdrawStake refuse the zero address (item 7)", async () => {
        const { stack, paymaster } = await setup();
        await expect(paymaster.getFunction("renounceOwnership")()).to.be.revertedWithCustomError(paymaster, "RenounceOwnershipDisabled");
        expect(await paymaster.getFunction("owner")()).to.equal(await stack.owner.getAddress());
        await expect(paymaster.getFunction("withdrawTo")(ZeroAddress, 1n)).to.be.revertedWithCustomError(paymaster, "ZeroAddress");
        await (await paymaster.getFunction("unlockStake")()).wait();
        await expect(paymaster.getFunction("withdrawStake")(ZeroAddress)).to.be.revertedWithCustomError(paymaster, "ZeroAddress");
      });

      it("removing the last signer is the kill switch: AllSignersRemoved, every op refused (AA34) until a signer is added (item 7)", async () => {
        const { stack, account, paymaster, opWith } = await setup();
        expect(await paymaster.getFunction("signerCount")()).to.equal(1n);
        const now = (await ethers.provider.getBlock("latest"))!.timestamp;
        const op = await signAsOwner(stack, version, await opWith({ validAfter: now - 60, validUntil: now + 300 }), account.owner);
        await expect(paymaster.getFunction("removeSigner")(stack.signer.address)).to.emit(paymaster, "AllSignersRemoved");
        expect(await paymaster.getFunction("signerCount")()).to.equal(0n);
        await expectFailedOp(stack, version, op, "AA34 signature error");
        await (await (paymaster as Contract).getFunction("addSigner")(stack.signer.address)).wait();
        expect((await userOperationEvent(stack, version, await handleOps(stack, version, [op]))).success).to.equal(true);
      });
    });
  }
}
