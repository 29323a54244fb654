import { expect } from "chai";
import { getAddress } from "viem";
import { checksumAddress } from "../src/index.ts";
import { EncodingError } from "../src/errors.ts";

describe("checksumAddress (EIP-55)", () => {
  it("gives the EIP-55 test vectors from any case", () => {
    // The vectors of EIP-55 itself.
    for (const address of [
      "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
      "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
      "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
      "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
      "0x52908400098527886E0F7030069857D2E4169EE7",
      "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
      "0xde709f2102306220921060314715629080e2fb77",
      "0x27b1fdb04752bbc536007a920d24acb045561c26",
    ]) {
      expect(checksumAddress(address.toLowerCase())).to.equal(address);
      expect(checksumAddress(`0x${address.slice(2).toUpperCase()}`)).to.equal(address);
    }
  });

  it("agrees with viem's getAddress on many addresses", () => {
    let x = 12345;
    for (let n = 0; n < 500; n++) {
      let hex = "0x";
      for (let i = 0; i < 20; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        hex += ((x >>> 0) & 0xff).toString(16).padStart(2, "0");
      }
      expect(checksumAddress(hex)).to.equal(getAddress(hex));
    }
  });

  it("refuses what is not a 20-byte hex address", () => {
    for (const bad of ["0x12", "0x" + "g".repeat(40), "12".repeat(20), `0x${"ab".repeat(21)}`]) {
      expect(() => checksumAddress(bad, "sender")).to.throw(EncodingError, /sender/);
    }
  });
});
