import { expect } from "chai";
import { hexToBytes, keccak256, recoverAddress, toHex } from "viem";
import {
  ChargeMode,
  decodeErc20PaymasterData,
  decodePaymasterAndData,
  decodeVerifyingPaymasterData,
  encodeErc20PaymasterData,
  encodePaymasterAndDataV06,
  encodePaymasterAndDataV07,
  encodeVerifyingPaymasterData,
  ERC20_PAYMASTER_AND_DATA_LENGTH_V06,
  ERC20_PAYMASTER_AND_DATA_LENGTH_V07,
  ERC20_PAYMASTER_DATA_LENGTH,
  PAYMASTER_DATA_OFFSET_V06,
  PAYMASTER_DATA_OFFSET_V07,
  PaymasterDataError,
  SIGNATURE_LENGTH,
  STUB_SIGNATURE,
  stubErc20PaymasterData,
  stubVerifyingPaymasterData,
  TOKEN_FIELDS_LENGTH,
  VALIDITY_LENGTH,
  VERIFYING_PAYMASTER_AND_DATA_LENGTH_V06,
  VERIFYING_PAYMASTER_AND_DATA_LENGTH_V07,
  VERIFYING_PAYMASTER_DATA_LENGTH,
  type Hex,
  type PaymasterDataErrorKind,
} from "../src/index.ts";
import { EXCHANGE_RATE, MAX_TOKEN_CHARGE, PAYMASTER, TOKEN, VALID_AFTER, VALID_UNTIL } from "./fixtures.ts";

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const SIG: Hex = `0x${"12".repeat(32)}${"34".repeat(32)}1b`;
const WINDOW = { validUntil: VALID_UNTIL, validAfter: VALID_AFTER };
const ERC20_FIELDS = { ...WINDOW, token: TOKEN, exchangeRate: EXCHANGE_RATE, chargeMode: ChargeMode.PreCharge, maxTokenCharge: MAX_TOKEN_CHARGE } as const;
const bytes = (hex: Hex) => (hex.length - 2) / 2;

function expectPaymasterDataError(fn: () => unknown, kind: PaymasterDataErrorKind, message: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, "expected a PaymasterDataError").to.be.instanceOf(PaymasterDataError);
  expect((caught as PaymasterDataError).kind).to.equal(kind);
  expect((caught as PaymasterDataError).message).to.match(message);
}

