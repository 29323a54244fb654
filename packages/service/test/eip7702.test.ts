// EIP-7702 senders through the service on EntryPoint v0.8: a fresh EOA's first op carries its signed
// authorization to v0.8's Simple7702Account (eip7702Auth, factory "0x7702"). The service simulates it with the
// delegation applied as a code override, signs a paymaster hash that binds the delegate, and the op lands in a
// type-4 handleOps transaction that carries the same authorization.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { http, toHex } from "viem";
import { createPaymasterClient } from "viem/account-abstraction";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { STUB_SIGNATURE, eip7702DelegationCode, type Address, type Hex } from "@paymaster/shared";
import { approveCallData, embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { startService } from "../src/server.ts";
import type { StrategyRules } from "../src/policy/types.ts";
import { call, chainRequest, clientGasFields, handleOps, mint, new7702Wallet, opFromResponse, sendTx, signAsOwner, startTestStack, wireOp, type Embedded, type Wallet } from "./helpers/stack.ts";
import { startTcpProxy } from "./helpers/tcpProxy.ts";

describe("EIP-7702 senders (v0.8, embedded local chain, real HTTP)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  before(async () => {
    embedded = await startTestStack();
  });
  after(async () => {
    await embedded?.close();
  });

  it("a fresh EOA's first op with its authorization is sponsored (Sponsor mode) and lands in a type-4 bundle", async () => {
    const v08 = embedded.stack.manifest.entryPoints["v0.8"];
    const wallet = await new7702Wallet(embedded);
    const wire = wireOp(wallet, executeCallData(wallet.sender));
    const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version: "v0.8" }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(answer.body.data.paymasterAddress).to.equal(v08.verifyingPaymaster);
    expect(await chainRequest(embedded, "eth_getCode", [wallet.sender, "latest"])).to.equal("0x");

    // Simple7702Account: the EOA's own key signs the EIP-712 userOpHash (which covers the delegate); the bundler's
    // handleOps is a type-4 transaction carrying the EOA's authorization.
    const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, answer.body.data));
    const outcome = await handleOps(embedded, op);
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    expect(outcome.event!.success).to.equal(true);
    expect(outcome.event!.paymaster).to.equal(v08.verifyingPaymaster);
    expect(await chainRequest(embedded, "eth_getCode", [wallet.sender, "latest"])).to.equal(eip7702DelegationCode(v08.simple7702Account!));
  });

  it("ERC-7677: viem's paymaster client with an authorization (eip7702Auth, factory 0x7702) gets stub and final data", async () => {
    const v08 = embedded.stack.manifest.entryPoints["v0.8"];
    const chainId = embedded.stack.chain.chainId;
    const eoa = privateKeyToAccount(generatePrivateKey());
    const authorization = await eoa.signAuthorization({ address: v08.simple7702Account!, chainId, nonce: 0 });
    const paymasterClient = createPaymasterClient({ transport: http(embedded.endpoint.replace("/api/v1/paymaster/", "/rpc/v1/")) });
    const base = { sender: eoa.address, nonce: 0n, factory: "0x7702", factoryData: "0x", callData: executeCallData(eoa.address), signature: STUB_SIGNATURE, authorization };
    const context = { strategy_code: embedded.strategyCode };
    const stub: any = await paymasterClient.getPaymasterStubData({ ...base, chainId, entryPointAddress: v08.entryPoint, context } as any);
    expect(stub.paymaster).to.equal(v08.verifyingPaymaster);
    const gas = { callGasLimit: 100_000n, verificationGasLimit: 300_000n, preVerificationGas: 60_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
    const final: any = await paymasterClient.getPaymasterData({
      ...base,
      ...gas,
      paymaster: stub.paymaster,
      paymasterData: stub.paymasterData,
      paymasterVerificationGasLimit: stub.paymasterVerificationGasLimit,
      paymasterPostOpGasLimit: stub.paymasterPostOpGasLimit,
      chainId,
      entryPointAddress: v08.entryPoint,
      context,
    } as any);
    expect(final.paymaster).to.equal(v08.verifyingPaymaster);
    expect(final.paymasterData.length).to.equal(stub.paymasterData.length);
    expect(final.paymasterData).to.not.equal(stub.paymasterData);
  });

  it("policy: a strategy can deny 7702 senders or restrict their delegates; a placeholder authorization is accepted", async () => {
    const store = embedded.running.service.store;
    const project = await store.createProject("eip7702");
    const { plaintext } = await store.createApiKey(project.id, "eip7702");
    const endpoint = `${embedded.running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
    const delegate = embedded.stack.manifest.entryPoints["v0.8"].simple7702Account!;
    const other = "0x7777777777777777777777777777777777777777";
    const strategies: Record<string, StrategyRules["eip7702"]> = {
      DENY7702: { allow: false },
      OTHERDELEGATE: { allow: true, delegates: [other] },
      OURDELEGATE: { allow: true, delegates: [delegate] },
    };
    for (const [code, eip7702] of Object.entries(strategies)) {
      await store.createStrategy({ projectId: project.id, code, name: code, networks: ["local"], rules: { eip7702 } });
    }
    const eoa = privateKeyToAccount(generatePrivateKey());
    // viem's stub authorization: a signature that recovers to nobody (wallets send it before the user signs).
    const placeholder = { chainId: "0x7a69", address: delegate, nonce: "0x0", r: `0x${"ff".repeat(16)}${"00".repeat(16)}`, s: `0x${"7a".repeat(32)}`, yParity: "0x1" };
    const wire = { sender: eoa.address, nonce: "0x0", factory: "0x7702", factoryData: "0x", callData: executeCallData(eoa.address), signature: STUB_SIGNATURE, eip7702Auth: placeholder };
    const ask = (code: string) => call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: code, version: "v0.8" }]);
    const denied = await ask("DENY7702");
    expect(denied.status, JSON.stringify(denied.body)).to.equal(403);
    expect(denied.body.data.rule).to.equal("eip7702.allow");
    const wrongDelegate = await ask("OTHERDELEGATE");
    expect(wrongDelegate.status).to.equal(403);
    expect(wrongDelegate.body.data.rule).to.equal("eip7702.delegates");
    const ok = await ask("OURDELEGATE");
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
  });

  it("an already-delegated EOA's op without the marker is judged by its code's delegate (audit N-5)", async () => {
    const v08 = embedded.stack.manifest.entryPoints["v0.8"];
    // Delegate a fresh EOA on chain: its first op carries the authorization and lands.
    const wallet = await new7702Wallet(embedded);
    const first = wireOp(wallet, executeCallData(wallet.sender));
    const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [first, { strategy_code: embedded.strategyCode, version: "v0.8" }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect((await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, first, answer.body.data)))).reverted).to.equal(false);
    expect(await chainRequest(embedded, "eth_getCode", [wallet.sender, "latest"])).to.equal(eip7702DelegationCode(v08.simple7702Account!));

    const store = embedded.running.service.store;
    const project = await store.createProject("eip7702-code");
    const { plaintext } = await store.createApiKey(project.id, "eip7702-code");
    const endpoint = `${embedded.running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
    const strategies: Record<string, StrategyRules["eip7702"]> = {
      CODEDENY: { allow: false },
      CODEOTHER: { allow: true, delegates: ["0x7777777777777777777777777777777777777777"] },
      CODEOURS: { allow: true, delegates: [v08.simple7702Account!] },
    };
    for (const [code, eip7702] of Object.entries(strategies)) {
      await store.createStrategy({ projectId: project.id, code, name: code, networks: ["local"], rules: { eip7702 } });
    }
    // The next op: no factory, no eip7702Auth — the sender's code says what it runs.
    const next = wireOp(wallet, executeCallData(wallet.sender), { deploy: false, nonce: 1n });
    const ask = (code: string) => call(endpoint, "pm_sponsorUserOperation", [next, { strategy_code: code, version: "v0.8" }]);
    const denied = await ask("CODEDENY");
    expect(denied.status, JSON.stringify(denied.body)).to.equal(403);
    expect(denied.body.data.rule).to.equal("eip7702.allow");
    const other = await ask("CODEOTHER");
    expect(other.status).to.equal(403);
    expect(other.body.data).to.include({ rule: "eip7702.delegates", value: v08.simple7702Account });
    const ours = await ask("CODEOURS");
    expect(ours.status, JSON.stringify(ours.body)).to.equal(200);
    // Without 7702 rules the code is still read: the signed hash binds the delegate (below).
    expect((await call(embedded.endpoint, "pm_sponsorUserOperation", [next, { strategy_code: embedded.strategyCode, version: "v0.8" }])).status).to.equal(200);
  });

  // Re-audit N-5: the sponsorship of an op without initCode binds the delegate the sender's code points to when the
  // service signs; an EOA that re-delegates between signing and inclusion runs other code, and the paymaster refuses.
  for (const mode of ["Sponsor", "ERC-20"] as const) {
    it(`${mode} mode: an already-delegated EOA's op without the marker lands while it stays delegated, and is refused (AA34) once it re-delegates`, async () => {
      const v08 = embedded.stack.manifest.entryPoints["v0.8"];
      const wallet = await new7702Wallet(embedded);
      const context = mode === "ERC-20" ? { token: "USDC", version: "v0.8" } : { strategy_code: embedded.strategyCode, version: "v0.8" };
      const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
      const paymaster = mode === "ERC-20" ? v08.erc20Paymaster : v08.verifyingPaymaster;
      await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
      // Delegated by its first op (marker and authorization), which also approves the ERC-20 paymaster.
      const first = wireOp(wallet, approveCallData(usdc.address, paymaster));
      const firstAnswer = await call(embedded.endpoint, "pm_sponsorUserOperation", [first, { strategy_code: embedded.strategyCode, version: "v0.8" }]);
      expect(firstAnswer.status, JSON.stringify(firstAnswer.body)).to.equal(200);
      expect((await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, first, firstAnswer.body.data)))).reverted).to.equal(false);
      // The next ops: no factory, no eip7702Auth.
      const sponsored = async (nonce: bigint) => {
        const wire = wireOp(wallet, executeCallData(wallet.sender), { deploy: false, nonce });
        const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, context]);
        expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
        expect(answer.body.data.paymasterAddress).to.equal(paymaster);
        return signAsOwner(embedded, wallet, opFromResponse(wallet, wire, answer.body.data));
      };

      // Still delegated to Simple7702Account: lands.
      const stays = await handleOps(embedded, await sponsored(1n));
      expect(stays.reverted, stays.failedOp).to.equal(false);
      expect(stays.event!.success).to.equal(true);
      expect(stays.event!.paymaster).to.equal(paymaster);

      // Signed while delegated to Simple7702Account, sent after the EOA re-delegated to another contract (here a copy
      // of the same account code, so only the paymaster can object): the EntryPoint refuses it.
      const signedForA = await sponsored(2n);
      const copy = await simple7702Copy();
      await redelegate(wallet.owner, copy);
      const refused = await handleOps(embedded, signedForA);
      expect(refused.reverted).to.equal(true);
      expect(refused.failedOp).to.match(/AA34 signature error/);
      // Sponsored again now, the service signs for the new delegate: lands.
      const renewed = await handleOps(embedded, await sponsored(2n));
      expect(renewed.reverted, renewed.failedOp).to.equal(false);
      expect(renewed.event!.success).to.equal(true);
    });
  }

  // Behind a node 30 ms away, a data call (the client's gas: no estimate) reaches its signature before the
  // sender's code read is back: the op is signed for the delegate last read for the sender (here none: its first
  // op's authorization is a claim, not a read, and is not remembered), and the final simulation checks it
  // (src/sponsor/steps/delegate.ts).
  async function behindSlowNode(skipFinalSimulation: boolean) {
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: Number(new URL(embedded.stack.chain.url).port) });
    proxy.setDelay(15);
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-7702-slow-")), "data");
    const network = { ...localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: proxy.url, signerKey: embedded.stack.signer.privateKey }), skipFinalSimulation };
    const running = await startService(embeddedConfig(network, dataDir, 0, "silent"), { watch: false });
    await running.initialised;
    const store = running.service.store;
    const project = await store.createProject("7702-slow");
    const { plaintext } = await store.createApiKey(project.id);
    await store.createStrategy({ projectId: project.id, code: "SLOW7702", name: "SLOW7702" });
    const endpoint = `${running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
    /** A delegated EOA (its first op, with the authorization, sponsored here and landed), then re-delegated to a copy. */
    const redelegated = async () => {
      const wallet = await new7702Wallet(embedded);
      const first = wireOp(wallet, executeCallData(wallet.sender));
      const answer = await call(endpoint, "pm_sponsorUserOperation", [first, { strategy_code: "SLOW7702", version: "v0.8" }]);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect((await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, first, answer.body.data)))).reverted).to.equal(false);
      await redelegate(wallet.owner, await simple7702Copy());
      return wallet;
    };
    /** Its next op with the client's gas, sponsored here and sent. */
    const nextLands = async (wallet: Wallet) => {
      const next = wireOp(wallet, executeCallData(wallet.sender), { deploy: false, nonce: 1n, extra: await clientGasFields(embedded) });
      const answer = await call(endpoint, "pm_sponsorUserOperation", [next, { strategy_code: "SLOW7702", version: "v0.8" }]);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      const landed = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, next, answer.body.data)));
      expect(landed.reverted, landed.failedOp).to.equal(false);
      expect(landed.event!.success).to.equal(true);
    };
    return { redelegated, nextLands, close: async () => (await running.close(), await proxy.close()) };
  }

  const slowNodeCases = [
    [false, "a re-delegated EOA's op signed for its former delegate (not waiting for the code read) is refused by the final simulation, then signed for the read one: it lands"],
    [true, "skipFinalSimulation: nothing would check a guess, so the code read decides before signing: a re-delegated EOA's op lands"],
  ] as const;
  for (const [skipFinalSimulation, title] of slowNodeCases) {
    it(title, async () => {
      const slow = await behindSlowNode(skipFinalSimulation);
      try {
        await slow.nextLands(await slow.redelegated());
      } finally {
        await slow.close();
      }
    });
  }

  let copies = 0;
  /** A second contract with v0.8's Simple7702Account code (hardhat_setCode at a fresh address). */
  async function simple7702Copy(): Promise<Address> {
    const code = await chainRequest<Hex>(embedded, "eth_getCode", [embedded.stack.manifest.entryPoints["v0.8"].simple7702Account!, "latest"]);
    const address = `0x${(0x7702c0de0000n + BigInt(++copies)).toString(16).padStart(40, "0")}` as Address;
    await chainRequest(embedded, "hardhat_setCode", [address, code]);
    return address;
  }

  /** The EOA signs an authorization to `delegate` (its next nonce), carried by another account's type-4 transaction. */
  async function redelegate(owner: PrivateKeyAccount, delegate: Address): Promise<void> {
    const chainId = embedded.stack.chain.chainId;
    const nonce = Number(await chainRequest<Hex>(embedded, "eth_getTransactionCount", [owner.address, "latest"]));
    const signed = await owner.signAuthorization({ address: delegate, chainId, nonce });
    const authorization = { chainId: BigInt(chainId), address: delegate, nonce: BigInt(nonce), r: signed.r, s: signed.s, yParity: signed.yParity ?? 0 };
    await sendTx(embedded, owner.address, "0x", embedded.stack.chain.accounts[7]!.address, [authorization]);
    expect(await chainRequest(embedded, "eth_getCode", [owner.address, "latest"])).to.equal(eip7702DelegationCode(delegate));
  }

  it("refuses a marker op without eip7702Auth, and eip7702Auth on v0.7, naming the field", async () => {
    const eoa = privateKeyToAccount(generatePrivateKey());
    const wire = { sender: eoa.address, nonce: "0x0", factory: "0x7702", callData: executeCallData(eoa.address), signature: STUB_SIGNATURE };
    const missing = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version: "v0.8" }]);
    expect(missing.status).to.equal(400);
    expect(JSON.stringify(missing.body)).to.match(/needs eip7702Auth/);
    const auth = { chainId: "0x7a69", address: eoa.address, nonce: "0x0", r: toHex(1n, { size: 32 }), s: toHex(2n, { size: 32 }), yParity: "0x1" };
    const { factory: _f, ...plain } = wire;
    const onV07 = await call(embedded.endpoint, "pm_sponsorUserOperation", [{ ...plain, eip7702Auth: auth }, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
    expect(onV07.status).to.equal(400);
    expect(JSON.stringify(onV07.body)).to.match(/eip7702Auth needs EntryPoint v0.8/);
  });
});
