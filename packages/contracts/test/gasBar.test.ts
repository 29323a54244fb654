// The security bar (shared/research/security.md, "Contracts" 6): the context a paymaster returns stays under
// 2048 bytes, and the paymasterVerificationGasLimit the service signs leaves at least 4000 gas unused in the
// worst case of each paymaster and mode (v0.7; v0.6 has no separate paymaster limit: the service estimates
// verificationGasLimit from a simulation with a margin).
import { expect } from "chai";
import { Contract, dataLength } from "ethers";
import {
  MAX_PAYMASTER_CONTEXT_BYTES,
  PAYMASTER_VERIFICATION_GAS,
  PAYMASTER_VERIFICATION_GAS_SLACK,
  type EntryPointVersion,
} from "@paymaster/shared";
import { loadStack, type Stack } from "./helpers/stack.ts";
import { VERSIONS, accountCallData, draftOp, signAsOwner, sponsor, toChainOp, type PaymasterKind, type TestOp } from "./helpers/userOps.ts";
import { accountWithToken, readyAccount, type ReadyAccount } from "./helpers/accounts.ts";
import { validateAsEntryPoint } from "./helpers/expectations.ts";
import { blocklistToken } from "./helpers/tokens.ts";

const RATE = 3_000n * 10n ** 6n;

interface Worst {
  name: string;
  kind: PaymasterKind;
  chargeMode?: 0 | 1;
}

const WORST: Worst[] = [
  { name: "verifying", kind: "verifying" },
  { name: "erc20, charge in postOp", kind: "erc20", chargeMode: 0 },
  // Every slot cold, the paymaster's balance 0 -> non-zero, a finite allowance written down.
  { name: "erc20, pre-charge of a token the paymaster never held, finite allowance", kind: "erc20", chargeMode: 1 },
];


/** Whether handleOps of `op` with `pmGas` as paymasterVerificationGasLimit goes through (static call). */
async function passes(stack: Stack, w: Worst, account: ReadyAccount, token: Contract, pmGas: bigint): Promise<boolean> {
  const version = "v0.7";
  const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]), paymasterVerificationGasLimit: pmGas });
  const op = await sponsor(stack, version, draft, {
    kind: w.kind,
    paymaster: stack.v[version][w.kind],
    signer: stack.signer,
    ...(w.kind === "erc20" ? { tokenFields: { token: await token.getAddress(), exchangeRate: RATE, chargeMode: w.chargeMode! } } : {}),
  });
  const signed = await signAsOwner(stack, version, op, account.owner);
  try {
    await stack.v[version].entryPoint.getFunction("handleOps").staticCall([toChainOp(version, signed)], stack.beneficiary, { gasLimit: 10_000_000n });
    return true;
  } catch {
    return false;
  }
}

describe("security bar: >= 4000 gas slack under the signed paymasterVerificationGasLimit (v0.7, worst cases)", () => {
  for (const w of WORST) {
    it(w.name, async () => {
      const stack = await loadStack();
      const token = await blocklistToken(stack); // fresh: the paymaster never held it
      const account = await accountWithToken(stack, "v0.7", token, 10n ** 12n, 10n ** 11n);
      const limit = PAYMASTER_VERIFICATION_GAS[w.kind];
      expect(await passes(stack, w, account, token, limit), "passes at the signed limit").to.equal(true);
      // The lowest limit that passes (what the EntryPoint's AA36 check and the call's gas need together).
      let lo = 1_000n;
      let hi: bigint = limit;
      while (hi - lo > 50n) {
        const mid = (lo + hi) / 2n;
        if (await passes(stack, w, account, token, mid)) hi = mid;
        else lo = mid;
      }
      const slack = limit - hi;
      console.log(`      ${w.name}: needs ${hi}, signed ${limit}, slack ${slack}`);
      expect(slack >= PAYMASTER_VERIFICATION_GAS_SLACK, `slack ${slack}`).to.equal(true);
    });
  }
});

for (const version of VERSIONS) {
  describe(`security bar ${version}: the context stays under ${MAX_PAYMASTER_CONTEXT_BYTES} bytes`, () => {
    for (const chargeMode of [0, 1] as const) {
      it(`ERC-20 paymaster, charge mode ${chargeMode}`, async () => {
        const stack = await loadStack();
        const account = await readyAccount(stack, version);
        const op: TestOp = await sponsor(stack, version, await draftOp({ sender: account.address, callData: "0x" }), {
          kind: "erc20",
          paymaster: stack.v[version].erc20,
          signer: stack.signer,
          tokenFields: { token: await stack.tokens.USDC.getAddress(), exchangeRate: RATE, chargeMode },
        });
        const [context] = await validateAsEntryPoint(stack, version, stack.v[version].erc20, op);
        // Static words: ChargeContext (5) + v0.6's fees (2) or v0.7/v0.8's penalty limits (3).
        expect(dataLength(context)).to.equal(version === "v0.6" ? 224 : 256);
        expect(dataLength(context) <= MAX_PAYMASTER_CONTEXT_BYTES).to.equal(true);
      });
    }
    it("verifying paymaster: empty context (no postOp)", async () => {
      const stack = await loadStack();
      const account = await readyAccount(stack, version);
      const op = await sponsor(stack, version, await draftOp({ sender: account.address, callData: "0x" }), { kind: "verifying", paymaster: stack.v[version].verifying, signer: stack.signer });
      const [context] = await validateAsEntryPoint(stack, version, stack.v[version].verifying, op);
      expect(context).to.equal("0x");
    });
  });
}
