/**
 * Unit tests of the param schemas: the wire primitives, both user operation schemas (initCode splitting,
 * 2-D nonces, ignored paymaster fields), pm_sponsorUserOperation's params and the no-params schema.
 */
import { expect } from "chai";
import type { z } from "zod";
import { RpcError } from "../src/errors.ts";
import {
  address,
  hexBytes,
  hexQuantity,
  noParamsSchema,
  sponsorParamsSchema,
  userOpV06Schema,
  userOpV07Schema,
  USER_OP_LIMITS,
} from "../src/wire/schemas.ts";
import { validUserOpV06, validUserOpV07 } from "./helpers/rpcService.ts";

/** The parsed value, or fails with the issues. */
function ok<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (!result.success) expect.fail(JSON.stringify(result.error.issues));
  return result.data;
}

/** The issues of a value the schema refuses. */
function issues(schema: z.ZodType<unknown>, value: unknown): { path: PropertyKey[]; message: string }[] {
  const result = schema.safeParse(value);
  if (result.success) expect.fail(`accepted: ${JSON.stringify(result.data, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))}`);
  return result.error.issues.map(({ path, message }) => ({ path, message }));
}

/** The RpcError a schema throws. */
function thrown(schema: z.ZodType<unknown>, value: unknown): RpcError {
  try {
    schema.safeParse(value);
  } catch (error) {
    expect(error).to.be.instanceOf(RpcError);
    return error as RpcError;
  }
  return expect.fail("no RpcError thrown");
}

const SENDER = "0x9406Cc6185a346906296840746125a0E44976454";
const FACTORY = "0x91E60e0613810449d098b0b5Ec8b51A0FE8c8985";

describe("hexQuantity", () => {
  const uint256 = hexQuantity();
  const uint64 = hexQuantity({ maxBits: 64 });

  it("parses 1..64 hex digits to a bigint, leading zeros and either case allowed", () => {
    expect(ok(uint256, "0x0")).to.equal(0n);
    expect(ok(uint256, "0x00")).to.equal(0n);
    expect(ok(uint256, "0xff")).to.equal(255n);
    expect(ok(uint256, "0xFF")).to.equal(255n);
    expect(ok(uint256, "0x000001")).to.equal(1n);
    expect(ok(uint256, `0x${"f".repeat(64)}`)).to.equal(2n ** 256n - 1n);
  });

  it("refuses non-strings, missing 0x, empty, non-hex and over 64 digits", () => {
    for (const value of [1, 0, null, true, [], {}, 1n.toString()]) expect(issues(uint256, value)).to.have.length(1);
    expect(issues(uint256, "ff")[0]!.message).to.match(/0x prefix/);
    expect(issues(uint256, "0X1")[0]!.message).to.match(/lowercase 0x/);
    expect(issues(uint256, "0x")[0]!.message).to.match(/no hex digits/);
    expect(issues(uint256, "0x1g")[0]!.message).to.match(/non-hex/);
    expect(issues(uint256, "0x 1")[0]!.message).to.match(/non-hex/);
    expect(issues(uint256, "0x-1")[0]!.message).to.match(/non-hex/);
    expect(issues(uint256, "0x1.5")[0]!.message).to.match(/non-hex/);
    expect(issues(uint256, `0x${"1".repeat(65)}`)[0]!.message).to.match(/more than 64/);
    expect(issues(uint256, undefined)[0]!.message).to.match(/required/);
  });

  it("enforces maxBits", () => {
    expect(ok(uint64, `0x${"f".repeat(16)}`)).to.equal(2n ** 64n - 1n);
    expect(ok(uint64, `0x0000${"f".repeat(16)}`)).to.equal(2n ** 64n - 1n);
    expect(issues(uint64, `0x1${"0".repeat(16)}`)[0]!.message).to.match(/at most 2\^64-1/);
    expect(() => hexQuantity({ maxBits: 0 })).to.throw(RangeError);
    expect(() => hexQuantity({ maxBits: 257 })).to.throw(RangeError);
  });

  it("never echoes the input", () => {
    const secret = `0x${"1".repeat(70)}zz`;
    expect(issues(uint256, secret)[0]!.message).to.not.include("1111");
  });
});

