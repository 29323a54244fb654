import { expect } from "chai";
import { getUserOperationHash } from "viem/account-abstraction";
import {
  ENTRY_POINT_V06_ADDRESS,
  ENTRY_POINT_V07_ADDRESS,
  getPackedUserOpHashV07,
  getUserOpHash,
  getUserOpHashV06,
  getUserOpHashV07,
  packUserOpV07,
} from "../src/index.ts";
import { CHAIN_ID, OP_V06, OP_V07, OP_V07_BARE } from "./fixtures.ts";
import { refUserOpHashV06, refUserOpHashV07 } from "./reference.ts";

// First computed with reference.ts (encodeAbiParameters, straight from EntryPoint getUserOpHash and
// UserOperationLib.pack/encode), then pinned. viem's own getUserOperationHash agrees too.
const GOLDEN = {
  v06: "0xe940f05764ffbdd9ac3262adbca6466cf3f889cbae8a181668059eab1782a5eb",
  v07: "0xfde177aa75f4d52e448f4f309bf925d747a929529b579ae9ba2941c49b97ed75",
  v07Bare: "0x3a3be2f30dd0de1e81e7e174ca6d36b486c2106f5b2cd1ee9f4ea2f66dd50f05",
} as const;

describe("userOpHash", () => {
  it("v0.6 matches the golden vector, the reference and viem", () => {
    expect(getUserOpHashV06(OP_V06, ENTRY_POINT_V06_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v06);
    expect(refUserOpHashV06(OP_V06, ENTRY_POINT_V06_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v06);
    expect(
      getUserOperationHash({ chainId: 31337, entryPointAddress: ENTRY_POINT_V06_ADDRESS, entryPointVersion: "0.6", userOperation: OP_V06 }),
    ).to.equal(GOLDEN.v06);
  });

  it("v0.7 matches the golden vector, the reference and viem", () => {
    expect(getUserOpHashV07(OP_V07, ENTRY_POINT_V07_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v07);
    expect(refUserOpHashV07(OP_V07, ENTRY_POINT_V07_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v07);
    expect(
      getUserOperationHash({ chainId: 31337, entryPointAddress: ENTRY_POINT_V07_ADDRESS, entryPointVersion: "0.7", userOperation: OP_V07 }),
    ).to.equal(GOLDEN.v07);
  });

  it("v0.7 without factory and paymaster", () => {
    expect(getUserOpHashV07(OP_V07_BARE, ENTRY_POINT_V07_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v07Bare);
    expect(refUserOpHashV07(OP_V07_BARE, ENTRY_POINT_V07_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v07Bare);
  });

  it("the packed and unpacked v0.7 forms hash the same", () => {
    expect(getPackedUserOpHashV07(packUserOpV07(OP_V07), ENTRY_POINT_V07_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v07);
  });

  it("dispatches on version", () => {
    expect(getUserOpHash({ version: "v0.6", userOp: OP_V06, entryPoint: ENTRY_POINT_V06_ADDRESS, chainId: 31337 })).to.equal(GOLDEN.v06);
    expect(getUserOpHash({ version: "v0.7", userOp: OP_V07, entryPoint: ENTRY_POINT_V07_ADDRESS, chainId: 31337 })).to.equal(GOLDEN.v07);
  });

  it("covers paymasterAndData (unlike the paymaster hash), the EntryPoint and the chain", () => {
    const hashes = new Set([
      getUserOpHashV06(OP_V06, ENTRY_POINT_V06_ADDRESS, CHAIN_ID),
      getUserOpHashV06({ ...OP_V06, paymasterAndData: "0x" }, ENTRY_POINT_V06_ADDRESS, CHAIN_ID),
      getUserOpHashV06(OP_V06, ENTRY_POINT_V07_ADDRESS, CHAIN_ID),
      getUserOpHashV06(OP_V06, ENTRY_POINT_V06_ADDRESS, 1n),
      getUserOpHashV06({ ...OP_V06, signature: "0x" }, ENTRY_POINT_V06_ADDRESS, CHAIN_ID),
    ]);
    // The signature is not covered: 4 distinct hashes out of 5.
    expect(hashes.size).to.equal(4);
  });
});
