// ERC20Paymaster end to end for both EntryPoint versions, both token decimals (6 and 18) and both charge
// flows, plus the cases where the op itself tries to escape payment.
import { expect } from "chai";
import { Contract, MaxUint256, type TransactionResponse } from "ethers";
import { maxGasCostV07, tokenCost, type EntryPointVersion } from "@paymaster/shared";
import { ethers, loadStack, networkHelpers, type Stack } from "./helpers/stack.ts";
import {
  VERSIONS,
  accountCallData,
  draftOp,
  handleOps,
  newAccount,
  randomOwner,
  signAsOwner,
  simulatedPreOpGas,
  sponsor,
  userOperationEvent,
  userOperationEvents,
  type TestOp,
  type TokenFields,
} from "./helpers/userOps.ts";
import { approveData, readyAccount, transferData, type ReadyAccount } from "./helpers/accounts.ts";
import { validateAsEntryPoint } from "./helpers/expectations.ts";
import { E2E_CALL_GAS_LIMIT, RATES, tokenChargedEvents, tokenFieldsFor, warmPaymaster, type Symbol } from "./helpers/charges.ts";

const DECIMALS: Record<Symbol, number> = { USDC: 6, DAI: 18 };

/** The (first) TokenCharged event of a handleOps transaction, if any. */
async function tokenCharged(paymaster: Contract, tx: TransactionResponse) {
  return (await tokenChargedEvents(paymaster, tx))[0];
}

/** Submits a sponsored, owner-signed op and returns what moved. */
async function run(stack: Stack, version: EntryPointVersion, op: TestOp, owner: ReadyAccount["owner"], symbol: Symbol) {
  const paymaster = stack.v[version].erc20;
  const token = stack.tokens[symbol];
  const pmAddress = await paymaster.getAddress();
  const feesBefore: bigint = await paymaster.getFunction("accruedFees")(await token.getAddress());
  const heldBefore = await token.balanceOf(pmAddress);
  const senderBefore = await token.balanceOf(op.sender);
  const depositBefore: bigint = await paymaster.getFunction("getDeposit")();
  const tx = await handleOps(stack, version, [await signAsOwner(stack, version, op, owner)]);
  const event = await userOperationEvent(stack, version, tx);
  return {
    event,
    charged: await tokenCharged(paymaster, tx),
    /** Fees the paymaster accrued (they stay in it until swept to the treasury). */
    feeGain: ((await paymaster.getFunction("accruedFees")(await token.getAddress())) as bigint) - feesBefore,
    /** Tokens the paymaster holds more than before. */
    paymasterGain: (await token.balanceOf(pmAddress)) - heldBefore,
    senderLoss: senderBefore - (await token.balanceOf(op.sender)),
    depositPaid: depositBefore - ((await paymaster.getFunction("getDeposit")()) as bigint),
  };
}

/**
 * The charge is honest: the paymaster is not underpaid for what the EntryPoint took from its deposit, and
 * the user is not overcharged by more than a small margin. v0.7 (not v0.8) cannot see the penalty the EntryPoint adds
 * for unused callGasLimit, so there the bound below is 10% of callGasLimit (the service keeps callGasLimit
 * close to its estimate).
 */
function expectHonestGasCost(version: EntryPointVersion, op: TestOp, gasCostWei: bigint, actualGasCost: bigint, gasPrice: bigint, preCharge = false) {
  // Pre-charge mode's postOp finds its token slots warm and uses ~10k gas less than postOpGas (constants.ts).
  const overcharge = (preCharge ? 12_000n : 5_000n) * gasPrice;
  // v0.8 adds the execution penalty before postOp, so there it is seen (and charged).
  const unseenPenalty = version === "v0.7" ? (op.callGasLimit * gasPrice) / 10n : 0n;
  if (process.env.GAS_REPORT) console.log(`      honest: ${version} ${preCharge ? "pre" : "postOp"} over by ${(gasCostWei + unseenPenalty - actualGasCost) / gasPrice} gas (penalty allowance ${unseenPenalty / gasPrice})`);
  expect(gasCostWei + unseenPenalty >= actualGasCost, `charged ${gasCostWei} for ${actualGasCost}`).to.equal(true);
  expect(gasCostWei <= actualGasCost + overcharge, `charged ${gasCostWei} for ${actualGasCost} (${(gasCostWei - actualGasCost) / gasPrice} gas over)`).to.equal(true);
}