describe("hexBytes", () => {
  const upTo4 = hexBytes({ maxBytes: 4 });

  it("accepts even-length hex (0x is empty) and lowercases it", () => {
    expect(ok(upTo4, "0x")).to.equal("0x");
    expect(ok(upTo4, "0xAbCd")).to.equal("0xabcd");
    expect(ok(upTo4, "0x01020304")).to.equal("0x01020304");
  });

  it("refuses odd length, non-hex, missing 0x, too long and non-strings", () => {
    expect(issues(upTo4, "0xabc")[0]!.message).to.match(/odd number/);
    expect(issues(upTo4, "0xzz")[0]!.message).to.match(/non-hex/);
    expect(issues(upTo4, "abcd")[0]!.message).to.match(/0x prefix/);
    expect(issues(upTo4, "0x0102030405")[0]!.message).to.match(/at most 4 bytes/);
    expect(issues(upTo4, "0x0\u00e9")[0]!.message).to.match(/non-hex/);
    expect(issues(upTo4, 1234)[0]!.message).to.match(/got number/);
    expect(issues(upTo4, null)[0]!.message).to.match(/got null/);
  });

  it("checks the length before scanning a huge string", () => {
    const huge = `0x${"zz".repeat(1_000_000)}`;
    expect(issues(upTo4, huge)[0]!.message).to.match(/too long/);
  });
});

describe("address", () => {
  const schema = address();
  it("returns the EIP-55 checksum of lowercase and uppercase input", () => {
    expect(ok(schema, SENDER.toLowerCase())).to.equal(SENDER);
    expect(ok(schema, `0x${SENDER.slice(2).toUpperCase()}`)).to.equal(SENDER);
    expect(ok(schema, SENDER)).to.equal(SENDER);
  });

  it("refuses a wrong mixed-case checksum, wrong lengths and non-hex", () => {
    const wrongCase = `0x9406cc6185a346906296840746125a0E44976454`;
    expect(issues(schema, wrongCase)[0]!.message).to.match(/checksum/);
    expect(issues(schema, SENDER.slice(0, 41))[0]!.message).to.match(/40 hex digits/);
    expect(issues(schema, `${SENDER}00`)[0]!.message).to.match(/40 hex digits/);
    expect(issues(schema, SENDER.slice(2))[0]!.message).to.match(/0x prefix/);
    expect(issues(schema, `0x${"g".repeat(40)}`)[0]!.message).to.match(/non-hex/);
    expect(issues(schema, 5)).to.have.length(1);
  });
});

