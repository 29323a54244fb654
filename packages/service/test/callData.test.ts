/**
 * Unit tests of decodeAccountCalls: every understood account ABI built with viem's encoders (SimpleAccount
 * execute / v0.6 and v0.7 executeBatch, ERC-7579 single and batch, the executeUserOp prefix) and every failure
 * shape (unknown selectors, delegatecall and unknown modes, truncation, trailing bytes, dirty padding, length
 * mismatches, bad hex), which must be refused with a reason and never throw.
 */
import { expect } from "chai";
import {
  concat,
  encodeAbiParameters,
  encodeFunctionData,
  encodePacked,
  erc20Abi,
  getAddress,
  pad,
  parseAbi,
  parseAbiParameters,
  toFunctionSelector,
  type Hex,
} from "viem";
import { ACCOUNT_SELECTORS, decodeAccountCalls, type AccountCall, type DecodedCalls } from "../src/policy/callData.ts";

const TOKEN = getAddress("0x036cbd53842c5426634e7929541ec2318f3dcf7e");
const ROUTER = getAddress("0x2626664c2603336e57b271c5c0b26f421741e481");
const ALICE = getAddress("0x70997970c51812dc3a010c7d01b50e0d17dc79c8");

const ACCOUNT_ABI = parseAbi([
  "function execute(address dest, uint256 value, bytes func)",
  "function executeBatch(address[] dest, bytes[] func)",
  "function executeBatch(address[] dest, uint256[] value, bytes[] func)",
]);
const ERC7579_ABI = parseAbi(["function execute(bytes32 mode, bytes executionCalldata)"]);
const EXECUTE_USER_OP = toFunctionSelector(
  "function executeUserOp((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes),bytes32)",
);

const transfer = encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [ALICE, 1_000_000n] });
const approve = encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [ROUTER, 5n] });

function execute(dest: Hex, value: bigint, func: Hex): Hex {
  return encodeFunctionData({ abi: ACCOUNT_ABI, functionName: "execute", args: [dest, value, func] });
}
function batchV06(dest: Hex[], func: Hex[]): Hex {
  return encodeFunctionData({ abi: ACCOUNT_ABI, functionName: "executeBatch", args: [dest, func] });
}
function batchV07(dest: Hex[], value: bigint[], func: Hex[]): Hex {
  return encodeFunctionData({ abi: ACCOUNT_ABI, functionName: "executeBatch", args: [dest, value, func] });
}
/** ERC-7579 mode: callType | execType | 4 unused | 4 mode selector | 22 payload. */
function mode(callType: number, execType = 0, unused: Hex = "0x00000000", selector: Hex = "0x00000000"): Hex {
  return encodePacked(["uint8", "uint8", "bytes4", "bytes4", "bytes22"], [callType, execType, unused, selector, pad("0x", { size: 22 })]);
}
function execute7579(m: Hex, executionCalldata: Hex): Hex {
  return encodeFunctionData({ abi: ERC7579_ABI, functionName: "execute", args: [m, executionCalldata] });
}
function single7579(target: Hex, value: bigint, data: Hex): Hex {
  return encodePacked(["address", "uint256", "bytes"], [target, value, data]);
}
function batch7579(executions: { target: Hex; value: bigint; callData: Hex }[]): Hex {
  return encodeAbiParameters(parseAbiParameters("(address target, uint256 value, bytes callData)[]"), [executions]);
}

function calls(result: DecodedCalls): AccountCall[] {
  if (!result.ok) expect.fail(`refused: ${result.reason}`);
  return result.calls;
}
function reason(result: DecodedCalls): string {
  if (result.ok) expect.fail(`accepted: ${result.calls.length} call(s)`);
  return result.reason;
}