for (const version of VERSIONS) {
  describe(`ERC20Paymaster ${version}: handleOps end to end`, () => {
    for (const symbol of ["USDC", "DAI"] as const) {
      it(`${symbol} (${DECIMALS[symbol]} decimals), postOp flow: the op deploys the account and approves the paymaster in its own calls`, async () => {
        const stack = await loadStack();
        await warmPaymaster(stack, version);
        const paymaster = stack.v[version].erc20;
        const token = stack.tokens[symbol];
        const owner = randomOwner();
        const account = await newAccount(stack, version, owner.address);
        await (await token.mint(account.address, 100n * 10n ** BigInt(DECIMALS[symbol]))).wait();
        const op = await sponsor(
          stack,
          version,
          await draftOp({
            sender: account.address,
            initCode: account.initCode,
            callData: accountCallData(version, [{ to: await token.getAddress(), data: approveData(stack, await paymaster.getAddress(), MaxUint256) }]),
            callGasLimit: E2E_CALL_GAS_LIMIT,
          }),
          { kind: "erc20", paymaster, signer: stack.signer, tokenFields: await tokenFieldsFor(stack, symbol, 0) },
        );
        const r = await run(stack, version, op, owner, symbol);

        expect(r.event.success).to.equal(true);
        expect(r.depositPaid).to.equal(r.event.actualGasCost);
        expect(r.charged, "TokenCharged emitted").to.not.equal(undefined);
        const expected = tokenCost(r.charged!.gasCostWei, RATES[symbol]);
        expect(r.charged!.tokenAmount).to.equal(expected);
        expect(r.feeGain).to.equal(expected);
        expect(r.paymasterGain).to.equal(expected);
        expect(r.senderLoss).to.equal(expected);
        expect(expected > 0n).to.equal(true);
        const gasPrice = r.event.actualGasCost / r.event.actualGasUsed;
        expectHonestGasCost(version, op, r.charged!.gasCostWei, r.event.actualGasCost, gasPrice);
      });

      it(`${symbol} (${DECIMALS[symbol]} decimals), pre-charge flow: the maximum is pulled in validation and the rest refunded`, async () => {
        const stack = await loadStack();
        await warmPaymaster(stack, version);
        const paymaster = stack.v[version].erc20;
        const account = await readyAccount(stack, version);
        const op = await sponsor(
          stack,
          version,
          await draftOp({
            sender: account.address,
            callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]),
            callGasLimit: E2E_CALL_GAS_LIMIT,
          }),
          { kind: "erc20", paymaster, signer: stack.signer, tokenFields: await tokenFieldsFor(stack, symbol, 1) },
        );
        const r = await run(stack, version, op, account.owner, symbol);

        expect(r.event.success).to.equal(true);
        expect(r.depositPaid).to.equal(r.event.actualGasCost);
        const expected = tokenCost(r.charged!.gasCostWei, RATES[symbol]);
        expect(r.charged!.tokenAmount).to.equal(expected);
        expect(r.feeGain).to.equal(expected);
        expect(r.senderLoss).to.equal(expected);
        // The pre-charge came in, the surplus went back: only the fee stays.
        expect(r.paymasterGain).to.equal(expected);
        const gasPrice = r.event.actualGasCost / r.event.actualGasUsed;
        expectHonestGasCost(version, op, r.charged!.gasCostWei, r.event.actualGasCost, gasPrice, true);
      });
    }
  });

  describe(`ERC20Paymaster ${version}: ops that try not to pay`, () => {
    /** An op whose own calls try to escape payment; `calls` sees the amount a pre-charge takes first. */
    async function escapeOp(
      stack: Stack,
      account: ReadyAccount,
      chargeMode: 0 | 1,
      calls: (preCharged: bigint) => Promise<{ to: string; data: string }[]>,
    ) {
      const draft = await draftOp({ sender: account.address, callData: "0x" });
      const postOpGas: bigint = await stack.v[version].erc20.getFunction("postOpGas")();
      const maxGas =
        version === "v0.6"
          ? draft.callGasLimit + 3n * draft.verificationGasLimit + draft.preVerificationGas + postOpGas
          : draft.callGasLimit + draft.verificationGasLimit + draft.preVerificationGas + draft.paymasterVerificationGasLimit + draft.paymasterPostOpGasLimit;
      const preCharged = chargeMode === 1 ? tokenCost(maxGas * draft.maxFeePerGas, RATES.USDC) : 0n;
      return sponsor(stack, version, { ...draft, callData: accountCallData(version, await calls(preCharged)) }, {
        kind: "erc20",
        paymaster: stack.v[version].erc20,
        signer: stack.signer,
        tokenFields: await tokenFieldsFor(stack, "USDC", chargeMode),
      });
    }
    const escapes = [
      ["revokes its allowance", (stack: Stack, pm: string) => approveData(stack, pm, 0n)],
      // Everything the account still holds once a pre-charge (if any) has been taken.
      ["drains its balance", (stack: Stack, _pm: string, preCharged: bigint) => transferData(stack, stack.beneficiary, 1_000n * 10n ** 6n - preCharged)],
    ] as const;

    for (const [what, callData] of escapes) {
      it(`pre-charge flow: an op that ${what} still pays in full`, async () => {
        const stack = await loadStack();
        const account = await readyAccount(stack, version);
        const pm = await stack.v[version].erc20.getAddress();
        const usdc = await stack.tokens.USDC.getAddress();
        const op = await escapeOp(stack, account, 1, async (preCharged) => [{ to: usdc, data: callData(stack, pm, preCharged) }]);
        const r = await run(stack, version, op, account.owner, "USDC");
        // The escape itself ran (the op succeeded) and the paymaster was paid all the same.
        expect(r.event.success).to.equal(true);
        expect(r.feeGain).to.equal(tokenCost(r.charged!.gasCostWei, RATES.USDC));
        expect(r.feeGain > 0n).to.equal(true);
      });

      it(`postOp flow: an op that ${what} ${version === "v0.6" ? "is reverted and still pays" : "is reverted; the loss is exactly that op's gas"}`, async () => {
        const stack = await loadStack();
        const account = await readyAccount(stack, version);
        const pm = await stack.v[version].erc20.getAddress();
        const usdc = await stack.tokens.USDC.getAddress();
        const op = await escapeOp(stack, account, 0, async (preCharged) => [{ to: usdc, data: callData(stack, pm, preCharged) }]);
        const r = await run(stack, version, op, account.owner, "USDC");
        // Either way the op's own calls are undone: the escape did not happen.
        expect(r.event.success).to.equal(false);
        expect(await stack.tokens.USDC.allowance(account.address, pm)).to.equal(MaxUint256);
        if (version === "v0.6") {
          // v0.6 calls postOp again after reverting the execution; the restored allowance pays.
          expect(r.charged, "charged in postOpReverted mode").to.not.equal(undefined);
          expect(r.feeGain).to.equal(tokenCost(r.charged!.gasCostWei, RATES.USDC));
          expect(r.feeGain > 0n).to.equal(true);
        } else {
          // v0.7 has no second postOp: the paymaster's deposit paid the op and no token moved. The loss is
          // bounded by the op's maximum cost; the service only signs postOp-flow ops after simulating the charge.
          expect(r.charged).to.equal(undefined);
          expect(r.feeGain).to.equal(0n);
          expect(r.depositPaid).to.equal(r.event.actualGasCost);
          const maxCost =
            (op.callGasLimit + op.verificationGasLimit + op.preVerificationGas + op.paymasterVerificationGasLimit + op.paymasterPostOpGasLimit) *
            op.maxFeePerGas;
          expect(r.depositPaid <= maxCost).to.equal(true);
        }
      });
    }
  });

  describe(`ERC20Paymaster ${version}: signed fields it refuses`, () => {
    async function opWith(stack: Stack, account: ReadyAccount, tokenFields: TokenFields, extra: Partial<TestOp> = {}) {
      return sponsor(stack, version, await draftOp({ sender: account.address, callData: "0x", ...extra }), {
        kind: "erc20",
        paymaster: stack.v[version].erc20,
        signer: stack.signer,
        tokenFields,
      });
    }

    it("an unknown charge mode", async () => {
      const stack = await loadStack();
      const account = await readyAccount(stack, version);
      const signed = await opWith(stack, account, await tokenFieldsFor(stack, "USDC", 0));
      // The encoder refuses mode 2, so patch the chargeMode byte (paymasterData[64]) by hand.
      const at = 2 + 64 * 2;
      const op = { ...signed, paymasterData: signed.paymasterData.slice(0, at) + "02" + signed.paymasterData.slice(at + 2) };
      await expect(validateAsEntryPoint(stack, version, stack.v[version].erc20, op))
        .to.be.revertedWithCustomError(stack.v[version].erc20, "UnknownChargeMode")
        .withArgs(2);
    });

    it("a token that is not allowlisted", async () => {
      const stack = await loadStack();
      const account = await readyAccount(stack, version);
      const op = await opWith(stack, account, { ...(await tokenFieldsFor(stack, "USDC", 0)), token: stack.beneficiary });
      await expect(validateAsEntryPoint(stack, version, stack.v[version].erc20, op))
        .to.be.revertedWithCustomError(stack.v[version].erc20, "UnsupportedToken")
        .withArgs(stack.beneficiary);
    });

    it("a zero exchange rate", async () => {
      const stack = await loadStack();
      const account = await readyAccount(stack, version);
      const op = await opWith(stack, account, { ...(await tokenFieldsFor(stack, "USDC", 0)), exchangeRate: 0n });
      await expect(validateAsEntryPoint(stack, version, stack.v[version].erc20, op)).to.be.revertedWithCustomError(
        stack.v[version].erc20,
        "ZeroExchangeRate",
      );
    });

    it("a pre-charge the sender cannot pay", async () => {
      const stack = await loadStack();
      const account = await readyAccount(stack, version, { approveErc20Paymaster: false });
      const fields = await tokenFieldsFor(stack, "USDC", 1);
      const op = await opWith(stack, account, fields);
      await expect(validateAsEntryPoint(stack, version, stack.v[version].erc20, op)).to.be.revertedWithCustomError(
        stack.v[version].erc20,
        "TokenChargeFailed",
      );
    });

    if (version !== "v0.6") {
      it("a paymasterPostOpGasLimit below the gas postOp needs", async () => {
        const stack = await loadStack();
        const account = await readyAccount(stack, version);
        const min: bigint = await stack.v[version].erc20.getFunction("minPostOpGasLimit")();
        const op = await opWith(stack, account, await tokenFieldsFor(stack, "USDC", 0), { paymasterPostOpGasLimit: min - 1n });
        await expect(validateAsEntryPoint(stack, version, stack.v[version].erc20, op))
          .to.be.revertedWithCustomError(stack.v[version].erc20, "PostOpGasLimitTooLow")
          .withArgs(min - 1n, min);
      });

      for (const chargeMode of [0, 1] as const) {
        const mode = chargeMode === 1 ? "pre-charge" : "charge in postOp";
        it(`${mode}, the audit's proof (audit 3, finding 5): a 5M callGasLimit, little used — the EntryPoint's 10% penalty is charged to the sender, the paymaster made whole within 10% of the op's validation gas`, async () => {
          const stack = await loadStack();
          await warmPaymaster(stack, version);
          const account = await readyAccount(stack, version);
          const callData = accountCallData(version, [{ to: account.owner.address, data: "0x" }]);
          const fields = await tokenFieldsFor(stack, "USDC", chargeMode);
          // The same op from the same state, once with a tight and once with an inflated callGasLimit.
          const snapshot = await networkHelpers.takeSnapshot();
          const tight = await run(stack, version, await opWith(stack, account, fields, { callData, callGasLimit: 60_000n }), account.owner, "USDC");
          await snapshot.restore();
          const inflatedOp = await signAsOwner(stack, version, await opWith(stack, account, fields, { callData, callGasLimit: 5_000_000n }), account.owner);
          const validationGas = (await simulatedPreOpGas(stack, version, inflatedOp)) - inflatedOp.preVerificationGas;
          const inflated = await run(stack, version, inflatedOp, account.owner, "USDC");

          expect(inflated.event.success).to.equal(true);
          expect(inflated.depositPaid).to.equal(inflated.event.actualGasCost);
          const price = inflated.event.actualGasCost / inflated.event.actualGasUsed;
          // The penalty the inflated limit cost the deposit: ~10% of the ~4.94M more gas it left unused.
          const extraGas = inflated.event.actualGasUsed - tight.event.actualGasUsed;
          expect(Number(extraGas)).to.be.within(Number((5_000_000n - 60_000n) / 10n), Number((5_000_000n - 60_000n) / 10n) + 6_000);
          const chargedGas = inflated.charged!.gasCostWei / price;
          const shortGas = inflated.event.actualGasUsed - chargedGas;
          console.log(
            `      ${version} ${mode}, callGasLimit 5M: the deposit paid ${inflated.event.actualGasUsed} gas (${extraGas} more than at 60k), the sender was charged ${chargedGas}: short ${shortGas} gas (${(Number(shortGas * 10_000n) / Number(inflated.event.actualGasUsed) / 100).toFixed(2)}%), validation used ${validationGas}`,
          );
          // Made whole, within 10% of what validation used (v0.7 cannot see preOpGas; v0.8 adds the penalty itself).
          expect(shortGas <= (version === "v0.7" ? validationGas / 10n : 0n), `short ${shortGas} gas`).to.equal(true);
          // And never charged more than the signed cap, nor much more than what the deposit paid.
          expect(inflated.charged!.tokenAmount <= tokenCost(maxGasCostV07(inflatedOp), RATES.USDC)).to.equal(true);
          expect(-shortGas <= (chargeMode === 1 ? 12_000n : 5_000n), `over by ${-shortGas} gas`).to.equal(true);
        });
      }
    }
  });
}

