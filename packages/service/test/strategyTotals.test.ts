// What a strategy has reserved and spent in all, whatever its caps: the uncapped demo strategy and one with a
// daily cap only, sponsored through the real service on the embedded chain, landed and settled by the watcher;
// `strategy usage` (its totals, JSON and text) reads them.
import { expect } from "chai";
import path from "node:path";
import { strategyUsage } from "../src/admin/strategies.ts";
import type { AdminContext } from "../src/admin/context.ts";
import { executeCallData } from "../src/local/embedded.ts";
import { runCliInProcess } from "./helpers/cli.ts";
import { call, chainRequest, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, until, wireOp, type Embedded } from "./helpers/stack.ts";

describe("strategy usage totals, whatever the caps", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let ctx: AdminContext;

  before(async () => {
    embedded = await startTestStack();
    ctx = { store: embedded.running.service.store, networks: ["local"], actor: "test", role: "admin" };
  });
  after(async () => {
    await embedded?.close();
  });

  /** Sponsors a fresh account's first op under `code`, lands it and waits for its settlement: its record. */
  async function sponsor(code: string) {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: code, version: "v0.7" }]);
    expect(status, JSON.stringify(body)).to.equal(200);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    await chainRequest(embedded, "evm_mine", []);
    const store = embedded.running.service.store;
    return until("the settlement", async () => {
      const record = await store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
      return record?.status === "settled" && record;
    });
  }

  it("an uncapped strategy: what its settled op cost, in the JSON and in the text output", async () => {
    const settled = await sponsor(embedded.strategyCode);
    const usage = await strategyUsage(ctx, embedded.strategyCode);
    expect(usage.caps, "the demo strategy sets no cap").to.deep.equal([]);
    expect(usage.totals.spentWei).to.equal(settled.settlement!.actualGasCostWei.toString());
    expect(BigInt(usage.totals.spentWei) > 0n).to.equal(true);
    expect(usage.totals.reservedWei).to.equal("0");
    expect(usage.totals.ops).to.equal(1);

    const databasePath = path.join(path.dirname(embedded.manifestPath), "paymaster.sqlite");
    const text = await runCliInProcess(["--database", databasePath, "strategy", "usage", embedded.strategyCode]);
    expect(text.code, text.stderr).to.equal(0);
    expect(text.stdout).to.match(new RegExp(`^Totals: spent ${usage.totals.spentWei} wei \\(\\$${usage.totals.spentUsd.replace(".", "\\.")}\\), reserved 0 wei \\(\\$0\\.00\\), 1 ops$`, "m"));
  });

  it("a strategy with a daily cap only: its totals count the reservation, beside the daily row", async () => {
    const project = await ctx.store.createProject("daily only");
    await ctx.store.createStrategy({ projectId: project.id, code: "DAILY", name: "daily", networks: ["local"], rules: { caps: { daily: { maxOps: 10 } } } });
    const key = await ctx.store.createApiKey(project.id);
    const endpoint = embedded.endpoint.replace(embedded.apiKey, key.plaintext);
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const { status, body } = await call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: "DAILY", version: "v0.7" }]);
    expect(status, JSON.stringify(body)).to.equal(200);
    const record = await ctx.store.findActiveSponsorship({ network: "local", entryPoint: embedded.stack.manifest.entryPoints["v0.7"].entryPoint, sender: wallet.sender, nonce: 0n });
    const usage = await strategyUsage(ctx, "DAILY");
    expect(usage.caps.map((c) => c.cap)).to.deep.equal(["caps.daily"]);
    expect(usage.totals).to.deep.include({ spentWei: "0", reservedWei: record!.record.maxCostWei.toString(), ops: 1 });
  });
});
