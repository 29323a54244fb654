// The settlement watcher against the embedded local chain and its real SQLite store: sponsor ops over HTTP,
// submit them with handleOps, and drive the watcher with tick() (no poller) to check settlement at the
// EntryPoint's actualGasCost, confirmations, reorgs (evm_snapshot/evm_revert), restarts, expiry and deposits.
import { expect } from "chai";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodeEventLog, encodeFunctionData, parseEther, type Abi } from "viem";
import { ERC20PaymasterV06Artifact, GasTankDepositArtifact, SimpleAccountV06Artifact } from "@paymaster/contracts/artifacts";
import { getUserOpHash, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { parseNetworkConfig } from "../src/config/schema.ts";
import type { NetworkRuntime } from "../src/context.ts";
import { executeCallData, startEmbedded, EMBEDDED_CONFIRMATIONS } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { weiToUsdMicros } from "../src/policy/rules.ts";
import { logKey, matchTokenCharges, type TokenChargeLog, type UserOperationEventLog } from "../src/settlement/logs.ts";
import { cursorNames, depositReference, startWatcher, watcherOptions, WATCHER_DEFAULTS, type Watcher, type WatcherOptions } from "../src/settlement/watcher.ts";
import { parseUsd } from "../src/sponsor/price.ts";
import type { SponsorshipRecord, Store, UsageTotals } from "../src/store/types.ts";
import { allowTank, call, chainRequest, handleOps, newWallet, opFromResponse, signAsOwner, sponsorAndSign, wireOp, type Embedded, type HandleOpsOutcome, type Wallet } from "./helpers/stack.ts";
import { runCli } from "./helpers/cli.ts";

const erc20PaymasterAbi = ERC20PaymasterV06Artifact.abi as Abi;
type Mode = "sponsor" | "erc20" | "user";
type SignedOp = Awaited<ReturnType<typeof signAsOwner>>;

function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

describe("settlement watcher (embedded local chain, real SQLite, tick() by hand)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let store: Store;
  let network: NetworkRuntime;
  let strategyId: string;
  let watchers: Watcher[] = [];
  const silent = createLogger("silent");

  before(async () => {
    embedded = await startEmbedded({ chainPort: 0, servicePort: 0, dataDir: path.join(tempDir("paymaster-settlement-"), "data"), logLevel: "silent", pollMs: 100, watch: false });
    store = embedded.running.service.store;
    network = embedded.running.service.networks.get("local")!;
    strategyId = (await store.getStrategyByCode(embedded.strategyCode))!.id;
    // Totals are kept per capped scope: a generous global cap makes the strategy's usage observable.
    await store.setStrategyRules(strategyId, { caps: { global: { maxWei: 10n ** 21n, maxUsd: "1000000", maxOps: 1_000_000 } } });
  });
  afterEach(async () => {
    for (const watcher of watchers) await watcher.stop();
    watchers = [];
  });
  after(async () => {
    await embedded?.close();
  });

  /** A new watcher instance on the shared store (no poller). */
  function newWatcher(options: Partial<WatcherOptions> = {}): Watcher {
    const watcher = startWatcher({ network, store, logger: silent, options: { poll: false, ...options } });
    watchers.push(watcher);
    return watcher;
  }
  const mine = async (blocks = 1) => {
    for (let i = 0; i < blocks; i++) await chainRequest(embedded, "evm_mine", []);
  };
  const usage = (): Promise<UsageTotals> => store.getUsage(strategyId, "global", "");
  const latestBlock = () => chainRequest<{ number: Hex; hash: Hex; timestamp: Hex }>(embedded, "eth_getBlockByNumber", ["latest", false]);
  const entryPoints = (version: EntryPointVersion) => embedded.stack.manifest.entryPoints[version];
  const price = parseUsd("3000.00");

  /** Asks the service to sponsor a fresh account's first op in `mode` and signs it as the owner. */
  async function sponsored(version: EntryPointVersion, mode: Mode): Promise<{ wallet: Wallet; op: SignedOp; userOpHash: Hex; record: SponsorshipRecord }> {
    const sponsoredOp = await sponsorAndSign(embedded, version, mode);
    expect(sponsoredOp.record?.status, "sponsorship recorded and signed").to.equal("signed");
    expect(sponsoredOp.record.mode).to.equal(mode);
    return sponsoredOp;
  }

  async function submit(op: SignedOp): Promise<NonNullable<HandleOpsOutcome["event"]> & { logs: HandleOpsOutcome["logs"] }> {
    const outcome = await handleOps(embedded, op);
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    expect(outcome.event, "UserOperationEvent").to.not.equal(undefined);
    return { ...outcome.event!, logs: outcome.logs };
  }

  const status = async (userOpHash: Hex) => (await store.findSponsorshipByUserOpHash(userOpHash))!.status;

  it("uses the embedded stack's settings: 1 confirmation, the deposit address of dev account #5, the defaults otherwise", () => {
    const options = watcherOptions(network.config);
    expect(options.confirmations).to.equal(EMBEDDED_CONFIRMATIONS).and.to.equal(1);
    expect(options.depositAddress).to.equal(embedded.stack.chain.accounts[5]!.address);
    expect(options.reorgDepth).to.equal(WATCHER_DEFAULTS.reorgDepth);
    expect(options.expiryGraceSeconds).to.equal(WATCHER_DEFAULTS.expiryGraceSeconds);
    expect(embedded.running.watcher("local"), "watch: false starts none").to.equal(undefined);
  });

  for (const version of ["v0.6", "v0.7", "v0.8"] as const) {
    it(`Sponsor mode ${version}: settles after the confirmation at exactly actualGasCost; usage moves from reserved to spent`, async () => {
      const watcher = newWatcher();
      await watcher.tick();
      const { op, userOpHash, record } = await sponsored(version, "sponsor");
      const before = await usage();
      const event = await submit(op);
      expect(event.userOpHash).to.equal(userOpHash);

      const unconfirmed = await watcher.tick();
      expect(unconfirmed.settled, "the op's block is the head: 0 confirmations").to.equal(0);
      expect(await status(userOpHash)).to.equal("signed");

      await mine();
      const result = await watcher.tick();
      expect(result.settled).to.equal(1);
      expect(result.unmatched).to.equal(0);
      const settled = (await store.findSponsorshipByUserOpHash(userOpHash))!;
      expect(settled.status).to.equal("settled");
      const usd = weiToUsdMicros(event.actualGasCost, price);
      expect(settled.settlement).to.deep.include({ actualGasCostWei: event.actualGasCost, actualCostUsdMicros: usd, actualTokenCost: null, success: true });
      const receipt = await chainRequest<{ blockNumber: Hex; blockHash: Hex; transactionHash: Hex }>(embedded, "eth_getTransactionReceipt", [settled.settlement!.txHash]);
      expect(BigInt(receipt.blockNumber)).to.equal(settled.settlement!.blockNumber);
      expect(receipt.blockHash.toLowerCase()).to.equal(settled.settlement!.blockHash.toLowerCase());

      const after = await usage();
      expect(after.spentWei - before.spentWei).to.equal(event.actualGasCost);
      expect(after.spentUsdMicros - before.spentUsdMicros).to.equal(usd);
      expect(before.reservedWei - after.reservedWei).to.equal(record.maxCostWei);
      expect(after.ops).to.equal(before.ops);

      const again = await watcher.tick();
      expect(again.settled).to.equal(0);
      expect(await usage()).to.deep.equal(after);
    });
  }

  for (const version of ["v0.6", "v0.7"] as const) {
    it(`User Sponsor mode ${version}: the gas tank's balance decreases by exactly actualGasCost and its reservation is freed`, async () => {
      const watcher = newWatcher();
      await watcher.tick();
      const { wallet, op, userOpHash, record } = await sponsored(version, "user");
      const before = await store.getGasTank("local", wallet.sender);
      expect(before.reservedWei).to.equal(record.maxCostWei);
      const event = await submit(op);
      await mine();
      expect((await watcher.tick()).settled).to.equal(1);
      const after = await store.getGasTank("local", wallet.sender);
      expect(before.balanceWei - after.balanceWei).to.equal(event.actualGasCost);
      expect(after.reservedWei).to.equal(0n);
      expect((await store.findSponsorshipByUserOpHash(userOpHash))!.settlement!.actualGasCostWei).to.equal(event.actualGasCost);
    });

    it(`ERC-20 mode ${version}: the settlement's token cost is the paymaster's TokenCharged amount`, async () => {
      const watcher = newWatcher();
      await watcher.tick();
      const { op, userOpHash } = await sponsored(version, "erc20");
      const event = await submit(op);
      const paymaster = entryPoints(version).erc20Paymaster.toLowerCase();
      const charged = event.logs
        .filter((log) => log.address.toLowerCase() === paymaster)
        .map((log) => decodeEventLog({ abi: erc20PaymasterAbi, data: log.data, topics: log.topics as [Hex, ...Hex[]] }))
        .find((e) => e.eventName === "TokenCharged")?.args as { tokenAmount: bigint } | undefined;
      expect(charged, "TokenCharged").to.not.equal(undefined);
      await mine();
      expect((await watcher.tick()).settled).to.equal(1);
      const settlement = (await store.findSponsorshipByUserOpHash(userOpHash))!.settlement!;
      expect(settlement.actualTokenCost).to.equal(charged!.tokenAmount);
      expect(settlement.actualTokenCost! > 0n).to.equal(true);
      expect(settlement.actualGasCostWei).to.equal(event.actualGasCost);
    });
  }

  it("reorg: a settlement whose block is reverted is undone, and redone once the op is included again (counted once)", async () => {
    const watcher = newWatcher();
    await watcher.tick();
    const { op, userOpHash, record } = await sponsored("v0.7", "sponsor");
    const before = await usage();
    const snapshot = await chainRequest<Hex>(embedded, "evm_snapshot", []);
    const first = await submit(op);
    await mine();
    expect((await watcher.tick()).settled).to.equal(1);
    expect((await usage()).spentWei - before.spentWei).to.equal(first.actualGasCost);
    const settledBlock = (await store.findSponsorshipByUserOpHash(userOpHash))!.settlement!.blockNumber;

    expect(await chainRequest<boolean>(embedded, "evm_revert", [snapshot])).to.equal(true);
    await mine(3); // the chain is as long again, but the op's block is an empty one now
    const reorg = await watcher.tick();
    expect(reorg.reorg, "reorg detected").to.not.equal(null);
    expect(reorg.reorg!.from <= settledBlock).to.equal(true);
    expect(reorg.unsettled).to.equal(1);
    expect(reorg.settled).to.equal(0);
    const unsettled = (await store.findSponsorshipByUserOpHash(userOpHash))!;
    expect(unsettled.status).to.equal("signed");
    expect(unsettled.settlement).to.equal(null);
    const undone = await usage();
    expect(undone.spentWei).to.equal(before.spentWei);
    expect(undone.reservedWei, "the reservation is held again").to.equal(before.reservedWei);
    expect(before.reservedWei >= record.maxCostWei).to.equal(true);

    const quiet = await watcher.tick();
    expect([quiet.reorg, quiet.unsettled, quiet.settled]).to.deep.equal([null, 0, 0]);

    const second = await submit(op); // the same signed op, included again on the new chain
    await mine();
    const redo = await watcher.tick();
    expect(redo.settled).to.equal(1);
    const resettled = (await store.findSponsorshipByUserOpHash(userOpHash))!;
    expect(resettled.status).to.equal("settled");
    expect(resettled.settlement!.actualGasCostWei).to.equal(second.actualGasCost);
    const after = await usage();
    expect(after.spentWei - before.spentWei, "spent once").to.equal(second.actualGasCost);
    expect(before.reservedWei - after.reservedWei).to.equal(record.maxCostWei);
  });

  it("restart: a new watcher on the same store resumes from the cursor, and a rescan after a crash counts nothing twice", async () => {
    const first = newWatcher();
    await first.tick();
    const { wallet, op, userOpHash } = await sponsored("v0.6", "user");
    const event = await submit(op);
    await mine();
    expect((await first.tick()).settled).to.equal(1);
    const tank = await store.getGasTank("local", wallet.sender);
    const totals = await usage();
    await first.stop();

    const names = cursorNames("local");
    const cursor = (await store.getCursor(names.block))!;
    const second = newWatcher();
    const resumed = await second.tick();
    expect(resumed.scanned === null || resumed.scanned.from === cursor + 1n, "resumes after the cursor").to.equal(true);
    expect(resumed.settled).to.equal(0);
    await second.stop();

    // A crash after settling but before the cursor moved: the cursor (and its hash) point before the op's block.
    const block = (await store.findSponsorshipByUserOpHash(userOpHash))!.settlement!.blockNumber;
    const earlier = await chainRequest<{ hash: Hex }>(embedded, "eth_getBlockByNumber", [`0x${(block - 2n).toString(16)}`, false]);
    await store.setCursor(names.hash, BigInt(earlier.hash));
    await store.setCursor(names.block, block - 2n);
    const third = newWatcher();
    const rescan = await third.tick();
    expect(rescan.reorg).to.equal(null);
    expect(rescan.scanned!.from).to.equal(block - 1n);
    expect(rescan.alreadySettled).to.equal(1);
    expect(rescan.settled).to.equal(0);
    const tankAfter = await store.getGasTank("local", wallet.sender);
    expect(tankAfter).to.deep.equal(tank);
    expect(tank.balanceWei, "the tank paid once").to.equal(10n ** 17n - event.actualGasCost);
    expect(await usage()).to.deep.equal(totals);
  });

  it("deposits: ETH sent to the deposit address is credited after the confirmation, exactly once (also across a restart)", async () => {
    const depositAddress = network.config.depositAddress!;
    const watcher = newWatcher();
    await watcher.tick();
    const from = embedded.stack.chain.accounts[6]!.address;
    const value = parseEther("0.25");
    const tank0 = await store.getGasTank("local", from);
    const txHash = await chainRequest<Hex>(embedded, "eth_sendTransaction", [{ from, to: depositAddress, value: `0x${value.toString(16)}` }]);
    const txBlock = BigInt((await chainRequest<{ blockNumber: Hex }>(embedded, "eth_getTransactionReceipt", [txHash])).blockNumber);
    const early = await watcher.tick();
    expect(early.safe, "the deposit's block is the head: not confirmed yet").to.equal(txBlock - 1n);
    expect(early.deposits).to.equal(0);
    expect((await store.getGasTank("local", from)).balanceWei).to.equal(tank0.balanceWei);

    // Two more blocks, neither a deposit: a zero-value transaction to the address, ETH sent elsewhere.
    await chainRequest(embedded, "eth_sendTransaction", [{ from: embedded.stack.chain.accounts[7]!.address, to: depositAddress, value: "0x0" }]);
    await chainRequest(embedded, "eth_sendTransaction", [{ from, to: embedded.stack.chain.accounts[9]!.address, value: "0x1" }]);
    const credited = await watcher.tick();
    expect(credited.deposits).to.equal(1);
    const tank1 = await store.getGasTank("local", from);
    expect(tank1.balanceWei - tank0.balanceWei).to.equal(value);
    expect((await store.getGasTank("local", embedded.stack.chain.accounts[7]!.address)).balanceWei).to.equal(0n);

    expect((await watcher.tick()).deposits).to.equal(0);
    await watcher.stop();
    // A restart that rescans the deposit's block (a crash before the cursor moved): still credited once.
    const names = cursorNames("local");
    const earlier = await chainRequest<{ hash: Hex }>(embedded, "eth_getBlockByNumber", [`0x${(txBlock - 1n).toString(16)}`, false]);
    await store.setCursor(names.hash, BigInt(earlier.hash));
    await store.setCursor(names.block, txBlock - 1n);
    const restarted = newWatcher();
    const rescan = await restarted.tick();
    expect(rescan.scanned!.from).to.equal(txBlock);
    expect(rescan.deposits).to.equal(0);
    expect(await store.getGasTank("local", from)).to.deep.equal(tank1);
    // The credit's reference is tied to the transaction: crediting it again by hand is a no-op too.
    await store.creditGasTank("local", from, value, depositReference("local", txHash));
    expect(await store.getGasTank("local", from)).to.deep.equal(tank1);
  });

  it("deposits: a deposit whose block is reverted has its credit reverted", async () => {
    const depositAddress = network.config.depositAddress!;
    const watcher = newWatcher();
    await watcher.tick();
    const from = embedded.stack.chain.accounts[7]!.address;
    const tank0 = await store.getGasTank("local", from);
    const snapshot = await chainRequest<Hex>(embedded, "evm_snapshot", []);
    await chainRequest<Hex>(embedded, "eth_sendTransaction", [{ from, to: depositAddress, value: `0x${parseEther("0.1").toString(16)}` }]);
    await mine();
    expect((await watcher.tick()).deposits).to.equal(1);
    expect((await store.getGasTank("local", from)).balanceWei - tank0.balanceWei).to.equal(parseEther("0.1"));
    expect(await chainRequest<boolean>(embedded, "evm_revert", [snapshot])).to.equal(true);
    await mine(3);
    const result = await watcher.tick();
    expect(result.reorg).to.not.equal(null);
    expect(result.depositsReverted).to.equal(1);
    expect(result.deposits).to.equal(0);
    expect((await store.getGasTank("local", from)).balanceWei).to.equal(tank0.balanceWei);
  });

  /** callData of SimpleAccount.execute(GasTankDeposit, value, depositFor(sender)): the account pays into a tank itself. */
  const depositForCallData = (sender: Address, value: bigint): Hex =>
    encodeFunctionData({
      abi: SimpleAccountV06Artifact.abi as Abi,
      functionName: "execute",
      args: [network.config.depositContract!, value, encodeFunctionData({ abi: GasTankDepositArtifact.abi as Abi, functionName: "depositFor", args: [sender] })],
    });

  /** A fresh v0.7 account holding 1 ETH whose first op (sponsored by the DEMO strategy) pays `value` into its own tank. */
  async function selfDeposit(value: bigint) {
    const wallet = await newWallet(embedded, "v0.7");
    await chainRequest(embedded, "eth_sendTransaction", [{ from: embedded.stack.chain.accounts[4]!.address, to: wallet.sender, value: `0x${parseEther("1").toString(16)}` }]);
    const wire = wireOp(wallet, depositForCallData(wallet.sender, value));
    const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
    expect(status, JSON.stringify(body)).to.equal(200);
    const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
    const event = await submit(op);
    expect(event.success, "the op's calls ran").to.equal(true);
    // The chain automines one transaction per block: the latest block's is the bundle.
    const txHash = (await chainRequest<{ transactions: Hex[] }>(embedded, "eth_getBlockByNumber", ["latest", false])).transactions[0]!;
    const receipt = await chainRequest<{ blockNumber: Hex; to: Address; logs: { address: Address; logIndex: Hex }[] }>(embedded, "eth_getTransactionReceipt", [txHash]);
    const deposited = receipt.logs.filter((l) => l.address.toLowerCase() === network.config.depositContract!.toLowerCase());
    expect(deposited, "one Deposited event").to.have.length(1);
    return { wallet, op, txHash, block: BigInt(receipt.blockNumber), to: receipt.to, logIndex: Number(BigInt(deposited[0]!.logIndex)) };
  }

  it("deposit contract: a SimpleAccount funds its own tank from a user operation (depositFor, an internal call), credited once, also across a rescan; the tank then pays for a User Sponsor op", async () => {
    expect(network.config.depositContract, "the embedded network watches the local stack's GasTankDeposit").to.equal(embedded.stack.manifest.gasTankDeposit);
    const watcher = newWatcher();
    await watcher.tick();
    const value = parseEther("0.3");
    const deposit = await selfDeposit(value);
    // The bundler's transaction goes to the EntryPoint: no plain transfer to any deposit address, only the event.
    expect(deposit.to.toLowerCase()).to.equal(entryPoints("v0.7").entryPoint.toLowerCase());
    const early = await watcher.tick();
    expect([early.deposits, (await store.getGasTank("local", deposit.wallet.sender)).balanceWei], "not confirmed yet").to.deep.equal([0, 0n]);
    await mine();
    const credited = await watcher.tick();
    expect([credited.deposits, credited.contractDeposits]).to.deep.equal([1, 1]);
    const tank = await store.getGasTank("local", deposit.wallet.sender);
    expect(tank.balanceWei).to.equal(value);
    expect((await watcher.tick()).deposits).to.equal(0);
    await watcher.stop();

    // A restart that rescans the deposit's block: credited once all the same, and by its reference (tx + log).
    const names = cursorNames("local");
    const earlier = await chainRequest<{ hash: Hex }>(embedded, "eth_getBlockByNumber", [`0x${(deposit.block - 1n).toString(16)}`, false]);
    await store.setCursor(names.hash, BigInt(earlier.hash));
    await store.setCursor(names.block, deposit.block - 1n);
    const restarted = newWatcher();
    const rescan = await restarted.tick();
    expect(rescan.scanned!.from).to.equal(deposit.block);
    expect([rescan.deposits, rescan.reorg]).to.deep.equal([0, null]);
    expect(await store.getGasTank("local", deposit.wallet.sender)).to.deep.equal(tank);
    await store.creditGasTank("local", deposit.wallet.sender, value, depositReference("local", deposit.txHash, deposit.logIndex));
    expect(await store.getGasTank("local", deposit.wallet.sender)).to.deep.equal(tank);

    // The credited tank pays for the account's next op in User Sponsor mode (once it allows the project).
    await allowTank(store, deposit.wallet.sender, embedded.projectId);
    const wire = wireOp(deposit.wallet, executeCallData(deposit.wallet.owner.address), { deploy: false, nonce: 1n });
    const { status, body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { version: "v0.7" }]);
    expect(status, JSON.stringify(body)).to.equal(200);
    const op = await signAsOwner(embedded, deposit.wallet, opFromResponse(deposit.wallet, wire, body.data));
    const userOpHash = getUserOpHash({ ...op, entryPoint: entryPoints("v0.7").entryPoint, chainId: embedded.stack.chain.chainId } as Parameters<typeof getUserOpHash>[0]);
    const record = (await store.findSponsorshipByUserOpHash(userOpHash))!;
    expect(record.mode).to.equal("user");
    expect((await store.getGasTank("local", deposit.wallet.sender)).reservedWei).to.equal(record.maxCostWei);
    const event = await submit(op);
    await mine();
    expect((await restarted.tick()).settled).to.equal(1);
    const paid = await store.getGasTank("local", deposit.wallet.sender);
    expect([paid.balanceWei, paid.reservedWei]).to.deep.equal([value - event.actualGasCost, 0n]);

    // What the operator sees: `paymaster tank show` on the same database.
    const configFile = path.join(tempDir("paymaster-tank-show-"), "paymaster.json");
    writeFileSync(
      configFile,
      JSON.stringify({
        databasePath: embedded.running.service.config.databasePath,
        networks: [{ name: "local", rpcUrl: embedded.stack.chain.url, entryPoints: network.config.entryPoints, nativeUsdPrice: { type: "fixed", usd: "3000" }, depositContract: network.config.depositContract }],
      }),
    );
    const shown = await runCli(["--config", configFile, "tank", "show", "--network", "local", "--sender", deposit.wallet.sender, "--json"]);
    expect(shown.code, shown.stderr).to.equal(0);
    expect(shown.json).to.deep.include({ sender: deposit.wallet.sender, balanceWei: (value - event.actualGasCost).toString(), reservedWei: "0" });
  });

  it("deposit contract: a deposit whose block is reverted has its credit reverted, and is credited once when the op is included again", async () => {
    const watcher = newWatcher();
    await watcher.tick();
    const snapshot = await chainRequest<Hex>(embedded, "evm_snapshot", []);
    const deposit = await selfDeposit(parseEther("0.1"));
    await mine();
    expect((await watcher.tick()).contractDeposits).to.equal(1);
    expect((await store.getGasTank("local", deposit.wallet.sender)).balanceWei).to.equal(parseEther("0.1"));
    expect(await chainRequest<boolean>(embedded, "evm_revert", [snapshot])).to.equal(true);
    await mine(3);
    const result = await watcher.tick();
    expect(result.reorg).to.not.equal(null);
    expect([result.depositsReverted, result.deposits]).to.deep.equal([1, 0]);
    expect((await store.getGasTank("local", deposit.wallet.sender)).balanceWei).to.equal(0n);
    expect(await store.revertGasTankCredit(depositReference("local", deposit.txHash, deposit.logIndex)), "already reverted").to.equal(false);
    // The same signed op lands again on the new chain (as a bundler would resubmit it; the account's funding went
    // with the old chain too): credited again, once.
    await chainRequest(embedded, "eth_sendTransaction", [{ from: embedded.stack.chain.accounts[4]!.address, to: deposit.wallet.sender, value: `0x${parseEther("1").toString(16)}` }]);
    expect((await submit(deposit.op)).success).to.equal(true);
    await mine();
    const again = await watcher.tick();
    expect([again.contractDeposits, again.settled]).to.deep.equal([1, 1]);
    expect((await watcher.tick()).deposits).to.equal(0);
    expect((await store.getGasTank("local", deposit.wallet.sender)).balanceWei).to.equal(parseEther("0.1"));
  });

  it("expiry: an unused signature's reservation is released once validUntil plus the grace period has passed (chain time)", async () => {
    const watcher = newWatcher();
    await watcher.tick();
    const sponsor = await sponsored("v0.7", "sponsor");
    const user = await sponsored("v0.6", "user");
    const reserved = await usage();
    const tank = await store.getGasTank("local", user.wallet.sender);
    expect(tank.reservedWei).to.equal(user.record.maxCostWei);
    const grace = watcher.options.expiryGraceSeconds;
    // The two sponsorships may have been signed a second apart: each is released only once its own
    // validUntil + grace is in the past.
    const earliest = Math.min(sponsor.record.validUntil, user.record.validUntil) + grace;
    const expiry = Math.max(sponsor.record.validUntil, user.record.validUntil) + grace;

    // At validUntil + grace exactly: not yet (released only when validUntil + grace < now).
    await chainRequest(embedded, "evm_setNextBlockTimestamp", [`0x${earliest.toString(16)}`]);
    await mine();
    expect(Number(BigInt((await latestBlock()).timestamp))).to.equal(earliest);
    await watcher.tick();
    expect(await status(sponsor.userOpHash)).to.equal("signed");
    expect(await status(user.userOpHash)).to.equal("signed");

    await chainRequest(embedded, "evm_setNextBlockTimestamp", [`0x${(expiry + 1).toString(16)}`]);
    await mine();
    const result = await watcher.tick();
    expect(result.released >= 2).to.equal(true);
    expect(await status(sponsor.userOpHash)).to.equal("released");
    expect(await status(user.userOpHash)).to.equal("released");
    const after = await usage();
    expect(reserved.reservedWei - after.reservedWei).to.equal(sponsor.record.maxCostWei);
    expect(after.spentWei).to.equal(reserved.spentWei);
    expect((await store.getGasTank("local", user.wallet.sender)).reservedWei).to.equal(0n);

    // The op can no longer be included (AA32), so nothing comes back to settle.
    const late = await handleOps(embedded, sponsor.op);
    expect(late.reverted).to.equal(true);
    expect(late.failedOp).to.match(/AA32/);
  });
});

