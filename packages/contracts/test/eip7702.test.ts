// EntryPoint v0.8 with EIP-7702 senders: an EOA delegated (by a real type-4 authorization) to v0.8's
// Simple7702Account, sponsored through the v0.8 paymasters. The paymaster hash binds the delegate the
// sender's code points to — never the raw 0x7702 marker — so a sponsorship signed for one delegate
// never validates for another, and the TypeScript mirror agrees with getHash and getUserOpHash.
import { expect } from "chai";
import { Wallet, type Contract } from "ethers";
import { EIP7702_MARKER, eip7702DelegationCode, getUserOpHashV08, packUserOpV07 } from "@paymaster/shared";
import { ethers, loadStack, networkHelpers, type Stack } from "./helpers/stack.ts";
import {
  accountCallData,
  draftOp,
  handleOps,
  offChainPaymasterHash,
  onChainPaymasterHash,
  signAsOwner,
  sponsor,
  toUserOpV07,
  userOperationEvent,
  validWindow,
  type PaymasterKind,
  type TestOp,
} from "./helpers/userOps.ts";
import { parseValidationData, validateAsEntryPoint } from "./helpers/expectations.ts";

const VERSION = "v0.8" as const;
const KINDS: PaymasterKind[] = ["verifying", "erc20"];
const OTHER_DELEGATE = "0x7777777777777777777777777777777777777777";

/** A fresh EOA delegated to the stack's Simple7702Account by a signed authorization in a type-4 transaction. */
async function delegatedEoa(stack: Stack): Promise<{ eoa: Wallet; delegate: string }> {
  const eoa = new Wallet(Wallet.createRandom().privateKey, ethers.provider);
  await networkHelpers.setBalance(eoa.address, 10n ** 18n);
  const delegate = stack.manifest.entryPoints[VERSION].simple7702Account!;
  const authorization = await eoa.authorize({ address: delegate, chainId: stack.chainId });
  const [funder] = await ethers.getSigners();
  await (await funder!.sendTransaction({ type: 4, to: eoa.address, authorizationList: [authorization] })).wait();
  expect((await ethers.provider.getCode(eoa.address)).toLowerCase()).to.equal(eip7702DelegationCode(delegate as `0x${string}`));
  return { eoa, delegate };
}

async function tokenFields(stack: Stack, kind: PaymasterKind) {
  return kind === "erc20" ? { token: await stack.tokens.USDC.getAddress(), exchangeRate: 3_000n * 10n ** 6n, chargeMode: 0 as const } : undefined;
}

async function markerOp(eoa: Wallet): Promise<TestOp> {
  return draftOp({
    sender: eoa.address,
    initCode: EIP7702_MARKER,
    callData: accountCallData(VERSION, [{ to: eoa.address, data: "0x" }]),
  });
}

describe("EIP-7702 senders on EntryPoint v0.8", () => {
  it("a delegated EOA with the 0x7702 marker is sponsored end to end; the TS userOpHash equals the EntryPoint's", async () => {
    const stack = await loadStack();
    const { eoa, delegate } = await delegatedEoa(stack);
    const paymaster = stack.v[VERSION].verifying;
    let op = await sponsor(stack, VERSION, await markerOp(eoa), { kind: "verifying", paymaster, signer: stack.signer, eip7702Delegate: delegate });
    const onChainHash: string = await stack.v[VERSION].entryPoint.getFunction("getUserOpHash")(packUserOpV07(toUserOpV07(op)));
    expect(getUserOpHashV08(toUserOpV07(op), stack.manifest.entryPoints[VERSION].entryPoint, stack.chainId, delegate as `0x${string}`)).to.equal(onChainHash);
    op = await signAsOwner(stack, VERSION, op, eoa); // Simple7702Account: the EOA's own key signs the EIP-712 hash
    const tx = await handleOps(stack, VERSION, [op]);
    const event = await userOperationEvent(stack, VERSION, tx);
    expect(event.success).to.equal(true);
    expect(event.sender).to.equal(eoa.address);
    expect(event.paymaster).to.equal(await paymaster.getAddress());
  });

  for (const kind of KINDS) {
    it(`${kind}: the TS paymaster hash equals getHash for a 7702 op, and differs from the raw-marker hash`, async () => {
      const stack = await loadStack();
      const { eoa, delegate } = await delegatedEoa(stack);
      const paymaster = stack.v[VERSION][kind] as Contract;
      const op = { ...(await markerOp(eoa)), paymaster: await paymaster.getAddress() };
      const window = await validWindow();
      const fields = await tokenFields(stack, kind);
      const onChain = await onChainPaymasterHash(VERSION, paymaster, op, window, fields);
      expect(offChainPaymasterHash(VERSION, kind, op, stack.chainId, op.paymaster, window, fields, delegate)).to.equal(onChain);
      expect(offChainPaymasterHash("v0.7", kind, op, stack.chainId, op.paymaster, window, fields)).to.not.equal(onChain);
    });

    it(`${kind}: a sponsorship signed for another delegate fails, and so does one whose sender re-delegated (sigFailed)`, async () => {
      const stack = await loadStack();
      const { eoa, delegate } = await delegatedEoa(stack);
      const paymaster = stack.v[VERSION][kind] as Contract;
      const fields = await tokenFields(stack, kind);
      const base = await markerOp(eoa);
      const good = await sponsor(stack, VERSION, base, { kind, paymaster, signer: stack.signer, tokenFields: fields, eip7702Delegate: delegate });
      expect(parseValidationData((await validateAsEntryPoint(stack, VERSION, paymaster, good))[1]).sigFailed).to.equal(false);
      const forOther = await sponsor(stack, VERSION, base, { kind, paymaster, signer: stack.signer, tokenFields: fields, eip7702Delegate: OTHER_DELEGATE });
      expect(parseValidationData((await validateAsEntryPoint(stack, VERSION, paymaster, forOther))[1]).sigFailed).to.equal(true);
      // The same good signature once the EOA points at another delegate.
      await ethers.provider.send("hardhat_setCode", [eoa.address, eip7702DelegationCode(OTHER_DELEGATE)]);
      expect(parseValidationData((await validateAsEntryPoint(stack, VERSION, paymaster, good))[1]).sigFailed).to.equal(true);
    });

    it(`${kind}: a marker op whose sender is not delegated reverts in validation, as the EntryPoint's getUserOpHash does`, async () => {
      const stack = await loadStack();
      const eoa = new Wallet(Wallet.createRandom().privateKey, ethers.provider);
      const paymaster = stack.v[VERSION][kind] as Contract;
      const fields = await tokenFields(stack, kind);
      const op = { ...(await markerOp(eoa)), paymaster: await paymaster.getAddress(), paymasterData: "0x" };
      await expect(onChainPaymasterHash(VERSION, paymaster, op, await validWindow(), fields)).to.be.revertedWith("sender has no code");
    });
  }
});
