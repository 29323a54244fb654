// VerifyingPaymaster end to end: a fresh SimpleAccount deployed by the sponsored op itself, paid by the
// paymaster's EntryPoint deposit.
import { expect } from "chai";
import { Contract } from "ethers";
import { ethers, loadStack } from "./helpers/stack.ts";
import {
  VERSIONS,
  accountCallData,
  draftOp,
  handleOps,
  newAccount,
  randomOwner,
  signAsOwner,
  sponsor,
  userOperationEvent,
} from "./helpers/userOps.ts";

for (const version of VERSIONS) {
  describe(`VerifyingPaymaster ${version}: handleOps end to end`, () => {
    it("deploys the account in the op, runs its call, and the paymaster deposit pays", async () => {
      const stack = await loadStack();
      const { entryPoint, verifying } = stack.v[version];
      const owner = randomOwner();
      const account = await newAccount(stack, version, owner.address);
      // The call: the new account mints itself 1 USDC, so the op's effect is observable.
      const mint = stack.tokens.USDC.interface.encodeFunctionData("mint", [account.address, 1_000_000n]);
      let op = await draftOp({
        sender: account.address,
        initCode: account.initCode,
        callData: accountCallData(version, [{ to: await stack.tokens.USDC.getAddress(), data: mint }]),
      });
      op = await sponsor(stack, version, op, { kind: "verifying", paymaster: verifying, signer: stack.signer });
      op = await signAsOwner(stack, version, op, owner);

      expect(await ethers.provider.getCode(account.address)).to.equal("0x");
      expect(await ethers.provider.getBalance(account.address)).to.equal(0n);
      const depositBefore: bigint = await verifying.getFunction("getDeposit")();

      const tx = await handleOps(stack, version, [op]);
      const event = await userOperationEvent(stack, version, tx);

      expect(event.success).to.equal(true);
      expect(event.sender).to.equal(account.address);
      expect(event.paymaster).to.equal(await verifying.getAddress());
      expect(await ethers.provider.getCode(account.address)).to.not.equal("0x");
      expect(await stack.tokens.USDC.balanceOf(account.address)).to.equal(1_000_000n);
      // The account held no ETH: the paymaster's deposit paid exactly the op's cost.
      expect(await ethers.provider.getBalance(account.address)).to.equal(0n);
      expect(event.actualGasCost > 0n).to.equal(true);
      expect(depositBefore - (await verifying.getFunction("getDeposit")())).to.equal(event.actualGasCost);
    });

    it("pays a second op of the now-deployed account with a fresh signature", async () => {
      const stack = await loadStack();
      const { verifying } = stack.v[version];
      const owner = randomOwner();
      const account = await newAccount(stack, version, owner.address);
      const noop = accountCallData(version, [{ to: owner.address, data: "0x" }]);
      for (const [nonce, initCode] of [[0n, account.initCode], [1n, "0x"]] as const) {
        let op = await draftOp({ sender: account.address, nonce, initCode, callData: noop });
        op = await sponsor(stack, version, op, { kind: "verifying", paymaster: verifying, signer: stack.signer });
        op = await signAsOwner(stack, version, op, owner);
        const event = await userOperationEvent(stack, version, await handleOps(stack, version, [op]));
        expect(event.success).to.equal(true);
      }
      const entryPoint = stack.v[version].entryPoint as Contract;
      expect(await entryPoint.getFunction("getNonce")(account.address, 0n)).to.equal(2n);
    });
  });
}