describe("userOpV06Schema", () => {
  it("parses every field to its domain type", () => {
    const op = ok(userOpV06Schema, validUserOpV06());
    expect(op).to.deep.equal({
      sender: SENDER,
      nonce: 0n,
      initCode: "0x",
      callData: "0xb61d27f6",
      callGasLimit: 21000n,
      verificationGasLimit: 100000n,
      preVerificationGas: 50000n,
      maxFeePerGas: 1_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      signature: `0x${"ff".repeat(65)}`,
    });
  });

  it("allows missing gas fields and initCode, leaving no undefined keys", () => {
    const { callGasLimit, verificationGasLimit, preVerificationGas, maxFeePerGas, maxPriorityFeePerGas, initCode, ...minimal } = validUserOpV06();
    void [callGasLimit, verificationGasLimit, preVerificationGas, maxFeePerGas, maxPriorityFeePerGas, initCode];
    const op = ok(userOpV06Schema, minimal);
    expect(Object.keys(op).sort()).to.deep.equal(["callData", "initCode", "nonce", "sender", "signature"]);
    expect(op.initCode).to.equal("0x");
  });

  it("takes a full uint256 nonce (2-D nonce: 192-bit key, 64-bit sequence)", () => {
    const key = (1n << 191n) + 12345n;
    const nonce = (key << 64n) | 7n;
    const op = ok(userOpV06Schema, { ...validUserOpV06(), nonce: `0x${nonce.toString(16)}` });
    expect(op.nonce).to.equal(nonce);
    expect(op.nonce >> 64n).to.equal(key);
  });

  it("accepts and drops paymasterAndData", () => {
    const op = ok(userOpV06Schema, { ...validUserOpV06(), paymasterAndData: `0x${"12".repeat(100)}` });
    expect(op).to.not.have.property("paymasterAndData");
  });

  it("requires sender, nonce, callData and signature", () => {
    for (const field of ["sender", "nonce", "callData", "signature"]) {
      const op: Record<string, string> = validUserOpV06();
      delete op[field];
      const found = issues(userOpV06Schema, op);
      expect(found[0]!.path).to.deep.equal([field]);
      expect(found[0]!.message).to.match(/required/);
    }
  });

  it("enforces field sizes and ranges", () => {
    const at = (field: string, value: string) => issues(userOpV06Schema, { ...validUserOpV06(), [field]: value })[0]!;
    expect(ok(userOpV06Schema, { ...validUserOpV06(), callData: `0x${"00".repeat(USER_OP_LIMITS.callDataBytes)}` }).callData).to.have.length(2 + 2 * 48 * 1024);
    expect(at("callData", `0x${"00".repeat(48 * 1024 + 1)}`).message).to.match(/too long/);
    expect(at("initCode", `0x${"00".repeat(16 * 1024 + 1)}`).message).to.match(/too long/);
    expect(at("signature", `0x${"00".repeat(2 * 1024 + 1)}`).message).to.match(/too long/);
    expect(at("verificationGasLimit", `0x1${"0".repeat(16)}`).message).to.match(/2\^64-1/);
    expect(at("preVerificationGas", `0x1${"0".repeat(16)}`).message).to.match(/2\^64-1/);
    expect(at("maxPriorityFeePerGas", `0x1${"0".repeat(32)}`).message).to.match(/2\^128-1/);
  });

  it("rejects unknown fields naming them, with a hint for v0.7 names", () => {
    const found = issues(userOpV06Schema, { ...validUserOpV06(), foo: "0x1", accountGasLimits: "0x" });
    expect(found[0]!.message).to.include('"foo"').and.include('"accountGasLimits"');
    const hint = issues(userOpV06Schema, { ...validUserOpV06(), factory: FACTORY });
    expect(hint[0]!.message).to.match(/v0\.7/);
  });

  it("rejects non-objects", () => {
    for (const value of [null, [], "op", 5]) expect(issues(userOpV06Schema, value)[0]!.message).to.match(/user operation object/);
  });
});

