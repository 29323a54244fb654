// The chain reads kept in memory off the request path (issue 38, docs/pipeline.md "Reads kept in memory"),
// against the real local chain: a paymaster's deposit kept per block (read fresh near its limit, read again
// for a new block, never an older block's for a newer request), a Chainlink price kept for a while (read again
// once its round passes the source's max age, refused while it stays stale), and a node that stops answering
// (through a real TCP proxy): the kept values answer within their bound, then the request's own read fails
// with CHAIN_UNAVAILABLE; nothing is signed on what the node no longer confirms.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { encodeFunctionData, type Abi } from "viem";
import { EntryPointV07Artifact } from "@paymaster/contracts/artifacts";
import type { Address, Hex } from "@paymaster/shared";
import { createBlockReads } from "../src/chain/blockReads.ts";
import { createMarket } from "../src/chain/market.ts";
import { createChainRpc, type ChainRpc, type RpcObserver } from "../src/chain/rpc.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { RpcError } from "../src/errors.ts";
import { startService } from "../src/server.ts";
import { createDepositGuard } from "../src/sponsor/deposit.ts";
import { createPriceOracle } from "../src/sponsor/price.ts";
import { rejection } from "./helpers/rejection.ts";
import { startTcpProxy, type TcpProxy } from "./helpers/tcpProxy.ts";
import { chainRequest, clientGasFields, newWallet, sendTx, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const entryPointAbi = EntryPointV07Artifact.abi as Abi;

/** A chain client that counts its eth_call attempts (the reads that reached the node). */
function countingRpc(url: string, options: { timeoutMs?: number; deadlineMs?: number } = {}): { rpc: ChainRpc; calls: () => number } {
  let calls = 0;
  const observer: RpcObserver = {
    attempt: (_upstream, method) => void (method === "eth_call" && calls++),
    upstreamState: () => undefined,
    failover: () => undefined,
  };
  return { rpc: createChainRpc(url, { ...options, observer }), calls: () => calls };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("chain reads kept in memory (deposit per block, prices, a node that stops answering)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  const cleanups: (() => unknown)[] = [];
  before(async () => {
    embedded = await startTestStack();
  });
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
  });
  after(async () => {
    await embedded?.close();
  });

  describe("the deposit guard's deposit, kept per block", () => {
    const entryPoint = () => embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    let next = 10;
    /** A dev account as the "paymaster": its EntryPoint deposit set to `wei` (it can withdraw itself). */
    async function paymasterWithDeposit(wei: bigint): Promise<Address> {
      const account = embedded.stack.chain.accounts[next++]!.address;
      const data = encodeFunctionData({ abi: entryPointAbi, functionName: "depositTo", args: [account] });
      const hash = await chainRequest<Hex>(embedded, "eth_sendTransaction", [{ from: embedded.stack.owner.address, to: entryPoint(), data, value: `0x${wei.toString(16)}` }]);
      await chainRequest(embedded, "eth_getTransactionReceipt", [hash]);
      return account;
    }
    async function withdraw(paymaster: Address, wei: bigint): Promise<void> {
      const data = encodeFunctionData({ abi: entryPointAbi, functionName: "withdrawTo", args: [paymaster, wei] });
      expect((await sendTx(embedded, entryPoint(), data, paymaster)).status).to.equal("0x1");
    }
    const blockNumber = async () => BigInt(await chainRequest<Hex>(embedded, "eth_blockNumber", []));
    function guard() {
      const { rpc, calls } = countingRpc(embedded.stack.chain.url);
      cleanups.push(() => rpc.close());
      const reads = createBlockReads();
      // A network name of its own: no sponsorship of the store is outstanding under it.
      const deposits = createDepositGuard(rpc, embedded.running.service.store, `reads-${next}`, reads);
      return { rpc, calls, reads, deposits };
    }
    const M = 1_000_000n; // wei: the deposits below are counted in these

    it("far from its limit, the kept deposit answers a request without a read", async () => {
      const paymaster = await paymasterWithDeposit(1_000n * M);
      const { calls, deposits } = guard();
      const block = await blockNumber();
      await deposits.check({ entryPoint: entryPoint(), paymaster, kind: "verifying", block, maxCostWei: 100n * M });
      const after = calls();
      await deposits.check({ entryPoint: entryPoint(), paymaster, kind: "verifying", block, maxCostWei: 100n * M });
      expect(calls(), "the second check of the block read nothing").to.equal(after);
    });

    it("near its limit, a deposit drained since it was kept is read fresh, and the op refused", async () => {
      const paymaster = await paymasterWithDeposit(1_000n * M);
      const { deposits } = guard();
      const block = await blockNumber();
      await deposits.check({ entryPoint: entryPoint(), paymaster, kind: "verifying", block, maxCostWei: 100n * M }); // keeps 1000, holds 100
      // The paymaster's owner withdraws 150 in the next block; the request still has the kept block's snapshot.
      await withdraw(paymaster, 150n * M);
      // The kept 1000 would leave 1000 - 100 - 810 = 90 (< 10% of 1000): near the limit, so a read now decides: 850 - 100 < 810.
      const error = await rejection(deposits.check({ entryPoint: entryPoint(), paymaster, kind: "verifying", block, maxCostWei: 810n * M }));
      expect(error).to.be.instanceOf(RpcError);
      expect((error as RpcError).reason).to.equal("PAYMASTER_DEPOSIT_LOW");
      expect((error as RpcError).details).to.include({ depositWei: (850n * M).toString(), outstandingWei: (100n * M).toString() });
    });

    it("a request at a newer block never gets an older block's deposit: it reads, unless the new block's refresh has", async () => {
      const paymaster = await paymasterWithDeposit(1_000n * M);
      const { calls, reads, deposits } = guard();
      const kept = await blockNumber();
      expect(await deposits.deposit(entryPoint(), paymaster, kept)).to.equal(1_000n * M);
      await withdraw(paymaster, 700n * M);
      const drained = await blockNumber();
      expect(drained > kept).to.equal(true);
      // No refresh heard of the new block: the request reads it itself.
      let before = calls();
      expect(await deposits.deposit(entryPoint(), paymaster, drained)).to.equal(300n * M);
      expect(calls(), "read on the request path").to.equal(before + 1);
      // The next block, heard of first (as the market's poller tells the reads): read in the background, the
      // request then reads nothing.
      await withdraw(paymaster, 100n * M);
      const later = await blockNumber();
      reads.refresh(later);
      for (let i = 0; i < 100 && calls() === before + 1; i++) await sleep(10);
      expect(calls(), "the refresh read it").to.equal(before + 2);
      before = calls();
      expect(await deposits.deposit(entryPoint(), paymaster, later)).to.equal(200n * M);
      expect(calls(), "nothing read on the request path").to.equal(before);
    });

    it("a block change the market's poller sees refreshes the kept deposit before requests ask", async () => {
      const paymaster = await paymasterWithDeposit(1_000n * M);
      const { rpc, calls, reads, deposits } = guard();
      const market = createMarket(rpc, { pollMs: 50, maxAgeMs: 100 });
      cleanups.push(() => market.stop());
      market.onBlock((block) => reads.refresh(block));
      const first = await market.current();
      expect(await deposits.deposit(entryPoint(), paymaster, first.blockNumber)).to.equal(1_000n * M);
      const kept = calls();
      await withdraw(paymaster, 800n * M);
      // The poller sees the new block and the kept deposit is read again, with no request asking.
      for (let i = 0; i < 300 && calls() === kept; i++) await sleep(20);
      expect(calls(), "read again in the background").to.equal(kept + 1);
      // Listeners hear of a block before the snapshot's own reads come back (src/chain/market.ts): wait for those.
      let snapshot = await market.current();
      for (let i = 0; i < 300 && snapshot.blockNumber === first.blockNumber; i++) {
        await sleep(20);
        snapshot = await market.current();
      }
      expect(snapshot.blockNumber > first.blockNumber, "the snapshot moved on").to.equal(true);
      expect(await deposits.deposit(entryPoint(), paymaster, snapshot.blockNumber)).to.equal(200n * M);
      expect(calls(), "from memory").to.equal(kept + 1);
    });
  });

  describe("Chainlink prices, kept and read again in the background", () => {
    let feeds = 0;
    /**
     * A price feed on the chain: a contract answering latestRoundData() with (1, slot 1, 0, slot 2, 1) and
     * decimals() with 8, its answer and updatedAt set through storage as an oracle's update would.
     */
    async function priceFeed(): Promise<{ feed: Address; set(answer: bigint, updatedAt: number): Promise<void> }> {
      const feed = `0x${(0xfeed0000n + BigInt(++feeds)).toString(16).padStart(40, "0")}` as Address;
      // PUSH1 0 CALLDATALOAD PUSH1 0xe0 SHR PUSH4 decimals() EQ PUSH1 0x2a JUMPI
      // latestRoundData: mstore(0, 1) mstore(0x20, sload(1)) mstore(0x60, sload(2)) mstore(0x80, 1) return(0, 0xa0)
      // 0x2a: JUMPDEST mstore(0, 8) return(0, 0x20)
      const code = "0x60003560e01c63313ce56714602a576001600052600154602052600254606052600160805260a06000f35b600860005260206000f3";
      await chainRequest(embedded, "hardhat_setCode", [feed, code]);
      const word = (value: bigint) => `0x${value.toString(16).padStart(64, "0")}`;
      return {
        feed,
        async set(answer, updatedAt) {
          await chainRequest(embedded, "hardhat_setStorageAt", [feed, "0x1", word(answer)]);
          await chainRequest(embedded, "hardhat_setStorageAt", [feed, "0x2", word(BigInt(updatedAt))]);
        },
      };
    }

    it("a kept price whose round passed the source's max age is read again: refused while the feed stays stale, taken once it updates", async () => {
      const { feed, set } = await priceFeed();
      const updated = Math.floor(Date.now() / 1000);
      await set(3_000n * 10n ** 8n, updated);
      let clock = updated * 1000 + 1_000;
      const { rpc, calls } = countingRpc(embedded.stack.chain.url);
      cleanups.push(() => rpc.close());
      // Kept for ten minutes, so that only the round's age can send it back to the feed.
      const oracle = createPriceOracle(rpc, { ttlMs: 600_000, now: () => clock });
      cleanups.push(() => oracle.stop());
      const source = { type: "chainlink" as const, feed, maxAgeSeconds: 60 };
      expect(await oracle.usd(source)).to.deep.equal({ numerator: 3_000n * 10n ** 8n, denominator: 10n ** 8n });
      let before = calls();
      clock += 30_000;
      await oracle.usd(source);
      expect(calls(), "still within its max age: from memory").to.equal(before);
      clock += 31_000; // the round is now 62 s old
      const stale = await rejection(oracle.usd(source));
      expect(stale).to.be.instanceOf(RpcError);
      expect((stale as RpcError).reason).to.equal("CHAIN_UNAVAILABLE");
      expect((stale as RpcError).message).to.match(/stale/);
      expect(calls(), "the feed was read again").to.be.greaterThan(before);
      await set(3_100n * 10n ** 8n, updated + 61);
      before = calls();
      expect(await oracle.usd(source)).to.deep.equal({ numerator: 3_100n * 10n ** 8n, denominator: 10n ** 8n });
      expect(calls()).to.be.greaterThan(before);
    });

    it("read again in the background while used; once the node stops answering, the kept price answers until its TTL, then the request's read fails", async () => {
      const { feed, set } = await priceFeed();
      await set(2_500n * 10n ** 8n, Math.floor(Date.now() / 1000));
      const chainPort = Number(new URL(embedded.stack.chain.url).port);
      const proxy: TcpProxy = await startTcpProxy({ host: "127.0.0.1", port: chainPort });
      cleanups.push(() => proxy.close());
      const { rpc, calls } = countingRpc(proxy.url, { timeoutMs: 300, deadlineMs: 400 });
      cleanups.push(() => rpc.close());
      const oracle = createPriceOracle(rpc, { ttlMs: 1_500, refreshMs: 100 });
      cleanups.push(() => oracle.stop());
      const source = { type: "chainlink" as const, feed };
      await oracle.usd(source);
      const before = calls();
      await sleep(350);
      expect(calls(), "read again in the background").to.be.greaterThan(before);
      await proxy.setMode("hang");
      const lastGood = Date.now();
      expect(await oracle.usd(source), "within the TTL: from memory").to.deep.equal({ numerator: 2_500n * 10n ** 8n, denominator: 10n ** 8n });
      await sleep(Math.max(0, lastGood + 1_700 - Date.now()));
      const error = await rejection(oracle.usd(source));
      expect(error).to.be.instanceOf(RpcError);
      expect((error as RpcError).reason).to.equal("CHAIN_UNAVAILABLE");
    });
  });

  describe("a node that stops answering the background refresh", () => {
    it("signs from the kept block snapshot within its bound, then answers CHAIN_UNAVAILABLE: never a signature past it", async () => {
      const chainPort = Number(new URL(embedded.stack.chain.url).port);
      const proxy = await startTcpProxy({ host: "127.0.0.1", port: chainPort });
      cleanups.push(() => proxy.close());
      // Without the final simulation, a data call with the client's gas for a fresh account asks the chain
      // nothing of its own: only the kept market snapshot and deposit stand between it and a signature.
      const { rpcTimeoutMs: _t, rpcDeadlineMs: _d, ...network } = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: proxy.url, signerKey: embedded.stack.signer.privateKey });
      const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-reads-")), "data");
      const running = await startService(embeddedConfig({ ...network, skipFinalSimulation: true }, dataDir, 0, "silent"), { pollMs: 100, watch: false });
      cleanups.push(() => running.close());
      await running.initialised;
      const store = running.service.store;
      const project = await store.createProject("reads");
      const { plaintext } = await store.createApiKey(project.id);
      await store.createStrategy({ projectId: project.id, code: "READS", name: "READS" });
      const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
      const gas = await clientGasFields(embedded);
      const data = async () => {
        const wallet = await newWallet(embedded, "v0.7");
        const op = { ...wireOp(wallet, executeCallData(wallet.owner.address)), ...gas };
        const response = await fetch(`${running.url}/rpc/v1/local?apiKey=${plaintext}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_getPaymasterData", params: [op, entryPoint, "0x7a69", { strategy_code: "READS" }] }),
        });
        return (await response.json()) as { result?: { paymasterData: Hex }; error?: { data?: { reason?: string } } };
      };
      const signed = await data();
      expect(signed.error, JSON.stringify(signed.error)).to.equal(undefined);
      await proxy.setMode("hang");
      // The market snapshot is kept for 2 poll intervals (200 ms) past the poller's last answer.
      await sleep(500);
      const started = performance.now();
      const refused = await data();
      expect(refused.result, "no signature on a snapshot the node no longer confirms").to.equal(undefined);
      expect(refused.error?.data?.reason).to.equal("CHAIN_UNAVAILABLE");
      expect(performance.now() - started, "within the RPC deadline").to.be.below(2_500);
    });
  });
});
