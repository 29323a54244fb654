import { expect } from "chai";
import { getUserOperationHash } from "viem/account-abstraction";
import {
  ENTRY_POINT_V06_ADDRESS,
  ENTRY_POINT_V07_ADDRESS,
  ENTRY_POINT_V08_ADDRESS,
  entryPointDomainSeparatorV08,
  getPackedUserOpHashV07,
  getPackedUserOpHashV08,
  getUserOpHashV08,
  getUserOpHash,
  getUserOpHashV06,
  getUserOpHashV07,
  packUserOpV07,
} from "../src/index.ts";
import { CHAIN_ID, DELEGATE_7702, OP_V06, OP_V07, OP_V07_BARE, OP_V08_7702, OTHER_DELEGATE_7702 } from "./fixtures.ts";
import { refUserOpHashV06, refUserOpHashV07, refUserOpHashV08 } from "./reference.ts";

// First computed with reference.ts (encodeAbiParameters, straight from EntryPoint getUserOpHash and
// UserOperationLib.pack/encode), then pinned. viem's own getUserOperationHash agrees too.
const GOLDEN = {
  v06: "0xe940f05764ffbdd9ac3262adbca6466cf3f889cbae8a181668059eab1782a5eb",
  v07: "0xfde177aa75f4d52e448f4f309bf925d747a929529b579ae9ba2941c49b97ed75",
  v07Bare: "0x3a3be2f30dd0de1e81e7e174ca6d36b486c2106f5b2cd1ee9f4ea2f66dd50f05",
  // v0.8 (EIP-712): reference.ts hashTypedData and viem agree; the contracts' tests check the EntryPoint.
  v08: "0x5f87591135db26579a9ceafe35452a8c9a000627c3ea5c62097b637d08232040",
  v08Bare: "0x8d13fc87f0c0555144d46aeb68019063aa758625684880f9935b80864690f230",
  v08Eip7702: "0x788310959caead5d286a869257cd2548fcaee8bd956aa21ed7590d076ae79532",
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

  it("v0.8 (EIP-712) matches the golden vector, the reference and viem", () => {
    expect(getUserOpHashV08(OP_V07, ENTRY_POINT_V08_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v08);
    expect(refUserOpHashV08(OP_V07, ENTRY_POINT_V08_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v08);
    expect(
      getUserOperationHash({ chainId: 31337, entryPointAddress: ENTRY_POINT_V08_ADDRESS, entryPointVersion: "0.8", userOperation: OP_V07 }),
    ).to.equal(GOLDEN.v08);
    expect(getUserOpHashV08(OP_V07_BARE, ENTRY_POINT_V08_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v08Bare);
    expect(getPackedUserOpHashV08(packUserOpV07(OP_V07), ENTRY_POINT_V08_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v08);
    // Same op, same EntryPoint address: v0.7's and v0.8's hashes never coincide.
    expect(getUserOpHashV07(OP_V07, ENTRY_POINT_V08_ADDRESS, CHAIN_ID)).to.not.equal(GOLDEN.v08);
  });

  it("v0.8 domain separator is EIP-712 over ERC4337/1, chain and EntryPoint", () => {
    const a = entryPointDomainSeparatorV08(ENTRY_POINT_V08_ADDRESS, CHAIN_ID);
    expect(a).to.match(/^0x[0-9a-f]{64}$/);
    expect(entryPointDomainSeparatorV08(ENTRY_POINT_V08_ADDRESS, 1n)).to.not.equal(a);
    expect(entryPointDomainSeparatorV08(ENTRY_POINT_V07_ADDRESS, CHAIN_ID)).to.not.equal(a);
  });

  it("v0.8 7702 op hashes the delegate (from eip7702Auth or given), like the EntryPoint and viem", () => {
    expect(getUserOpHashV08(OP_V08_7702, ENTRY_POINT_V08_ADDRESS, CHAIN_ID)).to.equal(GOLDEN.v08Eip7702);
    expect(refUserOpHashV08(OP_V08_7702, ENTRY_POINT_V08_ADDRESS, CHAIN_ID, DELEGATE_7702)).to.equal(GOLDEN.v08Eip7702);
    const { eip7702Auth: _auth, ...withoutAuth } = OP_V08_7702;
    expect(getUserOpHashV08(withoutAuth, ENTRY_POINT_V08_ADDRESS, CHAIN_ID, DELEGATE_7702)).to.equal(GOLDEN.v08Eip7702);
    expect(
      getUserOperationHash({
        chainId: 31337,
        entryPointAddress: ENTRY_POINT_V08_ADDRESS,
        entryPointVersion: "0.8",
        userOperation: { ...withoutAuth, authorization: { address: DELEGATE_7702, chainId: 31337, nonce: 3, r: "0x01", s: "0x02", yParity: 0 } },
      }),
    ).to.equal(GOLDEN.v08Eip7702);
    // Another delegate is another hash; without any delegate the hash cannot be known.
    expect(getUserOpHashV08(OP_V08_7702, ENTRY_POINT_V08_ADDRESS, CHAIN_ID, OTHER_DELEGATE_7702)).to.not.equal(GOLDEN.v08Eip7702);
    expect(() => getUserOpHashV08(withoutAuth, ENTRY_POINT_V08_ADDRESS, CHAIN_ID)).to.throw(/EIP-7702 marker but no delegate/);
  });

  it("dispatches on version", () => {
    expect(getUserOpHash({ version: "v0.6", userOp: OP_V06, entryPoint: ENTRY_POINT_V06_ADDRESS, chainId: 31337 })).to.equal(GOLDEN.v06);
    expect(getUserOpHash({ version: "v0.7", userOp: OP_V07, entryPoint: ENTRY_POINT_V07_ADDRESS, chainId: 31337 })).to.equal(GOLDEN.v07);
    expect(getUserOpHash({ version: "v0.8", userOp: OP_V07, entryPoint: ENTRY_POINT_V08_ADDRESS, chainId: 31337 })).to.equal(GOLDEN.v08);
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
