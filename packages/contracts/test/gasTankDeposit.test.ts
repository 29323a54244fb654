// GasTankDeposit: deposits for any sender (depositFor) or for the caller (a plain transfer), each one Deposited
// event the service credits; zero amounts and a zero sender refused; the ether held for the two-step owner, who
// alone withdraws it. The point of the contract: a smart account funds its own tank from an internal call,
// here from a user operation run by the EntryPoint.
import { expect } from "chai";
import { ZeroAddress, parseEther } from "ethers";
import { predictCreate2Address, saltFor } from "../src/deploy/index.ts";
import { GasTankDeposit__factory, type GasTankDeposit } from "../types/ethers-contracts/index.ts";
import { ethers, loadStack, networkHelpers, type Stack } from "./helpers/stack.ts";
import { accountCallData, draftOp, handleOps, signAsOwner, sponsor, userOperationEvent } from "./helpers/userOps.ts";
import { ownerExecute, readyAccount } from "./helpers/accounts.ts";

describe("GasTankDeposit", () => {
  async function setup(): Promise<{ stack: Stack; tank: GasTankDeposit }> {
    const stack = await loadStack();
    return { stack, tank: GasTankDeposit__factory.connect(stack.manifest.gasTankDeposit, stack.owner) };
  }

  /** The Deposited events of a mined transaction. */
  async function deposited(tank: GasTankDeposit, txHash: string) {
    const receipt = await ethers.provider.getTransactionReceipt(txHash);
    const address = (await tank.getAddress()).toLowerCase();
    return receipt!.logs
      .filter((log) => log.address.toLowerCase() === address)
      .map((log) => tank.interface.parseLog(log)!)
      .filter((e) => e.name === "Deposited")
      .map((e) => ({ sender: e.args.sender as string, from: e.args.from as string, amount: e.args.amount as bigint }));
  }

  it("is deployed by the local stack at its CREATE2 address, owned by the paymasters' owner", async () => {
    const { stack, tank } = await setup();
    const initCode = (await new GasTankDeposit__factory().getDeployTransaction(await stack.owner.getAddress())).data;
    expect(stack.manifest.gasTankDeposit).to.equal(predictCreate2Address(saltFor("GasTankDeposit"), initCode));
    expect(await tank.owner()).to.equal(await stack.owner.getAddress());
    expect(await ethers.provider.getBalance(await tank.getAddress())).to.equal(0n);
  });

  it("depositFor(sender) emits Deposited(sender, from, amount) and keeps the ether; anyone may pay for anyone", async () => {
    const { stack, tank } = await setup();
    const [, , , payer] = await ethers.getSigners();
    const sender = stack.stranger.address;
    const tx = await tank.connect(payer!).depositFor(sender, { value: parseEther("0.3") });
    await expect(tx).to.emit(tank, "Deposited").withArgs(sender, await payer!.getAddress(), parseEther("0.3"));
    expect(await deposited(tank, tx.hash)).to.deep.equal([{ sender, from: await payer!.getAddress(), amount: parseEther("0.3") }]);
    expect(await ethers.provider.getBalance(await tank.getAddress())).to.equal(parseEther("0.3"));
  });

  it("a plain transfer credits the caller's own tank", async () => {
    const { tank } = await setup();
    const [, , , payer] = await ethers.getSigners();
    const tx = await payer!.sendTransaction({ to: await tank.getAddress(), value: 12345n });
    await expect(tx).to.emit(tank, "Deposited").withArgs(await payer!.getAddress(), await payer!.getAddress(), 12345n);
  });

  it("refuses a zero amount (both ways), a zero sender, and calldata it does not know", async () => {
    const { tank } = await setup();
    const [, , , payer] = await ethers.getSigners();
    await expect(tank.depositFor(payer!, { value: 0n })).to.be.revertedWithCustomError(tank, "ZeroAmount");
    await expect(payer!.sendTransaction({ to: await tank.getAddress(), value: 0n })).to.be.revertedWithCustomError(tank, "ZeroAmount");
    await expect(tank.depositFor(ZeroAddress, { value: 1n })).to.be.revertedWithCustomError(tank, "ZeroSender");
    await expect(payer!.sendTransaction({ to: await tank.getAddress(), value: 1n, data: "0x12345678" })).to.be.revertedWithoutReason(ethers);
    expect(await ethers.provider.getBalance(await tank.getAddress())).to.equal(0n);
  });

  for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
    it(`a SimpleAccount ${version} funds its own tank from a sponsored user operation (an internal call)`, async () => {
      const { stack, tank } = await setup();
      const account = await readyAccount(stack, version, { approveErc20Paymaster: false });
      await networkHelpers.setBalance(account.address, parseEther("1"));
      const call = { to: await tank.getAddress(), value: parseEther("0.2"), data: tank.interface.encodeFunctionData("depositFor", [account.address]) };
      const op = await sponsor(stack, version, await draftOp({ sender: account.address, callData: accountCallData(version, [call]) }), {
        kind: "verifying",
        paymaster: stack.v[version].verifying,
        signer: stack.signer,
      });
      const tx = await handleOps(stack, version, [await signAsOwner(stack, version, op, account.owner)]);
      expect((await userOperationEvent(stack, version, tx)).success).to.equal(true);
      // The bundler's transaction goes to the EntryPoint: the deposit is visible only as the contract's event.
      expect((await ethers.provider.getTransaction(tx.hash))!.to).to.equal(await stack.v[version].entryPoint.getAddress());
      expect(await deposited(tank, tx.hash)).to.deep.equal([{ sender: account.address, from: account.address, amount: parseEther("0.2") }]);
      expect(await ethers.provider.getBalance(await tank.getAddress())).to.equal(parseEther("0.2"));
    });
  }

  it("an account run by its owner pays into another account's tank (internal call, sender != from)", async () => {
    const { stack, tank } = await setup();
    const account = await readyAccount(stack, "v0.7", { approveErc20Paymaster: false });
    await networkHelpers.setBalance(account.address, parseEther("1"));
    const beneficiary = stack.stranger.address;
    await ownerExecute("v0.7", account, [{ to: await tank.getAddress(), value: 777n, data: tank.interface.encodeFunctionData("depositFor", [beneficiary]) }]);
    const events = await tank.queryFilter(tank.filters.Deposited(beneficiary));
    expect(events.map((e) => [e.args.sender, e.args.from, e.args.amount])).to.deep.equal([[beneficiary, account.address, 777n]]);
  });

  it("only the owner withdraws, never to the zero address, and a failed transfer reverts (nothing is lost)", async () => {
    const { stack, tank } = await setup();
    const [, , , payer] = await ethers.getSigners();
    await (await tank.connect(payer!).depositFor(payer!, { value: parseEther("1") })).wait();
    await expect(tank.connect(stack.stranger).withdraw(stack.stranger.address, 1n)).to.be.revertedWithCustomError(tank, "OwnableUnauthorizedAccount");
    await expect(tank.withdraw(ZeroAddress, 1n)).to.be.revertedWithCustomError(tank, "ZeroRecipient");
    // A recipient without receive() refuses the ether; more than the balance cannot be sent either.
    const noReceive = await stack.tokens.USDC.getAddress();
    await expect(tank.withdraw(noReceive, 1n)).to.be.revertedWithCustomError(tank, "WithdrawFailed").withArgs(noReceive, 1n);
    await expect(tank.withdraw(stack.treasury, parseEther("2"))).to.be.revertedWithCustomError(tank, "WithdrawFailed");
    const before = await ethers.provider.getBalance(stack.treasury);
    await expect(tank.withdraw(stack.treasury, parseEther("0.4"))).to.emit(tank, "Withdrawn").withArgs(stack.treasury, parseEther("0.4"));
    expect((await ethers.provider.getBalance(stack.treasury)) - before).to.equal(parseEther("0.4"));
    expect(await ethers.provider.getBalance(await tank.getAddress())).to.equal(parseEther("0.6"));
  });

  for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
    it(`refuses an EntryPoint ${version} as a withdraw recipient (audit 2, N-3): the ether would become the tank's own, unwithdrawable deposit`, async () => {
      const { stack, tank } = await setup();
      const [, , , payer] = await ethers.getSigners();
      await (await tank.connect(payer!).depositFor(payer!, { value: parseEther("1") })).wait();
      const entryPoint = stack.v[version].entryPoint;
      const address = await entryPoint.getAddress();
      await expect(tank.withdraw(address, parseEther("1"))).to.be.revertedWithCustomError(tank, "RecipientIsEntryPoint").withArgs(address);
      expect(await entryPoint.getFunction("balanceOf")(await tank.getAddress())).to.equal(0n);
      expect(await ethers.provider.getBalance(await tank.getAddress())).to.equal(parseEther("1"));
    });

    it(`depositToPaymaster(EntryPoint ${version}, paymaster, amount) tops up the paymaster's deposit; owner only`, async () => {
      const { stack, tank } = await setup();
      const [, , , payer] = await ethers.getSigners();
      await (await tank.connect(payer!).depositFor(payer!, { value: parseEther("1") })).wait();
      const entryPoint = stack.v[version].entryPoint;
      const paymaster = await stack.v[version].verifying.getAddress();
      const before: bigint = await entryPoint.getFunction("balanceOf")(paymaster);
      await expect(tank.connect(stack.stranger).depositToPaymaster(await entryPoint.getAddress(), paymaster, 1n)).to.be.revertedWithCustomError(
        tank,
        "OwnableUnauthorizedAccount",
      );
      await expect(tank.depositToPaymaster(await entryPoint.getAddress(), ZeroAddress, 1n)).to.be.revertedWithCustomError(tank, "ZeroPaymaster");
      await expect(tank.depositToPaymaster(await entryPoint.getAddress(), paymaster, parseEther("0.7")))
        .to.emit(tank, "PaymasterFunded")
        .withArgs(await entryPoint.getAddress(), paymaster, parseEther("0.7"));
      expect((await entryPoint.getFunction("balanceOf")(paymaster)) - before).to.equal(parseEther("0.7"));
      expect(await entryPoint.getFunction("balanceOf")(await tank.getAddress())).to.equal(0n);
      expect(await ethers.provider.getBalance(await tank.getAddress())).to.equal(parseEther("0.3"));
    });
  }

  it("depositToPaymaster refuses a paymaster of another EntryPoint, the tank itself and a non-paymaster, with nothing moved (audit 3, finding 1)", async () => {
    const { stack, tank } = await setup();
    const [, , , payer] = await ethers.getSigners();
    await (await tank.connect(payer!).depositFor(payer!, { value: parseEther("1") })).wait();
    const tankAddress = await tank.getAddress();
    const v06 = await stack.v["v0.6"].entryPoint.getAddress();
    const v07Paymaster = await stack.v["v0.7"].erc20.getAddress();
    const v07 = await stack.v["v0.7"].entryPoint.getAddress();
    /** What every EntryPoint holds for the v0.7 paymaster and for the tank. */
    const deposits = async () =>
      Promise.all((["v0.6", "v0.7", "v0.8"] as const).flatMap((v) => [v07Paymaster, tankAddress].map((a) => stack.v[v].entryPoint.getFunction("balanceOf")(a) as Promise<bigint>)));
    const before = await deposits();
    // The audit's proof: ether for the v0.7 paymaster sent at the v0.6 EntryPoint was credited there for good.
    await expect(tank.depositToPaymaster(v06, v07Paymaster, parseEther("1")))
      .to.be.revertedWithCustomError(tank, "PaymasterNotOfEntryPoint")
      .withArgs(v06, v07Paymaster, v07);
    // The tank's own address: its own EntryPoint deposit, which it can never withdraw.
    await expect(tank.depositToPaymaster(v07, tankAddress, parseEther("1"))).to.be.revertedWithCustomError(tank, "PaymasterIsTank");
    // Not a paymaster: an EOA (the call answers nothing) and a contract without entryPoint() (the token).
    await expect(tank.depositToPaymaster(v07, stack.stranger.address, 1n))
      .to.be.revertedWithCustomError(tank, "PaymasterNotOfEntryPoint")
      .withArgs(v07, stack.stranger.address, ZeroAddress);
    const token = await stack.tokens.USDC.getAddress();
    await expect(tank.depositToPaymaster(v07, token, 1n)).to.be.revertedWithCustomError(tank, "PaymasterNotOfEntryPoint").withArgs(v07, token, ZeroAddress);
    expect(await deposits()).to.deep.equal(before);
    expect(await ethers.provider.getBalance(tankAddress)).to.equal(parseEther("1"));
  });

  it("ownership is two-step and cannot be renounced", async () => {
    const { stack, tank } = await setup();
    await expect(tank.renounceOwnership()).to.be.revertedWithCustomError(tank, "RenounceOwnershipDisabled");
    await (await tank.transferOwnership(stack.stranger.address)).wait();
    expect(await tank.owner()).to.equal(await stack.owner.getAddress());
    expect(await tank.pendingOwner()).to.equal(stack.stranger.address);
    await networkHelpers.setBalance(stack.stranger.address, parseEther("1"));
    await (await tank.connect(stack.stranger).acceptOwnership()).wait();
    expect(await tank.owner()).to.equal(stack.stranger.address);
    await expect(tank.withdraw(stack.treasury, 0n)).to.be.revertedWithCustomError(tank, "OwnableUnauthorizedAccount");
  });
});
