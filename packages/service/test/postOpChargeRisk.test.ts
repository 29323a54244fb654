// Audit item 3: charge-in-postOp mode can be left unpaid by an op whose own execution is defeated after the
// service simulated it. On the embedded chain with the real SQLite store and the settlement watcher: a sender
// gets at most one outstanding postOp-charge sponsorship; an op that approves the paymaster and then reverts
// (its balance was moved away between signing and inclusion) leaves the charge unpaid; the watcher records
// that from the chain, and the pipeline then offers that sender pre-charge only.
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodeEventLog, encodeFunctionData, maxUint256, parseAbi, type Abi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ERC20PaymasterV06Artifact, EntryPointV07Artifact } from "@paymaster/contracts/artifacts";
import { decodeErc20PaymasterData, decodePaymasterAndData, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import type { NetworkRuntime } from "../src/context.ts";
import { startEmbedded } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { startWatcher, type Watcher } from "../src/settlement/watcher.ts";
import type { Store } from "../src/store/types.ts";
import { abis, call, chainRequest, ethCall, handleOps, mint, opFromResponse, sendTx, signAsOwner, wireOp, type Embedded, type Wallet } from "./helpers/stack.ts";

const accountAbi = {
  "v0.6": parseAbi(["function execute(address dest, uint256 value, bytes func)", "function executeBatch(address[] dest, bytes[] func)"]),
  "v0.7": parseAbi(["function execute(address dest, uint256 value, bytes func)", "function executeBatch(address[] dest, uint256[] value, bytes[] func)"]),
};
const factoryAbi = parseAbi(["function createAccount(address owner, uint256 salt) returns (address)", "function getAddress(address owner, uint256 salt) view returns (address)"]);
const erc20PaymasterAbi = ERC20PaymasterV06Artifact.abi as Abi;

describe("charge-in-postOp risk: one outstanding per sender, unpaid charges recorded by the watcher (audit item 3)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let store: Store;
  let network: NetworkRuntime;
  let watcher: Watcher;

  before(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "paymaster-postop-risk-"));
    embedded = await startEmbedded({ chainPort: 0, servicePort: 0, dataDir: path.join(dir, "data"), logLevel: "silent", pollMs: 100, watch: false });
    store = embedded.running.service.store;
    network = embedded.running.service.networks.get("local")!;
    watcher = startWatcher({ network, store, logger: createLogger("silent"), options: { poll: false } });
  });
  after(async () => {
    await watcher?.stop();
    await embedded?.close();
  });

  const usdc = () => embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
  const paymasterOf = (version: EntryPointVersion) => embedded.stack.manifest.entryPoints[version].erc20Paymaster;
  const sponsor = (wire: unknown, version: EntryPointVersion) => call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { token: "USDC", ...(version === "v0.7" ? { version } : {}) }]);
  /** chargeMode byte of a returned ERC-20 paymasterAndData (after address [+ gas limits] + window + token + rate). */
  const chargeModeOf = (version: EntryPointVersion, paymasterAndData: string) => {
    const offset = version === "v0.6" ? 84 : 116;
    return paymasterAndData.slice(2 + 2 * offset, 4 + 2 * offset);
  };

  /** A deployed account owned by an unlocked dev account (so the test can move its tokens directly), holding 1000 USDC. */
  async function deployedWallet(version: EntryPointVersion, devIndex: number, salt: bigint): Promise<Wallet> {
    const dev = embedded.stack.chain.accounts[devIndex]!;
    const owner = privateKeyToAccount(dev.privateKey as Hex);
    const factory = embedded.stack.manifest.entryPoints[version].simpleAccountFactory;
    const sender = (await ethCall(embedded, factory, factoryAbi as Abi, "getAddress", [owner.address, salt])) as Address;
    expect((await sendTx(embedded, factory, encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [owner.address, salt] }))).status).to.equal("0x1");
    await mint(embedded, "USDC", sender, 1_000n * 10n ** 6n);
    return { owner, version, sender, initCode: "0x" };
  }

  const approve = (spender: Address, amount: bigint) => encodeFunctionData({ abi: abis.token, functionName: "approve", args: [spender, amount] });
  const transfer = (to: Address, amount: bigint) => encodeFunctionData({ abi: abis.token, functionName: "transfer", args: [to, amount] });
  const batch = (version: EntryPointVersion, calls: { to: Address; data: Hex }[]) =>
    version === "v0.6"
      ? encodeFunctionData({ abi: accountAbi["v0.6"], functionName: "executeBatch", args: [calls.map((c) => c.to), calls.map((c) => c.data)] })
      : encodeFunctionData({ abi: accountAbi["v0.7"], functionName: "executeBatch", args: [calls.map((c) => c.to), calls.map(() => 0n), calls.map((c) => c.data)] });

  for (const [i, version] of (["v0.6", "v0.7"] as const).entries()) {
    it(`${version}: approve-then-revert leaves the postOp charge unpaid; the watcher records it and the sender gets pre-charge only`, async () => {
      const wallet = await deployedWallet(version, 6 + i, 31n + BigInt(i));
      const paymaster = paymasterOf(version);
      const elsewhere = embedded.stack.chain.accounts[9]!.address as Address;

      // The op approves the paymaster and moves 900 USDC away: fine when simulated (1000 held).
      const wire = wireOp(wallet, batch(version, [{ to: usdc(), data: approve(paymaster, maxUint256) }, { to: usdc(), data: transfer(elsewhere, 900n * 10n ** 6n) }]), { deploy: false });
      const first = await sponsor(wire, version);
      expect(first.status, JSON.stringify(first.body)).to.equal(200);
      expect(chargeModeOf(version, first.body.data.userOpResponse.paymasterAndData), "charge in postOp (no allowance yet)").to.equal("00");

      // A second postOp-charge op of the same sender (another nonce key) while the first is outstanding is refused.
      const second = await sponsor(wireOp(wallet, batch(version, [{ to: usdc(), data: approve(paymaster, maxUint256) }]), { deploy: false, nonce: 1n << 64n }), version);
      expect(second.status).to.equal(409);
      expect(second.body.data.reason).to.equal("POSTOP_CHARGE_PENDING");

      // Before inclusion the owner moves 200 USDC away directly: the op's transfer of 900 now reverts, which
      // also undoes its approve.
      const execute = encodeFunctionData({ abi: accountAbi[version], functionName: "execute", args: [usdc(), 0n, transfer(elsewhere, 200n * 10n ** 6n)] });
      expect((await sendTx(embedded, wallet.sender, execute, wallet.owner.address)).status).to.equal("0x1");
      const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, first.body.data));
      const outcome = await handleOps(embedded, op);
      expect(outcome.reverted, outcome.failedOp).to.equal(false);
      expect(outcome.event!.success).to.equal(false);
      const names = outcome.logs
        .map((log) => {
          for (const abi of [erc20PaymasterAbi, EntryPointV07Artifact.abi as Abi]) {
            try {
              return decodeEventLog({ abi, data: log.data, topics: log.topics as [Hex, ...Hex[]] }).eventName;
            } catch {
              // not this ABI's event
            }
          }
          return undefined;
        })
        .filter((n) => n !== undefined);
      expect(names).to.not.include("TokenCharged");
      expect(names).to.include(version === "v0.6" ? "TokenChargeUnpaid" : "PostOpRevertReason");

      // The watcher settles it from the chain and records the unpaid charge.
      expect(await store.hasUnpaidTokenCharge("local", wallet.sender)).to.equal(false);
      await chainRequest(embedded, "evm_mine", []);
      const tick = await watcher.tick();
      expect(tick.settled).to.be.greaterThan(0);
      expect(await store.hasUnpaidTokenCharge("local", wallet.sender)).to.equal(true);

      // Charge in postOp is now refused for this sender, with what to approve instead...
      const again = await sponsor(wireOp(wallet, batch(version, [{ to: usdc(), data: approve(paymaster, maxUint256) }]), { deploy: false, nonce: 1n }), version);
      expect(again.status).to.equal(403);
      expect(again.body.data.reason).to.equal("TOKEN_CHARGE_UNPAID");
      expect(BigInt(again.body.data.required) > 0n).to.equal(true);

      // ...and pre-charge still works once the sender approved the paymaster itself.
      const approveDirect = encodeFunctionData({ abi: accountAbi[version], functionName: "execute", args: [usdc(), 0n, approve(paymaster, maxUint256)] });
      expect((await sendTx(embedded, wallet.sender, approveDirect, wallet.owner.address)).status).to.equal("0x1");
      const pre = await sponsor(wireOp(wallet, batch(version, [{ to: usdc(), data: transfer(elsewhere, 1n) }]), { deploy: false, nonce: 1n }), version);
      expect(pre.status, JSON.stringify(pre.body)).to.equal(200);
      expect(chargeModeOf(version, pre.body.data.userOpResponse.paymasterAndData), "pre-charge").to.equal("01");
    });
  }

  for (const [i, version] of (["v0.6", "v0.7"] as const).entries()) {
    it(`${version}: signs what the hardened contracts require: a bounded window (never validUntil 0) and a postOp limit of at least minPostOpGasLimit`, async () => {
      const wallet = await deployedWallet(version, 10 + i, 51n + BigInt(i));
      const paymaster = paymasterOf(version);
      const min = network.chain!.erc20[version]!.minPostOpGasLimit;
      expect(min).to.equal((await ethCall(embedded, paymaster, erc20PaymasterAbi, "minPostOpGasLimit", [])) as bigint);
      const wire = wireOp(wallet, batch(version, [{ to: usdc(), data: approve(paymaster, maxUint256) }]), { deploy: false });
      const { status, body } = await sponsor(wire, version);
      expect(status, JSON.stringify(body)).to.equal(200);
      const response = body.data.userOpResponse;
      const fields = version === "v0.6" ? decodePaymasterAndData("v0.6", response.paymasterAndData) : decodePaymasterAndData("v0.7", response.paymasterAndData);
      const data = decodeErc20PaymasterData(fields.paymasterData);
      expect(data.validUntil > 0).to.equal(true);
      expect(data.validUntil - data.validAfter <= 86_400).to.equal(true); // the contracts' MAX_VALIDITY_WINDOW
      // v0.7: paymasterPostOpGasLimit; v0.6 runs postOp under verificationGasLimit.
      const postOpLimit = version === "v0.7" ? BigInt(response.paymasterPostOpGasLimit) : BigInt(response.verificationGasLimit);
      expect(postOpLimit >= min, `${postOpLimit} < ${min}`).to.equal(true);
    });
  }

  it("a settlement reorganised away clears the unpaid mark with it", async () => {
    const version = "v0.6";
    const wallet = await deployedWallet(version, 8, 41n);
    const paymaster = paymasterOf(version);
    const elsewhere = embedded.stack.chain.accounts[9]!.address as Address;
    const wire = wireOp(wallet, batch(version, [{ to: usdc(), data: approve(paymaster, maxUint256) }, { to: usdc(), data: transfer(elsewhere, 900n * 10n ** 6n) }]), { deploy: false });
    const first = await sponsor(wire, version);
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    const execute = encodeFunctionData({ abi: accountAbi[version], functionName: "execute", args: [usdc(), 0n, transfer(elsewhere, 200n * 10n ** 6n)] });
    expect((await sendTx(embedded, wallet.sender, execute, wallet.owner.address)).status).to.equal("0x1");
    await watcher.tick();
    const snapshot = await chainRequest<Hex>(embedded, "evm_snapshot", []);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, first.body.data)));
    expect(outcome.event!.success).to.equal(false);
    await chainRequest(embedded, "evm_mine", []);
    await watcher.tick();
    expect(await store.hasUnpaidTokenCharge("local", wallet.sender)).to.equal(true);

    await chainRequest(embedded, "evm_revert", [snapshot]);
    for (let n = 0; n < 3; n++) await chainRequest(embedded, "evm_mine", []);
    const tick = await watcher.tick();
    expect(tick.reorg).to.not.equal(null);
    expect(tick.unsettled).to.be.greaterThan(0);
    expect(await store.hasUnpaidTokenCharge("local", wallet.sender)).to.equal(false);
  });
});
