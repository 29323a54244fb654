// A development chain whose clock runs ahead of the wall clock (blocks mined faster than one a second, time moved
// with evm_increaseTime — mined or not yet —, evm_setNextBlockTimestamp, a burst of blocks hours apart): every op
// the service signs right after the clock moved lands through handleOps on the real EVM, never "AA32 paymaster
// expired or not due". The signature's window follows the chain's time at signing, not a snapshot taken before the
// move (src/chain/market.ts chainTime).
import { expect } from "chai";
import { executeCallData } from "../src/local/embedded.ts";
import { call, chainRequest, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

describe("a development chain whose clock runs ahead: every op signed lands", function () {
  this.timeout(120_000);
  let embedded: Embedded;

  before(async () => {
    embedded = await startTestStack();
  });
  after(async () => {
    await embedded?.close();
  });

  const latestTimestamp = async () => Number(BigInt((await chainRequest<{ timestamp: string }>(embedded, "eth_getBlockByNumber", ["latest", false])).timestamp));
  const wallNow = () => Math.floor(Date.now() / 1000);

  /** Ways a development chain's clock moves, each done right before a signing call. */
  const moves: { what: string; move(): Promise<unknown> }[] = [
    { what: "120 blocks mined at once (one second apart each, far faster than one a second)", move: () => chainRequest(embedded, "hardhat_mine", ["0x78"]) },
    { what: "evm_increaseTime by an hour, then a block mined", move: async () => (await chainRequest(embedded, "evm_increaseTime", [3600]), chainRequest(embedded, "evm_mine", [])) },
    { what: "evm_increaseTime by half an hour, no block mined yet (the op's block carries it)", move: () => chainRequest(embedded, "evm_increaseTime", [1800]) },
    { what: "evm_setNextBlockTimestamp a day ahead of the latest block, then a block mined", move: async () => (await chainRequest(embedded, "evm_setNextBlockTimestamp", [(await latestTimestamp()) + 86_400]), chainRequest(embedded, "evm_mine", [])) },
    { what: "10 blocks mined an hour apart each", move: () => chainRequest(embedded, "hardhat_mine", ["0xa", "0xe10"]) },
  ];

  it("moves its clock ahead in five ways; each op signed right after (v0.6 and v0.7, twice round) lands via handleOps", async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 2; round++) {
      for (const { what, move } of moves) {
        await move();
        for (const version of ["v0.6", "v0.7"] as const) {
          const wallet = await newWallet(embedded, version);
          const wire = wireOp(wallet, executeCallData(wallet.owner.address));
          const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version }]);
          if (answer.status !== 200) {
            outcomes.push(`${what} (${version}): not signed: ${answer.body.message}`);
            continue;
          }
          const landed = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, answer.body.data)));
          outcomes.push(`${what} (${version}): ${landed.reverted ? `reverted ${landed.failedOp}` : landed.event?.success ? "landed" : "no UserOperationEvent"}`);
        }
      }
    }
    expect(outcomes.filter((o) => !o.endsWith(": landed")), "ops that did not land").to.deep.equal([]);
    expect((await latestTimestamp()) - wallNow(), "the chain's clock ran days ahead").to.be.above(2 * 86_400);
  });
});
