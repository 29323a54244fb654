// The L1 data fee as preVerificationGas (src/chain/l1Fee.ts): the pure parts, then a real OP Stack chain
// (Hardhat's `op` chain type runs the GasPriceOracle and L1Block predeploys and reports each receipt's l1Fee):
// an op priced with our L1 part lands through handleOps and covers what the chain charged for its bytes.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { decodeFunctionData, encodeFunctionData, parseAbi, type Abi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startLocalChain, startLocalStack, type LocalStack } from "@paymaster/contracts";
import { EntryPointV07Artifact, SimpleAccountFactoryV07Artifact, SimpleAccountV07Artifact } from "@paymaster/contracts/artifacts";
import { STUB_SIGNATURE, getUserOpHash, packUserOpV07, type Address, type Hex, type UserOperationV07, type VersionedUserOperation } from "@paymaster/shared";
import {
  L1_FEE_MARGIN_BPS,
  OP_GAS_PRICE_ORACLE,
  ARBITRUM_NODE_INTERFACE,
  bundleTransaction,
  highEntropyHex,
  l1DataGas,
  l1PartAsGas,
  l2GasPrice,
  opForL1Pricing,
  placeholderUpTo,
  quoteL1Part,
} from "../src/chain/l1Fee.ts";
import { DEFAULT_GAS_CAPS } from "../src/config/types.ts";
import { createChainRpc, type ChainRpc } from "../src/chain/rpc.ts";
import { preVerificationGas } from "../src/sponsor/gas.ts";
import { call as callService, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";
import { executeCallData } from "../src/local/embedded.ts";

const ORACLE_ABI = parseAbi(["function getL1Fee(bytes) view returns (uint256)", "function getL1FeeUpperBound(uint256) view returns (uint256)"]);
const NODE_INTERFACE_ABI = parseAbi(["function gasEstimateL1Component(address to, bool contractCreation, bytes data) returns (uint64, uint256, uint256)"]);
const L1_BLOCK = "0x4200000000000000000000000000000000000015";
/** topic0 of UserOperationEvent (same in v0.6 and v0.7). */
const USER_OPERATION_EVENT = "0x49628fd1471006c1482da88028e9ce4dbb080b815c9b0344d39e5a8e6ec1419f";

/**
 * EDR writes its default fee scalars into the wrong bits of L1Block's slot 3, so both read 0 and every L1 fee
 * would be 0: set baseFeeScalar (bits 96-127) and blobBaseFeeScalar (bits 64-95) to Base's values, keeping
 * the sequence number in the low 64 bits.
 */
async function setOpFeeScalars(request: (method: string, params: unknown[]) => Promise<unknown>): Promise<void> {
  const slot3 = BigInt((await request("eth_getStorageAt", [L1_BLOCK, "0x3", "latest"])) as string);
  const value = (slot3 & ((1n << 64n) - 1n)) | (2_269n << 96n) | (1_055_762n << 64n);
  await request("hardhat_setStorageAt", [L1_BLOCK, "0x3", `0x${value.toString(16).padStart(64, "0")}`]);
}

function sampleOp(signature: Hex): VersionedUserOperation {
  return {
    version: "v0.7",
    userOp: {
      sender: "0x4c8d290a1b368ac4728d83a9e8321fc3af2b39b1",
      nonce: 0n,
      callData: `0xb61d27f6${"00".repeat(96)}`,
      callGasLimit: 50_000n,
      verificationGasLimit: 400_000n,
      preVerificationGas: 60_000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 100_000_000n,
      signature,
    },
  };
}

describe("L1 data fee as preVerificationGas", () => {
  describe("pure parts", () => {
    it("high-entropy placeholders are fixed, of the asked length and without zero bytes", () => {
      const a = highEntropyHex(65);
      expect(a).to.match(/^0x[0-9a-f]{130}$/);
      expect(highEntropyHex(65)).to.equal(a);
      expect(highEntropyHex(65, 7)).to.not.equal(a);
      expect(a.slice(2).match(/../g)!.includes("00")).to.equal(false);
      expect(new Set(a.slice(2).match(/../g)).size).to.be.greaterThan(40);
    });

    it("prices the op with the signature's last 65 bytes made high-entropy, same length, the rest untouched", () => {
      const prefix = "11".repeat(20);
      const priced = opForL1Pricing(sampleOp(`0x${prefix}${"00".repeat(65)}`));
      expect(priced.userOp.signature).to.have.length(2 + 170);
      expect(priced.userOp.signature.slice(2, 42)).to.equal(prefix);
      expect(priced.userOp.signature.slice(42)).to.equal(highEntropyHex(65).slice(2));
      expect(opForL1Pricing(sampleOp("0x")).userOp.signature).to.equal("0x");
      expect(opForL1Pricing(sampleOp("0xabcd")).userOp.signature).to.equal(highEntropyHex(2));
      expect(priced.userOp.callData).to.equal(sampleOp("0x").userOp.callData);
    });

    it("turns a quote into gas: wei over the L2 price, plus the margin, rounded up; gas plus the margin", () => {
      expect(L1_FEE_MARGIN_BPS).to.equal(1_000n);
      expect(l1PartAsGas(undefined, 1n)).to.equal(0n);
      // 1e12 wei at 1 gwei = 1000 gas, +10% = 1100.
      expect(l1PartAsGas({ kind: "wei", wei: 10n ** 12n }, 10n ** 9n)).to.equal(1_100n);
      // 1001 wei at 1000 wei/gas = 1.001 gas, x1.1 = 1.1011 -> 2.
      expect(l1PartAsGas({ kind: "wei", wei: 1_001n }, 1_000n)).to.equal(2n);
      expect(l1PartAsGas({ kind: "gas", gas: 12_345n }, 0n)).to.equal(13_580n); // 13579.5 -> 13580
      expect(() => l1PartAsGas({ kind: "wei", wei: 1n }, 0n)).to.throw(/l2GasPrice/);
    });

    it("prices L2 gas at the op's fee over the current base fee, capped by maxFeePerGas", () => {
      expect(l2GasPrice({ maxFeePerGas: 10_000n, maxPriorityFeePerGas: 100n }, 800n)).to.equal(900n);
      expect(l2GasPrice({ maxFeePerGas: 500n, maxPriorityFeePerGas: 100n }, 800n)).to.equal(500n);
    });

    it("asks nothing on an L1 chain", async () => {
      const rpc: Pick<ChainRpc, "request"> = { request: () => Promise.reject(new Error("no call expected")) };
      expect(await l1DataGas(rpc, "l1", { chainId: 1, entryPoint: "0x0000000071727De22E5E9d8BAf0edAc6f37da032", op: sampleOp(STUB_SIGNATURE), l2GasPrice: 1n })).to.equal(0n);
    });
  });

  it("EDR's OP Stack chain is as docs/l2-gas.md says: OP mainnet's scalars at the wrong bits of slot 3, getL1Fee 0 until it is rewritten", async function () {
    this.timeout(60_000);
    const chain = await startLocalChain({ port: 0, chainType: "op" });
    try {
      const request = (method: string, params: unknown[]) => chain.provider.request({ method, params });
      const slot3 = BigInt((await request("eth_getStorageAt", [L1_BLOCK, "0x3", "latest"])) as string);
      const bits = (from: number) => Number((slot3 >> BigInt(from)) & 0xffffffffn);
      expect({ at192: bits(192), at128: bits(128), baseFeeScalar: bits(96), blobBaseFeeScalar: bits(64) }).to.deep.equal({ at192: 5227, at128: 1_014_213, baseFeeScalar: 0, blobBaseFeeScalar: 0 });
      const l1Fee = async () => BigInt((await request("eth_call", [{ to: "0x420000000000000000000000000000000000000F", data: encodeFunctionData({ abi: ORACLE_ABI, functionName: "getL1Fee", args: [`0x${"ab".repeat(500)}`] }) }, "latest"])) as string);
      expect(await l1Fee(), "the default L1 prices and the scalars as read").to.equal(0n);
      await setOpFeeScalars(request);
      expect((await l1Fee()) > 0n, "once the slot is rewritten").to.equal(true);
    } finally {
      await chain.close();
    }
    const doc = readFileSync(new URL("../docs/l2-gas.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    for (const claim of ["baseFeeScalar 5227, blobBaseFeeScalar 1014213", "bits 192-223 and 128-159", "baseFeeScalar at bits 96-127, blobBaseFeeScalar at 64-95", "`getL1Fee` returns 0"]) {
      expect(doc, "l2-gas.md's note").to.contain(claim);
    }
  });

  describe("on an OP Stack chain (GasPriceOracle, Fjord)", function () {
    this.timeout(60_000);
    let stack: LocalStack;
    let rpc: Pick<ChainRpc, "request">;
    let closeRpc = () => {};
    /** Every eth_call the service code made, recorded on the way to the real chain. */
    const calls: { to: Address; data: Hex }[] = [];

    before(async () => {
      stack = await startLocalStack({ port: 0, chainType: "op" });
      const real = createChainRpc(stack.chain.url);
      closeRpc = () => real.close();
      rpc = {
        request: (method, params) => {
          if (method === "eth_call") calls.push(params[0] as { to: Address; data: Hex });
          return real.request(method, params);
        },
      };
      await setOpFeeScalars((method, params) => stack.chain.provider.request({ method, params }));
    });
    after(async () => {
      closeRpc();
      await stack?.chain.close();
    });

    it("asks the GasPriceOracle for getL1Fee of the unsigned one-op handleOps transaction", async () => {
      const entryPoint = stack.manifest.entryPoints["v0.7"].entryPoint;
      const input = { chainId: stack.chain.chainId, entryPoint, op: sampleOp(STUB_SIGNATURE), l2GasPrice: 10n ** 9n };
      calls.length = 0;
      const quote = await quoteL1Part(rpc, "op-stack", input);
      expect(calls).to.have.length(1);
      expect(calls[0]!.to).to.equal(OP_GAS_PRICE_ORACLE);
      const decoded = decodeFunctionData({ abi: ORACLE_ABI, data: calls[0]!.data });
      expect(decoded.functionName).to.equal("getL1Fee");
      expect(decoded.args[0]).to.equal(bundleTransaction(input));
      expect(quote).to.deep.equal({ kind: "wei", wei: await oracleFee(bundleTransaction(input)) });
      expect(quote?.kind === "wei" && quote.wei > 0n).to.equal(true);
    });

    it("limits still to be estimated, priced at their caps' width before the estimate, quote no less than any value up to the caps", async () => {
      const entryPoint = stack.manifest.entryPoints["v0.7"].entryPoint;
      const quote = async (callGasLimit: bigint, verificationGasLimit: bigint) => {
        const op = sampleOp(STUB_SIGNATURE);
        const userOp = { ...(op.userOp as UserOperationV07), callGasLimit, verificationGasLimit };
        const answer = await quoteL1Part(rpc, "op-stack", { chainId: stack.chain.chainId, entryPoint, op: { version: "v0.7", userOp }, l2GasPrice: 10n ** 9n });
        return answer?.kind === "wei" ? answer.wei : -1n;
      };
      const { maxCallGasLimit, maxVerificationGasLimit } = DEFAULT_GAS_CAPS;
      const placeheld = await quote(placeholderUpTo(maxCallGasLimit, 1), placeholderUpTo(maxVerificationGasLimit, 2));
      // What an estimate gives, and the most (and least compressible) values the caps allow.
      for (const [call, verification] of [[45_000n, 120_000n], [maxCallGasLimit, maxVerificationGasLimit], [0xfedcbn, 0xf1e2dn], [maxCallGasLimit - 1n, maxVerificationGasLimit - 1n]] as const) {
        const actual = await quote(call, verification);
        expect(placeheld >= actual, `${placeheld} < ${actual} for ${call}/${verification}`).to.equal(true);
      }
      // A few bytes more than the smallest of them: a fraction of the margin.
      expect(placeheld * 100n <= (await quote(45_000n, 120_000n)) * 102n).to.equal(true);
    });

    it("a constant stub signature compresses: pricing it as sent would under-price the real signature", async () => {
      const entryPoint = stack.manifest.entryPoints["v0.7"].entryPoint;
      const constant = `0x${"ff".repeat(65 * 8)}` as Hex;
      const asSent = encodeFunctionData({
        abi: EntryPointV07Artifact.abi as Abi,
        functionName: "handleOps",
        args: [[packUserOpV07(sampleOp(constant).userOp as UserOperationV07)], entryPoint],
      });
      const real = opForL1Pricing(sampleOp(constant));
      const asPriced = encodeFunctionData({ abi: EntryPointV07Artifact.abi as Abi, functionName: "handleOps", args: [[packUserOpV07(real.userOp as UserOperationV07)], entryPoint] });
      expect((await oracleFee(asPriced)) > (await oracleFee(asSent))).to.equal(true);
    });

    it("an op whose preVerificationGas carries our L1 part lands, and covers the chain's l1Fee within the stated margin", async () => {
      const { manifest, chain } = stack;
      const { entryPoint, simpleAccountFactory } = manifest.entryPoints["v0.7"];
      const owner = privateKeyToAccount(generatePrivateKey());
      const factoryAbi = SimpleAccountFactoryV07Artifact.abi as Abi;
      const sender = (await call(simpleAccountFactory, factoryAbi, "getAddress", [owner.address, 0n])) as Address;
      await send(chain.accounts[0]!.address, sender, "0x", 10n ** 18n); // the account pays for itself
      const block = (await chain.provider.request({ method: "eth_getBlockByNumber", params: ["latest", false] })) as { baseFeePerGas: Hex };
      const priority = 100_000_000n;
      const maxFeePerGas = BigInt(block.baseFeePerGas) * 2n + priority;
      const userOp: UserOperationV07 = {
        sender,
        nonce: 0n,
        factory: simpleAccountFactory,
        factoryData: encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [owner.address, 0n] }),
        callData: encodeFunctionData({ abi: SimpleAccountV07Artifact.abi as Abi, functionName: "execute", args: [chain.accounts[5]!.address, 1n, highEntropyHex(200, 99)] }),
        callGasLimit: 100_000n,
        verificationGasLimit: 500_000n,
        preVerificationGas: 0n,
        maxFeePerGas,
        maxPriorityFeePerGas: priority,
        signature: STUB_SIGNATURE,
      };
      const price = l2GasPrice({ maxFeePerGas, maxPriorityFeePerGas: priority }, BigInt(block.baseFeePerGas));
      const l1Part = await l1DataGas(rpc, "op-stack", { chainId: chain.chainId, entryPoint, op: { version: "v0.7", userOp }, l2GasPrice: price });
      expect(l1Part > 0n).to.equal(true);
      userOp.preVerificationGas = preVerificationGas({ version: "v0.7", userOp }) + l1Part;
      const hash = getUserOpHash({ version: "v0.7", userOp, entryPoint, chainId: chain.chainId });
      userOp.signature = await owner.signMessage({ message: { raw: hash } });

      const bundler = chain.accounts[8]!.address;
      const data = encodeFunctionData({ abi: EntryPointV07Artifact.abi as Abi, functionName: "handleOps", args: [[packUserOpV07(userOp)], chain.accounts[9]!.address] });
      // Inclusion at the base fee the op was priced at: this checks the L1 pricing, not base-fee drift (the
      // local chain's fee market falls 12.5% a block; OP Stack's at most 2%, which the margin covers).
      await chain.provider.request({ method: "hardhat_setNextBlockBaseFeePerGas", params: [block.baseFeePerGas] });
      const receipt = await send(bundler, entryPoint, data, 0n, { maxFeePerGas, maxPriorityFeePerGas: priority });
      expect(receipt.status).to.equal("0x1");
      const event = receipt.logs.find((log) => log.topics[0] === USER_OPERATION_EVENT);
      expect(event, "UserOperationEvent").to.not.equal(undefined);
      expect(BigInt(`0x${event!.data.slice(2 + 64, 2 + 128)}`), "success").to.equal(1n);

      // What the chain charged the bundler for the bundle's L1 data, against what the op paid back for it.
      const l1Fee = BigInt(receipt.l1Fee);
      const effectivePrice = BigInt(receipt.effectiveGasPrice);
      expect(l1Fee > 0n).to.equal(true);
      const repaid = l1Part * effectivePrice;
      expect(repaid >= l1Fee, `repaid ${repaid} < l1Fee ${l1Fee}`).to.equal(true);
      // Stated margin: 10% on the quote, plus the worst-case nonce/fee fields of the priced transaction: at most
      // 15% above what the chain charged.
      expect(repaid * 100n <= l1Fee * 115n, `repaid ${repaid} > 1.15 x l1Fee ${l1Fee}`).to.equal(true);
    });

    async function oracleFee(data: Hex): Promise<bigint> {
      return (await call(OP_GAS_PRICE_ORACLE, ORACLE_ABI, "getL1Fee", [data])) as bigint;
    }

    async function call(to: Address, abi: Abi | readonly unknown[], functionName: string, args: unknown[]): Promise<unknown> {
      const { decodeFunctionResult } = await import("viem");
      const data = encodeFunctionData({ abi: abi as Abi, functionName, args });
      const result = (await stack.chain.provider.request({ method: "eth_call", params: [{ to, data }, "latest"] })) as Hex;
      return decodeFunctionResult({ abi: abi as Abi, functionName, data: result });
    }

    async function send(from: Address, to: Address, data: Hex, value = 0n, fees?: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }) {
      const tx: Record<string, string> = { from, to, data, value: `0x${value.toString(16)}`, gas: "0x989680" };
      if (fees) {
        tx.maxFeePerGas = `0x${fees.maxFeePerGas.toString(16)}`;
        tx.maxPriorityFeePerGas = `0x${fees.maxPriorityFeePerGas.toString(16)}`;
      }
      const hash = (await stack.chain.provider.request({ method: "eth_sendTransaction", params: [tx] })) as Hex;
      return (await stack.chain.provider.request({ method: "eth_getTransactionReceipt", params: [hash] })) as {
        status: Hex;
        l1Fee: Hex;
        effectiveGasPrice: Hex;
        logs: { topics: Hex[]; data: Hex }[];
      };
    }
  });

  describe("through the service on an OP Stack chain (gas kind op-stack)", function () {
    this.timeout(120_000);
    let embedded: Embedded;
    before(async () => {
      embedded = await startTestStack({ chainType: "op" });
      await setOpFeeScalars((method, params) => embedded.stack.chain.provider.request({ method, params }));
    });
    after(async () => {
      await embedded?.close();
    });

    for (const version of ["v0.6", "v0.7"] as const) {
      it(`${version}: pm_sponsorUserOperation's preVerificationGas repays the bundle's l1Fee, and the op lands`, async () => {
        const wallet = await newWallet(embedded, version);
        const wire = wireOp(wallet, executeCallData(embedded.stack.chain.accounts[4]!.address, highEntropyHex(100, 5)));
        const { status, body } = await callService(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version }]);
        expect(status, JSON.stringify(body)).to.equal(200);
        const op = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
        const calldataPart = preVerificationGas(op);
        const l1Part = op.userOp.preVerificationGas - calldataPart;
        expect(l1Part > 0n, `preVerificationGas ${op.userOp.preVerificationGas} has no L1 part over ${calldataPart}`).to.equal(true);

        const entryPoint = embedded.stack.manifest.entryPoints[version].entryPoint;
        const abi = (version === "v0.6" ? (await import("@paymaster/contracts/artifacts")).EntryPointV06Artifact.abi : EntryPointV07Artifact.abi) as Abi;
        const chainOp = version === "v0.6" ? op.userOp : packUserOpV07(op.userOp as UserOperationV07);
        const data = encodeFunctionData({ abi, functionName: "handleOps", args: [[chainOp], embedded.stack.chain.accounts[9]!.address] });
        const request = (method: string, params: unknown[]) => embedded.stack.chain.provider.request({ method, params });
        // The service filled the fees from its market snapshot (maxFeePerGas = 2 x baseFee + priority): include
        // the op at that base fee, so this checks the L1 pricing, not the local chain's base-fee drift.
        const pricedBaseFee = (op.userOp.maxFeePerGas - op.userOp.maxPriorityFeePerGas) / 2n;
        await request("hardhat_setNextBlockBaseFeePerGas", [`0x${pricedBaseFee.toString(16)}`]);
        const hash = (await request("eth_sendTransaction", [
          {
            from: embedded.stack.chain.accounts[8]!.address,
            to: entryPoint,
            data,
            gas: "0x989680",
            maxFeePerGas: `0x${op.userOp.maxFeePerGas.toString(16)}`,
            maxPriorityFeePerGas: `0x${op.userOp.maxPriorityFeePerGas.toString(16)}`,
          },
        ])) as Hex;
        const receipt = (await request("eth_getTransactionReceipt", [hash])) as { status: Hex; l1Fee: Hex; effectiveGasPrice: Hex; logs: { topics: Hex[]; data: Hex }[] };
        expect(receipt.status).to.equal("0x1");
        const event = receipt.logs.find((log) => log.topics[0] === USER_OPERATION_EVENT);
        expect(BigInt(`0x${event!.data.slice(2 + 64, 2 + 128)}`), "UserOperationEvent.success").to.equal(1n);
        const repaid = l1Part * BigInt(receipt.effectiveGasPrice);
        const l1Fee = BigInt(receipt.l1Fee);
        expect(repaid >= l1Fee, `repaid ${repaid} < l1Fee ${l1Fee}`).to.equal(true);
        expect(repaid * 100n <= l1Fee * 115n, `repaid ${repaid} > 1.15 x l1Fee ${l1Fee}`).to.equal(true);
      });
    }

    it("the maximum cost the caps hold includes the L1 part (pm_estimateUserOperationGas)", async () => {
      const wallet = await newWallet(embedded, "v0.7");
      const wire = wireOp(wallet, executeCallData(embedded.stack.chain.accounts[4]!.address));
      const { status, body } = await callService(embedded.endpoint, "pm_estimateUserOperationGas", [wire, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
      expect(status, JSON.stringify(body)).to.equal(200);
      const r = body.data.userOpResponse;
      const op = opFromResponse(wallet, wire, body.data);
      op.userOp.signature = STUB_SIGNATURE;
      expect(BigInt(r.preVerificationGas) > preVerificationGas(op), "preVerificationGas carries an L1 part").to.equal(true);
      const limits = ["callGasLimit", "verificationGasLimit", "preVerificationGas", "paymasterVerificationGasLimit", "paymasterPostOpGasLimit"];
      const gasSum = limits.reduce((sum, field) => sum + BigInt(r[field]), 0n);
      expect(BigInt(body.data.maxCostWei)).to.equal(gasSum * BigInt(r.maxFeePerGas));
    });
  });

  describe("on Arbitrum (NodeInterface; no Arbitrum node runs here, so only the request and the reading)", () => {
    it("asks gasEstimateL1Component(entryPoint, false, handleOps calldata) and adds the margin to the gas it answers", async () => {
      const entryPoint: Address = "0x0000000071727De22E5E9d8BAf0edAc6f37da032";
      const input = { chainId: 42161, entryPoint, op: sampleOp(STUB_SIGNATURE), l2GasPrice: 10_000_000n };
      let asked: { to: Address; data: Hex } | undefined;
      // The answer an Arbitrum node gives: (gasEstimateForL1, baseFee, l1BaseFeeEstimate) as three words.
      const answer = `0x${(31_337n).toString(16).padStart(64, "0")}${(10n ** 7n).toString(16).padStart(64, "0")}${(3n * 10n ** 9n).toString(16).padStart(64, "0")}` as Hex;
      const rpc: Pick<ChainRpc, "request"> = {
        request: <T>(method: string, params: unknown[]) => {
          expect(method).to.equal("eth_call");
          asked = params[0] as { to: Address; data: Hex };
          return Promise.resolve(answer as T);
        },
      };
      const gas = await l1DataGas(rpc, "arbitrum", input);
      expect(asked!.to).to.equal(ARBITRUM_NODE_INTERFACE);
      const decoded = decodeFunctionData({ abi: NODE_INTERFACE_ABI, data: asked!.data });
      expect(decoded.args[0]).to.equal(entryPoint);
      expect(decoded.args[1]).to.equal(false);
      const handleOps = decodeFunctionData({ abi: EntryPointV07Artifact.abi as Abi, data: decoded.args[2] });
      expect(handleOps.functionName).to.equal("handleOps");
      expect(gas).to.equal(34_471n); // 31337 x 1.1 = 34470.7 -> 34471
    });
  });
});
