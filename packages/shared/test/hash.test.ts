import { expect } from "chai";
import { hashMessage, recoverAddress, recoverMessageAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  ChargeMode,
  EncodingError,
  erc20PaymasterHash,
  toEthSignedMessageHash,
  userOpFieldsHashV06,
  userOpFieldsHashV07,
  verifyingPaymasterHash,
  type UserOperationV07,
} from "../src/index.ts";
import { CHAIN_ID, EXCHANGE_RATE, MAX_TOKEN_CHARGE, OP_V06, OP_V07, OP_V07_BARE, PAYMASTER, TOKEN, VALID_AFTER, VALID_UNTIL } from "./fixtures.ts";
import { refErc20Hash, refFieldsHashV06, refFieldsHashV07, refVerifyingHash } from "./reference.ts";

// Golden vectors: first computed with reference.ts (viem encodeAbiParameters) and pinned here, so a
// change in either the implementation or the reference shows up.
const GOLDEN = {
  fieldsV06: "0x2e05370c1d22fad20a93cdf05317b761a4a6339987608684ff7ebd0b5edccf95",
  fieldsV07: "0xf5b69b8de5264c3cb195bc25d74a102281f421e35c0d2ae668aba6a01f41dc06",
  fieldsV07Bare: "0xab132db256a5760d9d7f450624107254349693bc743ceb7eb7a09bf7372c49c0",
  verifyingV06: "0xeaa3123b5d126cef85d5adfa4d384f8792445e2c4b26e1618f9cf9a145dc0325",
  verifyingV07: "0xf4cc85791e20e97b56aa6067c3801eb63a1f537555c68301670d86934d6b99a4",
  erc20V06: "0x640da86f80da1583c8c9b2138524c3519f4f48723b03cc0534b70a4edd5167e3",
  erc20V07: "0x18113166504a507bfb21633da59f544b0b9d46cc04735bf4b884118058271c1b",
  ethSignedVerifyingV06: "0x4407cb62a772283e4272e36552a577fc3b46779ea28624b9f7a12c0bdf585575",
} as const;

const common = { chainId: CHAIN_ID, paymaster: PAYMASTER, validUntil: VALID_UNTIL, validAfter: VALID_AFTER, eip7702Delegate: undefined };