describe("paymasterData", () => {
  it("lengths are the doc's", () => {
    expect([VALIDITY_LENGTH, TOKEN_FIELDS_LENGTH, SIGNATURE_LENGTH]).to.deep.equal([12, 85, 65]);
    expect([VERIFYING_PAYMASTER_DATA_LENGTH, ERC20_PAYMASTER_DATA_LENGTH]).to.deep.equal([77, 162]);
    expect([PAYMASTER_DATA_OFFSET_V06, PAYMASTER_DATA_OFFSET_V07]).to.deep.equal([20, 52]);
    expect([
      VERIFYING_PAYMASTER_AND_DATA_LENGTH_V06,
      ERC20_PAYMASTER_AND_DATA_LENGTH_V06,
      VERIFYING_PAYMASTER_AND_DATA_LENGTH_V07,
      ERC20_PAYMASTER_AND_DATA_LENGTH_V07,
    ]).to.deep.equal([97, 182, 129, 214]);
    expect(ChargeMode).to.deep.equal({ InPostOp: 0, PreCharge: 1 });
  });

  describe("verifying", () => {
    it("encodes the exact byte layout", () => {
      // validUntil 1_700_000_300 = 0x6553f22c, validAfter 1_700_000_000 = 0x6553f100, each 6 bytes.
      expect(encodeVerifyingPaymasterData(WINDOW, SIG)).to.equal(`0x00006553f22c00006553f100${SIG.slice(2)}`);
    });

    it("round-trips, including the uint48 extremes", () => {
      for (const window of [WINDOW, { validUntil: 2 ** 48 - 1, validAfter: 0 }]) {
        const encoded = encodeVerifyingPaymasterData(window, SIG);
        expect(bytes(encoded)).to.equal(77);
        expect(decodeVerifyingPaymasterData(encoded)).to.deep.equal({ ...window, signature: SIG });
      }
    });

    it("refuses every wrong length on decode", () => {
      const good = encodeVerifyingPaymasterData(WINDOW, SIG);
      for (const bad of ["0x", good.slice(0, -2), `${good}00`, good.slice(0, -4), encodeErc20PaymasterData(ERC20_FIELDS, SIG)]) {
        expectPaymasterDataError(() => decodeVerifyingPaymasterData(bad as Hex), "length", /expected exactly 77 bytes, got \d+/);
      }
    });

    it("refuses a 64-byte compact or 66-byte signature on encode", () => {
      expectPaymasterDataError(() => encodeVerifyingPaymasterData(WINDOW, `0x${"12".repeat(64)}`), "length", /signature: expected exactly 65 bytes, got 64/);
      expectPaymasterDataError(() => encodeVerifyingPaymasterData(WINDOW, `${SIG}00`), "length", /got 66/);
    });

    it("refuses non-hex and odd-length input", () => {
      expectPaymasterDataError(() => decodeVerifyingPaymasterData(`0x${"zz".repeat(77)}`), "field", /hex/);
      expectPaymasterDataError(() => decodeVerifyingPaymasterData(`0x${"1".repeat(153)}`), "field", /even-length/);
    });

    it("refuses a window outside uint48 on encode", () => {
      expectPaymasterDataError(() => encodeVerifyingPaymasterData({ validUntil: 2 ** 48, validAfter: 0 }, SIG), "field", /validUntil/);
      expectPaymasterDataError(() => encodeVerifyingPaymasterData({ validUntil: 1, validAfter: -1 }, SIG), "field", /validAfter/);
    });
  });

  describe("erc20", () => {
    it("encodes the exact byte layout", () => {
      const encoded = encodeErc20PaymasterData(ERC20_FIELDS, SIG);
      expect(encoded).to.equal(
        `0x00006553f22c00006553f100${"44".repeat(20)}${"00".repeat(28)}d09dc300` + `01${"00".repeat(29)}12d687${SIG.slice(2)}`,
      );
    });

    it("round-trips both charge modes (token checksummed)", () => {
      for (const chargeMode of [ChargeMode.InPostOp, ChargeMode.PreCharge]) {
        const fields = { ...ERC20_FIELDS, token: "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48" as const, chargeMode, exchangeRate: 2n ** 256n - 1n, maxTokenCharge: 2n ** 256n - 1n };
        const decoded = decodeErc20PaymasterData(encodeErc20PaymasterData(fields, SIG));
        expect(decoded).to.deep.equal({ ...fields, token: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", signature: SIG });
      }
    });

    it("refuses every wrong length on decode", () => {
      const good = encodeErc20PaymasterData(ERC20_FIELDS, SIG);
      for (const bad of ["0x", good.slice(0, -2), `${good}00`, encodeVerifyingPaymasterData(WINDOW, SIG)]) {
        expectPaymasterDataError(() => decodeErc20PaymasterData(bad as Hex), "length", /expected exactly 162 bytes/);
      }
    });

    it("refuses chargeMode 2 and 255 on decode", () => {
      const good = encodeErc20PaymasterData(ERC20_FIELDS, SIG);
      for (const mode of ["02", "ff"]) {
        const bad = `${good.slice(0, 2 + 64 * 2)}${mode}${good.slice(2 + 65 * 2)}` as Hex;
        expect(bytes(bad)).to.equal(162);
        expectPaymasterDataError(() => decodeErc20PaymasterData(bad), "chargeMode", /chargeMode: expected 0 \(InPostOp\) or 1 \(PreCharge\), got \d+/);
      }
    });

    it("refuses chargeMode 2, a bad token, a rate and a maximum charge over uint256 on encode", () => {
      expectPaymasterDataError(() => encodeErc20PaymasterData({ ...ERC20_FIELDS, chargeMode: 2 as ChargeMode }, SIG), "chargeMode", /got 2/);
      expectPaymasterDataError(() => encodeErc20PaymasterData({ ...ERC20_FIELDS, token: "0x1234" }, SIG), "field", /token/);
      expectPaymasterDataError(() => encodeErc20PaymasterData({ ...ERC20_FIELDS, exchangeRate: 2n ** 256n }, SIG), "field", /exchangeRate/);
      expectPaymasterDataError(() => encodeErc20PaymasterData({ ...ERC20_FIELDS, exchangeRate: -1n }, SIG), "field", /exchangeRate/);
      expectPaymasterDataError(() => encodeErc20PaymasterData({ ...ERC20_FIELDS, maxTokenCharge: 2n ** 256n }, SIG), "field", /maxTokenCharge/);
    });
  });

  describe("paymasterAndData", () => {
    it("v0.6 is paymaster ‖ paymasterData and round-trips", () => {
      const data = encodeVerifyingPaymasterData(WINDOW, SIG);
      const pnd = encodePaymasterAndDataV06(PAYMASTER, data);
      expect(pnd).to.equal(`${PAYMASTER}${data.slice(2)}`);
      expect(bytes(pnd)).to.equal(97);
      expect(decodePaymasterAndData("v0.6", pnd)).to.deep.equal({ paymaster: PAYMASTER, paymasterData: data });
      expect(bytes(encodePaymasterAndDataV06(PAYMASTER, encodeErc20PaymasterData(ERC20_FIELDS, SIG)))).to.equal(182);
    });

    it("v0.7 is paymaster ‖ uint128 ‖ uint128 ‖ paymasterData and round-trips", () => {
      const fields = {
        paymaster: PAYMASTER,
        paymasterVerificationGasLimit: 60_000n, // 0xea60
        paymasterPostOpGasLimit: 45_000n, // 0xafc8
        paymasterData: encodeErc20PaymasterData(ERC20_FIELDS, SIG),
      };
      const pnd = encodePaymasterAndDataV07(fields);
      expect(pnd.slice(0, 2 + 52 * 2)).to.equal(`${PAYMASTER}${"00".repeat(14)}ea60${"00".repeat(14)}afc8`);
      expect(bytes(pnd)).to.equal(214);
      expect(decodePaymasterAndData("v0.7", pnd)).to.deep.equal(fields);
      const verifying = encodePaymasterAndDataV07({ ...fields, paymasterData: encodeVerifyingPaymasterData(WINDOW, SIG) });
      expect(bytes(verifying)).to.equal(129);
    });

    it("v0.7 round-trips the uint128 extremes and an empty paymasterData", () => {
      const fields = { paymaster: PAYMASTER, paymasterVerificationGasLimit: 2n ** 128n - 1n, paymasterPostOpGasLimit: 0n, paymasterData: "0x" as Hex };
      expect(decodePaymasterAndData("v0.7", encodePaymasterAndDataV07(fields))).to.deep.equal(fields);
    });

    it("v0.7 refuses gas limits over uint128", () => {
      expectPaymasterDataError(
        () => encodePaymasterAndDataV07({ paymaster: PAYMASTER, paymasterVerificationGasLimit: 2n ** 128n, paymasterPostOpGasLimit: 0n, paymasterData: "0x" }),
        "field",
        /paymasterVerificationGasLimit/,
      );
    });

    it("decoding checksums the paymaster", () => {
      const lower = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
      expect(decodePaymasterAndData("v0.6", lower).paymaster).to.equal("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48");
    });

    it("refuses input too short for the paymaster fields", () => {
      expectPaymasterDataError(() => decodePaymasterAndData("v0.6", "0x"), "length", /0 bytes/);
      expectPaymasterDataError(() => decodePaymasterAndData("v0.6", `0x${"11".repeat(19)}`), "length", /19 bytes/);
      expectPaymasterDataError(() => decodePaymasterAndData("v0.7", `0x${"11".repeat(51)}`), "length", /51 bytes .* 52 bytes/);
      expect(decodePaymasterAndData("v0.7", `0x${"11".repeat(52)}`).paymasterData).to.equal("0x");
    });
  });

  describe("STUB_SIGNATURE", () => {
    const raw = hexToBytes(STUB_SIGNATURE);
    const r = BigInt(`0x${STUB_SIGNATURE.slice(2, 66)}`);
    const s = BigInt(`0x${STUB_SIGNATURE.slice(66, 130)}`);
    const v = raw[64];

    it("is 65 bytes with no zero byte", () => {
      expect(raw.length).to.equal(65);
      expect(raw.every((byte) => byte !== 0)).to.equal(true);
    });

    it("is derived as documented and has a real signature's entropy: no 3-byte sequence repeats (nothing for LZ to match)", () => {
      const rDerived = keccak256(toHex("paymaster stub signature: r"));
      const sDerived = BigInt(keccak256(toHex("paymaster stub signature: s"))) & ((1n << 255n) - 1n);
      expect(STUB_SIGNATURE).to.equal(`${rDerived}${sDerived.toString(16).padStart(64, "0")}1c`);
      const seen = new Set<string>();
      for (let i = 0; i + 3 <= raw.length; i++) {
        const triple = `${raw[i]},${raw[i + 1]},${raw[i + 2]}`;
        expect(seen.has(triple), `bytes ${i}..${i + 2} repeat`).to.equal(false);
        seen.add(triple);
      }
    });

    it("has non-zero r < n, non-zero s in the low half, v 27 or 28", () => {
      expect(r > 0n && r < SECP256K1_N).to.equal(true);
      expect(s > 0n && s <= SECP256K1_N / 2n).to.equal(true);
      expect([27, 28]).to.include(v);
    });

    it("recovers to some address for arbitrary hashes", async () => {
      for (const seed of ["0x01", "0x02", "0xdeadbeef"] as const) {
        const address = await recoverAddress({ hash: keccak256(seed), signature: STUB_SIGNATURE });
        expect(address).to.match(/^0x[0-9a-fA-F]{40}$/);
        expect(address).to.not.equal("0x0000000000000000000000000000000000000000");
      }
    });

    it("stubs have the real layouts and lengths", () => {
      const verifying = stubVerifyingPaymasterData(WINDOW);
      expect(verifying).to.equal(encodeVerifyingPaymasterData(WINDOW, STUB_SIGNATURE));
      expect(decodeVerifyingPaymasterData(verifying).signature).to.equal(STUB_SIGNATURE);
      const erc20 = stubErc20PaymasterData(ERC20_FIELDS);
      expect(bytes(erc20)).to.equal(162);
      expect(decodeErc20PaymasterData(erc20)).to.deep.equal({ ...ERC20_FIELDS, signature: STUB_SIGNATURE });
    });
  });
});
