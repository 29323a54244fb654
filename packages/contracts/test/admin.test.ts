// Who may change what: two-step ownership separate from the signers, signer and token management, funds.
import { expect } from "chai";
import { Contract, ZeroAddress } from "ethers";
import { ethers, loadStack, networkHelpers } from "./helpers/stack.ts";
import { VERSIONS } from "./helpers/userOps.ts";

for (const version of VERSIONS) {
  for (const kind of ["verifying", "erc20"] as const) {
    describe(`${kind} paymaster ${version}: administration`, () => {
      it("ownership moves only in two steps, and only the owner manages signers", async () => {
        const stack = await loadStack();
        const paymaster = stack.v[version][kind];
        const [, , , newOwner] = await ethers.getSigners();
        const asSigner = paymaster.connect(stack.signer) as Contract;
        await networkHelpers.setBalance(stack.signer.address, 10n ** 18n);
        await expect(asSigner.getFunction("addSigner")(stack.stranger.address))
          .to.be.revertedWithCustomError(paymaster, "OwnableUnauthorizedAccount")
          .withArgs(stack.signer.address);

        await (await paymaster.getFunction("transferOwnership")(await newOwner!.getAddress())).wait();
        expect(await paymaster.getFunction("owner")()).to.equal(await stack.owner.getAddress());
        expect(await paymaster.getFunction("pendingOwner")()).to.equal(await newOwner!.getAddress());
        await (await (paymaster.connect(newOwner!) as Contract).getFunction("acceptOwnership")()).wait();
        expect(await paymaster.getFunction("owner")()).to.equal(await newOwner!.getAddress());
        await expect(paymaster.getFunction("addSigner")(stack.stranger.address)).to.be.revertedWithCustomError(
          paymaster,
          "OwnableUnauthorizedAccount",
        );
      });

      it("signer management rejects zero, duplicate and unknown signers and emits events", async () => {
        const stack = await loadStack();
        const paymaster = stack.v[version][kind];
        expect(await paymaster.getFunction("isSigner")(stack.signer.address)).to.equal(true);
        await expect(paymaster.getFunction("addSigner")(ZeroAddress)).to.be.revertedWithCustomError(paymaster, "ZeroAddress");
        await expect(paymaster.getFunction("addSigner")(stack.signer.address))
          .to.be.revertedWithCustomError(paymaster, "SignerAlreadyAdded")
          .withArgs(stack.signer.address);
        await expect(paymaster.getFunction("removeSigner")(stack.stranger.address))
          .to.be.revertedWithCustomError(paymaster, "SignerNotFound")
          .withArgs(stack.stranger.address);
        await expect(paymaster.getFunction("addSigner")(stack.secondSigner.address))
          .to.emit(paymaster, "SignerAdded")
          .withArgs(stack.secondSigner.address);
        await expect(paymaster.getFunction("removeSigner")(stack.signer.address))
          .to.emit(paymaster, "SignerRemoved")
          .withArgs(stack.signer.address);
        expect(await paymaster.getFunction("isSigner")(stack.signer.address)).to.equal(false);
      });

      it("anyone may top up the deposit; only the owner withdraws it", async () => {
        const stack = await loadStack();
        const paymaster = stack.v[version][kind];
        const [, , , someone] = await ethers.getSigners();
        const before: bigint = await paymaster.getFunction("getDeposit")();
        await (await (paymaster.connect(someone!) as Contract).getFunction("deposit")({ value: 12345n })).wait();
        expect(await paymaster.getFunction("getDeposit")()).to.equal(before + 12345n);
        await expect((paymaster.connect(someone!) as Contract).getFunction("withdrawTo")(await someone!.getAddress(), 1n)).to.be.revertedWithCustomError(
          paymaster,
          "OwnableUnauthorizedAccount",
        );
        const to = stack.stranger.address;
        await (await paymaster.getFunction("withdrawTo")(to, 12345n)).wait();
        expect(await ethers.provider.getBalance(to)).to.equal(12345n);
      });
    });
  }

  describe(`ERC20Paymaster ${version}: token administration and stake`, () => {
    it("allowlist, treasury and postOpGas are owner-only, with events", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const stranger = paymaster.connect(stack.signer) as Contract;
      await networkHelpers.setBalance(stack.signer.address, 10n ** 18n);
      const usdc = await stack.tokens.USDC.getAddress();
      expect(await paymaster.getFunction("isSupportedToken")(usdc)).to.equal(true);
      await expect(stranger.getFunction("setTokenSupport")(usdc, false)).to.be.revertedWithCustomError(paymaster, "OwnableUnauthorizedAccount");
      await expect(stranger.getFunction("setTreasury")(stack.beneficiary)).to.be.revertedWithCustomError(paymaster, "OwnableUnauthorizedAccount");
      await expect(stranger.getFunction("setPostOpGas")(1n)).to.be.revertedWithCustomError(paymaster, "OwnableUnauthorizedAccount");
      await expect(paymaster.getFunction("setTokenSupport")(usdc, false)).to.emit(paymaster, "TokenSupportSet").withArgs(usdc, false);
      expect(await paymaster.getFunction("isSupportedToken")(usdc)).to.equal(false);
      await expect(paymaster.getFunction("setTreasury")(ZeroAddress)).to.be.revertedWithCustomError(paymaster, "ZeroAddress");
      await expect(paymaster.getFunction("setTreasury")(stack.beneficiary)).to.emit(paymaster, "TreasurySet").withArgs(stack.beneficiary);
      expect(await paymaster.getFunction("treasury")()).to.equal(stack.beneficiary);
      await expect(paymaster.getFunction("setPostOpGas")(77_000n)).to.emit(paymaster, "PostOpGasSet").withArgs(77_000n);
      expect(await paymaster.getFunction("postOpGas")()).to.equal(77_000n);
    });

    it("is staked in the EntryPoint with at least a one-day unstake delay, and the owner can unlock and withdraw it", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const entryPoint = stack.v[version].entryPoint;
      const info = await entryPoint.getFunction("getDepositInfo")(await paymaster.getAddress());
      expect(info.staked).to.equal(true);
      expect(info.stake > 0n).to.equal(true);
      expect(info.unstakeDelaySec >= 86_400n).to.equal(true);
      await (await paymaster.getFunction("unlockStake")()).wait();
      await expect(paymaster.getFunction("withdrawStake")(stack.stranger.address)).to.be.revert(ethers);
      await networkHelpers.time.increase(Number(info.unstakeDelaySec) + 1);
      await (await paymaster.getFunction("withdrawStake")(stack.stranger.address)).wait();
      expect(await ethers.provider.getBalance(stack.stranger.address)).to.equal(info.stake);
    });
  });
}
