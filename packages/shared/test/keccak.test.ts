import { expect } from "chai";
import { keccakWord } from "../src/abiWords.ts";
import { keccak256, keccak256Js, keccak256Native, keccakImplementation } from "../src/keccak.ts";
import type { Hex } from "../src/index.ts";

/** Deterministic pseudo-random bytes (xorshift32) as 0x-hex. */
function bytesHex(length: number, seed: number): Hex {
  let x = seed || 1;
  let out = "0x";
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out += ((x >>> 0) & 0xff).toString(16).padStart(2, "0");
  }
  return out as Hex;
}

describe("keccak256", () => {
  it("loads the native addon on linux-x64 (its prebuilt binary ships in the package)", function () {
    if (process.platform !== "linux" || process.arch !== "x64") this.skip();
    expect(keccakImplementation).to.equal("native");
  });

  it("native and pure-JS give identical results (lengths around the 136-byte rate, large inputs, upper case)", function () {
    if (keccakImplementation !== "native") this.skip();
    const inputs: Hex[] = ["0x", "0x00", "0xff", `0x${"AB".repeat(40)}`, `0x${"ab".repeat(40)}`];
    for (const length of [1, 31, 32, 33, 64, 135, 136, 137, 271, 272, 273, 1000, 4096, 48 * 1024 + 7]) {
      inputs.push(bytesHex(length, length * 7919));
    }
    for (const input of inputs) {
      expect(keccak256Native(input), `${(input.length - 2) / 2} bytes`).to.equal(keccak256Js(input));
      expect(keccak256(input)).to.equal(keccak256Js(input));
    }
  });

  it("matches known vectors", () => {
    expect(keccak256("0x")).to.equal("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
    // keccak256("abc")
    expect(keccak256("0x616263")).to.equal("0x4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45");
  });

  it("re-initializes between calls (no state carried over)", function () {
    if (keccakImplementation !== "native") this.skip();
    const a = bytesHex(500, 1);
    const first = keccak256Native(a);
    keccak256Native(bytesHex(3000, 2));
    expect(keccak256Native(a)).to.equal(first);
  });

  it("keccakWord's memo of recent data hashes never changes a result and still refuses bad hex", () => {
    const inputs = Array.from({ length: 20 }, (_, i) => bytesHex(i * 37, i + 100));
    for (let round = 0; round < 3; round++) {
      for (const input of inputs) expect(keccakWord(input, "data")).to.equal(keccak256Js(input).slice(2));
    }
    expect(keccakWord(inputs[3]!, "data")).to.equal(keccakWord(`0x${inputs[3]!.slice(2).toUpperCase()}`, "data"));
    expect(() => keccakWord("0xabc" as Hex, "callData")).to.throw(/callData/);
    expect(() => keccakWord("0xzz" as Hex, "callData")).to.throw(/callData/);
  });
});
