// The hand-written user operation encodings (src/chain/userOpAbi.ts) against viem's generic encoder, and
// preVerificationGas against what bundlers require: Alto's own calculator (the installed @pimlico/alto) and
// eth-infinitism's reference formula (viem's encodeAbiParameters, then a byte loop).
import path from "node:path";
import { pathToFileURL } from "node:url";
import { expect } from "chai";
import { encodeAbiParameters, encodeFunctionData, getAddress, hexToBytes, type Abi, type Hex } from "viem";
import { EntryPointSimulationsV07Artifact, EntryPointV06Artifact, EntryPointV07Artifact } from "@paymaster/contracts/artifacts";
import { EIP7702_MARKER, STUB_SIGNATURE, packUserOpV07, type Address, type UserOperationV06, type UserOperationV07, type UserOperationV08 } from "@paymaster/shared";
import type { SimulatedOp } from "../src/chain/entryPoint.ts";
import { encodeHandleOps, encodeSimulateHandleOp, encodeUserOpParameter } from "../src/chain/userOpAbi.ts";
import { PVG_OVERHEAD, preVerificationGas } from "../src/sponsor/gas.ts";
import { altoPackageDir } from "./helpers/alto.ts";

const USER_OP_V06_TUPLE = {
  type: "tuple",
  components: [
    { name: "sender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "initCode", type: "bytes" },
    { name: "callData", type: "bytes" },
    { name: "callGasLimit", type: "uint256" },
    { name: "verificationGasLimit", type: "uint256" },
    { name: "preVerificationGas", type: "uint256" },
    { name: "maxFeePerGas", type: "uint256" },
    { name: "maxPriorityFeePerGas", type: "uint256" },
    { name: "paymasterAndData", type: "bytes" },
    { name: "signature", type: "bytes" },
  ],
} as const;

const USER_OP_V07_TUPLE = {
  type: "tuple",
  components: [
    { name: "sender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "initCode", type: "bytes" },
    { name: "callData", type: "bytes" },
    { name: "accountGasLimits", type: "bytes32" },
    { name: "preVerificationGas", type: "uint256" },
    { name: "gasFees", type: "bytes32" },
    { name: "paymasterAndData", type: "bytes" },
    { name: "signature", type: "bytes" },
  ],
} as const;

/** eth-infinitism's reference bundler's preVerificationGas (calcPreVerificationGas) of the op as sent. */
function referencePreVerificationGas(op: SimulatedOp): bigint {
  const encoded: Hex = op.version === "v0.6" ? encodeAbiParameters([USER_OP_V06_TUPLE], [op.userOp]) : encodeAbiParameters([USER_OP_V07_TUPLE], [packUserOpV07(op.userOp)]);
  const bytes = hexToBytes(encoded);
  let cost = 0n;
  for (const byte of bytes) cost += byte === 0 ? 4n : 16n;
  const words = BigInt(Math.ceil(bytes.length / 32));
  return cost + 21_000n + 18_300n + 4n * words;
}

/** The op in Alto's shape (v0.7+: factory and paymaster keys present; a 7702 sender's factory as wallets send it, "0x7702"). */
function altoShape(op: SimulatedOp): Record<string, unknown> {
  if (op.version === "v0.6") return { ...op.userOp };
  const u = op.userOp as UserOperationV08;
  const auth = u.eip7702Auth;
  return {
    ...u,
    factory: u.factory === EIP7702_MARKER ? "0x7702" : (u.factory ?? null),
    factoryData: u.factoryData ?? null,
    paymaster: u.paymaster ?? null,
    ...(auth ? { eip7702Auth: { ...auth, chainId: Number(auth.chainId), nonce: Number(auth.nonce) } } : {}),
  };
}

/** Deterministic pseudo-random bytes (xorshift32) with about `zeroShare` of them zero. */
function bytesHex(length: number, seed: number, zeroShare = 0.3): Hex {
  let x = seed || 1;
  let out = "0x";
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const value = (x >>> 0) % 1000 < zeroShare * 1000 ? 0 : ((x >>> 8) & 0xff) || 1;
    out += value.toString(16).padStart(2, "0");
  }
  return out as Hex;
}

const SENDER = getAddress("0x4c8d290a1b368ac4728d83a9e8321fc3af2b39b1");
const FACTORY = getAddress("0x9406cc6185a346906296840746125a0e44976454");
const PAYMASTER = getAddress("0x2222222222222222222222222222222222222222");
const TARGET = getAddress("0xa0ee7a142d267c1f36714e4a8f75612f20a79720");

const LENGTHS = [0, 1, 4, 31, 32, 33, 64, 100, 132, 1000, 4100];

function opsV06(): UserOperationV06[] {
  return LENGTHS.map((length, i) => ({
    sender: SENDER,
    nonce: (BigInt(i) << 64n) + BigInt(i),
    initCode: i % 3 === 0 ? "0x" : (`0x${FACTORY.slice(2)}${bytesHex(length, i + 11).slice(2)}` as Hex),
    callData: bytesHex(length, i + 1, i % 2 === 0 ? 0.3 : 0.9),
    callGasLimit: BigInt(i * 12_345),
    verificationGasLimit: 1_000_000n + BigInt(i),
    preVerificationGas: 50_000n,
    maxFeePerGas: 3_000_000_000n * BigInt(i + 1),
    maxPriorityFeePerGas: i % 2 === 0 ? 0n : 1_000_000_000n,
    paymasterAndData: i % 4 === 0 ? "0x" : (`0x${PAYMASTER.slice(2)}${bytesHex(77, i + 5).slice(2)}` as Hex),
    signature: i % 5 === 0 ? "0x" : STUB_SIGNATURE,
  }));
}

function opsV07(): UserOperationV07[] {
  return LENGTHS.map((length, i) => ({
    sender: SENDER,
    nonce: (1n << 255n) + BigInt(i),
    ...(i % 3 === 0 ? {} : { factory: FACTORY, factoryData: bytesHex(length, i + 11) }),
    callData: bytesHex(length, i + 1, i % 2 === 0 ? 0.3 : 0.9),
    callGasLimit: BigInt(i * 12_345),
    verificationGasLimit: (1n << 128n) - 1n - BigInt(i),
    preVerificationGas: 50_000n,
    maxFeePerGas: 3_000_000_000n * BigInt(i + 1),
    maxPriorityFeePerGas: i % 2 === 0 ? 0n : 1_000_000_000n,
    ...(i % 4 === 0
      ? {}
      : { paymaster: PAYMASTER, paymasterVerificationGasLimit: 50_000n, paymasterPostOpGasLimit: BigInt(i * 1000), paymasterData: bytesHex(i % 2 ? 77 : 130, i + 5) }),
    signature: i % 5 === 0 ? "0x" : STUB_SIGNATURE,
  }));
}

describe("user operation ABI encoding", () => {
  it("abi.encode of the op equals viem's (v0.6 UserOperation, v0.7 PackedUserOperation)", () => {
    for (const userOp of opsV06()) {
      expect(encodeUserOpParameter({ version: "v0.6", userOp })).to.equal(encodeAbiParameters([USER_OP_V06_TUPLE], [userOp]));
    }
    for (const userOp of opsV07()) {
      expect(encodeUserOpParameter({ version: "v0.7", userOp })).to.equal(encodeAbiParameters([USER_OP_V07_TUPLE], [packUserOpV07(userOp)]));
    }
  });

  it("simulateHandleOp calldata equals viem's encodeFunctionData", () => {
    const targets: [Address, Hex][] = [
      ["0x0000000000000000000000000000000000000000", "0x"],
      [TARGET, bytesHex(36, 3)],
      [TARGET, bytesHex(133, 4)],
    ];
    for (const [target, targetCallData] of targets) {
      for (const userOp of opsV06()) {
        const viem = encodeFunctionData({ abi: EntryPointV06Artifact.abi as Abi, functionName: "simulateHandleOp", args: [userOp, target, targetCallData] });
        expect(encodeSimulateHandleOp({ version: "v0.6", userOp }, target, targetCallData)).to.equal(viem);
      }
      for (const userOp of opsV07()) {
        const viem = encodeFunctionData({
          abi: EntryPointSimulationsV07Artifact.abi as Abi,
          functionName: "simulateHandleOp",
          args: [packUserOpV07(userOp), target, targetCallData],
        });
        expect(encodeSimulateHandleOp({ version: "v0.7", userOp }, target, targetCallData)).to.equal(viem);
      }
    }
  });

  it("handleOps([op], beneficiary) calldata equals viem's encodeFunctionData", () => {
    for (const beneficiary of [TARGET, SENDER]) {
      for (const userOp of opsV06()) {
        const viem = encodeFunctionData({ abi: EntryPointV06Artifact.abi as Abi, functionName: "handleOps", args: [[userOp], beneficiary] });
        expect(encodeHandleOps({ version: "v0.6", userOp }, beneficiary)).to.equal(viem);
      }
      for (const userOp of opsV07()) {
        const viem = encodeFunctionData({ abi: EntryPointV07Artifact.abi as Abi, functionName: "handleOps", args: [[packUserOpV07(userOp)], beneficiary] });
        expect(encodeHandleOps({ version: "v0.7", userOp }, beneficiary)).to.equal(viem);
      }
    }
  });

  it("refuses values the ABI types cannot hold", () => {
    const [op] = opsV06();
    expect(() => encodeUserOpParameter({ version: "v0.6", userOp: { ...op!, nonce: 1n << 256n } })).to.throw(/uint256/);
    expect(() => encodeUserOpParameter({ version: "v0.6", userOp: { ...op!, callGasLimit: -1n } })).to.throw(/uint256/);
    expect(() => encodeUserOpParameter({ version: "v0.6", userOp: { ...op!, callData: "0xabc" as Hex } })).to.throw(/hex bytes/);
    expect(() => encodeUserOpParameter({ version: "v0.6", userOp: { ...op!, sender: "0x1234" as Address } })).to.throw(/address/);
  });

  describe("preVerificationGas", () => {
    const AUTH = { chainId: 31337n, address: TARGET, nonce: 0n, r: `0x${"11".repeat(32)}`, s: `0x${"22".repeat(32)}`, yParity: 1 } as const;
    /** v0.8: the v0.7 fixtures, executeUserOp callData, and EIP-7702 senders (the 0x7702 marker and an authorization). */
    function opsV08(): UserOperationV08[] {
      return opsV07().flatMap((op, i) => [
        op,
        { ...op, callData: `0x8dd7712f${bytesHex(LENGTHS[i]!, i + 3).slice(2)}` as Hex },
        { ...op, factory: EIP7702_MARKER, factoryData: "0x", eip7702Auth: AUTH },
      ]);
    }
    const allOps = (): SimulatedOp[] => [
      ...opsV06().map((userOp): SimulatedOp => ({ version: "v0.6", userOp })),
      ...opsV07().map((userOp): SimulatedOp => ({ version: "v0.7", userOp })),
      ...opsV08().map((userOp): SimulatedOp => ({ version: "v0.8", userOp })),
    ];

    it("covers what Alto requires of eth_sendUserOperation (its own calculator, with and without EIP-7623) and eth-infinitism's formula, within 1,500 gas of the largest", async () => {
      const calculator = pathToFileURL(path.join(altoPackageDir(), "esm/rpc/estimation/preVerificationGasCalculator.js")).href;
      const { calcExecutionPvgComponent } = (await import(calculator)) as { calcExecutionPvgComponent: (args: { userOp: unknown; supportsEip7623: boolean; config: unknown }) => bigint };
      const config = { v6CallGasLimitMultiplier: 100, v6VerificationGasLimitMultiplier: 100, v7CallGasLimitMultiplier: 100, v7PaymasterPostOpGasLimitMultiplier: 120 };
      let floorBound = 0;
      for (const op of allOps()) {
        const ours = preVerificationGas(op);
        const sent = { ...op, userOp: { ...op.userOp, preVerificationGas: ours } } as SimulatedOp;
        const required = [
          calcExecutionPvgComponent({ userOp: altoShape(sent), supportsEip7623: false, config }),
          calcExecutionPvgComponent({ userOp: altoShape(sent), supportsEip7623: true, config }),
          referencePreVerificationGas(sent),
        ];
        const most = required.reduce((a, b) => (a > b ? a : b));
        if (required[1]! > required[0]! && required[1]! > required[2]!) floorBound++;
        const label = `${op.version} callData ${op.userOp.callData.length / 2 - 1} bytes${op.version === "v0.8" && op.userOp.eip7702Auth ? " (7702)" : ""}: ours ${ours}, required ${required.join(" / ")}`;
        expect(ours >= most, label).to.equal(true);
        expect(ours - most <= 1_500n, label).to.equal(true);
      }
      expect(floorBound, "fixtures where EIP-7623's floor sets the price").to.be.greaterThan(3);
    });

    it("an EIP-7702 authorization adds its 25,000 intrinsic gas", () => {
      for (const userOp of opsV08().filter((op) => op.eip7702Auth !== undefined)) {
        const standard = { ...userOp, callGasLimit: 10_000_000n }; // enough call gas that EIP-7623's floor stays below
        const { eip7702Auth: _auth, ...withoutAuth } = standard;
        expect(preVerificationGas({ version: "v0.8", userOp: standard }) - preVerificationGas({ version: "v0.8", userOp: withoutAuth })).to.equal(PVG_OVERHEAD.eip7702Authorization);
      }
    });

    it("EIP-7623's floor: 2 kB of call data with little call gas pay the floor, less a tenth of the call gas limit; with more call gas the standard price holds", () => {
      const [base] = opsV07().filter((op) => op.paymaster !== undefined);
      const at = (callGasLimit: bigint) => preVerificationGas({ version: "v0.7", userOp: { ...base!, callData: bytesHex(2048, 99, 0), callGasLimit } });
      expect(at(0n) - at(100_000n)).to.equal(10_000n);
      expect(at(5_000_000n)).to.equal(at(9_000_000n));
      expect(at(0n) > at(5_000_000n)).to.equal(true);
    });
  });
});
