// SponsorProbe (contracts/simulation): the one eth_call the service makes for a sponsorship. Deployed here as a
// plain contract (the service runs its code through a state override instead; the code is the same) and called
// with eth_call, as the service does.
import { expect } from "chai";
import { AbiCoder, Interface, ZeroAddress } from "ethers";
import { eip7702DelegationCode } from "@paymaster/shared";
import { SponsorProbe__factory, type SponsorProbe } from "../types/ethers-contracts/index.ts";
import { ethers, loadStack, type Stack } from "./helpers/stack.ts";

const token = new Interface(["function approve(address,uint256)", "function allowance(address,address) view returns (uint256)", "function balanceOf(address) view returns (uint256)"]);

async function deployProbe(stack: Stack): Promise<SponsorProbe> {
  return (await new SponsorProbe__factory(stack.owner).deploy()).waitForDeployment() as Promise<SponsorProbe>;
}

describe("SponsorProbe", () => {
  it("reads a token holder's balance, allowance to a spender and the spender's balance; zeros without a token", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const usdc = stack.tokens.USDC;
    const [, holder, spender] = await ethers.getSigners();
    await (await usdc.mint(holder!.address, 1234n)).wait();
    await (await usdc.mint(spender!.address, 77n)).wait();
    await (await usdc.connect(holder!).approve(spender!.address, 500n)).wait();

    const h = await probe.holdings(await usdc.getAddress(), holder!.address, spender!.address);
    expect([h.balance, h.allowance, h.spenderBalance]).to.deep.equal([1234n, 500n, 77n]);
    const none = await probe.holdings(ZeroAddress, holder!.address, spender!.address);
    expect([none.balance, none.allowance, none.spenderBalance]).to.deep.equal([0n, 0n, 0n]);
  });

  it("reads before the calls inside a reverted frame (so what it read is cold again for them): readBefore always reverts with its reads", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const usdc = stack.tokens.USDC;
    const [, sender] = await ethers.getSigners();
    const paymaster = await stack.v["v0.7"].erc20.getAddress();
    await (await usdc.mint(sender!.address, 9n)).wait();
    await (await usdc.connect(sender!).approve(paymaster, 4n)).wait();
    const call = probe.readBefore.staticCall(paymaster, stack.signer.address, await usdc.getAddress(), sender!.address);
    await expect(call).to.be.revertedWithCustomError(probe, "ReadBefore").withArgs(true, [9n, 4n, await usdc.balanceOf(paymaster)], ZeroAddress);
  });

  it("reads the EIP-7702 delegate the sender's code names, as the paymasters hash it: none for an EOA, a contract, or 23 bytes without the prefix", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const paymaster = await stack.v["v0.8"].verifying.getAddress();
    const [, eoa, plain, odd] = await ethers.getSigners();
    const delegate = "0x00000000000000000000000000000000000d1e6a";
    await ethers.provider.send("hardhat_setCode", [eoa!.address, eip7702DelegationCode(delegate)]);
    await ethers.provider.send("hardhat_setCode", [odd!.address, `0xef0000${delegate.slice(2)}`]); // 23 bytes, another prefix
    const delegateOf = async (sender: string) => (await probe.probe.staticCall(paymaster, stack.signer.address, ZeroAddress, sender, 0n, [], [])).senderDelegate;
    expect((await delegateOf(eoa!.address)).toLowerCase()).to.equal(delegate);
    expect(await delegateOf(plain!.address)).to.equal(ZeroAddress);
    expect(await delegateOf(odd!.address)).to.equal(ZeroAddress);
    expect(await delegateOf(paymaster)).to.equal(ZeroAddress);
    // readBefore's revert carries it too (inside the reverted frame: the sender's account is cold again after it).
    const read = probe.readBefore.staticCall(paymaster, stack.signer.address, ZeroAddress, eoa!.address);
    await expect(read).to.be.revertedWithCustomError(probe, "ReadBefore").withArgs(true, [0n, 0n, 0n], ethers.getAddress(delegate));
  });

  it("tells whether the paymaster accepts the signer; a paymaster that does not answer accepts no one", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const paymaster = await stack.v["v0.7"].verifying.getAddress();
    const accepted = await probe.probe.staticCall(paymaster, stack.signer.address, ZeroAddress, ZeroAddress, 0n, [], []);
    expect(accepted.signerAccepted).to.equal(true);
    const stranger = await probe.probe.staticCall(paymaster, stack.stranger.address, ZeroAddress, ZeroAddress, 0n, [], []);
    expect(stranger.signerAccepted).to.equal(false);
    const usdc = await stack.tokens.USDC.getAddress(); // no isSigner: its call reverts
    expect((await probe.probe.staticCall(usdc, stack.signer.address, ZeroAddress, ZeroAddress, 0n, [], [])).signerAccepted).to.equal(false);
  });

  it("the sender's allowance to the paymaster selects the calls: at least preChargeFrom, the pre-charge list", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const usdc = stack.tokens.USDC;
    const [, sender] = await ethers.getSigners();
    const paymaster = await stack.v["v0.7"].erc20.getAddress();
    await (await usdc.connect(sender!).approve(paymaster, 10n)).wait();
    const read = { target: await usdc.getAddress(), data: token.encodeFunctionData("balanceOf", [sender!.address]), isolated: false };
    const fails = { target: await usdc.getAddress(), data: "0xdeadbeef", isolated: false };
    const run = (from: bigint) => probe.probe.staticCall(paymaster, stack.signer.address, usdc.getAddress(), sender!.address, from, [read], [fails, read]);

    const pre = await run(10n);
    expect(pre.preCharge).to.equal(true);
    expect(pre.before.allowance).to.equal(10n);
    expect(pre.results.map((r) => r.success)).to.deep.equal([true]);
    const other = await run(11n);
    expect(other.preCharge).to.equal(false);
    expect(other.results.map((r) => r.success)).to.deep.equal([false, true]);
    // Without a token the other list runs whatever the allowance.
    const noToken = await probe.probe.staticCall(paymaster, stack.signer.address, ZeroAddress, sender!.address, 0n, [read], [fails]);
    expect(noToken.preCharge).to.equal(false);
    expect(noToken.results.map((r) => r.success)).to.deep.equal([false]);
  });

  it("an isolated call's changes are gone for the next call, a plain call's stay; both report what they returned or reverted with", async () => {
    const stack = await loadStack();
    const probe = await deployProbe(stack);
    const usdc = await stack.tokens.USDC.getAddress();
    const spender = stack.signer.address;
    const approve = token.encodeFunctionData("approve", [spender, 42n]);
    const allowance = { target: usdc, data: token.encodeFunctionData("allowance", [await probe.getAddress(), spender]), isolated: false };
    const reverting = { target: usdc, data: token.encodeFunctionData("approve", [ZeroAddress, 1n]), isolated: true };
    const calls = [{ target: usdc, data: approve, isolated: true }, allowance, reverting, { target: usdc, data: approve, isolated: false }, allowance];

    const { results } = await probe.probe.staticCall(ZeroAddress, ZeroAddress, ZeroAddress, ZeroAddress, 0n, [], calls);
    const word = (data: string) => AbiCoder.defaultAbiCoder().decode(["uint256"], data)[0] as bigint;
    expect(results[0]!.success).to.equal(true);
    expect(word(results[0]!.data)).to.equal(1n); // approve returned true inside the isolated call
    expect(word(results[1]!.data)).to.equal(0n); // ...and left nothing behind
    expect(results[2]!.success).to.equal(false); // OpenZeppelin's ERC20InvalidSpender(address(0)), with its data
    expect(results[2]!.data.slice(0, 10)).to.equal(new Interface(["error ERC20InvalidSpender(address)"]).getError("ERC20InvalidSpender")!.selector);
    expect(results[3]!.success).to.equal(true);
    expect(word(results[4]!.data)).to.equal(42n);
  });
});
