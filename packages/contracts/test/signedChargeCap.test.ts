// Audit 2, N-7: the ERC-20 charge is bounded by a signed field. The sponsorship signs maxTokenCharge, the most the
// sender may pay for the op; neither the owner-set postOpGas (bounded by MAX_POST_OP_GAS) nor anything else read
// when the op lands can make the sender pay more, in either charge mode, on every version. v0.6's pre-charge,
// which is computed with postOpGas, is capped by it too.
import { expect } from "chai";
import type { Contract, TransactionReceipt, TransactionResponse } from "ethers";
import { tokenCost, type EntryPointVersion } from "@paymaster/shared";
import { loadStack, type Stack } from "./helpers/stack.ts";
import { VERSIONS, accountCallData, draftOp, handleOps, signAsOwner, sponsor, userOperationEvent } from "./helpers/userOps.ts";
import { readyAccount } from "./helpers/accounts.ts";
import { preChargeOf } from "./helpers/tokens.ts";

const RATE = 3_000n * 10n ** 6n; // 1 ETH = 3000 USDC

/** The sender's USDC loss and the TokenCharged amount of the mined op. */
async function landed(stack: Stack, version: EntryPointVersion, paymaster: Contract, sender: string, tx: Promise<TransactionResponse>, before: bigint) {
  const mined = await tx;
  const receipt = await mined.wait();
  const charged = receipt!.logs
    .filter((log) => log.address === paymaster.target)
    .map((log) => paymaster.interface.parseLog(log))
    .find((e) => e?.name === "TokenCharged");
  return {
    event: await userOperationEvent(stack, version, mined),
    charged: charged ? (charged.args.tokenAmount as bigint) : undefined,
    gasCostWei: charged ? (charged.args.gasCostWei as bigint) : undefined,
    senderLoss: before - (await stack.tokens.USDC.balanceOf(sender)),
  };
}

for (const version of VERSIONS) {
  describe(`ERC20Paymaster ${version}: the charge never exceeds the signed maxTokenCharge (audit 2, N-7)`, () => {
    for (const chargeMode of [0, 1] as const) {
      const mode = chargeMode === 1 ? "pre-charge" : "charge in postOp";
      it(`${mode}: the owner raises postOpGas to its maximum after the signature; the sender pays the signed cap, not more`, async () => {
        const stack = await loadStack();
        const paymaster = stack.v[version].erc20;
        const account = await readyAccount(stack, version);
        const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]) });
        // What the service quotes and signs: the op's maximum token cost at today's postOpGas.
        const quote = await preChargeOf(stack, version, draft, RATE);
        const op = await sponsor(stack, version, draft, {
          kind: "erc20",
          paymaster,
          signer: stack.signer,
          tokenFields: { token: await stack.tokens.USDC.getAddress(), exchangeRate: RATE, chargeMode, maxTokenCharge: quote / 50n },
        });
        // The owner (or whoever holds its key) front-runs the op: postOpGas as high as the contract allows.
        const max: bigint = await paymaster.getFunction("MAX_POST_OP_GAS")();
        await (await paymaster.getFunction("setPostOpGas")(max)).wait();
        const before = await stack.tokens.USDC.balanceOf(account.address);
        const r = await landed(stack, version, paymaster, account.address, handleOps(stack, version, [await signAsOwner(stack, version, op, account.owner)]), before);
        expect(r.event.success).to.equal(true);
        // Uncapped, the charge would be the cost at postOpGas = MAX_POST_OP_GAS: well above the cap signed here.
        expect(tokenCost(r.gasCostWei!, RATE) > quote / 50n, "the cap binds in this test").to.equal(true);
        expect(r.charged).to.equal(quote / 50n);
        expect(r.senderLoss).to.equal(quote / 50n);
      });
    }

    it("postOpGas is bounded: setPostOpGas above MAX_POST_OP_GAS reverts (the constructor too)", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const max: bigint = await paymaster.getFunction("MAX_POST_OP_GAS")();
      expect(max).to.equal(200_000n);
      await expect(paymaster.getFunction("setPostOpGas")(max + 1n))
        .to.be.revertedWithCustomError(paymaster, "PostOpGasTooHigh")
        .withArgs(max + 1n, max);
      await expect(paymaster.getFunction("setPostOpGas")(10_000_000n)).to.be.revertedWithCustomError(paymaster, "PostOpGasTooHigh");
    });

    it("pre-charge takes min(the contract's maximum, the signed cap): a cap above the maximum pre-charges the maximum", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const account = await readyAccount(stack, version);
      const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]) });
      const maximum = await preChargeOf(stack, version, draft, RATE);
      const op = await sponsor(stack, version, draft, {
        kind: "erc20",
        paymaster,
        signer: stack.signer,
        tokenFields: { token: await stack.tokens.USDC.getAddress(), exchangeRate: RATE, chargeMode: 1, maxTokenCharge: maximum * 3n },
      });
      const tx = await handleOps(stack, version, [await signAsOwner(stack, version, op, account.owner)]);
      const receipt: TransactionReceipt = await tx.wait();
      const usdc = stack.tokens.USDC;
      const transfers = receipt.logs.filter((log) => log.address === usdc.target).map((log) => usdc.interface.parseLog(log)!);
      const pulled = transfers.find((e) => e.name === "Transfer" && e.args.from === account.address && e.args.to === paymaster.target);
      expect(pulled?.args.value).to.equal(maximum);
    });
  });
}
