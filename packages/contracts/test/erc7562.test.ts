// ERC-7562 conformance of every paymaster's validation, traced on the local chain: a real op of each
// paymaster, version and charge mode, through handleOps with debug_traceCall, checked by src/erc7562 with the
// paymaster's actual stake.
import { expect } from "chai";
import { checkValidationTrace } from "../src/erc7562/index.ts";
import { loadStack, type Stack } from "./helpers/stack.ts";
import { VERSIONS, accountCallData, draftOp, newAccount, randomOwner, signAsOwner, sponsor, type PaymasterKind, type TestOp } from "./helpers/userOps.ts";
import { delegatedWallet, readyAccount } from "./helpers/accounts.ts";
import { stakeInfo, traceHandleOps } from "./helpers/trace.ts";
import type { EntryPointVersion } from "@paymaster/shared";

const USDC_RATE = 3_000n * 10n ** 6n;

interface Case {
  kind: PaymasterKind;
  chargeMode?: 0 | 1;
  /** A first op: the account is deployed by the op's initCode. */
  deploys?: boolean;
  /** v0.8: the sender is an EOA already delegated (EIP-7702) to Simple7702Account, the op has no initCode. */
  delegated?: boolean;
}

const CASES: Case[] = [
  { kind: "verifying" },
  { kind: "verifying", deploys: true },
  { kind: "erc20", chargeMode: 0 },
  { kind: "erc20", chargeMode: 0, deploys: true },
  { kind: "erc20", chargeMode: 1 },
  // The paymaster reads the sender's code for an op without initCode (its delegate is hashed).
  { kind: "verifying", delegated: true },
  { kind: "erc20", chargeMode: 0, delegated: true },
];

function label(c: Case) {
  const mode = c.chargeMode === undefined ? "" : c.chargeMode === 1 ? " pre-charge" : " postOp-charge";
  return `${c.kind}${mode}${c.deploys ? " (first op: deploys the account)" : ""}${c.delegated ? " (EIP-7702-delegated EOA sender, no initCode)" : ""}`;
}

async function signedOp(stack: Stack, version: EntryPointVersion, c: Case): Promise<{ op: TestOp; factory?: string }> {
  const paymaster = stack.v[version][c.kind];
  const tokenFields = c.kind === "erc20" ? { token: await stack.tokens.USDC.getAddress(), exchangeRate: USDC_RATE, chargeMode: c.chargeMode! } : undefined;
  if (c.deploys) {
    const owner = randomOwner();
    const account = await newAccount(stack, version, owner.address);
    await (await stack.tokens.USDC.mint(account.address, 10n ** 9n)).wait();
    const usdc = await stack.tokens.USDC.getAddress();
    const approve = stack.tokens.USDC.interface.encodeFunctionData("approve", [await paymaster.getAddress(), 10n ** 12n]);
    const draft = await draftOp({ sender: account.address, initCode: account.initCode, callData: accountCallData(version, [{ to: usdc, data: approve }]) });
    const op = await sponsor(stack, version, draft, { kind: c.kind, paymaster, signer: stack.signer, tokenFields });
    return { op: await signAsOwner(stack, version, op, owner), factory: await stack.v[version].factory.getAddress() };
  }
  if (c.delegated) {
    const delegate = stack.manifest.entryPoints[version].simple7702Account!;
    const eoa = await delegatedWallet(stack, delegate);
    await (await stack.tokens.USDC.mint(eoa.address, 10n ** 9n)).wait();
    await (await stack.tokens.USDC.connect(eoa).getFunction("approve")(await paymaster.getAddress(), 10n ** 12n)).wait();
    const draft = await draftOp({ sender: eoa.address, callData: accountCallData(version, [{ to: eoa.address, data: "0x" }]) });
    const op = await sponsor(stack, version, draft, { kind: c.kind, paymaster, signer: stack.signer, tokenFields, eip7702Delegate: delegate });
    return { op: await signAsOwner(stack, version, op, eoa) };
  }
  const account = await readyAccount(stack, version);
  const draft = await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]) });
  const op = await sponsor(stack, version, draft, { kind: c.kind, paymaster, signer: stack.signer, tokenFields });
  return { op: await signAsOwner(stack, version, op, account.owner) };
}

for (const version of VERSIONS) {
  describe(`ERC-7562 conformance ${version}: each paymaster's validation, traced`, () => {
    for (const c of CASES.filter((c) => version === "v0.8" || !c.delegated)) {
      it(`${label(c)}: no rule broken with the deployed stake; the paymaster's own storage reads need that stake (STO-031)`, async () => {
        const stack = await loadStack();
        const paymaster = await stack.v[version][c.kind].getAddress();
        const { op, factory } = await signedOp(stack, version, c);
        const trace = await traceHandleOps(stack, version, op);
        expect(trace.failed, "handleOps succeeds").to.equal(false);
        const stake = await stakeInfo(stack, version, paymaster);
        expect(stake.staked).to.equal(true);
        const entities = { entryPoint: await stack.v[version].entryPoint.getAddress(), sender: op.sender, paymaster, ...(factory ? { factory } : {}) };

        const report = checkValidationTrace(trace, entities, { paymaster: stake.staked, factory: false });
        if (process.env.PAYMASTER_GAS_REPORT) console.log(`      phases: ${report.phases.map((p) => `${p.entity} ${p.gasUsed}`).join(", ")}`);
        expect(report.violations, JSON.stringify(report.violations, null, 1)).to.deep.equal([]);
        expect(report.phases.map((p) => p.entity)).to.deep.equal(c.deploys ? ["factory", "account", "paymaster"] : ["account", "paymaster"]);

        // The audit's finding: unstaked, the same validation breaks STO-031 (isSigner, the token allowlist).
        const unstaked = checkValidationTrace(trace, entities, { paymaster: false, factory: false });
        const rules = new Set(unstaked.violations.filter((v) => v.entity === "paymaster").map((v) => v.rule));
        expect([...rules]).to.include("STO-031");
        if (c.chargeMode === 1) expect([...rules]).to.include("STO-032"); // the token's balance and allowance slots of the paymaster
      });
    }

    it("the local deployment stakes all four paymasters with an unstake delay of at least one day", async () => {
      const stack = await loadStack();
      for (const kind of ["verifying", "erc20"] as const) {
        const info = await stakeInfo(stack, version, await stack.v[version][kind].getAddress());
        expect(info.staked, kind).to.equal(true);
        expect(info.stake > 0n).to.equal(true);
        expect(info.unstakeDelaySec >= 86_400n).to.equal(true);
      }
    });
  });
}
