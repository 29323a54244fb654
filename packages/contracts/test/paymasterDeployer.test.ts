// Audit 2, N-2: PaymasterDeployer offers ownership of what it deploys in the same transaction as the deposit and
// stake. If the offered owner can never accept (a typo, a multisig that does not exist on this chain), the key
// that deployed it may offer it again while the offer is open; nobody else can, and nobody at all once an owner
// accepted — and only for PaymasterDeployer.REOFFER_WINDOW after the deployment (audit 3, finding 3): past it the
// deploying key can do nothing, where before it stayed as strong as the owner until somebody accepted.
import { expect } from "chai";
import { Contract, Wallet, parseEther, ZeroAddress } from "ethers";
import { PaymasterDeployer__factory, VerifyingPaymasterV07__factory } from "../types/ethers-contracts/index.ts";
import { ethers, loadStack, networkHelpers } from "./helpers/stack.ts";

describe("PaymasterDeployer: the deploying key re-offers ownership an owner never accepted (audit 2, N-2)", () => {
  async function deployedWithUnreachableOwner() {
    const stack = await loadStack();
    const [, , , deployingKey] = await ethers.getSigners();
    const deployer = await new PaymasterDeployer__factory(deployingKey!).deploy();
    const entryPoint = stack.v["v0.7"].entryPoint;
    const initCode = (await new VerifyingPaymasterV07__factory().getDeployTransaction(await entryPoint.getAddress(), await deployer.getAddress(), [])).data;
    const salt = ethers.id("n-2");
    const paymasterInterface = VerifyingPaymasterV07__factory.createInterface();
    const setup = [
      { data: paymasterInterface.encodeFunctionData("deposit"), value: parseEther("1") },
      { data: paymasterInterface.encodeFunctionData("addStake", [86_400]), value: parseEther("1") },
    ];
    // A typo: nobody holds this address's key.
    const unreachable = "0x000000000000000000000000000000000000dEaD";
    const address = await deployer.addressOf(await deployingKey!.getAddress(), salt, ethers.keccak256(initCode));
    await (await deployer.deploy(salt, initCode, setup, unreachable, { value: parseEther("2") })).wait();
    const paymaster = new Contract(address, paymasterInterface, ethers.provider);
    expect(await paymaster.getFunction("pendingOwner")()).to.equal(unreachable);
    const deployment = await deployer.deployments(address);
    expect(deployment.deployer).to.equal(await deployingKey!.getAddress());
    const deployedAt = (await ethers.provider.getBlock("latest"))!.timestamp;
    expect(deployment.reofferUntil).to.equal(BigInt(deployedAt) + (await deployer.REOFFER_WINDOW()));
    return { stack, deployer, deployingKey: deployingKey!, paymaster, address, entryPoint };
  }

  it("re-offers to a reachable owner, who accepts and recovers the deposit", async () => {
    const { deployer, deployingKey, paymaster, address, entryPoint } = await deployedWithUnreachableOwner();
    const rightOwner = new Wallet(Wallet.createRandom().privateKey, ethers.provider);
    await networkHelpers.setBalance(rightOwner.address, parseEther("1"));
    await expect(deployer.reofferOwnership(address, rightOwner.address))
      .to.emit(deployer, "OwnershipReoffered")
      .withArgs(address, await deployingKey.getAddress(), rightOwner.address);
    expect(await paymaster.getFunction("pendingOwner")()).to.equal(rightOwner.address);
    const asOwner = paymaster.connect(rightOwner) as Contract;
    await (await asOwner.getFunction("acceptOwnership")()).wait();
    expect(await paymaster.getFunction("owner")()).to.equal(rightOwner.address);
    const before = await ethers.provider.getBalance(rightOwner.address);
    const tx = await asOwner.getFunction("withdrawTo")(rightOwner.address, parseEther("1"));
    const receipt = await tx.wait();
    expect((await ethers.provider.getBalance(rightOwner.address)) - before + receipt!.fee).to.equal(parseEther("1"));
    expect(await entryPoint.getFunction("balanceOf")(address)).to.equal(0n);
  });

  it("nobody else may re-offer, nor a zero owner, nor anyone once an owner accepted", async () => {
    const { stack, deployer, paymaster, address } = await deployedWithUnreachableOwner();
    await networkHelpers.setBalance(stack.stranger.address, parseEther("1"));
    await expect(deployer.connect(stack.stranger).reofferOwnership(address, stack.stranger.address))
      .to.be.revertedWithCustomError(deployer, "NotDeployer")
      .withArgs(address, stack.stranger.address);
    await expect(deployer.reofferOwnership(address, ZeroAddress)).to.be.revertedWithCustomError(deployer, "ZeroOwner");
    // An address this contract never deployed.
    await expect(deployer.reofferOwnership(stack.treasury, stack.stranger.address)).to.be.revertedWithCustomError(deployer, "NotDeployer");
    // Offered to the stranger, who accepts: the deployer is no longer the owner and the paymaster refuses it.
    await (await deployer.reofferOwnership(address, stack.stranger.address)).wait();
    await (await (paymaster.connect(stack.stranger) as Contract).getFunction("acceptOwnership")()).wait();
    await expect(deployer.reofferOwnership(address, stack.treasury)).to.be.revertedWithCustomError(paymaster, "OwnableUnauthorizedAccount");
    expect(await paymaster.getFunction("owner")()).to.equal(stack.stranger.address);
  });

  it("the window closes REOFFER_WINDOW (7 days) after the deployment: the deploying key can no longer offer the paymaster to itself and take the deposit", async () => {
    const { deployer, deployingKey, paymaster, address, entryPoint } = await deployedWithUnreachableOwner();
    expect(await deployer.REOFFER_WINDOW()).to.equal(7n * 86_400n);
    const { reofferUntil } = await deployer.deployments(address);
    // The last second of the window still works (re-offered to the unreachable owner again: nothing changes).
    await networkHelpers.time.setNextBlockTimestamp(reofferUntil);
    await (await deployer.reofferOwnership(address, "0x000000000000000000000000000000000000dEaD")).wait();
    // The audit's proof, one second later: the deploying key offers the paymaster to itself to accept it and
    // withdraw the deposit. Refused; the offer and the deposit stay where they were.
    await networkHelpers.time.setNextBlockTimestamp(reofferUntil + 1n);
    const key = await deployingKey.getAddress();
    await expect(deployer.reofferOwnership(address, key)).to.be.revertedWithCustomError(deployer, "ReofferWindowClosed").withArgs(address, reofferUntil);
    expect(await paymaster.getFunction("pendingOwner")()).to.equal("0x000000000000000000000000000000000000dEaD");
    await expect((paymaster.connect(deployingKey) as Contract).getFunction("acceptOwnership")()).to.be.revertedWithCustomError(paymaster, "OwnableUnauthorizedAccount");
    expect(await entryPoint.getFunction("balanceOf")(address)).to.equal(parseEther("1"));
  });
});