describe("settlement watcher wiring", function () {
  this.timeout(120_000);

  it("startService runs a polling watcher per network that settles on its own, and close() stops it", async () => {
    const embedded = await startEmbedded({ chainPort: 0, servicePort: 0, dataDir: path.join(tempDir("paymaster-settlement-wired-"), "data"), logLevel: "silent", pollMs: 100 });
    try {
      // The watcher starts once this process holds the network's leadership (at once on SQLite).
      let watcher = embedded.running.watcher("local");
      for (let i = 0; i < 100 && watcher === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        watcher = embedded.running.watcher("local");
      }
      expect(watcher, "the local network's watcher").to.not.equal(undefined);
      expect(watcher!.options.pollMs).to.equal(500);
      const wallet = await newWallet(embedded, "v0.7");
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const { body } = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
      const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
      const outcome = await handleOps(embedded, op);
      expect(outcome.reverted, outcome.failedOp).to.equal(false);
      await chainRequest(embedded, "evm_mine", []);
      const store = embedded.running.service.store;
      const deadline = Date.now() + 10_000;
      let record = await store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
      while (record?.status !== "settled" && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        record = await store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
      }
      expect(record?.status).to.equal("settled");
      expect(record!.settlement!.actualGasCostWei).to.equal(outcome.event!.actualGasCost);
    } finally {
      await embedded.close();
    }
  });
});