describe("userOpV07Schema", () => {
  const base = (): Record<string, string> => {
    const { factory: _f, factoryData: _d, ...rest } = validUserOpV07();
    return rest;
  };

  it("parses the ERC-7769 names", () => {
    const op = ok(userOpV07Schema, {
      ...validUserOpV07(),
      paymasterVerificationGasLimit: "0x7530",
      paymasterPostOpGasLimit: "0x4e20",
    });
    expect(op.factory).to.equal(FACTORY);
    expect(op.factoryData).to.equal("0x5fbfb9cf");
    expect(op.paymasterVerificationGasLimit).to.equal(30000n);
    expect(op.paymasterPostOpGasLimit).to.equal(20000n);
  });

  it("splits the spec's initCode into factory (first 20 bytes) and factoryData", () => {
    const op = ok(userOpV07Schema, { ...base(), initCode: `${FACTORY.toLowerCase()}5fbfb9cf00` });
    expect(op.factory).to.equal(FACTORY);
    expect(op.factoryData).to.equal("0x5fbfb9cf00");
    const exactly20 = ok(userOpV07Schema, { ...base(), initCode: FACTORY });
    expect(exactly20.factory).to.equal(FACTORY);
    expect(exactly20.factoryData).to.equal("0x");
  });

  it("treats initCode 0x and no factory alike: neither factory nor factoryData", () => {
    for (const op of [ok(userOpV07Schema, { ...base(), initCode: "0x" }), ok(userOpV07Schema, base()), ok(userOpV07Schema, { ...base(), factoryData: "0x" })]) {
      expect(op).to.not.have.property("factory");
      expect(op).to.not.have.property("factoryData");
    }
  });

  it("gives a factory without factoryData an empty factoryData", () => {
    const op = ok(userOpV07Schema, { ...base(), factory: FACTORY });
    expect(op.factoryData).to.equal("0x");
  });

  it("refuses initCode of 1 to 19 bytes", () => {
    for (const bytes of [1, 19]) {
      const found = issues(userOpV07Schema, { ...base(), initCode: `0x${"ab".repeat(bytes)}` });
      expect(found[0]!.path).to.deep.equal(["initCode"]);
      expect(found[0]!.message).to.match(/at least 20 bytes/);
    }
  });

  it("refuses initCode together with factory or factoryData", () => {
    expect(issues(userOpV07Schema, { ...validUserOpV07(), initCode: "0x" })[0]!.message).to.match(/not both/);
    expect(issues(userOpV07Schema, { ...base(), initCode: FACTORY, factoryData: "0x00" })[0]!.message).to.match(/not both/);
  });

  it("refuses factoryData without a factory", () => {
    expect(issues(userOpV07Schema, { ...base(), factoryData: "0x00" })[0]!.path).to.deep.equal(["factoryData"]);
  });

  it("accepts and ignores the client's paymaster fields, keeps the paymaster gas limits as hints", () => {
    const op = ok(userOpV07Schema, {
      ...validUserOpV07(),
      paymaster: "0x",
      paymasterData: "0xdeadbeef",
      paymasterAndData: `0x${"00".repeat(52)}`,
      paymasterPostOpGasLimit: "0x1",
    });
    expect(op).to.not.have.any.keys("paymaster", "paymasterData", "paymasterAndData");
    expect(op.paymasterPostOpGasLimit).to.equal(1n);
    expect(issues(userOpV07Schema, { ...validUserOpV07(), paymasterData: "0xabc" })[0]!.path).to.deep.equal(["paymasterData"]);
  });

  it("takes a full uint256 2-D nonce", () => {
    const nonce = `0x${"ff".repeat(24)}${"00".repeat(7)}2a`;
    expect(ok(userOpV07Schema, { ...validUserOpV07(), nonce }).nonce).to.equal(BigInt(nonce));
  });

  it("rejects packed fields with a hint", () => {
    expect(issues(userOpV07Schema, { ...validUserOpV07(), gasFees: `0x${"00".repeat(32)}` })[0]!.message).to.match(/unpacked/);
  });
});