for (const version of VERSIONS) {
  describe(`ERC20Paymaster ${version}: the first fee in a token, on a fresh deployment (issue 25)`, () => {
    for (const chargeMode of [0, 1] as const) {
      const mode = chargeMode === 1 ? "pre-charge" : "charge in postOp";
      it(`${mode}: the one-time SSTOREs (0 -> non-zero) are charged, so the paymaster is paid at least what it paid`, async () => {
        const stack = await loadStack();
        const paymaster = stack.v[version].erc20;
        const usdc = await stack.tokens.USDC.getAddress();
        const account = await readyAccount(stack, version);
        expect(await stack.tokens.USDC.balanceOf(await paymaster.getAddress())).to.equal(0n);
        expect(await paymaster.getFunction("accruedFees")(usdc)).to.equal(0n);
        const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]), callGasLimit: E2E_CALL_GAS_LIMIT });
        const op = await sponsor(stack, version, draft, { kind: "erc20", paymaster, signer: stack.signer, tokenFields: await tokenFieldsFor(stack, "USDC", chargeMode) });
        const r = await run(stack, version, op, account.owner, "USDC");
        expect(r.event.success).to.equal(true);
        const price = r.event.actualGasCost / r.event.actualGasUsed;
        console.log(`      ${version} ${mode}: first fee charged ${r.charged!.gasCostWei / price} gas for ${r.event.actualGasUsed} paid (${(Number((r.charged!.gasCostWei * 10_000n) / r.event.actualGasCost) / 100).toFixed(2)}%)`);
        expectHonestGasCost(version, op, r.charged!.gasCostWei, r.event.actualGasCost, price, chargeMode === 1);
      });
    }

    it("charge in postOp: the first fee after the owner withdrew everything (accruedFees and the balance back to 0) is charged its SSTOREs too", async () => {
      const stack = await loadStack();
      await warmPaymaster(stack, version);
      const paymaster = stack.v[version].erc20;
      const usdc = await stack.tokens.USDC.getAddress();
      const all: bigint = await paymaster.getFunction("withdrawableTokens")(usdc);
      await (await paymaster.getFunction("withdrawTokens")(usdc, stack.treasury, all)).wait();
      expect([await paymaster.getFunction("accruedFees")(usdc), await stack.tokens.USDC.balanceOf(await paymaster.getAddress())]).to.deep.equal([0n, 0n]);
      const account = await readyAccount(stack, version);
      const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]), callGasLimit: E2E_CALL_GAS_LIMIT });
      const op = await sponsor(stack, version, draft, { kind: "erc20", paymaster, signer: stack.signer, tokenFields: await tokenFieldsFor(stack, "USDC", 0) });
      const r = await run(stack, version, op, account.owner, "USDC");
      const price = r.event.actualGasCost / r.event.actualGasUsed;
      expectHonestGasCost(version, op, r.charged!.gasCostWei, r.event.actualGasCost, price);
    });
  });
}

