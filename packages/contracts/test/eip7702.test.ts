// EntryPoint v0.8 with EIP-7702 senders: an EOA delegated (by a real type-4 authorization) to v0.8's
// Simple7702Account, sponsored through the v0.8 paymasters. The paymaster hash binds the delegate the
// sender's code points to — never the raw 0x7702 marker — so a sponsorship signed for one delegate
// never validates for another, and the TypeScript mirror agrees with getHash and getUserOpHash.
import { expect } from "chai";
import { Wallet, type Contract } from "ethers";
import { EIP7702_MARKER, eip7702DelegationCode, getUserOpHashV08, packUserOpV07 } from "@paymaster/shared";
import { ethers, loadStack, networkHelpers, type Stack } from "./helpers/stack.ts";
import {
  VERSIONS,
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
import { expectFailedOp, parseValidationData, validateAsEntryPoint } from "./helpers/expectations.ts";
import { delegateTo, delegatedWallet, readyAccount } from "./helpers/accounts.ts";
import { loadShippedArtifact } from "../src/deploy/aaArtifacts.ts";

const VERSION = "v0.8" as const;
const KINDS: PaymasterKind[] = ["verifying", "erc20"];
const OTHER_DELEGATE = "0x7777777777777777777777777777777777777777";

/** A fresh EOA delegated to `to` (default: the stack's Simple7702Account) by a real type-4 authorization. */
async function delegatedEoa(stack: Stack, to?: string): Promise<{ eoa: Wallet; delegate: string }> {
  const delegate = to ?? stack.manifest.entryPoints[VERSION].simple7702Account!;
  return { eoa: await delegatedWallet(stack, delegate), delegate };
}

/** A second copy of v0.8's Simple7702Account (same code, another address): a delegate that works just as well. */
async function anotherSimple7702Account(stack: Stack): Promise<string> {
  const tx = await stack.owner.sendTransaction({ data: loadShippedArtifact("v08", "Simple7702Account").bytecode });
  return (await tx.wait())!.contractAddress!;
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

// Re-audit N-5: an already-delegated EOA may send ops with no initCode at all (no marker). The paymaster hash
// then binds the delegate its code points to — keccak(delegate), as the bare marker does on v0.8 — so re-delegating
// between signing and inclusion voids the sponsorship, on every EntryPoint version.
describe("EIP-7702 senders without the marker (empty initCode): the sponsorship binds the sender's delegate", () => {
  const A = "0xA11CE00000000000000000000000000000000A11";
  const B = "0xB0B0000000000000000000000000000000000B0B";

  for (const version of VERSIONS) {
    for (const kind of KINDS) {
      it(`${version} ${kind}: signed while delegated to A it validates; once the sender re-delegates to B it fails (sigFailed)`, async () => {
        const stack = await loadStack();
        const { eoa } = await delegatedEoa(stack, A);
        const paymaster = stack.v[version][kind] as Contract;
        const fields = await tokenFields(stack, kind);
        const draft = await draftOp({ sender: eoa.address, callData: accountCallData(version, [{ to: eoa.address, data: "0x" }]) });
        const op = await sponsor(stack, version, draft, { kind, paymaster, signer: stack.signer, tokenFields: fields, eip7702Delegate: A });
        const window = await validWindow();
        const onChain = await onChainPaymasterHash(version, paymaster, { ...draft, paymaster: await paymaster.getAddress() }, window, fields);
        expect(onChain, "getHash binds the delegate").to.equal(offChainPaymasterHash(version, kind, { ...draft, paymaster: await paymaster.getAddress() }, stack.chainId, await paymaster.getAddress(), window, fields, A));
        expect(onChain, "getHash differs from the undelegated hash").to.not.equal(offChainPaymasterHash(version, kind, { ...draft, paymaster: await paymaster.getAddress() }, stack.chainId, await paymaster.getAddress(), window, fields, undefined));
        expect(parseValidationData((await validateAsEntryPoint(stack, version, paymaster, op))[1]).sigFailed, "still delegated to A").to.equal(false);
        await delegateTo(stack, eoa, B);
        expect(parseValidationData((await validateAsEntryPoint(stack, version, paymaster, op))[1]).sigFailed, "re-delegated to B").to.equal(true);
        // A sponsorship that never named a delegate fails too: the sender is delegated.
        const unbound = await sponsor(stack, version, draft, { kind, paymaster, signer: stack.signer, tokenFields: fields });
        expect(parseValidationData((await validateAsEntryPoint(stack, version, paymaster, unbound))[1]).sigFailed, "unbound").to.equal(true);
      });

      it(`${version} ${kind}: a sender that is not delegated, with empty initCode, validates as before`, async () => {
        const stack = await loadStack();
        const account = await readyAccount(stack, version);
        const paymaster = stack.v[version][kind] as Contract;
        const fields = await tokenFields(stack, kind);
        const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]) });
        const op = await sponsor(stack, version, draft, { kind, paymaster, signer: stack.signer, tokenFields: fields });
        expect(parseValidationData((await validateAsEntryPoint(stack, version, paymaster, op))[1]).sigFailed).to.equal(false);
      });
    }
  }

  it("v0.8 end to end: the op lands while the EOA stays delegated; after it re-delegates (to a working copy of the account) handleOps refuses it with AA34", async () => {
    const stack = await loadStack();
    const { eoa, delegate } = await delegatedEoa(stack);
    const paymaster = stack.v[VERSION].verifying;
    const draft = await draftOp({ sender: eoa.address, callData: accountCallData(VERSION, [{ to: eoa.address, data: "0x" }]) });
    const op = await signAsOwner(stack, VERSION, await sponsor(stack, VERSION, draft, { kind: "verifying", paymaster, signer: stack.signer, eip7702Delegate: delegate }), eoa);
    const copy = await anotherSimple7702Account(stack);

    const snapshot = await networkHelpers.takeSnapshot();
    const event = await userOperationEvent(stack, VERSION, await handleOps(stack, VERSION, [op]));
    expect(event.success).to.equal(true);
    expect(event.paymaster).to.equal(await paymaster.getAddress());
    await snapshot.restore();

    await delegateTo(stack, eoa, copy);
    await expectFailedOp(stack, VERSION, op, "AA34 signature error");
    // The same op sponsored for the new delegate lands: the account itself accepts it either way.
    const renewed = await signAsOwner(stack, VERSION, await sponsor(stack, VERSION, draft, { kind: "verifying", paymaster, signer: stack.signer, eip7702Delegate: copy }), eoa);
    expect((await userOperationEvent(stack, VERSION, await handleOps(stack, VERSION, [renewed]))).success).to.equal(true);
  });
});
