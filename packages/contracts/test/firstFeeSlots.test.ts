// Audit 4, R4-1: a token's first fee pays for the storage it sets from zero — accruedFees, and in charge-in-postOp
// mode the paymaster's token balance — and only for the slots it really sets from a zero they also held at the start
// of the transaction (EIP-2200: only then does a write cost 20,000 instead of 2,900 or 100). Before the fix the
// balance slot was charged whenever accruedFees was zero: one unit sent to the paymaster, or a pre-charge validated
// in the same bundle, made an op pay 17,100 gas it did not cost.
//
// Each scenario runs one bundle twice from the same snapshot: on the scenario's paymaster, and on a paymaster that
// already holds fees in the token (nothing is set from zero there). What the victim's op is charged more in the
// scenario is set against what it cost the deposit more: they must agree within TOLERANCE, the gap the priced
// FIRST_FEE_NOTE_GAS and FIRST_FEE_BALANCE_CHECK_GAS leave to their measured cost (a slot is 17,100).
import { expect } from "chai";
import type { EntryPointVersion } from "@paymaster/shared";
import { loadStack, networkHelpers, type Stack } from "./helpers/stack.ts";
import { VERSIONS, accountCallData, draftOp, handleOps, signAsOwner, sponsor, userOperationEvents, type TestOp } from "./helpers/userOps.ts";
import { accountOwnsPaymaster, readyAccount, transferData, type ReadyAccount } from "./helpers/accounts.ts";
import { E2E_CALL_GAS_LIMIT, tokenChargedEvents, tokenFieldsFor, warmPaymaster } from "./helpers/charges.ts";

const TOLERANCE = 1_000n;

/** How the victim's extra charge must compare with its extra cost. */
type Bound =
  /** equal within TOLERANCE: every slot set from zero is charged, and nothing else */
  | "exact"
  /** no more than the extra cost (the baseline's own writes are cheaper than a warm op's, see the scenario) */
  | "at most"
  /** nothing is set from zero: neither charged nor paid more than on a paymaster holding fees */
  | "nothing";

interface Scenario {
  name: string;
  /** The victim's charge mode (default: charge in postOp). */
  victimMode?: 0 | 1;
  /** Transactions before the bundle, on the scenario's side only (the baseline starts from warmPaymaster). */
  before?: (stack: Stack, version: EntryPointVersion) => Promise<void>;
  /** The bundle, the victim's op included: built once, before both runs. */
  bundle: (stack: Stack, version: EntryPointVersion, victim: TestOp) => Promise<TestOp[]>;
  bound: Bound;
}

/** A signed op of `account` paying in USDC with `chargeMode`, whose call does nothing. */
async function feeOp(stack: Stack, version: EntryPointVersion, account: ReadyAccount, chargeMode: 0 | 1) {
  const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]), callGasLimit: E2E_CALL_GAS_LIMIT });
  const op = await sponsor(stack, version, draft, { kind: "erc20", paymaster: stack.v[version].erc20, signer: stack.signer, tokenFields: await tokenFieldsFor(stack, "USDC", chargeMode) });
  return signAsOwner(stack, version, op, account.owner);
}

/** A signed op of a fresh account, sponsored by the verifying paymaster, making `call`. */
async function otherOp(stack: Stack, version: EntryPointVersion, call: (paymaster: string, usdc: string) => { to: string; data: string }) {
  const account = await readyAccount(stack, version);
  const callData = accountCallData(version, [call(await stack.v[version].erc20.getAddress(), await stack.tokens.USDC.getAddress())]);
  const op = await sponsor(stack, version, await draftOp({ sender: account.address, callData }), { kind: "verifying", paymaster: stack.v[version].verifying, signer: stack.signer });
  return signAsOwner(stack, version, op, account.owner);
}

/** Someone outside the bundle sends the paymaster one base unit of USDC. */
async function sendOneUnit(stack: Stack, version: EntryPointVersion) {
  await (await stack.tokens.USDC.mint(await stack.owner.getAddress(), 1n)).wait();
  await (await stack.tokens.USDC.transfer(await stack.v[version].erc20.getAddress(), 1n)).wait();
}

/** A paymaster that earned fees in both tokens, then had its USDC fees swept. */
async function sweptPaymaster(stack: Stack, version: EntryPointVersion) {
  await warmPaymaster(stack, version);
  await (await stack.v[version].erc20.getFunction("sweepFees")(await stack.tokens.USDC.getAddress())).wait();
}

/** An op of a SimpleAccount made the paymaster's owner (paying its own gas), withdrawing one unit of USDC. */
async function ownerWithdrawsOneUnit(stack: Stack, version: EntryPointVersion) {
  const paymaster = stack.v[version].erc20;
  const owner = await readyAccount(stack, version, { approveErc20Paymaster: false, salt: 7n });
  await accountOwnsPaymaster(stack, version, owner);
  const withdraw = paymaster.interface.encodeFunctionData("withdrawTokens", [await stack.tokens.USDC.getAddress(), stack.beneficiary, 1n]);
  return signAsOwner(stack, version, await draftOp({ sender: owner.address, callData: accountCallData(version, [{ to: await paymaster.getAddress(), data: withdraw }]) }), owner.owner);
}