for (const version of VERSIONS) {
  describe(`ERC20Paymaster ${version}: a sweepFees earlier in the same bundle (audit 3, finding 4)`, () => {
    /**
     * One bundle: first an op (sponsored by the verifying paymaster) whose call is `firstCall`, then the victim's op
     * paying in USDC. Returns the victim's charged gas and what its op cost the paymaster's deposit.
     */
    async function bundle(stack: Stack, chargeMode: 0 | 1, firstCall: (paymaster: string, usdc: string) => { to: string; data: string }) {
      const paymaster = stack.v[version].erc20;
      const usdc = await stack.tokens.USDC.getAddress();
      const [other, victim] = [await readyAccount(stack, version), await readyAccount(stack, version)];
      const first = await sponsor(stack, version, await draftOp({ sender: other.address, callData: accountCallData(version, [firstCall(await paymaster.getAddress(), usdc)]) }), {
        kind: "verifying",
        paymaster: stack.v[version].verifying,
        signer: stack.signer,
      });
      const victimOp = await sponsor(
        stack,
        version,
        await draftOp({ sender: victim.address, callData: accountCallData(version, [{ to: victim.owner.address, data: "0x" }]), callGasLimit: E2E_CALL_GAS_LIMIT }),
        { kind: "erc20", paymaster, signer: stack.signer, tokenFields: await tokenFieldsFor(stack, "USDC", chargeMode) },
      );
      const tx: TransactionResponse = await handleOps(stack, version, [await signAsOwner(stack, version, first, other.owner), await signAsOwner(stack, version, victimOp, victim.owner)]);
      const events = await userOperationEvents(stack, version, tx);
      expect(events.map((e) => [e.sender, e.success])).to.deep.equal([[other.address, true], [victim.address, true]]);
      const paid = events[1]!;
      const price = paid.actualGasCost / paid.actualGasUsed;
      const charged = (await tokenCharged(paymaster, tx))!;
      return { chargedGas: charged.gasCostWei / price, paidGas: paid.actualGasUsed, accruedAfter: (await paymaster.getFunction("accruedFees")(usdc)) as bigint };
    }

    it("a token's first fee, a sweep, then another fee, all in one bundle: the sweep keeps a unit (R4-1), and the second fee is made whole", async () => {
      const stack = await loadStack();
      const paymaster = stack.v[version].erc20;
      const usdc = await stack.tokens.USDC.getAddress();
      expect(await paymaster.getFunction("accruedFees")(usdc), "a fresh paymaster").to.equal(0n);
      const [first, sweeper, second] = [await readyAccount(stack, version), await readyAccount(stack, version), await readyAccount(stack, version)];
      const feeOp = async (account: ReadyAccount) =>
        signAsOwner(
          stack,
          version,
          await sponsor(stack, version, await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]), callGasLimit: E2E_CALL_GAS_LIMIT }), {
            kind: "erc20",
            paymaster,
            signer: stack.signer,
            tokenFields: await tokenFieldsFor(stack, "USDC", 0),
          }),
          account.owner,
        );
      const sweep = await sponsor(
        stack,
        version,
        await draftOp({ sender: sweeper.address, callData: accountCallData(version, [{ to: await paymaster.getAddress(), data: paymaster.interface.encodeFunctionData("sweepFees", [usdc]) }]) }),
        { kind: "verifying", paymaster: stack.v[version].verifying, signer: stack.signer },
      );
      const ops = [await feeOp(first), await signAsOwner(stack, version, sweep, sweeper.owner), await feeOp(second)];
      const tx: TransactionResponse = await handleOps(stack, version, ops);
      const paid = (await userOperationEvents(stack, version, tx))[2]!;
      const charged = await tokenChargedEvents(paymaster, tx);
      expect([paid.sender, ...charged.map((c) => c.sender)]).to.deep.equal([second.address, first.address, second.address]);
      const price = paid.actualGasCost / paid.actualGasUsed;
      console.log(`      ${version}: the fee after the sweep charged ${charged[1]!.gasCostWei / price} gas for ${paid.actualGasUsed} paid`);
      const allowance = version === "v0.7" ? E2E_CALL_GAS_LIMIT / 10n : 0n; // v0.7's penalty estimate from below
      expect(charged[1]!.gasCostWei / price + allowance >= paid.actualGasUsed, "the second fee covers what it cost").to.equal(true);
      expect(await paymaster.getFunction("accruedFees")(usdc), "the unit the sweep kept, and the second fee").to.equal(1n + charged[1]!.tokenAmount);
    });

    for (const chargeMode of [0, 1] as const) {
      const mode = chargeMode === 1 ? "pre-charge" : "charge in postOp";
      it(`${mode}: the victim is charged no more than without the sweep (its fee slots were not zero at the start of the transaction)`, async () => {
        const stack = await loadStack();
        await warmPaymaster(stack, version);
        const snapshot = await networkHelpers.takeSnapshot();
        const sweep = (pm: string, usdc: string) => ({ to: pm, data: stack.v[version].erc20.interface.encodeFunctionData("sweepFees", [usdc]) });
        const swept = await bundle(stack, chargeMode, sweep);
        await snapshot.restore();
        const harmless = (_pm: string, usdc: string) => ({ to: usdc, data: stack.tokens.USDC.interface.encodeFunctionData("balanceOf", [stack.beneficiary]) });
        const plain = await bundle(stack, chargeMode, harmless);
        console.log(`      ${version} ${mode}: victim charged ${swept.chargedGas} gas after a sweep in its bundle, ${plain.chargedGas} without; its op cost the deposit ${swept.paidGas} / ${plain.paidGas}`);
        expect(swept.accruedAfter, "the sweep ran: only the victim's fee is left").to.be.lessThan(plain.accruedAfter);
        expect(swept.chargedGas <= plain.chargedGas, `charged ${swept.chargedGas - plain.chargedGas} gas more after the sweep`).to.equal(true);
        // Still made whole: the deposit paid no more for the victim's op than it was charged.
        expect(swept.chargedGas >= swept.paidGas - (version === "v0.7" ? E2E_CALL_GAS_LIMIT / 10n : 0n)).to.equal(true);
      });
    }
  });
}

describe("TokenChargeBase.tokenCost: rounds up, never charges 0 for a non-zero cost", () => {
  it("matches ceil(gasCostWei * rate / 1e18) on exact and inexact divisions", async () => {
    const stack = await loadStack();
    const paymaster = stack.v["v0.6"].erc20;
    const cases: [bigint, bigint][] = [
      [1n, 1n],
      [10n ** 18n, RATES.USDC],
      [10n ** 18n + 1n, RATES.USDC],
      [123_456_789n, RATES.USDC],
      [21_000n * 10n ** 9n, RATES.DAI],
      [1n, RATES.DAI],
    ];
    for (const [cost, rate] of cases) {
      const onChain: bigint = await paymaster.getFunction("tokenCost")(cost, rate);
      expect(onChain).to.equal(tokenCost(cost, rate));
      expect(onChain).to.equal((cost * rate + 10n ** 18n - 1n) / 10n ** 18n);
      expect(onChain > 0n).to.equal(true);
    }
  });
});

export { ethers };