describe("token charges of a bundle", () => {
  const P = "0x1111111111111111111111111111111111111111" as const;
  const P2 = "0x2222222222222222222222222222222222222222" as const;
  const sender = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as `0x${string}`;
  const at = (tx: string, logIndex: number) => ({ txHash: tx as Hex, blockNumber: 7n, blockHash: `0x${"ab".repeat(32)}` as Hex, logIndex });
  const op = (tx: string, logIndex: number, paymaster: `0x${string}`, from: number): UserOperationEventLog => ({
    ...at(tx, logIndex),
    entryPoint: sender(999),
    userOpHash: `0x${logIndex.toString(16).padStart(64, "0")}` as Hex,
    sender: sender(from),
    paymaster,
    nonce: 0n,
    success: true,
    actualGasCost: 1n,
    actualGasUsed: 1n,
  });
  const charge = (tx: string, logIndex: number, paymaster: `0x${string}`, from: number, tokenAmount: bigint, paid = true): TokenChargeLog => ({
    ...at(tx, logIndex),
    paymaster,
    sender: sender(from),
    token: sender(1000),
    paid,
    tokenAmount,
  });

  it("gives each op the charge its paymaster emitted after the previous op it paid for, never another op's", () => {
    const ops = [op("0xa", 2, P, 1), op("0xa", 5, P, 2), op("0xa", 7, P, 3), op("0xa", 9, P, 4), op("0xa", 11, P2, 6), op("0xb", 0, P, 5), op("0xb", 3, P, 7)];
    const charges = [
      charge("0xa", 1, P, 1, 10n),
      charge("0xa", 4, P, 2, 20n),
      charge("0xa", 8, P, 4, 40n, false),
      charge("0xa", 10, P2, 6, 60n),
      charge("0xb", 2, P, 9, 90n), // another sender's charge cannot be op 7's
    ];
    const matched = matchTokenCharges(ops, charges);
    const amountOf = (o: UserOperationEventLog) => matched.get(logKey(o));
    expect(amountOf(ops[0]!)?.tokenAmount).to.equal(10n);
    expect(amountOf(ops[1]!)?.tokenAmount).to.equal(20n);
    expect(amountOf(ops[2]!), "no charge of its own").to.equal(undefined);
    expect(amountOf(ops[3]!)).to.deep.include({ tokenAmount: 40n, paid: false });
    expect(amountOf(ops[4]!)?.tokenAmount).to.equal(60n);
    expect(amountOf(ops[5]!)).to.equal(undefined);
    expect(amountOf(ops[6]!)).to.equal(undefined);
  });
});

