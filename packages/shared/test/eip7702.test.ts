import { expect } from "chai";
import { keccak256 } from "viem";
import {
  EIP7702_MARKER,
  eip7702DelegateOfCode,
  eip7702DelegationCode,
  initCodeHashV08,
  isEip7702InitCode,
  isEip7702UserOp,
  userOpFieldsHashV07,
  userOpFieldsHashV08,
} from "../src/index.ts";
import { DELEGATE_7702, OP_V07, OP_V08_7702, OTHER_DELEGATE_7702 } from "./fixtures.ts";
import { refFieldsHashV08 } from "./reference.ts";

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
