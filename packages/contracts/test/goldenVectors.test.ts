// Audit item 8: the frozen golden vectors of @paymaster/shared (vectors/paymaster-hash.json) against the
// contracts' own getHash. The same file is checked against the TypeScript mirror in packages/shared, so the
// two sides cannot drift together: any change to the signed hash breaks a committed expectation.
import { expect } from "chai";
import { Contract } from "ethers";
import { eip7702DelegationCode, packUserOpV07, parseHashVector, type HashVectorJson, type UserOperationV07 } from "@paymaster/shared";
import committed from "@paymaster/shared/vectors/paymaster-hash.json" with { type: "json" };
import { ethers, loadStack } from "./helpers/stack.ts";

describe("golden vectors against getHash (runtime code of each paymaster placed at the vector's address)", () => {
  for (const json of committed.vectors as HashVectorJson[]) {
    it(json.name, async () => {
      const stack = await loadStack();
      expect(stack.chainId).to.equal(BigInt(json.chainId));
      const deployed = stack.v[json.version][json.kind];
      await ethers.provider.send("hardhat_setCode", [json.paymaster, await ethers.provider.getCode(await deployed.getAddress())]);
      const paymaster = new Contract(json.paymaster, deployed.interface, ethers.provider);
      // A 7702 vector's sender is a delegated EOA: its code is 0xef0100 ‖ delegate, which getHash reads.
      if (json.eip7702Delegate !== undefined) {
        await ethers.provider.send("hardhat_setCode", [json.userOp.sender, eip7702DelegationCode(json.eip7702Delegate)]);
      }
      const v = parseHashVector(json);
      const op = v.params.version === "v0.6" ? v.params.userOp : packUserOpV07(v.params.userOp as UserOperationV07);
      const onChain: string =
        v.kind === "verifying"
          ? await paymaster.getFunction("getHash")(op, json.validUntil, json.validAfter)
          : await paymaster.getFunction("getHash")(op, json.validUntil, json.validAfter, v.params.token, v.params.exchangeRate, v.params.chargeMode, v.params.maxTokenCharge);
      expect(onChain).to.equal(json.hash);
    });
  }
});
