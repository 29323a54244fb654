// Audit 2, N-1: a pre-charge taken in validation is the sender's until its postOp settles it. In a bundle the
// EntryPoint validates every op first, so an owner op executing earlier in the same bundle could withdraw a later
// op's pre-charge; that op's refund would then be owed with nothing to back it (claimRefund reverts).
// withdrawableTokens leaves the in-flight pre-charges out (counted in transient storage, per transaction).
import { expect } from "chai";
import { loadStack } from "./helpers/stack.ts";
import { VERSIONS, accountCallData, draftOp, eventArgs, handleOps, signAsOwner, sponsor } from "./helpers/userOps.ts";
import { accountOwnsPaymaster, readyAccount } from "./helpers/accounts.ts";
import { preChargeOf } from "./helpers/tokens.ts";

const RATE = 3_000n * 10n ** 6n;

for (const version of VERSIONS) {
  describe(`ERC20Paymaster ${version}: pre-charges in flight are not withdrawable (audit 2, N-1)`, () => {
    it("an owner op earlier in the bundle cannot withdraw a later op's pre-charge; the later op's refund is paid", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const usdc = stack.tokens.USDC;
      const owner = await readyAccount(stack, version, { approveErc20Paymaster: false, salt: 7n });
      await accountOwnsPaymaster(stack, version, owner);
      const victim = await readyAccount(stack, version);
      expect(await usdc.balanceOf(await paymaster.getAddress())).to.equal(0n);

      const draft = await draftOp({ sender: victim.address, callData: accountCallData(version, [{ to: victim.owner.address, data: "0x" }]) });
      const preCharge = await preChargeOf(stack, version, draft, RATE);
      const victimOp = await sponsor(stack, version, draft, {
        kind: "erc20",
        paymaster,
        signer: stack.signer,
        tokenFields: { token: await usdc.getAddress(), exchangeRate: RATE, chargeMode: 1 },
      });
      // The owner's op runs first and asks for exactly what the victim's validation will have pulled in.
      const withdraw = paymaster.interface.encodeFunctionData("withdrawTokens", [await usdc.getAddress(), owner.owner.address, preCharge]);
      const ownerOp = await draftOp({ sender: owner.address, callData: accountCallData(version, [{ to: await paymaster.getAddress(), data: withdraw }]) });

      const before = await usdc.balanceOf(victim.address);
      const tx = await handleOps(stack, version, [await signAsOwner(stack, version, ownerOp, owner.owner), await signAsOwner(stack, version, victimOp, victim.owner)]);
      await tx.wait();

      const ops = await eventArgs(stack.v[version].entryPoint, tx, "UserOperationEvent");
      expect(ops.map((e) => [e.sender, e.success])).to.deep.equal([
        [owner.address, false], // withdrawTokens reverted: nothing was withdrawable
        [victim.address, true],
      ]);
      expect(await usdc.balanceOf(owner.owner.address)).to.equal(0n);
      const [charged] = await eventArgs(paymaster, tx, "TokenCharged");
      expect(await eventArgs(paymaster, tx, "RefundDeferred")).to.deep.equal([]);
      // The victim paid its fee and got the rest of its pre-charge back; nothing is owed, everything is backed.
      expect(before - (await usdc.balanceOf(victim.address))).to.equal(charged!.tokenAmount);
      expect(await paymaster.getFunction("totalOwedRefunds")(await usdc.getAddress())).to.equal(0n);
      expect(await usdc.balanceOf(await paymaster.getAddress())).to.equal(charged!.tokenAmount);
      // Outside a bundle nothing is in flight, and the settled fee is withdrawable.
      expect(await paymaster.getFunction("inFlightPreCharges")(await usdc.getAddress())).to.equal(0n);
      expect(await paymaster.getFunction("withdrawableTokens")(await usdc.getAddress())).to.equal(charged!.tokenAmount);
    });
  });
}
