import { expect } from "chai";
import { erc20PaymasterHash, parseHashVector, verifyingPaymasterHash, type HashVectorJson } from "../src/index.ts";
import committed from "../vectors/paymaster-hash.json" with { type: "json" };

// The committed vectors (also checked against the contracts' getHash in packages/contracts): the mirror must
// give exactly the frozen hashes.
describe("golden vectors (vectors/paymaster-hash.json) against the TypeScript mirror", () => {
  const vectors = (committed.vectors as HashVectorJson[]).map(parseHashVector);

  it("cover every version and both paymaster kinds, and 7702 ops on v0.8", () => {
    const seen = new Set((committed.vectors as HashVectorJson[]).map((v) => `${v.version} ${v.kind}`));
    expect([...seen].sort()).to.deep.equal(["v0.6 erc20", "v0.6 verifying", "v0.7 erc20", "v0.7 verifying", "v0.8 erc20", "v0.8 verifying"]);
    expect((committed.vectors as HashVectorJson[]).filter((v) => v.eip7702Delegate !== undefined)).to.have.length.greaterThan(1);
  });

  it("cover, on every version, an op without initCode both from a 7702-delegated sender and from one that is not", () => {
    const noInitCode = (committed.vectors as HashVectorJson[]).filter((v) => (v.userOp.initCode ?? "0x") === "0x" && v.userOp.factory === undefined);
    for (const version of ["v0.6", "v0.7", "v0.8"]) {
      expect(noInitCode.filter((v) => v.version === version && v.eip7702Delegate !== undefined), version).to.have.length.greaterThan(0);
      expect(noInitCode.filter((v) => v.version === version && v.eip7702Delegate === undefined), version).to.have.length.greaterThan(0);
    }
  });

  for (const v of vectors) {
    it(v.name, () => {
      const hash = v.kind === "verifying" ? verifyingPaymasterHash(v.params) : erc20PaymasterHash(v.params);
      expect(hash).to.equal(v.hash);
    });
  }
});