describe("hash", () => {
  describe("userOpFieldsHash", () => {
    it("v0.6 matches the golden vector and the encodeAbiParameters reference", () => {
      expect(userOpFieldsHashV06(OP_V06)).to.equal(GOLDEN.fieldsV06);
      expect(refFieldsHashV06(OP_V06)).to.equal(GOLDEN.fieldsV06);
    });

    it("v0.7 matches the golden vector and the reference", () => {
      expect(userOpFieldsHashV07(OP_V07)).to.equal(GOLDEN.fieldsV07);
      expect(refFieldsHashV07(OP_V07)).to.equal(GOLDEN.fieldsV07);
    });

    it("v0.7 without factory or paymaster hashes empty initCode and zero paymaster gas limits", () => {
      expect(userOpFieldsHashV07(OP_V07_BARE)).to.equal(GOLDEN.fieldsV07Bare);
      expect(refFieldsHashV07(OP_V07_BARE)).to.equal(GOLDEN.fieldsV07Bare);
      const explicitZero: UserOperationV07 = { ...OP_V07_BARE, paymasterVerificationGasLimit: 0n, paymasterPostOpGasLimit: 0n };
      expect(userOpFieldsHashV07(explicitZero)).to.equal(GOLDEN.fieldsV07Bare);
    });

    it("does not cover paymasterAndData, paymasterData, paymaster address or signature", () => {
      expect(userOpFieldsHashV06({ ...OP_V06, paymasterAndData: "0x", signature: "0x" })).to.equal(GOLDEN.fieldsV06);
      expect(
        userOpFieldsHashV07({ ...OP_V07, paymaster: "0x9999999999999999999999999999999999999999", paymasterData: "0x", signature: "0x" }),
      ).to.equal(GOLDEN.fieldsV07);
    });

    it("covers every other field (each change alters the hash)", () => {
      const variants: Partial<UserOperationV07>[] = [
        { sender: "0x9d1c2b7b8e2f3a4c5d6e7f8091a2b3c4d5e6f709" },
        { nonce: OP_V07.nonce + 1n },
        { factoryData: "0x" },
        { callData: "0x" },
        { callGasLimit: OP_V07.callGasLimit + 1n },
        { verificationGasLimit: OP_V07.verificationGasLimit + 1n },
        { preVerificationGas: OP_V07.preVerificationGas + 1n },
        { maxFeePerGas: OP_V07.maxFeePerGas + 1n },
        { maxPriorityFeePerGas: OP_V07.maxPriorityFeePerGas + 1n },
        { paymasterVerificationGasLimit: 60_001n },
        { paymasterPostOpGasLimit: 45_001n },
      ];
      const seen = new Set([GOLDEN.fieldsV07 as string]);
      for (const change of variants) seen.add(userOpFieldsHashV07({ ...OP_V07, ...change }));
      expect(seen.size).to.equal(variants.length + 1);
    });

    it("ignores address case", () => {
      expect(userOpFieldsHashV06({ ...OP_V06, sender: "0x9D1C2B7B8E2F3A4C5D6E7F8091A2B3C4D5E6F708" })).to.equal(GOLDEN.fieldsV06);
    });

    it("refuses values the contract types cannot hold", () => {
      expect(() => userOpFieldsHashV07({ ...OP_V07, callGasLimit: 1n << 128n })).to.throw(EncodingError, /callGasLimit/);
      expect(() => userOpFieldsHashV06({ ...OP_V06, nonce: -1n })).to.throw(EncodingError, /nonce/);
      expect(() => userOpFieldsHashV06({ ...OP_V06, nonce: 1n << 256n })).to.throw(EncodingError, /nonce/);
      expect(() => userOpFieldsHashV06({ ...OP_V06, callData: "0xabc" })).to.throw(EncodingError, /callData/);
      expect(() => userOpFieldsHashV06({ ...OP_V06, sender: "0x1234" })).to.throw(EncodingError, /sender/);
      expect(() => userOpFieldsHashV07({ ...OP_V07_BARE, factoryData: "0x12" })).to.throw(EncodingError, /factory/);
    });
  });

  describe("verifyingPaymasterHash", () => {
    it("v0.6 matches the golden vector and the reference", () => {
      expect(verifyingPaymasterHash({ version: "v0.6", userOp: OP_V06, ...common })).to.equal(GOLDEN.verifyingV06);
      expect(refVerifyingHash(GOLDEN.fieldsV06, CHAIN_ID, PAYMASTER, VALID_UNTIL, VALID_AFTER)).to.equal(GOLDEN.verifyingV06);
    });

    it("v0.7 matches the golden vector and the reference", () => {
      expect(verifyingPaymasterHash({ version: "v0.7", userOp: OP_V07, ...common })).to.equal(GOLDEN.verifyingV07);
      expect(refVerifyingHash(GOLDEN.fieldsV07, CHAIN_ID, PAYMASTER, VALID_UNTIL, VALID_AFTER)).to.equal(GOLDEN.verifyingV07);
    });

    it("takes chainId as number or bigint", () => {
      expect(verifyingPaymasterHash({ version: "v0.6", userOp: OP_V06, ...common, chainId: 31337 })).to.equal(GOLDEN.verifyingV06);
    });

    it("binds chain, paymaster and window", () => {
      const base = { version: "v0.6", userOp: OP_V06, ...common } as const;
      const hashes = new Set([
        verifyingPaymasterHash(base),
        verifyingPaymasterHash({ ...base, chainId: 1n }),
        verifyingPaymasterHash({ ...base, paymaster: TOKEN }),
        verifyingPaymasterHash({ ...base, validUntil: VALID_UNTIL + 1 }),
        verifyingPaymasterHash({ ...base, validAfter: VALID_AFTER + 1 }),
        verifyingPaymasterHash({ ...base, validUntil: VALID_AFTER, validAfter: VALID_UNTIL }),
      ]);
      expect(hashes.size).to.equal(6);
    });

    it("refuses a window outside uint48", () => {
      const base = { version: "v0.6", userOp: OP_V06, ...common } as const;
      expect(() => verifyingPaymasterHash({ ...base, validUntil: 2 ** 48 })).to.throw(EncodingError, /validUntil/);
      expect(() => verifyingPaymasterHash({ ...base, validAfter: -1 })).to.throw(EncodingError, /validAfter/);
      expect(() => verifyingPaymasterHash({ ...base, validAfter: 1.5 })).to.throw(EncodingError, /validAfter/);
    });
  });

  describe("erc20PaymasterHash", () => {
    it("v0.6 (pre-charge) matches the golden vector and the reference", () => {
      const params = { version: "v0.6", userOp: OP_V06, ...common, token: TOKEN, exchangeRate: EXCHANGE_RATE, chargeMode: ChargeMode.PreCharge, maxTokenCharge: MAX_TOKEN_CHARGE } as const;
      expect(erc20PaymasterHash(params)).to.equal(GOLDEN.erc20V06);
      expect(refErc20Hash(GOLDEN.fieldsV06, CHAIN_ID, PAYMASTER, VALID_UNTIL, VALID_AFTER, TOKEN, EXCHANGE_RATE, 1, MAX_TOKEN_CHARGE)).to.equal(GOLDEN.erc20V06);
    });

    it("v0.7 (charge in postOp) matches the golden vector and the reference", () => {
      const params = { version: "v0.7", userOp: OP_V07, ...common, token: TOKEN, exchangeRate: EXCHANGE_RATE, chargeMode: ChargeMode.InPostOp, maxTokenCharge: MAX_TOKEN_CHARGE } as const;
      expect(erc20PaymasterHash(params)).to.equal(GOLDEN.erc20V07);
      expect(refErc20Hash(GOLDEN.fieldsV07, CHAIN_ID, PAYMASTER, VALID_UNTIL, VALID_AFTER, TOKEN, EXCHANGE_RATE, 0, MAX_TOKEN_CHARGE)).to.equal(GOLDEN.erc20V07);
    });

    it("binds token, rate, mode and the maximum charge", () => {
      const base = { version: "v0.7", userOp: OP_V07, ...common, token: TOKEN, exchangeRate: EXCHANGE_RATE, chargeMode: ChargeMode.InPostOp, maxTokenCharge: MAX_TOKEN_CHARGE } as const;
      const hashes = new Set([
        erc20PaymasterHash(base),
        erc20PaymasterHash({ ...base, token: PAYMASTER }),
        erc20PaymasterHash({ ...base, exchangeRate: EXCHANGE_RATE + 1n }),
        erc20PaymasterHash({ ...base, chargeMode: ChargeMode.PreCharge }),
        erc20PaymasterHash({ ...base, maxTokenCharge: MAX_TOKEN_CHARGE + 1n }),
        verifyingPaymasterHash(base),
      ]);
      expect(hashes.size).to.equal(6);
    });
  });

  describe("toEthSignedMessageHash", () => {
    it("is EIP-191 of the 32 raw bytes (golden and viem's hashMessage)", () => {
      expect(toEthSignedMessageHash(GOLDEN.verifyingV06)).to.equal(GOLDEN.ethSignedVerifyingV06);
      expect(hashMessage({ raw: GOLDEN.verifyingV06 })).to.equal(GOLDEN.ethSignedVerifyingV06);
    });

    it("is what a personal_sign of the hash recovers from", async () => {
      const signer = privateKeyToAccount("0x0123456789012345678901234567890123456789012345678901234567890123");
      const signature = await signer.signMessage({ message: { raw: GOLDEN.verifyingV07 } });
      expect(await recoverMessageAddress({ message: { raw: GOLDEN.verifyingV07 }, signature })).to.equal(signer.address);
      expect(await recoverAddress({ hash: toEthSignedMessageHash(GOLDEN.verifyingV07), signature })).to.equal(signer.address);
    });

    it("refuses anything but 32 bytes", () => {
      expect(() => toEthSignedMessageHash("0x1234")).to.throw(EncodingError, /32 bytes/);
      expect(() => toEthSignedMessageHash(`${GOLDEN.verifyingV06}00`)).to.throw(EncodingError, /32 bytes/);
    });
  });
});
