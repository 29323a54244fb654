// The paymaster signer: the native (libsecp256k1) and pure-JS paths give the same EIP-191 signatures, and
// they recover to the signer's address.
import { expect } from "chai";
import { keccak256, recoverMessageAddress, toHex, type Hex } from "viem";
import { createSigner } from "../src/signer/signer.ts";

const KEY: Hex = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

describe("paymaster signer", () => {
  it("uses the native addon on linux-x64 (its prebuilt binary ships in the package)", function () {
    if (process.platform !== "linux" || process.arch !== "x64") this.skip();
    expect(createSigner(KEY).implementation).to.equal("native");
  });

  it("native and pure-JS signatures are identical and recover to the signer", async () => {
    const native = createSigner(KEY);
    const js = createSigner(KEY, { prefer: "js" });
    expect(js.implementation).to.equal("js");
    expect(native.address).to.equal(js.address);
    for (let i = 0; i < 12; i++) {
      const hash = keccak256(toHex(`paymaster hash ${i}`));
      const signature = await native.signHash(hash);
      expect(signature).to.match(/^0x[0-9a-f]{128}(1b|1c)$/);
      expect(signature).to.equal(await js.signHash(hash));
      expect(await recoverMessageAddress({ message: { raw: hash }, signature })).to.equal(native.address);
    }
  });
});
