// v0.7 simulation through EntryPointSimulatorV07 on the embedded chain: the service finds the deployed
// simulator (the small delegating override) and the whole-code override (the fallback for nodes where it is
// not deployed) gives the same answers; one simulation tells the op's execution outcome. v0.8 the same through
// EntryPointSimulatorV08.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { encodeFunctionData, type Abi } from "viem";
import { EntryPointSimulatorV07Deployment, EntryPointSimulatorV08Deployment, TestTokenArtifact } from "@paymaster/contracts/artifacts";
import { PAYMASTER_VERIFICATION_GAS, STUB_SIGNATURE, encodeVerifyingPaymasterData, type Hex, type UserOperationV07 } from "@paymaster/shared";
import { createChainRpc } from "../src/chain/rpc.ts";
import {
  CODE_OVERRIDE_SIMULATORS,
  SIMULATOR_CODE_OVERRIDE,
  SIMULATOR_V08_CODE_OVERRIDE,
  findSimulator,
  findSimulatorV07,
  simulateOp,
  type Simulator,
  type Simulators,
} from "../src/chain/entryPoint.ts";
import { embeddedConfig, executeCallData, seedDemo } from "../src/local/embedded.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { startService } from "../src/server.ts";
import { clientGasFields, newWallet, startTestStack, type Embedded } from "./helpers/stack.ts";

