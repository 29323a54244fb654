import { expect } from "chai";
import {
  EncodingError,
  maxGasCostV06,
  maxGasCostV07,
  preChargeGasCostV06,
  preChargeGasCostV07,
  tokenCost,
} from "../src/index.ts";
import { OP_V06, OP_V07, OP_V07_BARE } from "./fixtures.ts";

describe("maxCost", () => {
  it("v0.6 with a paymaster: (call + 3·verification + preVerification) · maxFeePerGas", () => {
    // (100_000 + 3·250_000 + 50_000) · 30 gwei = 900_000 · 30e9
    expect(maxGasCostV06(OP_V06)).to.equal(27_000_000_000_000_000n);
  });

  it("v0.6 without a paymaster (empty or zero address): multiplier 1", () => {
    expect(maxGasCostV06({ ...OP_V06, paymasterAndData: "0x" })).to.equal(400_000n * 30_000_000_000n);
    expect(maxGasCostV06({ ...OP_V06, paymasterAndData: `0x${"00".repeat(20)}1234` })).to.equal(400_000n * 30_000_000_000n);
  });

  it("v0.6 refuses a paymasterAndData too short for an address", () => {
    expect(() => maxGasCostV06({ ...OP_V06, paymasterAndData: `0x${"11".repeat(19)}` })).to.throw(EncodingError, /AA93/);
  });

  it("v0.7: sum of the five gas values · maxFeePerGas", () => {
    // (260_000 + 110_000 + 60_000 + 45_000 + 51_000) · 31 gwei = 526_000 · 31e9
    expect(maxGasCostV07(OP_V07)).to.equal(16_306_000_000_000_000n);
    expect(maxGasCostV07(OP_V07_BARE)).to.equal(421_000n * 31_000_000_000n);
  });

  it("pre-charge bases: v0.6 adds postOpGas at maxFeePerGas, v0.7 is maxCost", () => {
    expect(preChargeGasCostV06(OP_V06, 40_000n)).to.equal(27_000_000_000_000_000n + 40_000n * 30_000_000_000n);
    expect(preChargeGasCostV07(OP_V07)).to.equal(16_306_000_000_000_000n);
  });

  describe("tokenCost", () => {
    it("is exact when the division is exact", () => {
      // 0.01 ETH at 3500 USDC/ETH (6 decimals) = 35 USDC
      expect(tokenCost(10n ** 16n, 3_500_000_000n)).to.equal(35_000_000n);
      expect(tokenCost(10n ** 18n, 1n)).to.equal(1n);
    });

    it("rounds up any remainder", () => {
      expect(tokenCost(10n ** 16n + 1n, 3_500_000_000n)).to.equal(35_000_001n);
      expect(tokenCost(10n ** 18n + 1n, 1n)).to.equal(2n);
      expect(tokenCost(999_999_999_999_999_999n, 1n)).to.equal(1n);
    });

    it("never charges 0 for a non-zero cost at a non-zero rate", () => {
      expect(tokenCost(1n, 1n)).to.equal(1n);
      expect(tokenCost(21_000n, 1n)).to.equal(1n);
    });

    it("is 0 only for a zero cost or rate", () => {
      expect(tokenCost(0n, 3_500_000_000n)).to.equal(0n);
      expect(tokenCost(10n ** 18n, 0n)).to.equal(0n);
    });

    it("handles full-width products like mulDiv (no intermediate overflow) and refuses overflowing results", () => {
      const max = 2n ** 256n - 1n;
      expect(tokenCost(max, 10n ** 18n)).to.equal(max);
      expect(tokenCost(max, 1n)).to.equal(max / 10n ** 18n + 1n);
      expect(() => tokenCost(max, 10n ** 18n + 1n)).to.throw(EncodingError, /overflows uint256/);
      expect(() => tokenCost(-1n, 1n)).to.throw(EncodingError, /gasCostWei/);
      expect(() => tokenCost(1n, 2n ** 256n)).to.throw(EncodingError, /exchangeRate/);
    });
  });
});