describe("settlement configuration", () => {
  const raw = {
    name: "local",
    rpcUrl: "http://127.0.0.1:1",
    entryPoints: { "v0.7": { verifyingPaymaster: "0x1111111111111111111111111111111111111111", erc20Paymaster: "0x2222222222222222222222222222222222222222" } },
    signerKeys: ["0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"],
    nativeUsdPrice: { type: "fixed", usd: "3000" },
  };

  it("accepts the watcher settings and leaves them out when not given (the watcher's defaults apply)", () => {
    const plain = parseNetworkConfig(raw);
    expect(plain.ok).to.equal(true);
    if (!plain.ok) return;
    expect(plain.value).to.not.have.any.keys("confirmations", "reorgDepth", "expiryGraceSeconds", "depositAddress", "pollMs", "logBlockRange");
    expect(watcherOptions(plain.value)).to.deep.include({ confirmations: 2, reorgDepth: 64, expiryGraceSeconds: 120, pollMs: 5000, logBlockRange: 2000 });

    const set = parseNetworkConfig({
      ...raw,
      confirmations: 0,
      reorgDepth: 10,
      expiryGraceSeconds: 30,
      depositAddress: "0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc",
      pollMs: 1000,
      logBlockRange: 500,
    });
    expect(set.ok).to.equal(true);
    if (!set.ok) return;
    expect(set.value).to.deep.include({ confirmations: 0, reorgDepth: 10, expiryGraceSeconds: 30, depositAddress: "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc", pollMs: 1000, logBlockRange: 500 });
    expect(watcherOptions(set.value)).to.deep.include({ confirmations: 0, reorgDepth: 10, expiryGraceSeconds: 30, pollMs: 1000, logBlockRange: 500 });
  });

  it("refuses out-of-range watcher settings, naming each field", () => {
    const bad = parseNetworkConfig({ ...raw, confirmations: -1, reorgDepth: 0, expiryGraceSeconds: 1.5, depositAddress: "0x9965507D1a55bcC2695C58ba16FB37d819B0A4DC", pollMs: 5, logBlockRange: 0 });
    expect(bad.ok).to.equal(false);
    if (bad.ok) return;
    const fields = bad.issues.map((issue) => issue.path.join("."));
    expect(fields).to.include.members(["confirmations", "reorgDepth", "expiryGraceSeconds", "depositAddress", "pollMs", "logBlockRange"]);
  });
});