describe("decodeAccountCalls", () => {
  it("knows the real selectors", () => {
    expect(ACCOUNT_SELECTORS).to.deep.equal({
      execute: "0xb61d27f6",
      executeBatchV06: "0x18dfb3c7",
      executeBatchV07: "0x47e1da2a",
      execute7579: "0xe9ae5c53",
      executeUserOp: "0x8dd7712f",
    });
    expect(EXECUTE_USER_OP).to.equal("0x8dd7712f");
  });

  it("empty callData makes no calls", () => {
    expect(calls(decodeAccountCalls("0x"))).to.deep.equal([]);
  });

  describe("SimpleAccount execute(address,uint256,bytes)", () => {
    it("decodes one call with value and data", () => {
      expect(calls(decodeAccountCalls(execute(TOKEN, 7n, transfer)))).to.deep.equal([{ target: TOKEN, value: 7n, data: transfer }]);
    });
    it("decodes a plain transfer (empty data) and returns a checksummed target", () => {
      const lower = ALICE.toLowerCase() as Hex;
      expect(calls(decodeAccountCalls(execute(lower, 10n ** 18n, "0x")))).to.deep.equal([{ target: ALICE, value: 10n ** 18n, data: "0x" }]);
    });
    it("accepts uppercase hex digits and returns lowercase data", () => {
      const data = execute(TOKEN, 0n, transfer);
      const upper = `0x${data.slice(2).toUpperCase()}` as Hex;
      expect(calls(decodeAccountCalls(upper))).to.deep.equal([{ target: TOKEN, value: 0n, data: transfer }]);
    });
  });

  describe("SimpleAccount v0.6 executeBatch(address[],bytes[])", () => {
    it("decodes every call with value 0", () => {
      const data = batchV06([TOKEN, ROUTER], [approve, "0x"]);
      expect(data.slice(0, 10)).to.equal("0x18dfb3c7");
      expect(calls(decodeAccountCalls(data))).to.deep.equal([
        { target: TOKEN, value: 0n, data: approve },
        { target: ROUTER, value: 0n, data: "0x" },
      ]);
    });
    it("an empty batch makes no calls", () => {
      expect(calls(decodeAccountCalls(batchV06([], [])))).to.deep.equal([]);
    });
    it("refuses arrays of different lengths", () => {
      expect(reason(decodeAccountCalls(batchV06([TOKEN, ROUTER], [approve])))).to.match(/2 targets but 1 calldatas/);
    });
  });

  describe("SimpleAccount v0.7 executeBatch(address[],uint256[],bytes[])", () => {
    it("decodes every call with its value", () => {
      const data = batchV07([TOKEN, ROUTER, ALICE], [0n, 3n, 10n ** 17n], [approve, transfer, "0x"]);
      expect(data.slice(0, 10)).to.equal("0x47e1da2a");
      expect(calls(decodeAccountCalls(data))).to.deep.equal([
        { target: TOKEN, value: 0n, data: approve },
        { target: ROUTER, value: 3n, data: transfer },
        { target: ALICE, value: 10n ** 17n, data: "0x" },
      ]);
    });
    it("an empty value array means value 0 for every call", () => {
      expect(calls(decodeAccountCalls(batchV07([TOKEN, ROUTER], [], [approve, transfer])))).to.deep.equal([
        { target: TOKEN, value: 0n, data: approve },
        { target: ROUTER, value: 0n, data: transfer },
      ]);
    });
    it("refuses mismatched lengths", () => {
      expect(reason(decodeAccountCalls(batchV07([TOKEN, ROUTER], [1n], [approve, transfer])))).to.match(/2 targets, 1 values and 2 calldatas/);
      expect(reason(decodeAccountCalls(batchV07([TOKEN], [], [approve, transfer])))).to.match(/1 targets, 0 values and 2 calldatas/);
    });
  });

  describe("ERC-7579 execute(bytes32,bytes)", () => {
    it("decodes call type single (target | value | callData)", () => {
      const data = execute7579(mode(0x00), single7579(TOKEN, 9n, transfer));
      expect(data.slice(0, 10)).to.equal("0xe9ae5c53");
      expect(calls(decodeAccountCalls(data))).to.deep.equal([{ target: TOKEN, value: 9n, data: transfer }]);
    });
    it("decodes a single execution with empty callData (exactly 52 bytes)", () => {
      expect(calls(decodeAccountCalls(execute7579(mode(0x00), single7579(ALICE, 1n, "0x"))))).to.deep.equal([
        { target: ALICE, value: 1n, data: "0x" },
      ]);
    });
    it("decodes call type batch (abi.encode(Execution[]))", () => {
      const executions = [
        { target: TOKEN, value: 0n, callData: approve },
        { target: ROUTER, value: 2n, callData: transfer },
      ];
      expect(calls(decodeAccountCalls(execute7579(mode(0x01), batch7579(executions))))).to.deep.equal([
        { target: TOKEN, value: 0n, data: approve },
        { target: ROUTER, value: 2n, data: transfer },
      ]);
    });
    it("accepts exec type try (0x01) and ignores the mode payload", () => {
      const m = encodePacked(["uint8", "uint8", "bytes4", "bytes4", "bytes22"], [0, 1, "0x00000000", "0x00000000", pad("0xabcdef", { size: 22 })]);
      expect(calls(decodeAccountCalls(execute7579(m, single7579(TOKEN, 0n, transfer))))).to.have.length(1);
    });
    it("refuses delegatecall (0xff)", () => {
      expect(reason(decodeAccountCalls(execute7579(mode(0xff), single7579(TOKEN, 0n, transfer))))).to.match(/delegatecall \(call type 0xff\)/);
    });
    it("refuses staticcall (0xfe) and unknown call types", () => {
      expect(reason(decodeAccountCalls(execute7579(mode(0xfe), single7579(TOKEN, 0n, transfer))))).to.match(/staticcall/);
      expect(reason(decodeAccountCalls(execute7579(mode(0x02), single7579(TOKEN, 0n, transfer))))).to.equal("unknown ERC-7579 call type 0x02");
    });
    it("refuses unknown exec types", () => {
      expect(reason(decodeAccountCalls(execute7579(mode(0x00, 0x02), single7579(TOKEN, 0n, transfer))))).to.equal(
        "unknown ERC-7579 exec type 0x02",
      );
    });
    it("refuses non-default mode selectors and non-zero reserved bytes", () => {
      expect(reason(decodeAccountCalls(execute7579(mode(0x01, 0, "0x00000000", "0xeda86f9b"), batch7579([]))))).to.equal(
        "unsupported ERC-7579 mode selector 0xeda86f9b",
      );
      expect(reason(decodeAccountCalls(execute7579(mode(0x00, 0, "0x00000001"), single7579(TOKEN, 0n, "0x"))))).to.match(/reserved bytes 0x00000001/);
    });
    it("refuses a single execution shorter than 52 bytes", () => {
      const short = encodePacked(["address", "uint64"], [TOKEN, 1n]);
      expect(reason(decodeAccountCalls(execute7579(mode(0x00), short)))).to.match(/28 byte\(s\), shorter than target and value/);
    });
    it("refuses a malformed or padded batch", () => {
      const good = batch7579([{ target: TOKEN, value: 0n, callData: approve }]);
      expect(reason(decodeAccountCalls(execute7579(mode(0x01), good.slice(0, 100) as Hex)))).to.match(/malformed ABI encoding of ERC-7579 batch/);
      expect(reason(decodeAccountCalls(execute7579(mode(0x01), concat([good, "0x00"]))))).to.match(/ERC-7579 batch .* followed by 1 trailing byte/);
    });
  });

  describe("the executeUserOp prefix", () => {
    it("strips 0x8dd7712f and decodes the rest", () => {
      const inner = batchV07([TOKEN, ROUTER], [0n, 0n], [approve, transfer]);
      expect(calls(decodeAccountCalls(concat([EXECUTE_USER_OP, inner])))).to.deep.equal(calls(decodeAccountCalls(inner)));
      const kernel = concat([EXECUTE_USER_OP, execute7579(mode(0x00), single7579(TOKEN, 0n, transfer))]);
      expect(calls(decodeAccountCalls(kernel))).to.deep.equal([{ target: TOKEN, value: 0n, data: transfer }]);
    });
    it("an empty rest makes no calls", () => {
      expect(calls(decodeAccountCalls(EXECUTE_USER_OP))).to.deep.equal([]);
    });
    it("refuses the prefix twice and the prefix under EntryPoint v0.6", () => {
      const inner = execute(TOKEN, 0n, transfer);
      expect(reason(decodeAccountCalls(concat([EXECUTE_USER_OP, EXECUTE_USER_OP, inner])))).to.match(/appears twice/);
      expect(reason(decodeAccountCalls(concat([EXECUTE_USER_OP, inner]), { entryPointVersion: "v0.6" }))).to.match(
        /^unknown account ABI: selector 0x8dd7712f/,
      );
      expect(calls(decodeAccountCalls(concat([EXECUTE_USER_OP, inner]), { entryPointVersion: "v0.7" }))).to.have.length(1);
    });
    it("refuses an unknown ABI after the prefix", () => {
      expect(reason(decodeAccountCalls(concat([EXECUTE_USER_OP, transfer])))).to.equal("unknown account ABI: selector 0xa9059cbb");
    });
  });

  describe("failures", () => {
    it("an unknown selector names it", () => {
      expect(reason(decodeAccountCalls(transfer))).to.equal("unknown account ABI: selector 0xa9059cbb");
    });
    it("callData shorter than a selector", () => {
      expect(reason(decodeAccountCalls("0xb61d27"))).to.equal("callData is 3 byte(s), shorter than a 4-byte selector");
    });
    it("not hex, odd length, missing prefix", () => {
      for (const bad of ["0xb61d27f", "0xzz", "b61d27f6", "", "0X"]) {
        expect(reason(decodeAccountCalls(bad as Hex)), bad).to.equal("callData is not 0x-prefixed, even-length hex");
      }
      expect(reason(decodeAccountCalls(undefined as unknown as Hex))).to.match(/not 0x-prefixed/);
    });
    it("truncated arguments", () => {
      const data = execute(TOKEN, 1n, transfer);
      expect(reason(decodeAccountCalls(data.slice(0, data.length - 64) as Hex))).to.equal(
        "malformed ABI encoding of execute(address,uint256,bytes) arguments",
      );
      expect(reason(decodeAccountCalls(ACCOUNT_SELECTORS.execute))).to.match(/malformed ABI encoding/);
    });
    it("trailing bytes after the arguments", () => {
      expect(reason(decodeAccountCalls(concat([execute(TOKEN, 1n, transfer), "0xdeadbeef"])))).to.equal(
        "execute(address,uint256,bytes) arguments are followed by 4 trailing byte(s)",
      );
      expect(reason(decodeAccountCalls(concat([batchV06([TOKEN], [approve]), pad("0x", { size: 32 })])))).to.match(/followed by 32 trailing/);
    });
    it("an address word with dirty upper bytes", () => {
      const data = execute(TOKEN, 1n, transfer);
      const dirty = `${data.slice(0, 10)}ff${data.slice(12)}` as Hex;
      expect(reason(decodeAccountCalls(dirty))).to.match(/^non-canonical ABI encoding of execute\(address,uint256,bytes\)/);
    });
    it("dirty padding after bytes", () => {
      // execute(TOKEN, 0, 0x01): the last word holds 0x01 and 31 bytes of padding.
      const data = execute(TOKEN, 0n, "0x01");
      const dirty = `${data.slice(0, -2)}01` as Hex;
      expect(reason(decodeAccountCalls(dirty))).to.match(/^non-canonical ABI encoding/);
    });
    it("an unusual (but decodable) offset", () => {
      // Offset of `func` 0x80 instead of 0x60, with an extra zero word in between.
      const head = encodeAbiParameters(parseAbiParameters("address, uint256, uint256, uint256, uint256"), [TOKEN, 0n, 0x80n, 0n, 1n]);
      const data = concat([ACCOUNT_SELECTORS.execute, head, pad("0xaa", { dir: "right", size: 32 })]);
      expect(reason(decodeAccountCalls(data))).to.match(/^non-canonical ABI encoding/);
    });
    it("a huge array length does not hang or throw", () => {
      const data = concat([
        ACCOUNT_SELECTORS.executeBatchV06,
        encodeAbiParameters(parseAbiParameters("uint256, uint256, uint256"), [0x40n, 0x60n, 2n ** 255n]),
      ]);
      expect(reason(decodeAccountCalls(data))).to.match(/malformed ABI encoding of executeBatch\(address\[\],bytes\[\]\)/);
    });
    it("random bytes after each known selector never throw", () => {
      let seed = 42;
      const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed);
      const selectors = [...Object.values(ACCOUNT_SELECTORS), "0x" as Hex];
      for (let i = 0; i < 300; i++) {
        const len = rand() % 300;
        let hex = "";
        for (let j = 0; j < len; j++) hex += (rand() % 256).toString(16).padStart(2, "0");
        const data = concat([selectors[i % selectors.length]!, `0x${hex}`]);
        const result = decodeAccountCalls(data);
        expect(result.ok === true || typeof result.reason === "string").to.equal(true);
      }
    });
  });
});