describe("sponsorParamsSchema", () => {
  it("defaults to v0.6 and maps strategy_code / token (empty strings count as absent)", () => {
    expect(ok(sponsorParamsSchema, [validUserOpV06(), {}])).to.deep.include({ version: "v0.6" });
    const withStrategy = ok(sponsorParamsSchema, [validUserOpV06(), { strategy_code: "promo", token: "" }]);
    expect(withStrategy.strategyCode).to.equal("promo");
    expect(withStrategy).to.not.have.property("token");
    const withToken = ok(sponsorParamsSchema, [validUserOpV07(), { token: "USDC", version: "v0.7", strategy_code: "" }]);
    expect(withToken).to.deep.include({ version: "v0.7", token: "USDC" });
    expect(withToken).to.not.have.property("strategyCode");
    expect(withToken.userOp).to.have.property("factory", FACTORY);
  });

  it("needs exactly [userOp, extra]", () => {
    for (const params of [undefined, null, {}, [], [validUserOpV06()], [validUserOpV06(), {}, {}]]) {
      expect(issues(sponsorParamsSchema, params)).to.have.length(1);
    }
  });

  it("MODE_CONFLICT when both strategy_code and token are given", () => {
    const error = thrown(sponsorParamsSchema, [validUserOpV06(), { strategy_code: "a", token: "b" }]);
    expect(error.reason).to.equal("MODE_CONFLICT");
    expect(error.status).to.equal(400);
  });

  it("v0.8 takes v0.7's fields plus eip7702Auth; a 7702 marker op needs eip7702Auth", () => {
    const parsed = sponsorParamsSchema.parse([validUserOpV07(), { version: "v0.8" }]);
    expect(parsed.version).to.equal("v0.8");
    const marker = { ...validUserOpV07(), factory: "0x7702000000000000000000000000000000000000", factoryData: "0x" };
    const found = issues(sponsorParamsSchema, [marker, { version: "v0.8" }]);
    expect(found[0]!.path).to.deep.equal([0, "eip7702Auth"]);
    expect(found[0]!.message).to.match(/needs eip7702Auth/);
    // The short marker and Alto's field names (contractAddress, v) are taken; the delegate is required.
    const delegate = "0xe6Cae83BdE06E4c305530e199D7217f42808555B";
    const auth = { chainId: "0x7a69", contractAddress: delegate, nonce: "0x0", r: `0x${"11".repeat(32)}`, s: `0x${"22".repeat(32)}`, v: "0x1c" };
    const withAuth = sponsorParamsSchema.parse([{ ...marker, factory: "0x7702", eip7702Auth: auth }, { version: "v0.8" }]);
    if (withAuth.version !== "v0.8") throw new Error("expected v0.8");
    expect(withAuth.userOp.factory).to.equal("0x7702000000000000000000000000000000000000");
    expect(withAuth.userOp.eip7702Auth).to.deep.include({ address: delegate, chainId: 31337n, nonce: 0n, yParity: 1 });
    const noDelegate = issues(sponsorParamsSchema, [{ ...marker, eip7702Auth: { ...auth, contractAddress: undefined } }, { version: "v0.8" }]);
    expect(noDelegate[0]!.path).to.deep.equal([0, "eip7702Auth", "address"]);
    // On v0.7 the same bytes are an ordinary (non-existent) factory address: simulation refuses it later.
    expect(sponsorParamsSchema.parse([marker, { version: "v0.7" }]).version).to.equal("v0.7");
  });

  it("UNSUPPORTED_ENTRYPOINT_VERSION for any other version string; a non-string version is a params issue", () => {
    for (const version of ["v0.9", "v0.5", "", "0.6", "v0.6.0"]) {
      expect(thrown(sponsorParamsSchema, [validUserOpV06(), { version }]).reason).to.equal("UNSUPPORTED_ENTRYPOINT_VERSION");
    }
    for (const version of [6, null, {}, ["v0.6"]]) {
      expect(issues(sponsorParamsSchema, [validUserOpV06(), { version }])[0]!.path).to.deep.equal([1, "version"]);
    }
  });

  it("reports userOp and extra issues together, under their param index", () => {
    const found = issues(sponsorParamsSchema, [{ ...validUserOpV06(), callData: "0x1" }, { color: "red" }]);
    expect(found.map((issue) => issue.path)).to.deep.equal([[0, "callData"], [1]]);
  });

  it("bounds strategy_code and token", () => {
    expect(issues(sponsorParamsSchema, [validUserOpV06(), { token: "x".repeat(129) }])[0]!.message).to.match(/too long/);
    expect(issues(sponsorParamsSchema, [validUserOpV06(), { strategy_code: 5 }])[0]!.path).to.deep.equal([1, "strategy_code"]);
  });
});

describe("noParamsSchema", () => {
  it("accepts an omitted field or []", () => {
    expect(ok(noParamsSchema, undefined)).to.equal(undefined);
    expect(ok(noParamsSchema, [])).to.equal(undefined);
  });
  it("refuses anything else", () => {
    for (const params of [[1], [{}], {}, null, "x"]) expect(issues(noParamsSchema, params)[0]!.message).to.match(/takes no params/);
  });
});
