// Items 4 and 5 of the contract audit: the lowest postOp gas limit the ERC-20 paymasters accept
// (minPostOpGasLimit) is a separate figure from the charged postOpGas, and covers the worst case of both charge
// modes measured here from traces of the postOp call; v0.6, which runs postOp under verificationGasLimit, holds
// that limit to the same minimum.
//
// The same measurement works for a real token on a fork: point `token` at it (with its proxy, blocklist and
// pause reads) and take the largest "needs" printed below, plus a margin, as minPostOpGasLimit.
import { expect } from "chai";
import { Contract, MaxUint256 } from "ethers";
import type { EntryPointVersion } from "@paymaster/shared";
import { buildFrames, frameGasUsed } from "../src/erc7562/index.ts";
import { loadStack, type Stack } from "./helpers/stack.ts";
import { VERSIONS, accountCallData, draftOp, handleOps, signAsOwner, sponsor, type TestOp } from "./helpers/userOps.ts";
import { accountWithToken, type ReadyAccount } from "./helpers/accounts.ts";
import { blocklistToken, preChargeOf } from "./helpers/tokens.ts";
import { traceTransaction } from "./helpers/trace.ts";
import { expectPaymasterReverted, validateAsEntryPoint } from "./helpers/expectations.ts";

const RATE = 3_000n * 10n ** 6n;
/** A postOp limit far above any need, so that the measured run is never short of gas. */
const GENEROUS = 400_000n;


/** Gas the postOp call of a mined handleOps used (the paymaster's last call frame). */
async function postOpGasUsed(stack: Stack, version: EntryPointVersion, hash: string): Promise<number> {
  const trace = await traceTransaction(hash);
  const { frames } = buildFrames(trace.structLogs, await stack.v[version].entryPoint.getAddress());
  const paymaster = (await stack.v[version].erc20.getAddress()).toLowerCase();
  const calls = frames.filter((f) => f.codeAddress === paymaster && f.kind === "CALL");
  expect(calls.length, "validation and postOp frames").to.equal(2);
  return frameGasUsed(calls[calls.length - 1]!);
}

interface Scenario {
  name: string;
  chargeMode: 0 | 1;
  /** The op's own calls (e.g. getting blocklisted). */
  calls: (token: Contract, account: ReadyAccount) => { to: string; data: string }[];
  /** Gas postOp must have on top of what it used (the refund transfer keeps REFUND_BOOKKEEPING_GAS back). */
  reserve: boolean;
  /** Token amount and allowance for the account; pre-charge scenarios hold exactly the pre-charge. */
  exactPreCharge: boolean;
}

const SCENARIOS: Scenario[] = [
  {
    name: "pre-charge, refund to a sender the pre-charge left at 0, first fee in the token",
    chargeMode: 1,
    calls: (_t, a) => [{ to: a.owner.address, data: "0x" }],
    reserve: true,
    exactPreCharge: true,
  },
  {
    name: "charge in postOp, finite allowance, first fee in the token (the paymaster's balance 0 -> non-zero)",
    chargeMode: 0,
    calls: (_t, a) => [{ to: a.owner.address, data: "0x" }],
    reserve: false,
    exactPreCharge: false,
  },
  {
    name: "pre-charge whose refund the token refuses (the sender got blocklisted): the refund is recorded as owed",
    chargeMode: 1,
    calls: (t, a) => [{ to: t.target as string, data: t.interface.encodeFunctionData("setBlocklisted", [a.address, true]) }],
    reserve: false,
    exactPreCharge: false,
  },
];

for (const version of VERSIONS) {
  describe(`ERC20Paymaster ${version}: minPostOpGasLimit covers the worst case of both charge modes (audit item 4)`, () => {
    const needs: number[] = [];
    for (const s of SCENARIOS) {
      it(s.name, async () => {
        const stack = await loadStack();
        const paymaster = stack.v[version].erc20;
        const token = await blocklistToken(stack);
        const limits: Partial<TestOp> = version !== "v0.6" ? { paymasterPostOpGasLimit: GENEROUS } : { verificationGasLimit: GENEROUS };
        const probe = await draftOp({ sender: stack.beneficiary, callData: "0x", callGasLimit: 80_000n, ...limits });
        const preCharge = await preChargeOf(stack, version, probe, RATE);
        const account = await accountWithToken(stack, version, token, s.exactPreCharge ? preCharge : 10n ** 9n, s.chargeMode === 1 ? MaxUint256 : 10n ** 8n);
        const draft = await draftOp({ sender: account.address, callData: accountCallData(version, s.calls(token, account)), callGasLimit: 80_000n, ...limits });
        const op = await sponsor(stack, version, draft, {
          kind: "erc20",
          paymaster,
          signer: stack.signer,
          tokenFields: { token: await token.getAddress(), exchangeRate: RATE, chargeMode: s.chargeMode },
        });
        const tx = await handleOps(stack, version, [await signAsOwner(stack, version, op, account.owner)]);
        await tx.wait();
        expect(await paymaster.getFunction("accruedFees")(await token.getAddress())).to.not.equal(0n);
        const used = await postOpGasUsed(stack, version, tx.hash);
        const reserve = Number(await paymaster.getFunction("REFUND_BOOKKEEPING_GAS")());
        // A call keeps 1/64 of its gas back (EIP-150): the token call inside needs a little more than it uses.
        const need = Math.ceil((used * 64) / 63) + (s.reserve ? reserve : 0);
        needs.push(need);
        const min = Number(await paymaster.getFunction("minPostOpGasLimit")());
        console.log(`      ${version} postOp used ${used} gas, needs a limit of ${need}; minPostOpGasLimit ${min}`);
        expect(need <= min, `needs ${need} > minPostOpGasLimit ${min}`).to.equal(true);
        const postOpGas = Number(await paymaster.getFunction("postOpGas")());
        expect(min > postOpGas).to.equal(true);
      });
    }

    it("the margin over the worst case stays under 30% (the limit is not set blindly high)", () => {
      expect(needs.length).to.equal(SCENARIOS.length);
      return loadStack().then(async (stack) => {
        const min = Number(await stack.v[version].erc20.getFunction("minPostOpGasLimit")());
        expect(min <= Math.max(...needs) * 1.3, `min ${min} vs worst ${Math.max(...needs)}`).to.equal(true);
      });
    });
  });
}

describe("ERC20PaymasterV06: verificationGasLimit must cover the worst-case postOp (audit item 5)", () => {
  it("a cheap-validation op with verificationGasLimit 42,000 is refused in validation (AA33) instead of reverting the whole bundle", async () => {
    const stack = await loadStack();
    const version = "v0.6";
    const paymaster = stack.v[version].erc20;
    const token = stack.tokens.USDC as unknown as Contract;
    const account = await accountWithToken(stack, version, token, 10n ** 9n, MaxUint256);
    const min: bigint = await paymaster.getFunction("minPostOpGasLimit")();
    const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]), verificationGasLimit: 42_000n });
    const op = await sponsor(stack, version, draft, { kind: "erc20", paymaster, signer: stack.signer, tokenFields: { token: await token.getAddress(), exchangeRate: RATE, chargeMode: 0 } });
    await expect(validateAsEntryPoint(stack, version, paymaster, op)).to.be.revertedWithCustomError(paymaster, "PostOpGasLimitTooLow").withArgs(42_000n, min);
    await expectPaymasterReverted(stack, version, await signAsOwner(stack, version, op, account.owner));
  });
});
