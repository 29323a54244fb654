import { expect } from "chai";
import { toPackedUserOperation } from "viem/account-abstraction";
import {
  EncodingError,
  fromRpcUserOpV06,
  fromRpcUserOpV07,
  initCodeV07,
  packUserOpV07,
  toRpcUserOpV06,
  toRpcUserOpV07,
  unpackUserOpV07,
  UserOperationError,
  type Hex,
  type PackedUserOperation,
  type RpcUserOperationV07,
  type UserOperationV07,
} from "../src/index.ts";
import { OP_V06, OP_V07, OP_V07_BARE } from "./fixtures.ts";

describe("userOperation", () => {
  describe("packUserOpV07", () => {
    it("packs gas pairs high ‖ low, initCode and paymasterAndData", () => {
      const packed = packUserOpV07(OP_V07);
      // verificationGasLimit 260000 = 0x3f7a0 (high), callGasLimit 110000 = 0x1adb0 (low).
      expect(packed.accountGasLimits).to.equal(`0x${"3f7a0".padStart(32, "0")}${"1adb0".padStart(32, "0")}`);
      // maxPriorityFeePerGas 1.6 gwei = 0x5f5e1000 (high), maxFeePerGas 31 gwei = 0x737be7600 (low).
      expect(packed.gasFees).to.equal(`0x${"5f5e1000".padStart(32, "0")}${"737be7600".padStart(32, "0")}`);
      expect(packed.initCode).to.equal(`${OP_V07.factory}${OP_V07.factoryData!.slice(2)}`);
      expect(packed.paymasterAndData).to.equal(
        `${OP_V07.paymaster}${"ea60".padStart(32, "0")}${"afc8".padStart(32, "0")}${OP_V07.paymasterData!.slice(2)}`,
      );
      expect(packed.nonce).to.equal(OP_V07.nonce);
      expect(packed.preVerificationGas).to.equal(OP_V07.preVerificationGas);
    });

    it("agrees with viem's toPackedUserOperation", () => {
      const viemPacked = toPackedUserOperation(OP_V07);
      const packed = packUserOpV07(OP_V07);
      expect(packed.initCode).to.equal(viemPacked.initCode.toLowerCase());
      expect(packed.accountGasLimits).to.equal(viemPacked.accountGasLimits);
      expect(packed.gasFees).to.equal(viemPacked.gasFees);
      expect(packed.paymasterAndData).to.equal(viemPacked.paymasterAndData.toLowerCase());
    });

    it("packs an op without factory or paymaster to empty initCode and paymasterAndData", () => {
      const packed = packUserOpV07(OP_V07_BARE);
      expect(packed.initCode).to.equal("0x");
      expect(packed.paymasterAndData).to.equal("0x");
    });

    it("packs a paymaster without data or gas limits as 52 bytes with zero limits", () => {
      const packed = packUserOpV07({ ...OP_V07_BARE, paymaster: OP_V07.paymaster! });
      expect(packed.paymasterAndData).to.equal(`${OP_V07.paymaster}${"00".repeat(32)}`);
    });

    it("refuses values that cannot be packed", () => {
      expect(() => packUserOpV07({ ...OP_V07, callGasLimit: 1n << 128n })).to.throw(UserOperationError, /callGasLimit: .* uint128/);
      expect(() => packUserOpV07({ ...OP_V07, maxFeePerGas: -1n })).to.throw(UserOperationError, /maxFeePerGas/);
      expect(() => packUserOpV07({ ...OP_V07_BARE, factoryData: "0x1234" })).to.throw(UserOperationError, /factoryData is set but factory is not/);
      expect(() => packUserOpV07({ ...OP_V07_BARE, paymasterData: "0x1234" })).to.throw(UserOperationError, /paymaster fields/);
      expect(() => packUserOpV07({ ...OP_V07_BARE, paymasterPostOpGasLimit: 1n })).to.throw(UserOperationError, /paymaster fields/);
      expect(() => packUserOpV07({ ...OP_V07, factory: "0x12" })).to.throw(UserOperationError, /factory/);
    });

    it("initCodeV07 accepts a factory without factoryData", () => {
      expect(initCodeV07({ factory: "0x3333333333333333333333333333333333333333" })).to.equal("0x3333333333333333333333333333333333333333");
      expect(initCodeV07({})).to.equal("0x");
    });
  });

  describe("unpackUserOpV07", () => {
    it("is the exact inverse of pack (full op, bare op, factory without data, paymaster without data)", () => {
      const cases: UserOperationV07[] = [
        OP_V07,
        OP_V07_BARE,
        { ...OP_V07_BARE, factory: OP_V07.factory!, factoryData: "0x" },
        { ...OP_V07_BARE, paymaster: OP_V07.paymaster!, paymasterVerificationGasLimit: 0n, paymasterPostOpGasLimit: 0n, paymasterData: "0x" },
        { ...OP_V07, callGasLimit: (1n << 128n) - 1n, maxPriorityFeePerGas: 0n, maxFeePerGas: (1n << 128n) - 1n },
      ];
      for (const op of cases) expect(unpackUserOpV07(packUserOpV07(op))).to.deep.equal(op);
    });

    it("leaves absent optional fields absent (not undefined-valued)", () => {
      const op = unpackUserOpV07(packUserOpV07(OP_V07_BARE));
      expect(Object.keys(op)).to.not.include.members(["factory", "factoryData", "paymaster", "paymasterData"]);
    });

    it("checksums the factory and paymaster it cuts out", () => {
      const packed = { ...packUserOpV07(OP_V07_BARE), initCode: "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48" as Hex };
      expect(unpackUserOpV07(packed).factory).to.equal("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48");
    });

    it("refuses malformed lengths", () => {
      const packed = packUserOpV07(OP_V07);
      const bad = (change: Partial<PackedUserOperation>) => () => unpackUserOpV07({ ...packed, ...change });
      for (const n of [1, 19]) {
        expect(bad({ initCode: `0x${"33".repeat(n)}` })).to.throw(UserOperationError, new RegExp(`initCode: ${n} bytes`));
      }
      for (const n of [1, 20, 51]) {
        expect(bad({ paymasterAndData: `0x${"11".repeat(n)}` })).to.throw(UserOperationError, new RegExp(`paymasterAndData: ${n} bytes`));
      }
      expect(bad({ accountGasLimits: `0x${"00".repeat(31)}` })).to.throw(UserOperationError, /accountGasLimits: expected 32 bytes/);
      expect(bad({ gasFees: `0x${"00".repeat(33)}` })).to.throw(UserOperationError, /gasFees: expected 32 bytes/);
      expect(bad({ initCode: "0x123" as Hex })).to.throw(UserOperationError, /initCode/);
    });
  });

  describe("RPC converters", () => {
    it("v0.6 uses minimal hex quantities and round-trips", () => {
      const rpc = toRpcUserOpV06({ ...OP_V06, nonce: 0n });
      expect(rpc.nonce).to.equal("0x0");
      expect(rpc.callGasLimit).to.equal("0x186a0");
      expect(rpc.maxFeePerGas).to.equal("0x6fc23ac00");
      expect(rpc.initCode).to.equal(OP_V06.initCode);
      expect(fromRpcUserOpV06(toRpcUserOpV06(OP_V06))).to.deep.equal(OP_V06);
    });

    it("v0.7 round-trips with and without the optional fields", () => {
      const rpc = toRpcUserOpV07(OP_V07);
      expect(rpc.paymasterVerificationGasLimit).to.equal("0xea60");
      expect(rpc.paymasterPostOpGasLimit).to.equal("0xafc8");
      expect(rpc.factory).to.equal(OP_V07.factory);
      expect(fromRpcUserOpV07(rpc)).to.deep.equal(OP_V07);
      const bare = toRpcUserOpV07(OP_V07_BARE);
      expect(Object.keys(bare)).to.have.members([
        "sender", "nonce", "callData", "callGasLimit", "verificationGasLimit", "preVerificationGas", "maxFeePerGas", "maxPriorityFeePerGas", "signature",
      ]);
      expect(fromRpcUserOpV07(bare)).to.deep.equal(OP_V07_BARE);
    });

    it("v0.7 treats null optional fields as absent", () => {
      const rpc: RpcUserOperationV07 = {
        ...toRpcUserOpV07(OP_V07_BARE),
        factory: null,
        factoryData: null,
        paymaster: null,
        paymasterVerificationGasLimit: null,
        paymasterPostOpGasLimit: null,
        paymasterData: null,
      };
      expect(fromRpcUserOpV07(rpc)).to.deep.equal(OP_V07_BARE);
    });

    it("accepts padded quantities and refuses malformed wire values", () => {
      const rpc = toRpcUserOpV06(OP_V06);
      expect(fromRpcUserOpV06({ ...rpc, nonce: "0x0000" }).nonce).to.equal(0n);
      expect(() => fromRpcUserOpV06({ ...rpc, nonce: "0x" })).to.throw(UserOperationError, /nonce/);
      expect(() => fromRpcUserOpV06({ ...rpc, callGasLimit: "100000" as Hex })).to.throw(UserOperationError, /callGasLimit/);
      expect(() => fromRpcUserOpV06({ ...rpc, maxFeePerGas: `0x1${"0".repeat(64)}` })).to.throw(UserOperationError, /maxFeePerGas/);
      expect(() => fromRpcUserOpV06({ ...rpc, callData: "0xabc" })).to.throw(UserOperationError, /callData/);
      expect(() => fromRpcUserOpV06({ ...rpc, sender: "0x1234" })).to.throw(UserOperationError, /sender/);
      expect(() => fromRpcUserOpV07({ ...toRpcUserOpV07(OP_V07), paymaster: "0xzz" })).to.throw(UserOperationError, /paymaster/);
    });

    it("refuses negative quantities on the way out", () => {
      expect(() => toRpcUserOpV06({ ...OP_V06, nonce: -1n })).to.throw(EncodingError, /nonce/);
    });
  });
});
