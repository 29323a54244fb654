// ERC-7677 over the standard dialect with viem's own paymaster client, against the embedded local chain:
// stub -> (the bundler's estimate, here pm_estimateUserOperationGas with a bumped callGasLimit) -> final data
// -> sign as the owner -> handleOps. The final signature must cover exactly the gas values the client sent.
import { expect } from "chai";
import { http, hexToBytes, numberToHex } from "viem";
import { createPaymasterClient } from "viem/account-abstraction";
import { STUB_SIGNATURE, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { approveCallData, executeCallData } from "../src/local/embedded.ts";
import { call, handleOps, mint, newWallet, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const VERSIONS: EntryPointVersion[] = ["v0.6", "v0.7", "v0.8"];

const zeroBytes = (data: Hex): number => hexToBytes(data).filter((b) => b === 0).length;

async function rpc(url: string, method: string, params: unknown[]): Promise<{ status: number; json: any }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }) });
  return { status: response.status, json: await response.json() };
}

describe("ERC-7677 (viem paymaster client, standard dialect, real chain)", function () {
  let embedded: Embedded;
  let url: string;
  before(async () => {
    embedded = await startTestStack();
    // What `pnpm start` prints as the ERC-7677 endpoint is what viem's paymaster client uses here.
    url = embedded.erc7677Endpoint;
    expect(url).to.equal(embedded.endpoint.replace("/api/v1/paymaster/", "/rpc/v1/"));
  });
  after(async () => {
    await embedded?.close();
  });

  it("STUB_SIGNATURE has no zero bytes", () => {
    expect(zeroBytes(STUB_SIGNATURE)).to.equal(0);
  });

  for (const version of VERSIONS) {
    it(`${version}: getPaymasterStubData then getPaymasterData; the op built from them passes handleOps (Sponsor mode, fresh account)`, async () => {
      const paymasterClient = createPaymasterClient({ transport: http(url) });
      const wallet = await newWallet(embedded, version);
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const entryPointAddress = embedded.stack.manifest.entryPoints[version].entryPoint;
      const chainId = embedded.stack.chain.chainId;
      const context = { strategy_code: embedded.strategyCode };
      const deployFields =
        version === "v0.6"
          ? { initCode: wallet.initCode }
          : { factory: `0x${wallet.initCode.slice(2, 42)}` as Address, factoryData: `0x${wallet.initCode.slice(42)}` as Hex };
      const base = { sender: wallet.sender, nonce: 0n, callData: wire.callData, signature: STUB_SIGNATURE, ...deployFields };

      const stub: any = await paymasterClient.getPaymasterStubData({ ...base, chainId, entryPointAddress, context } as any);
      expect(stub.isFinal).to.equal(false);
      expect(stub.sponsor.name).to.be.a("string");
      expect(stub.sponsor.icon).to.match(/^data:image\/svg\+xml;base64,/);
      const verifyingPaymaster = embedded.stack.manifest.entryPoints[version].verifyingPaymaster;
      if (version === "v0.6") {
        expect(stub.paymasterAndData.slice(0, 42).toLowerCase()).to.equal(verifyingPaymaster.toLowerCase());
      } else {
        expect(stub.paymaster).to.equal(verifyingPaymaster);
        expect(typeof stub.paymasterPostOpGasLimit).to.equal("bigint");
        expect(stub.paymasterVerificationGasLimit > 0n).to.equal(true);
      }

      // The bundler's estimate (any gas values the client settles on); bump callGasLimit so it differs from ours.
      const estimate = await call(embedded.endpoint, "pm_estimateUserOperationGas", [wire, version === "v0.6" ? context : { ...context, version }]);
      expect(estimate.status, JSON.stringify(estimate.body)).to.equal(200);
      const e = estimate.body.data.userOpResponse;
      const gas = {
        callGasLimit: BigInt(e.callGasLimit) + 1_234n,
        verificationGasLimit: BigInt(e.verificationGasLimit) + 5_000n,
        preVerificationGas: BigInt(e.preVerificationGas) + 100n,
        maxFeePerGas: BigInt(e.maxFeePerGas),
        maxPriorityFeePerGas: BigInt(e.maxPriorityFeePerGas),
      };
      const stubFields = version === "v0.6"
        ? { paymasterAndData: stub.paymasterAndData }
        : { paymaster: stub.paymaster, paymasterData: stub.paymasterData, paymasterVerificationGasLimit: stub.paymasterVerificationGasLimit, paymasterPostOpGasLimit: stub.paymasterPostOpGasLimit };
      const final: any = await paymasterClient.getPaymasterData({ ...base, ...gas, ...stubFields, chainId, entryPointAddress, context } as any);

      // Same length as the stub, and the stub has no more zero bytes.
      const stubData: Hex = version === "v0.6" ? stub.paymasterAndData : stub.paymasterData;
      const finalData: Hex = version === "v0.6" ? final.paymasterAndData : final.paymasterData;
      expect(finalData.length).to.equal(stubData.length);
      expect(finalData).to.not.equal(stubData);
      expect(zeroBytes(stubData) <= zeroBytes(finalData)).to.equal(true);

      const op =
        version === "v0.6"
          ? { version: "v0.6" as const, userOp: { sender: wallet.sender, nonce: 0n, initCode: wallet.initCode, callData: wire.callData, ...gas, paymasterAndData: final.paymasterAndData, signature: "0x" as Hex } }
          : {
              version: version as "v0.7" | "v0.8",
              userOp: {
                sender: wallet.sender,
                nonce: 0n,
                ...(deployFields as { factory: Address; factoryData: Hex }),
                callData: wire.callData,
                ...gas,
                paymaster: final.paymaster,
                paymasterVerificationGasLimit: final.paymasterVerificationGasLimit,
                paymasterPostOpGasLimit: final.paymasterPostOpGasLimit,
                paymasterData: final.paymasterData,
                signature: "0x" as Hex,
              },
            };
      const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, op as any));
      expect(outcome.reverted, outcome.failedOp).to.equal(false);
      expect(outcome.event!.success).to.equal(true);
      expect(outcome.event!.paymaster).to.equal(verifyingPaymaster);
      const record = await embedded.running.service.store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
      expect(record?.mode).to.equal("sponsor");
    });
  }

  it("a wrong chain id -> CHAIN_ID_MISMATCH (-32602, HTTP 200); an unknown EntryPoint -> ENTRYPOINT_NOT_SUPPORTED", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    const chainId = numberToHex(embedded.stack.chain.chainId);
    for (const method of ["pm_getPaymasterStubData", "pm_getPaymasterData"]) {
      const wrongChain = await rpc(url, method, [wire, entryPoint, "0x1", { strategy_code: embedded.strategyCode }]);
      expect(wrongChain.status).to.equal(200);
      expect(wrongChain.json.error.code).to.equal(-32602);
      expect(wrongChain.json.error.data.reason).to.equal("CHAIN_ID_MISMATCH");
      expect(wrongChain.json.error.data.expected).to.equal(chainId);
      const unknownEp = await rpc(url, method, [wire, "0x1111111111111111111111111111111111111111", chainId, null]);
      expect(unknownEp.json.error.code).to.equal(-32602);
      expect(unknownEp.json.error.data.reason).to.equal("ENTRYPOINT_NOT_SUPPORTED");
      expect(unknownEp.json.error.data.supported).to.include(entryPoint);
    }
    // viem surfaces the refusal as an error too.
    const paymasterClient = createPaymasterClient({ transport: http(url) });
    let caught: any;
    try {
      await paymasterClient.getPaymasterStubData({ ...(wire as any), nonce: 0n, chainId: 1, entryPointAddress: entryPoint, context: { strategy_code: embedded.strategyCode } });
    } catch (error) {
      caught = error;
    }
    expect(String(caught?.message ?? caught)).to.match(/chain id/i);
  });

  it("pm_getPaymasterData without final gas values -> INVALID_PARAMS naming each missing or zero field; nothing reserved or signed", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    const chainId = numberToHex(embedded.stack.chain.chainId);
    const all = ["callGasLimit", "verificationGasLimit", "preVerificationGas", "maxFeePerGas", "maxPriorityFeePerGas"];
    const zeros = Object.fromEntries(all.map((f) => [f, "0x0"])); // what viem sends for "not estimated yet"
    const partial = { ...zeros, callGasLimit: "0x5000", verificationGasLimit: "0x60000", maxFeePerGas: "0x3b9aca00" };
    // A zero priority fee is final (chains without priority fees estimate 0); only its absence is refused.
    const limitsAndMaxFee = all.filter((f) => f !== "maxPriorityFeePerGas");
    for (const [op, missing] of [[wire, all], [{ ...wire, ...zeros }, limitsAndMaxFee], [{ ...wire, ...partial }, ["preVerificationGas"]]] as const) {
      const answer = await rpc(url, "pm_getPaymasterData", [op, entryPoint, chainId, { strategy_code: embedded.strategyCode }]);
      expect(answer.status).to.equal(200);
      expect(answer.json.result, "no paymaster data for an op whose gas the client does not know").to.equal(undefined);
      expect(answer.json.error.code).to.equal(-32602);
      expect(answer.json.error.data.reason).to.equal("INVALID_PARAMS");
      expect(answer.json.error.data.issues.map((i: any) => i.path)).to.deep.equal(missing.map((f) => [0, f]));
      expect(answer.json.error.message).to.contain(missing.map((f) => `params[0].${f}`).join(", "));
    }
    const active = await embedded.running.service.store.findActiveSponsorship({ network: "local", entryPoint, sender: wallet.sender, nonce: 0n });
    expect(active, "nothing reserved").to.equal(undefined);
    // The stub needs none of them.
    const stub = await rpc(url, "pm_getPaymasterStubData", [wire, entryPoint, chainId, { strategy_code: embedded.strategyCode }]);
    expect(stub.json.result?.paymaster, JSON.stringify(stub.json)).to.match(/^0x[0-9a-fA-F]{40}$/);
  });

  it("the stub refuses what the final call would refuse: unknown strategy, both strategy_code and token, v0.7 fields sent to the v0.6 EntryPoint, a mistyped context", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const chainId = numberToHex(embedded.stack.chain.chainId);
    const ep07 = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    const unknown = await rpc(url, "pm_getPaymasterStubData", [wire, ep07, chainId, { strategy_code: "NO_SUCH_STRATEGY" }]);
    expect(unknown.json.error.data.reason).to.equal("STRATEGY_NOT_FOUND");
    expect(unknown.json.error.code).to.equal(-32501);
    const both = await rpc(url, "pm_getPaymasterStubData", [wire, ep07, chainId, { strategy_code: embedded.strategyCode, token: "USDC" }]);
    expect(both.json.error.data.reason).to.equal("MODE_CONFLICT");
    // The EntryPoint picks the field set: v0.7 field names sent with the v0.6 EntryPoint are refused.
    const ep06 = embedded.stack.manifest.entryPoints["v0.6"].entryPoint;
    const mismatch = await rpc(url, "pm_getPaymasterStubData", [wire, ep06, chainId, { strategy_code: embedded.strategyCode }]);
    expect(mismatch.json.error.data.reason).to.equal("INVALID_PARAMS");
    expect(mismatch.json.error.data.issues[0].path[0]).to.equal(0);
    const badContext = await rpc(url, "pm_getPaymasterStubData", [wire, ep07, chainId, { strategy_code: 5 }]);
    expect(badContext.json.error.data.reason).to.equal("INVALID_PARAMS");
    expect(badContext.json.error.data.issues[0].path).to.deep.equal([3, "strategy_code"]);
  });

  describe("pm_getTokenQuotes", () => {
    it("lists the enabled tokens with the marked-up rate, postOpGas and the ERC-20 paymaster per version", async () => {
      const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
      for (const version of VERSIONS) {
        const answer = await rpc(url, "pm_getTokenQuotes", version === "v0.6" ? [] : [{ version }]);
        expect(answer.status).to.equal(200);
        const result = answer.json.result;
        expect(result, JSON.stringify(answer.json)).to.not.equal(undefined);
        expect(result.entrypointVersion).to.equal(version);
        expect(result.paymaster).to.equal(embedded.stack.manifest.entryPoints[version].erc20Paymaster);
        const quote = result.tokens.find((t: any) => t.symbol === "USDC");
        expect(quote.address).to.equal(usdc.address);
        expect(quote.decimals).to.equal(6);
        expect(quote.exchangeRate).to.equal((3_150n * 10n ** 6n).toString()); // 3000 USD/ETH, 1 USD/USDC, 5% markup
        expect(quote.paymaster).to.equal(embedded.stack.manifest.entryPoints[version].erc20Paymaster);
        const postOpGas = embedded.running.service.networks.get("local")!.chain!.erc20[version]!.postOpGas;
        expect(postOpGas > 0n).to.equal(true);
        expect(quote.postOpGas).to.equal(postOpGas.toString());
        expect(quote.maxTokenCost).to.equal(undefined);
      }
      const only = await rpc(url, "pm_getTokenQuotes", [{ tokens: [usdc.address] }]);
      expect(only.json.result.tokens.map((t: any) => t.symbol)).to.deep.equal(["USDC"]);
      const unknown = await rpc(url, "pm_getTokenQuotes", [{ tokens: ["NOPE"] }]);
      expect(unknown.json.error.data.reason).to.equal("TOKEN_NOT_SUPPORTED");
      const bad = await rpc(url, "pm_getTokenQuotes", [{ tokens: "USDC" }]);
      expect(bad.json.error.data.reason).to.equal("INVALID_PARAMS");
    });

    for (const version of VERSIONS) {
      it(`${version}: with a userOp, maxTokenCost is the ERC-20 estimate's, whether or not the sender holds the token`, async () => {
        const wallet = await newWallet(embedded, version);
        const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
        // The op approves the paymaster itself, so the ERC-20 estimate below can pass its charge check.
        const wire = wireOp(wallet, approveCallData(usdc.address, embedded.stack.manifest.entryPoints[version].erc20Paymaster));
        const unfunded = await rpc(url, "pm_getTokenQuotes", [{ tokens: ["USDC"], version, userOp: wire }]);
        expect(unfunded.json.error, JSON.stringify(unfunded.json.error)).to.equal(undefined);
        await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
        await new Promise((resolve) => setTimeout(resolve, 300)); // let the service's market see the new block
        const funded = await rpc(url, "pm_getTokenQuotes", [{ tokens: ["USDC"], version, userOp: wire }]);
        const estimate = await call(embedded.endpoint, "pm_estimateUserOperationGas", [wire, version === "v0.6" ? { token: "USDC" } : { token: "USDC", version }]);
        expect(estimate.status, JSON.stringify(estimate.body)).to.equal(200);
        const expected = estimate.body.data.Erc20TokenCost.maxTokenCost;
        expect(BigInt(expected) > 0n).to.equal(true);
        expect(funded.json.result.tokens[0].maxTokenCost).to.equal(expected);
        // Before the mint the market (fees) may have been a block behind: the same op, nearly the same cost.
        const before = BigInt(unfunded.json.result.tokens[0].maxTokenCost);
        expect(before > (BigInt(expected) * 9n) / 10n && before < (BigInt(expected) * 11n) / 10n, `${before} vs ${expected}`).to.equal(true);
        const badOp = await rpc(url, "pm_getTokenQuotes", [{ version, userOp: { ...wire, callData: "0x1" } }]);
        expect(badOp.json.error.data.reason).to.equal("INVALID_PARAMS");
        expect(badOp.json.error.data.issues[0].path).to.deep.equal([0, "userOp", "callData"]);
      });
    }
  });
});