describe("v0.7 simulation (EntryPointSimulatorV07, embedded local chain)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  before(async () => {
    embedded = await startTestStack();
  });
  after(async () => {
    await embedded?.close();
  });

  /** v0.7's simulator access, v0.8's whole-code override (unused by v0.7 ops). */
  const forV07 = (simulator: Simulator): Simulators => ({ "v0.7": simulator, "v0.8": SIMULATOR_V08_CODE_OVERRIDE });

  async function draft(callData: (owner: Hex) => Hex, version: "v0.7" | "v0.8" = "v0.7"): Promise<UserOperationV07> {
    const wallet = await newWallet(embedded, version);
    const entry = embedded.stack.manifest.entryPoints[version];
    const now = Math.floor(Date.now() / 1000);
    return {
      sender: wallet.sender,
      nonce: 0n,
      factory: `0x${wallet.initCode.slice(2, 42)}`,
      factoryData: `0x${wallet.initCode.slice(42)}`,
      callData: callData(wallet.owner.address),
      callGasLimit: 200_000n,
      verificationGasLimit: 600_000n,
      preVerificationGas: 60_000n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      paymaster: entry.verifyingPaymaster,
      paymasterVerificationGasLimit: 100_000n,
      paymasterPostOpGasLimit: 0n,
      paymasterData: encodeVerifyingPaymasterData({ validUntil: now + 300, validAfter: now - 60 }, STUB_SIGNATURE),
      signature: STUB_SIGNATURE,
    };
  }

  /** A fresh account's first op (wire form) whose call transfers USDC it does not hold: it validates, its execution reverts. */
  async function revertingWireOp(gas: Record<string, string> = {}) {
    const wallet = await newWallet(embedded, "v0.7");
    const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
    const transfer = encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "transfer", args: [wallet.owner.address, 1n] });
    return {
      sender: wallet.sender,
      nonce: "0x0",
      factory: `0x${wallet.initCode.slice(2, 42)}`,
      factoryData: `0x${wallet.initCode.slice(42)}`,
      callData: executeCallData(usdc, transfer),
      ...gas,
      signature: STUB_SIGNATURE,
    };
  }

  it("finds the simulator the local stack deployed, and both ways of reaching it agree", async () => {
    const rpc = createChainRpc(embedded.stack.chain.url);
    const found = await findSimulatorV07(rpc);
    expect(found.kind).to.equal("deployed");
    expect(String(found.code)).to.have.length(2 + 45 * 2).and.include(EntryPointSimulatorV07Deployment.address.slice(2).toLowerCase());
    const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    const op = await draft((owner) => executeCallData(owner));
    const results = [];
    for (const simulator of [found, SIMULATOR_CODE_OVERRIDE]) {
      const outcome = await simulateOp(rpc, forV07(simulator), entryPoint, { version: "v0.7", userOp: op });
      if (!outcome.ok) throw new Error(outcome.failure.reason);
      results.push(outcome.result);
    }
    const [viaProxy, viaCode] = results;
    expect(viaProxy!.opSucceeded).to.equal(true);
    expect(viaCode!.opSucceeded).to.equal(true);
    // The stub signature fails the paymaster's check: reported, not a revert.
    expect(viaProxy!.paymasterSigFailed).to.equal(true);
    // The proxy's delegatecalls cost a little gas, far inside the estimate's margins.
    const diff = viaProxy!.paid > viaCode!.paid ? viaProxy!.paid - viaCode!.paid : viaCode!.paid - viaProxy!.paid;
    expect(Number(diff), `${viaProxy!.paid} vs ${viaCode!.paid}`).to.be.lessThan(5_000);
  });

  it("one simulation tells a reverting execution apart, and reads state after the op", async () => {
    const rpc = createChainRpc(embedded.stack.chain.url);
    const simulator = await findSimulatorV07(rpc);
    const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
    const abi = TestTokenArtifact.abi as Abi;
    // The account transfers USDC it does not hold: the op validates, its execution reverts.
    const op = await draft((owner) => executeCallData(usdc, encodeFunctionData({ abi, functionName: "transfer", args: [owner, 1n] })));
    const read = { to: usdc, data: encodeFunctionData({ abi, functionName: "balanceOf", args: [op.sender] }) };
    for (const access of [simulator, SIMULATOR_CODE_OVERRIDE]) {
      const outcome = await simulateOp(rpc, forV07(access), entryPoint, { version: "v0.7", userOp: op }, read);
      if (!outcome.ok) throw new Error(outcome.failure.reason);
      expect(outcome.result.opSucceeded).to.equal(false);
      expect(outcome.result.targetSuccess).to.equal(true);
      expect(BigInt(outcome.result.targetResult)).to.equal(0n);
    }
  });

  it("v0.8: finds EntryPointSimulatorV08; deployed and whole-code access agree on success, a revert and a read", async () => {
    const rpc = createChainRpc(embedded.stack.chain.url);
    const found = await findSimulator(rpc, "v0.8");
    expect(found.kind).to.equal("deployed");
    expect(String(found.code)).to.include(EntryPointSimulatorV08Deployment.address.slice(2).toLowerCase());
    const entryPoint = embedded.stack.manifest.entryPoints["v0.8"].entryPoint;
    const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
    const abi = TestTokenArtifact.abi as Abi;
    const ok = await draft((owner) => executeCallData(owner), "v0.8");
    const reverting = await draft((owner) => executeCallData(usdc, encodeFunctionData({ abi, functionName: "transfer", args: [owner, 1n] })), "v0.8");
    const read = { to: usdc, data: encodeFunctionData({ abi, functionName: "balanceOf", args: [reverting.sender] }) };
    const paid: bigint[] = [];
    for (const simulators of [{ ...CODE_OVERRIDE_SIMULATORS, "v0.8": found }, CODE_OVERRIDE_SIMULATORS]) {
      const good = await simulateOp(rpc, simulators, entryPoint, { version: "v0.8", userOp: ok });
      if (!good.ok) throw new Error(good.failure.reason);
      expect(good.result.opSucceeded).to.equal(true);
      expect(good.result.paymasterSigFailed).to.equal(true); // the stub signature: reported, not a revert
      paid.push(good.result.paid);
      const bad = await simulateOp(rpc, simulators, entryPoint, { version: "v0.8", userOp: reverting }, read);
      if (!bad.ok) throw new Error(bad.failure.reason);
      expect(bad.result.opSucceeded).to.equal(false);
      expect(bad.result.targetSuccess).to.equal(true);
      expect(BigInt(bad.result.targetResult)).to.equal(0n);
    }
    const diff = paid[0]! > paid[1]! ? paid[0]! - paid[1]! : paid[1]! - paid[0]!;
    expect(Number(diff)).to.be.lessThan(5_000);
  });

  it("the stub runs no simulation: an op whose calls revert gets stub data; pm_getPaymasterData refuses it", async () => {
    const entry = embedded.stack.manifest.entryPoints["v0.7"];
    const op = await revertingWireOp(await clientGasFields(embedded)); // the data call needs the final gas values
    const params = [op, entry.entryPoint, "0x7a69", { strategy_code: embedded.strategyCode }];
    const rpcUrl = embedded.endpoint.replace("/api/v1/paymaster/", "/rpc/v1/");
    const post = async (method: string) => {
      const response = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: 1, jsonrpc: "2.0", method, params }) });
      return { timing: response.headers.get("server-timing") ?? "", body: (await response.json()) as { result?: any; error?: any } };
    };
    const stub = await post("pm_getPaymasterStubData");
    expect(stub.body.error, JSON.stringify(stub.body.error)).to.equal(undefined);
    expect(stub.body.result.paymaster).to.equal(entry.verifyingPaymaster);
    expect(BigInt(stub.body.result.paymasterVerificationGasLimit)).to.equal(PAYMASTER_VERIFICATION_GAS.verifying);
    expect(stub.body.result.isFinal).to.equal(false);
    const data = await post("pm_getPaymasterData");
    expect(data.body.error?.data?.reason, JSON.stringify(data.body)).to.equal("EXECUTION_REVERTED");
    // Server-Timing counts the request's chain waits (the Timing travels with the call): the stub reads only
    // cached per-block data (market, price), the data call also simulates.
    const waits = (timing: string) => Number(/chain;dur=[\d.]+;desc="(\d+) waits"/.exec(timing)?.[1]);
    expect(waits(stub.timing), stub.timing).to.be.within(1, 2);
    expect(waits(data.timing), data.timing).to.be.greaterThan(waits(stub.timing));
  });

  it("skipFinalSimulation: the data call signs an op whose calls revert without simulating it (the operator's choice)", async () => {
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-skip-")), "data");
    const network = { ...localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey }), skipFinalSimulation: true };
    const running = await startService(embeddedConfig(network, dataDir, 0, "silent"), { watch: false });
    try {
      const request = (method: string, params: unknown[]) => embedded.stack.chain.provider.request({ method, params });
      const demo = await seedDemo(running.service.store, request, embedded.stack.manifest, embedded.stack.owner.address, embedded.stack.chain.accounts[3]!.address);
      const entry = embedded.stack.manifest.entryPoints["v0.7"];
      const { baseFeePerGas } = (await request("eth_getBlockByNumber", ["latest", false])) as { baseFeePerGas: Hex };
      // Client gas values: no estimate runs, so without the final simulation nothing looks at the calls.
      const op = await revertingWireOp({
        callGasLimit: "0x9c40",
        verificationGasLimit: "0x61a80",
        preVerificationGas: "0xea60",
        maxFeePerGas: `0x${(BigInt(baseFeePerGas) * 2n).toString(16)}`,
        maxPriorityFeePerGas: "0x0",
      });
      const params = [op, entry.entryPoint, "0x7a69", { strategy_code: demo.strategyCode }];
      const post = async (url: string) => {
        const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_getPaymasterData", params }) });
        return (await response.json()) as { result?: any; error?: any };
      };
      const skipped = await post(`${running.url}/rpc/v1/local?apiKey=${demo.apiKey}`);
      expect(skipped.error, JSON.stringify(skipped.error)).to.equal(undefined);
      expect(skipped.result.paymaster).to.equal(entry.verifyingPaymaster);
      // The same request to the default service (final simulation on) is refused.
      const checked = await post(embedded.endpoint.replace("/api/v1/paymaster/", "/rpc/v1/"));
      expect(checked.error?.data?.reason, JSON.stringify(checked)).to.equal("EXECUTION_REVERTED");
    } finally {
      await running.close();
    }
  });
});
