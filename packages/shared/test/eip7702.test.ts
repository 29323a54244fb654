import { expect } from "chai";
import { keccak256 } from "viem";
import {
  EIP7702_MARKER,
  eip7702DelegateOfCode,
  eip7702DelegationCode,
  initCodeHashV08,
  isEip7702InitCode,
  isEip7702UserOp,
  paymasterInitCodeHash,
  userOpFieldsHashV06,
  userOpFieldsHashV07,
  userOpFieldsHashV08,
  verifyingPaymasterHash,
} from "../src/index.ts";
import { DELEGATE_7702, OP_V06, OP_V07, OP_V07_BARE, OP_V08_7702, OTHER_DELEGATE_7702, PAYMASTER } from "./fixtures.ts";
import { refFieldsHashV06, refFieldsHashV07, refFieldsHashV08 } from "./reference.ts";

describe("EIP-7702 under EntryPoint v0.8", () => {
  it("recognises the marker as Eip7702Support does: 20-byte, short and with an init call", () => {
    expect(isEip7702InitCode(EIP7702_MARKER)).to.equal(true);
    expect(isEip7702InitCode("0x7702")).to.equal(true);
    expect(isEip7702InitCode(`${EIP7702_MARKER}c0ffee`)).to.equal(true);
    expect(isEip7702UserOp(OP_V08_7702)).to.equal(true);
    expect(isEip7702UserOp(OP_V07)).to.equal(false);
    // Not the marker: empty, 1 byte, a non-zero byte inside the first 20, a factory that merely starts 0x7702.
    expect(isEip7702InitCode("0x")).to.equal(false);
    expect(isEip7702InitCode("0x77")).to.equal(false);
    expect(isEip7702InitCode("0x7702000000000000000000000000000000000001")).to.equal(false);
    expect(isEip7702InitCode("0x7702ab")).to.equal(false);
  });

  it("delegation code round-trips and anything else is not a delegation", () => {
    const code = eip7702DelegationCode(DELEGATE_7702);
    expect(code).to.equal(`0xef0100${DELEGATE_7702.slice(2).toLowerCase()}`);
    expect(eip7702DelegateOfCode(code)?.toLowerCase()).to.equal(DELEGATE_7702.toLowerCase());
    expect(eip7702DelegateOfCode("0x")).to.equal(undefined);
    expect(eip7702DelegateOfCode(`0x6080${"00".repeat(21)}`)).to.equal(undefined);
    expect(eip7702DelegateOfCode(`${code}00`)).to.equal(undefined);
  });

  it("initCode hash: keccak(delegate ‖ initCode[20:]), keccak(delegate) for the bare marker, keccak(initCode) otherwise", () => {
    expect(initCodeHashV08(`${EIP7702_MARKER}c0ffee`, DELEGATE_7702)).to.equal(keccak256(`${DELEGATE_7702}c0ffee`));
    expect(initCodeHashV08("0x7702", DELEGATE_7702)).to.equal(keccak256(DELEGATE_7702));
    expect(initCodeHashV08(EIP7702_MARKER, DELEGATE_7702)).to.equal(keccak256(DELEGATE_7702));
    expect(initCodeHashV08("0x1234", undefined)).to.equal(keccak256("0x1234"));
    expect(() => initCodeHashV08(EIP7702_MARKER, undefined)).to.throw(/no delegate/);
  });

  it("the v0.8 paymaster fields hash binds the delegate, never the raw marker", () => {
    const bound = userOpFieldsHashV08(OP_V08_7702);
    expect(bound).to.equal(refFieldsHashV08(OP_V08_7702, DELEGATE_7702));
    expect(userOpFieldsHashV08(OP_V08_7702, OTHER_DELEGATE_7702)).to.not.equal(bound);
    // v0.7's rule would hash the marker itself: different, so a marker-bound signature is useless here.
    expect(userOpFieldsHashV07(OP_V08_7702)).to.not.equal(bound);
    // Without 7702 the v0.8 fields hash is v0.7's (the EntryPoints' packed layouts are the same).
    expect(userOpFieldsHashV08(OP_V07)).to.equal(userOpFieldsHashV07(OP_V07));
  });
});

// Re-audit N-5: an already-delegated EOA's op may carry no initCode at all. Its paymaster hash binds the
// delegate its code points to, on every version: keccak(delegate), the v0.8 bare marker's word.
describe("EIP-7702 senders without initCode: the paymaster hash binds the sender's delegate (every version)", () => {
  const OP_V06_BARE = { ...OP_V06, initCode: "0x" } as const;

  it("initCode word: keccak(delegate) for an empty initCode of a delegated sender, keccak(initCode) otherwise", () => {
    expect(paymasterInitCodeHash("0x", DELEGATE_7702)).to.equal(keccak256(DELEGATE_7702));
    expect(paymasterInitCodeHash("0x", undefined)).to.equal(keccak256("0x"));
    // A deploying op names its code through its initCode: the sender's code is not consulted.
    expect(paymasterInitCodeHash(OP_V06.initCode, DELEGATE_7702)).to.equal(keccak256(OP_V06.initCode));
    expect(() => paymasterInitCodeHash("0x", "0x1234" as never)).to.throw(/delegate/);
  });

  it("v0.6, v0.7 and v0.8 fields hashes equal the reference's, differ per delegate and from the undelegated hash", () => {
    const cases = [
      { name: "v0.6", hash: (d?: `0x${string}`) => userOpFieldsHashV06(OP_V06_BARE, d), ref: (d?: `0x${string}`) => refFieldsHashV06(OP_V06_BARE, d) },
      { name: "v0.7", hash: (d?: `0x${string}`) => userOpFieldsHashV07(OP_V07_BARE, d), ref: (d?: `0x${string}`) => refFieldsHashV07(OP_V07_BARE, d) },
      { name: "v0.8", hash: (d?: `0x${string}`) => userOpFieldsHashV08(OP_V07_BARE, d), ref: (d?: `0x${string}`) => refFieldsHashV08(OP_V07_BARE, d) },
    ];
    for (const c of cases) {
      const bound = c.hash(DELEGATE_7702);
      expect(bound, c.name).to.equal(c.ref(DELEGATE_7702));
      expect(c.hash(OTHER_DELEGATE_7702), c.name).to.not.equal(bound);
      expect(c.hash(undefined), c.name).to.not.equal(bound);
      expect(c.hash(undefined), c.name).to.equal(c.ref(undefined));
    }
  });

  it("v0.8: the empty initCode of a delegated sender hashes as the bare 0x7702 marker would", () => {
    const bareMarker = { ...OP_V07_BARE, factory: EIP7702_MARKER };
    expect(userOpFieldsHashV08(OP_V07_BARE, DELEGATE_7702)).to.equal(userOpFieldsHashV08(bareMarker, DELEGATE_7702));
    // An op carrying its authorization without the marker: the bundler applies it, so it is the delegate.
    const withAuth = { ...OP_V07_BARE, eip7702Auth: OP_V08_7702.eip7702Auth! };
    expect(userOpFieldsHashV08(withAuth, undefined)).to.equal(userOpFieldsHashV08(OP_V07_BARE, DELEGATE_7702));
  });

  it("verifyingPaymasterHash takes the delegate as eip7702Delegate", () => {
    const params = { version: "v0.7", userOp: OP_V07_BARE, chainId: 31337n, paymaster: PAYMASTER, validUntil: 2, validAfter: 1 } as const;
    expect(verifyingPaymasterHash({ ...params, eip7702Delegate: DELEGATE_7702 })).to.not.equal(verifyingPaymasterHash({ ...params, eip7702Delegate: undefined }));
  });
});