const SCENARIOS: Scenario[] = [
  {
    name: "a fresh paymaster (control): both slots are set from zero, and both are charged",
    bundle: async (_s, _v, victim) => [victim],
    bound: "exact",
  },
  {
    name: "(a) someone sent the paymaster one base unit before: its balance slot is not set from zero, nor charged",
    before: sendOneUnit,
    bundle: async (_s, _v, victim) => [victim],
    bound: "exact",
  },
  {
    name: "(a) an op earlier in the same bundle sends the paymaster one base unit: the balance slot is not charged",
    bundle: async (stack, version, victim) => [await otherOp(stack, version, (pm, usdc) => ({ to: usdc, data: transferData(stack, pm, 1n) })), victim],
    bound: "exact",
  },
  {
    name: "(b) an honest bundle, the victim then a pre-charge op of the token: the pre-charge, validated before the victim's postOp, already set the balance",
    bundle: async (stack, version, victim) => [victim, await feeOp(stack, version, await readyAccount(stack, version), 1)],
    bound: "exact",
  },
  {
    name: "(b) the same bundle the other way round (control): the pre-charge op's postOp runs first, so the victim's fee is no first fee",
    bundle: async (stack, version, victim) => [await feeOp(stack, version, await readyAccount(stack, version), 1), victim],
    bound: "exact",
  },
  {
    name: "(c) fees swept in an earlier transaction, charge in postOp: the sweep kept a unit, nothing is set from zero again",
    before: sweptPaymaster,
    bundle: async (_s, _v, victim) => [victim],
    bound: "nothing",
  },
  {
    name: "(c) fees swept in an earlier transaction, pre-charge: nothing is set from zero again",
    victimMode: 1,
    before: sweptPaymaster,
    bundle: async (_s, _v, victim) => [victim],
    bound: "nothing",
  },
  {
    // Scenario side: the balance held one stray unit at the start, the owner's op takes it (the write is then 100).
    // Baseline side: the owner takes one unit of the fees, so the victim's accruedFees write costs 100, not 2,900.
    name: "the owner's withdrawTokens empties a balance that was not zero at the start of the transaction: the balance slot is not charged",
    before: sendOneUnit,
    bundle: async (stack, version, victim) => [await ownerWithdrawsOneUnit(stack, version), victim],
    bound: "at most",
  },
];

/** Runs the bundle; the victim's charged gas (TokenCharged / gas price) and the gas its op cost the deposit. */
async function victimCost(stack: Stack, version: EntryPointVersion, ops: TestOp[], victim: string) {
  const tx = await handleOps(stack, version, ops);
  const charged = (await tokenChargedEvents(stack.v[version].erc20, tx)).find((c) => c.sender === victim);
  const events = await userOperationEvents(stack, version, tx);
  expect(events.map((e) => e.success), "every op of the bundle succeeded").to.deep.equal(ops.map(() => true));
  const paid = events.find((e) => e.sender === victim)!;
  expect(charged, "the victim was charged").to.not.equal(undefined);
  const price = paid.actualGasCost / paid.actualGasUsed;
  return { chargedGas: charged!.gasCostWei / price, paidGas: paid.actualGasUsed };
}

for (const version of VERSIONS) {
  describe(`ERC20Paymaster ${version}: a first fee is charged only the slots it sets from zero (audit 4, R4-1)`, () => {
    for (const scenario of SCENARIOS) {
      it(scenario.name, async () => {
        const stack = await loadStack();
        const victim = await readyAccount(stack, version);
        const ops = await scenario.bundle(stack, version, await feeOp(stack, version, victim, scenario.victimMode ?? 0));
        const snapshot = await networkHelpers.takeSnapshot();
        await scenario.before?.(stack, version);
        const probe = await victimCost(stack, version, ops, victim.address);
        await snapshot.restore();
        await warmPaymaster(stack, version);
        const base = await victimCost(stack, version, ops, victim.address);

        const charged = probe.chargedGas - base.chargedGas;
        const paid = probe.paidGas - base.paidGas;
        console.log(`      ${version}: the victim charged ${charged} gas more than on a paymaster holding fees, for ${paid} more paid`);
        if (scenario.bound === "nothing") {
          expect(charged <= TOLERANCE && paid <= TOLERANCE, `charged ${charged} / paid ${paid} gas more`).to.equal(true);
        } else {
          expect(charged <= paid + TOLERANCE, `charged ${charged - paid} gas more than the first fee cost`).to.equal(true);
          if (scenario.bound === "exact") expect(charged >= paid - TOLERANCE, `charged ${paid - charged} gas less than the first fee cost`).to.equal(true);
        }
        // And the paymaster is made whole (v0.7 estimates its unused-call-gas penalty from below).
        const allowance = version === "v0.7" ? E2E_CALL_GAS_LIMIT / 10n : 0n;
        expect(probe.chargedGas + allowance >= probe.paidGas, `charged ${probe.chargedGas} for ${probe.paidGas} paid`).to.equal(true);
      });
    }
  });
}
