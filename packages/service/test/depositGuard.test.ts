// Never sign what the paymaster cannot pay: with a deposit that covers one op but not that op plus the ones
// already signed and unsettled, the next op is refused (PAYMASTER_DEPOSIT_LOW with the figures), although the
// EntryPoint's own simulation would accept it; once the deposit is topped up, it is signed.
import { expect } from "chai";
import { encodeFunctionData, type Abi } from "viem";
import { VerifyingPaymasterV06Artifact } from "@paymaster/contracts/artifacts";
import { maxGasCostV07, type Hex } from "@paymaster/shared";
import { executeCallData } from "../src/local/embedded.ts";
import { call, chainRequest, ethCall, newWallet, opFromResponse, sendTx, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const paymasterAbi = VerifyingPaymasterV06Artifact.abi as Abi; // same getDeposit / withdrawTo / deposit in v0.7

describe("deposit guard: the deposit less outstanding maximum costs must cover the op", function () {
  this.timeout(60_000);
  let embedded: Embedded;
  before(async () => {
    embedded = await startTestStack();
  });
  after(async () => {
    await embedded?.close();
  });

  async function sponsor() {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
    return { wallet, wire, ...answer };
  }

  it("refuses the op that would overcommit the deposit, signs again after a top-up", async () => {
    const paymaster = embedded.stack.manifest.entryPoints["v0.7"].verifyingPaymaster;
    const owner = embedded.stack.owner.address;
    const first = await sponsor();
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    const firstMax = maxGasCostV07(opFromResponse(first.wallet, first.wire, first.body.data).userOp as Parameters<typeof maxGasCostV07>[0]);

    // Leave 1.5 x one op's maximum cost: enough for the EntryPoint to accept any one op, not two.
    const before = (await ethCall(embedded, paymaster, paymasterAbi, "getDeposit")) as bigint;
    const keep = (firstMax * 3n) / 2n;
    expect((await sendTx(embedded, paymaster, encodeFunctionData({ abi: paymasterAbi, functionName: "withdrawTo", args: [owner, before - keep] }), owner)).status).to.equal("0x1");
    await chainRequest(embedded, "evm_mine", []);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the service's block snapshot moves on
    try {
      const second = await sponsor();
      expect(second.status, JSON.stringify(second.body)).to.equal(503);
      expect(second.body.data.reason).to.equal("PAYMASTER_DEPOSIT_LOW");
      expect(second.body.data.aaCode, "not the EntryPoint's verdict: its simulation passed").to.equal(undefined);
      expect(BigInt(second.body.data.depositWei)).to.equal(keep);
      expect(BigInt(second.body.data.outstandingWei)).to.equal(firstMax);
      expect(BigInt(second.body.data.requiredWei) > keep - firstMax, "the op alone fits what is left, with the outstanding one it does not").to.equal(true);
    } finally {
      const hash = await chainRequest<Hex>(embedded, "eth_sendTransaction", [{ from: owner, to: paymaster, data: encodeFunctionData({ abi: paymasterAbi, functionName: "deposit" }), value: `0x${(before - keep).toString(16)}` }]);
      await chainRequest(embedded, "eth_getTransactionReceipt", [hash]);
    }
    await chainRequest(embedded, "evm_mine", []);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const third = await sponsor();
    expect(third.status, JSON.stringify(third.body)).to.equal(200);
  });
});
