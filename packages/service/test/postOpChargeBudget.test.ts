// Audit N-4: one outstanding postOp-charge sponsorship per sender does not bound fresh senders. The attack, on
// the embedded chain with the real store, over real HTTP: counterfactual senders with recycled tokens, each
// op approving the paymaster (so it is charged in postOp). With a per-key and a per-project USD budget on what
// such sponsorships put at risk (outstanding maximum costs + charges that went unpaid in the window), the key
// gets as many as fit and then POSTOP_CHARGE_AT_RISK; another key of the project stops at the project's
// budget; a released reservation frees its share, and an unpaid charge takes it again. Pre-charge mode (the
// allowance already there) is never limited.
import { expect } from "chai";
import { encodeFunctionData, maxUint256, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";
import { approveCallData, executeCallData } from "../src/local/embedded.ts";
import type { ServiceConfig } from "../src/config/types.ts";
import { abis, call, ethCall, mint, newWallet, sendTx, startTestStack, wireOp, type Embedded, type Wallet } from "./helpers/stack.ts";

const factoryAbi = parseAbi(["function createAccount(address owner, uint256 salt) returns (address)", "function getAddress(address owner, uint256 salt) view returns (address)"]);
const accountAbi = parseAbi(["function execute(address dest, uint256 value, bytes func)"]);

const VERSION: EntryPointVersion = "v0.7";

describe("postOp-charge risk budget per API key and per project (audit N-4)", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let secondKey: string;
  let projectId: string;

  before(async () => {
    embedded = await startTestStack();
    const store = embedded.running.service.store;
    projectId = (await store.findApiKey(embedded.apiKey))!.projectId;
    secondKey = (await store.createApiKey(projectId, "second")).plaintext;
  });
  after(async () => embedded?.close());

  const store = () => embedded.running.service.store;
  const usdc = () => embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
  const paymaster = () => embedded.stack.manifest.entryPoints[VERSION].erc20Paymaster;
  const endpointFor = (apiKey: string) => `${embedded.running.url}/api/v1/paymaster/local?apiKey=${apiKey}`;
  const setBudget = (budget: ServiceConfig["postOpChargeRisk"]) => ((embedded.running.service.config as { postOpChargeRisk?: ServiceConfig["postOpChargeRisk"] }).postOpChargeRisk = budget);

  /** A fresh counterfactual sender holding recycled USDC, whose op approves the paymaster: charged in postOp. */
  async function attackOp(apiKey = embedded.apiKey) {
    const wallet = await newWallet(embedded, VERSION);
    await mint(embedded, "USDC", wallet.sender, 100n * 10n ** 6n);
    const wire = wireOp(wallet, approveCallData(usdc(), paymaster()));
    return { sender: wallet.sender, answer: await call(endpointFor(apiKey), "pm_sponsorUserOperation", [wire, { token: "USDC", version: VERSION }]) };
  }
  const signedOf = async (sender: Address) => (await store().listSponsorships({ sender })).find((s) => s.status === "signed")!;

  it("fresh senders fill the key's budget, then POSTOP_CHARGE_AT_RISK; the project's budget stops the next key", async () => {
    setBudget({ maxUsdPerKey: "1000000", maxUsdPerProject: "1000000" });
    const first = await attackOp();
    expect(first.answer.status, JSON.stringify(first.answer.body)).to.equal(200);
    const cost = (await signedOf(first.sender)).maxCostUsdMicros;
    expect(cost > 0n).to.equal(true);
    // Room for about two such ops per key (the first one counted), three per project.
    const dollars = (micros: bigint) => `${micros / 1_000_000n}.${(micros % 1_000_000n).toString().padStart(6, "0")}`;
    setBudget({ maxUsdPerKey: dollars((cost * 25n) / 10n), maxUsdPerProject: dollars((cost * 35n) / 10n) });

    const second = await attackOp();
    expect(second.answer.status, JSON.stringify(second.answer.body)).to.equal(200);
    const third = await attackOp();
    expect(third.answer.status, JSON.stringify(third.answer.body)).to.equal(403);
    expect(third.answer.body.data).to.include({ reason: "POSTOP_CHARGE_AT_RISK", scope: "apiKey", token: "USDC" });
    expect((await store().listSponsorships({ sender: third.sender })).length, "nothing recorded for the refused op").to.equal(0);

    const otherKey = await attackOp(secondKey);
    expect(otherKey.answer.status, JSON.stringify(otherKey.answer.body)).to.equal(200);
    const beyondProject = await attackOp(secondKey);
    expect(beyondProject.answer.status).to.equal(403);
    expect(beyondProject.answer.body.data).to.include({ reason: "POSTOP_CHARGE_AT_RISK", scope: "project" });

    // A released reservation frees its share ...
    const released = await signedOf(first.sender);
    await store().releaseSponsorship(released.id);
    const afterRelease = await attackOp(secondKey);
    expect(afterRelease.answer.status, JSON.stringify(afterRelease.answer.body)).to.equal(200);
    // ... until its charge is found unpaid (within the window): then it counts again.
    await store().releaseSponsorship((await signedOf(afterRelease.sender)).id);
    await store().setTokenChargeUnpaid(released.id, true);
    const afterUnpaid = await attackOp(secondKey);
    expect(afterUnpaid.answer.status).to.equal(403);
    expect(afterUnpaid.answer.body.data.reason).to.equal("POSTOP_CHARGE_AT_RISK");
  });

  it("pre-charge mode (the allowance already covers the maximum) is never limited by it", async () => {
    setBudget({ maxUsdPerKey: "0.000001", maxUsdPerProject: "0.000001" });
    expect((await attackOp()).answer.body.data.reason, "postOp charging is refused under this budget").to.equal("POSTOP_CHARGE_AT_RISK");
    // A deployed account whose owner (an unlocked dev account) has already approved the paymaster.
    const owner = embedded.stack.chain.accounts[5]!;
    const factory = embedded.stack.manifest.entryPoints[VERSION].simpleAccountFactory;
    const sender = (await ethCall(embedded, factory, factoryAbi, "getAddress", [owner.address, 77n])) as Address;
    expect((await sendTx(embedded, factory, encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [owner.address, 77n] }))).status).to.equal("0x1");
    await mint(embedded, "USDC", sender, 100n * 10n ** 6n);
    const approve = encodeFunctionData({ abi: abis.token, functionName: "approve", args: [paymaster(), maxUint256] });
    const execute = encodeFunctionData({ abi: accountAbi, functionName: "execute", args: [usdc(), 0n, approve] });
    expect((await sendTx(embedded, sender, execute, owner.address)).status).to.equal("0x1");
    const wallet: Wallet = { owner: privateKeyToAccount(owner.privateKey as Hex), version: VERSION, sender, initCode: "0x" };
    const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(owner.address as Address), { deploy: false }), { token: "USDC", version: VERSION }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
  });
});
