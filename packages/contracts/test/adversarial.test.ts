// The adversarial cases security.md requires of the contracts, for every EntryPoint version and both
// paymaster kinds: replay, field tampering, signature shapes, signer rotation, validity window,
// malformed data, foreign callers, deposit exhaustion.
import { expect } from "chai";
import { Contract, Signature, concat, dataLength, toBeHex } from "ethers";
import { encodeErc20PaymasterData, encodeVerifyingPaymasterData, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { ethers, networkHelpers, type Stack, loadStack, VerifyingPaymasterV06__factory, VerifyingPaymasterV07__factory } from "./helpers/stack.ts";
import {
  VERSIONS,
  accountCallData,
  draftOp,
  handleOps,
  nonceWithKey,
  onChainPaymasterHash,
  signAsOwner,
  sponsor,
  userOperationEvent,
  validWindow,
  type PaymasterKind,
  type TestOp,
  signedTokenFields,
  type TokenFields,
  type Window,
} from "./helpers/userOps.ts";
import { deployAccount, readyAccount, type ReadyAccount } from "./helpers/accounts.ts";
import { expectFailedOp, expectPaymasterReverted, parseValidationData, validateAsEntryPoint } from "./helpers/expectations.ts";

const KINDS: PaymasterKind[] = ["verifying", "erc20"];
const USDC_RATE = 3_000n * 10n ** 6n; // 1 ETH = 3000 USDC, in USDC base units per 1e18 wei

interface Case {
  stack: Stack;
  account: ReadyAccount;
  paymaster: Contract;
  tokenFields?: TokenFields;
  /** A second allowlisted token, for the token-flip case. */
  otherToken: string;
}

async function setup(version: EntryPointVersion, kind: PaymasterKind): Promise<Case> {
  const stack = await loadStack();
  const account = await readyAccount(stack, version);
  const paymaster = stack.v[version][kind];
  const tokenFields =
    kind === "erc20"
      ? { token: await stack.tokens.USDC.getAddress(), exchangeRate: USDC_RATE, chargeMode: 0 as const, maxTokenCharge: 10n ** 12n }
      : undefined;
  return { stack, account, paymaster, tokenFields, otherToken: await stack.tokens.DAI.getAddress() };
}

async function baseOp(version: EntryPointVersion, c: Case, extra: Partial<TestOp> = {}): Promise<TestOp> {
  return draftOp({
    sender: c.account.address,
    callData: accountCallData(version, [{ to: c.account.owner.address, data: "0x" }]),
    ...extra,
  });
}

async function sponsored(version: EntryPointVersion, kind: PaymasterKind, c: Case, opts: { window?: Window; op?: Partial<TestOp> } = {}) {
  const op = await baseOp(version, c, opts.op);
  return sponsor(c.stack, version, op, {
    kind,
    paymaster: c.paymaster,
    signer: c.stack.signer,
    tokenFields: c.tokenFields,
    window: opts.window,
  });
}

/** The 65-byte signature at the end of paymasterData. */
function signatureOf(op: TestOp): Hex {
  return `0x${op.paymasterData.slice(-130)}` as Hex;
}

/** Re-encodes paymasterData with other signed fields but the same signature. */
function withPaymasterFields(kind: PaymasterKind, op: TestOp, window: Window, tokenFields?: TokenFields): TestOp {
  const signature = signatureOf(op);
  const paymasterData =
    kind === "verifying"
      ? encodeVerifyingPaymasterData(window, signature)
      : encodeErc20PaymasterData({ ...window, ...signedTokenFields(tokenFields!) }, signature);
  return { ...op, paymasterData };
}

for (const version of VERSIONS) {
  for (const kind of KINDS) {
    describe(`${kind} paymaster ${version}: adversarial`, () => {
      it("control: the untampered op is paid", async () => {
        const c = await setup(version, kind);
        const op = await signAsOwner(c.stack, version, await sponsored(version, kind, c), c.account.owner);
        const event = await userOperationEvent(c.stack, version, await handleOps(c.stack, version, [op]));
        expect(event.success).to.equal(true);
        expect(event.paymaster).to.equal(await c.paymaster.getAddress());
      });

      it("a signature for another chain id is refused (AA34)", async () => {
        const c = await setup(version, kind);
        const op = await sponsor(c.stack, version, await baseOp(version, c), {
          kind,
          paymaster: c.paymaster,
          signer: c.stack.signer,
          tokenFields: c.tokenFields,
          chainId: c.stack.chainId + 1n,
        });
        await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, op, c.account.owner), "AA34 signature error");
      });

      it("a signature for another paymaster with the same signer is refused (AA34)", async () => {
        const c = await setup(version, kind);
        const factory = version === "v0.6" ? VerifyingPaymasterV06__factory : VerifyingPaymasterV07__factory;
        const entryPointAddress = await c.stack.v[version].entryPoint.getAddress();
        const other = await new factory(c.stack.owner).deploy(entryPointAddress, await c.stack.owner.getAddress(), [c.stack.signer.address]);
        await (await other.deposit({ value: 10n ** 18n })).wait();
        // Signed for `other`, submitted to ours.
        const op = await sponsor(c.stack, version, await baseOp(version, c), {
          kind,
          paymaster: c.paymaster,
          signer: c.stack.signer,
          tokenFields: c.tokenFields,
          hashPaymaster: await other.getAddress(),
        });
        await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, op, c.account.owner), "AA34 signature error");
      });

      if (version !== "v0.6") {
        // v0.7 and v0.8 share the packed layout and (for a non-7702 op) the fields hash: only the paymaster
        // address separates their signatures, and that is enough.
        const otherVersion: EntryPointVersion = version === "v0.7" ? "v0.8" : "v0.7";
        it(`cross-version replay: a sponsorship signed for the ${otherVersion} ${kind} paymaster never validates here (AA34)`, async () => {
          const c = await setup(version, kind);
          const otherPaymaster = c.stack.v[otherVersion][kind];
          // Exactly what a signer serving the other version produces for this op (its own hash rule and paymaster)...
          const signedThere = await sponsor(c.stack, otherVersion, await baseOp(version, c), {
            kind,
            paymaster: otherPaymaster,
            signer: c.stack.signer,
            tokenFields: c.tokenFields,
          });
          // ...submitted to this version's paymaster.
          const op = { ...signedThere, paymaster: await c.paymaster.getAddress() };
          await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, op, c.account.owner), "AA34 signature error");
        });
      }

      describe("each signed field flipped after signing is refused (AA34)", () => {
        const opFlips: [string, (op: TestOp, c: Case) => Promise<TestOp> | TestOp][] = [
          ["callData", (op, c) => ({ ...op, callData: accountCallData(version, [{ to: c.stack.beneficiary, data: "0x" }]) })],
          ["callGasLimit", (op) => ({ ...op, callGasLimit: op.callGasLimit + 1n })],
          ["verificationGasLimit", (op) => ({ ...op, verificationGasLimit: op.verificationGasLimit + 1n })],
          ["preVerificationGas", (op) => ({ ...op, preVerificationGas: op.preVerificationGas + 1n })],
          ["maxFeePerGas", (op) => ({ ...op, maxFeePerGas: op.maxFeePerGas + 1n })],
          ["maxPriorityFeePerGas", (op) => ({ ...op, maxPriorityFeePerGas: op.maxPriorityFeePerGas + 1n })],
          ["nonce (another 2-D key, valid for the account)", (op) => ({ ...op, nonce: nonceWithKey(7n) })],
          [
            "sender (another deployed account of the same owner)",
            async (op, c) => {
              const salt = 1n;
              const factory = c.stack.v[version].factory;
              await deployAccount(c.stack, version, c.account.owner.address, salt);
              const sender: string = await factory.getFunction("getAddress")(c.account.owner.address, salt);
              const usdc = c.stack.tokens.USDC;
              await (await usdc.mint(sender, 10n ** 9n)).wait();
              return { ...op, sender };
            },
          ],
        ];
        if (version !== "v0.6") {
          opFlips.push(
            ["paymasterVerificationGasLimit", (op) => ({ ...op, paymasterVerificationGasLimit: op.paymasterVerificationGasLimit + 1n })],
            ["paymasterPostOpGasLimit", (op) => ({ ...op, paymasterPostOpGasLimit: op.paymasterPostOpGasLimit + 1n })],
          );
        }
        for (const [field, flip] of opFlips) {
          it(field, async () => {
            const c = await setup(version, kind);
            const op = await flip(await sponsored(version, kind, c), c);
            await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, op, c.account.owner), "AA34 signature error");
          });
        }

        type DataFlip = (w: Window, t: TokenFields | undefined, c: Case) => [Window, TokenFields | undefined];
        const dataFlips: [string, DataFlip][] = [
          ["validUntil", (w, t) => [{ ...w, validUntil: w.validUntil + 1 }, t]],
          ["validAfter", (w, t) => [{ ...w, validAfter: w.validAfter - 1 }, t]],
        ];
        if (kind === "erc20") {
          dataFlips.push(
            ["token (another allowlisted token)", (w, t, c) => [w, { ...t!, token: c.otherToken }]],
            ["exchangeRate", (w, t) => [w, { ...t!, exchangeRate: t!.exchangeRate - 1n }]],
            ["chargeMode", (w, t) => [w, { ...t!, chargeMode: 1 }]],
            ["maxTokenCharge (audit 2, N-7)", (w, t) => [w, { ...t!, maxTokenCharge: t!.maxTokenCharge! + 1n }]],
          );
        }
        for (const [field, flip] of dataFlips) {
          it(field, async () => {
            const c = await setup(version, kind);
            const window = await validWindow();
            const op = await sponsored(version, kind, c, { window });
            const [window2, tokenFields2] = flip(window, c.tokenFields, c);
            const tampered = withPaymasterFields(kind, op, window2, tokenFields2);
            await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, tampered, c.account.owner), "AA34 signature error");
          });
        }

        it("initCode changes getHash (it cannot reach AA34: the EntryPoint checks it first)", async () => {
          const c = await setup(version, kind);
          const window = await validWindow();
          const op = await baseOp(version, c, { paymaster: await c.paymaster.getAddress() });
          const a = await onChainPaymasterHash(version, c.paymaster, op, window, c.tokenFields);
          const b = await onChainPaymasterHash(version, c.paymaster, { ...op, initCode: concat([c.stack.beneficiary, "0x01"]) }, window, c.tokenFields);
          expect(a).to.not.equal(b);
        });
      });

      it("a high-s form of a valid signature is refused (AA34), the low-s original is accepted", async () => {
        const c = await setup(version, kind);
        const op = await sponsored(version, kind, c);
        const sig = Signature.from(signatureOf(op));
        const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
        const highS = concat([sig.r, toBeHex(n - BigInt(sig.s), 32), sig.v === 27 ? "0x1c" : "0x1b"]);
        const malleable = { ...op, paymasterData: op.paymasterData.slice(0, -130) + highS.slice(2) };
        await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, malleable, c.account.owner), "AA34 signature error");
        const event = await userOperationEvent(c.stack, version, await handleOps(c.stack, version, [await signAsOwner(c.stack, version, op, c.account.owner)]));
        expect(event.success).to.equal(true);
      });

      it("a 64-byte (compact) signature is malformed data: validation reverts", async () => {
        const c = await setup(version, kind);
        const op = await sponsored(version, kind, c);
        const compact = Signature.from(signatureOf(op)).compactSerialized;
        const shortOp = { ...op, paymasterData: op.paymasterData.slice(0, -130) + compact.slice(2) };
        const expected = BigInt(dataLength(op.paymasterData)) + (version === "v0.6" ? 20n : 52n);
        await expect(validateAsEntryPoint(c.stack, version, c.paymaster, shortOp))
          .to.be.revertedWithCustomError(c.paymaster, "InvalidPaymasterDataLength")
          .withArgs(expected - 1n, expected);
        await expectPaymasterReverted(c.stack, version, await signAsOwner(c.stack, version, shortOp, c.account.owner));
      });

      it("an unknown signer is refused (AA34)", async () => {
        const c = await setup(version, kind);
        const op = await sponsor(c.stack, version, await baseOp(version, c), {
          kind,
          paymaster: c.paymaster,
          signer: c.stack.stranger,
          tokenFields: c.tokenFields,
        });
        await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, op, c.account.owner), "AA34 signature error");
      });

      it("rotation: both signers work while both are accepted; a removed signer is refused", async () => {
        const c = await setup(version, kind);
        await (await c.paymaster.getFunction("addSigner")(c.stack.secondSigner.address)).wait();
        const sign = async (signer: typeof c.stack.signer, nonce: bigint) =>
          signAsOwner(
            c.stack,
            version,
            await sponsor(c.stack, version, await baseOp(version, c, { nonce }), { kind, paymaster: c.paymaster, signer, tokenFields: c.tokenFields }),
            c.account.owner,
          );
        const oldSigned = await sign(c.stack.signer, 0n);
        const newSigned = await sign(c.stack.secondSigner, 1n);
        expect((await userOperationEvent(c.stack, version, await handleOps(c.stack, version, [oldSigned]))).success).to.equal(true);
        expect((await userOperationEvent(c.stack, version, await handleOps(c.stack, version, [newSigned]))).success).to.equal(true);

        const pending = await sign(c.stack.signer, 2n);
        await (await c.paymaster.getFunction("removeSigner")(c.stack.signer.address)).wait();
        await expectFailedOp(c.stack, version, pending, "AA34 signature error");
        const fresh = await sign(c.stack.secondSigner, 2n);
        expect((await userOperationEvent(c.stack, version, await handleOps(c.stack, version, [fresh]))).success).to.equal(true);
      });

      it("outside the validity window is refused (AA32): expired, not yet due, and 5 minutes after issue", async () => {
        const c = await setup(version, kind);
        const now = (await ethers.provider.getBlock("latest"))!.timestamp;
        const expired = await sponsored(version, kind, c, { window: { validUntil: now - 1, validAfter: now - 600 } });
        await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, expired, c.account.owner), "AA32 paymaster expired or not due");
        const notDue = await sponsored(version, kind, c, { window: { validUntil: now + 3600, validAfter: now + 600 } });
        await expectFailedOp(c.stack, version, await signAsOwner(c.stack, version, notDue, c.account.owner), "AA32 paymaster expired or not due");

        const fiveMinutes = await signAsOwner(c.stack, version, await sponsored(version, kind, c, { window: { validUntil: now + 300, validAfter: now - 60 } }), c.account.owner);
        await networkHelpers.time.increaseTo(now + 301);
        await expectFailedOp(c.stack, version, fiveMinutes, "AA32 paymaster expired or not due");
      });

      it("the window reaches the EntryPoint through validationData, with no failure bit for a good signature", async () => {
        const c = await setup(version, kind);
        const window = await validWindow();
        const op = await sponsored(version, kind, c, { window });
        const [, validationData] = await validateAsEntryPoint(c.stack, version, c.paymaster, op);
        expect(parseValidationData(validationData)).to.deep.equal({ sigFailed: false, ...window });
        const bad = await sponsor(c.stack, version, await baseOp(version, c), { kind, paymaster: c.paymaster, signer: c.stack.stranger, tokenFields: c.tokenFields, window });
        const [, badData] = await validateAsEntryPoint(c.stack, version, c.paymaster, bad);
        expect(parseValidationData(badData)).to.deep.equal({ sigFailed: true, ...window });
      });

      it("truncated, overlong and garbage paymaster data revert with InvalidPaymasterDataLength", async () => {
        const c = await setup(version, kind);
        const op = await sponsored(version, kind, c);
        const offset = version === "v0.6" ? 20 : 52;
        const full = offset + dataLength(op.paymasterData);
        for (const bytes of [0, 1, 12, dataLength(op.paymasterData) - 1, dataLength(op.paymasterData) + 1]) {
          const garbage = "0x" + "ab".repeat(bytes);
          const malformed = { ...op, paymasterData: garbage };
          await expect(validateAsEntryPoint(c.stack, version, c.paymaster, malformed))
            .to.be.revertedWithCustomError(c.paymaster, "InvalidPaymasterDataLength")
            .withArgs(BigInt(offset + bytes), BigInt(full));
        }
        await expectPaymasterReverted(c.stack, version, await signAsOwner(c.stack, version, { ...op, paymasterData: op.paymasterData + "00" }, c.account.owner));
      });

      it("only the EntryPoint may call validatePaymasterUserOp and postOp", async () => {
        const c = await setup(version, kind);
        const op = await sponsored(version, kind, c);
        const { toChainOp } = await import("./helpers/userOps.ts");
        const stranger = c.paymaster.connect(c.account.owner) as Contract;
        await expect(stranger.getFunction("validatePaymasterUserOp")(toChainOp(version, op), ethers.ZeroHash, 1n))
          .to.be.revertedWithCustomError(c.paymaster, "NotEntryPoint")
          .withArgs(c.account.owner.address);
        const postOpArgs = version === "v0.6" ? [0, "0x", 0n] : [0, "0x", 0n, 0n];
        await expect(stranger.getFunction("postOp")(...postOpArgs))
          .to.be.revertedWithCustomError(c.paymaster, "NotEntryPoint")
          .withArgs(c.account.owner.address);
      });

      it("a deposit that cannot cover the op's maximum cost is refused (AA31)", async () => {
        const c = await setup(version, kind);
        const deposit: bigint = await c.paymaster.getFunction("getDeposit")();
        await (await c.paymaster.getFunction("withdrawTo")(c.stack.beneficiary, deposit - 1000n)).wait();
        const op = await signAsOwner(c.stack, version, await sponsored(version, kind, c), c.account.owner);
        await expectFailedOp(c.stack, version, op, "AA31 paymaster deposit too low");
      });
    });
  }
}
