/**
 * Param schemas: wire primitives (hex quantity -> bigint, hex bytes, checksummed address) and the params of
 * pm_sponsorUserOperation. Wire types (0x-hex strings) are parsed into domain types (bigint, checksummed
 * addresses) here, at the boundary, so handlers never see raw strings.
 *
 * Issue messages describe what was expected and why the value failed, but never echo the value itself: a
 * client may send megabytes of input and the answer must stay small.
 */
import { z } from "zod";
import { EIP7702_MARKER, checksumAddress, isEip7702UserOp, type Address, type Eip7702Authorization, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { safeText } from "../text/safeText.ts";
import { RpcError } from "../errors.ts";

// ---------------------------------------------------------------------------------------------------------
// Limits

const KIB = 1024;

/** Size and range limits of user operation input fields. */
export const USER_OP_LIMITS = Object.freeze({
  callDataBytes: 48 * KIB,
  /** initCode (v0.6 and v0.7's spec-name form) and v0.7 factoryData. */
  initCodeBytes: 16 * KIB,
  signatureBytes: 2 * KIB,
  /** Fields that are accepted but ignored (the client's own paymaster fields). */
  ignoredFieldBytes: 16 * KIB,
  nonceBits: 256,
  /** callGasLimit, verificationGasLimit, preVerificationGas, paymaster gas limits: at most 2^64-1. */
  gasBits: 64,
  /** maxFeePerGas, maxPriorityFeePerGas: at most 2^128-1. */
  feeBits: 128,
});

/** Longest strategy_code / token string accepted in the extra-data object. */
export const EXTRA_STRING_MAX_CHARS = 128;

/** The EntryPoint versions a sponsor call may name, in order (the first is the default). */
export const SPONSOR_VERSIONS = Object.freeze(["v0.6", "v0.7", "v0.8"] as const);
/** A version the service serves. */
export type SponsorVersion = (typeof SPONSOR_VERSIONS)[number];

// ---------------------------------------------------------------------------------------------------------
// Primitives

const QUANTITY_RE = /^0x[0-9a-fA-F]{1,64}$/;
const HEX_DIGITS_RE = /^[0-9a-fA-F]*$/;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;

/** A JSON type name for messages ("null", "array", "number", ...), never the value. */
export function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** Message for a value that is not a string at all (undefined = the field is missing). */
function notAString(expected: string) {
  return (issue: { input?: unknown }): string =>
    issue.input === undefined ? `required: expected ${expected}` : `expected ${expected}, got ${jsonTypeOf(issue.input)}`;
}

/** Why `value` is not 0x followed by hex digits, or undefined when it is. */
function hexShapeProblem(value: string): string | undefined {
  if (!value.startsWith("0x")) return value.startsWith("0X") ? "the prefix must be a lowercase 0x" : "missing the 0x prefix";
  if (!HEX_DIGITS_RE.test(value.slice(2))) return "contains non-hex characters";
  return undefined;
}

export interface HexQuantityOptions {
  /** The value must be < 2^maxBits (default 256). */
  maxBits?: number;
}

/**
 * A hex quantity: "0x" and 1 to 64 hex digits (leading zeros allowed), parsed to a bigint; with `maxBits`,
 * values of 2^maxBits or more are refused.
 */
export function hexQuantity(options: HexQuantityOptions = {}) {
  const maxBits = options.maxBits ?? 256;
  if (!Number.isInteger(maxBits) || maxBits < 1 || maxBits > 256) throw new RangeError(`maxBits must be 1..256, got ${maxBits}`);
  const max = (1n << BigInt(maxBits)) - 1n;
  const expected = "a 0x-prefixed hex quantity";
  return z.string({ error: notAString(expected) }).transform((value, ctx): bigint => {
    const problem =
      hexShapeProblem(value) ??
      (value.length === 2 ? "no hex digits after 0x" : undefined) ??
      (!QUANTITY_RE.test(value) ? "more than 64 hex digits" : undefined);
    if (problem !== undefined) {
      ctx.addIssue({ code: "custom", message: `expected ${expected}: ${problem}` });
      return z.NEVER;
    }
    const quantity = BigInt(value);
    if (quantity > max) {
      ctx.addIssue({ code: "custom", message: `out of range: must be at most 2^${maxBits}-1` });
      return z.NEVER;
    }
    return quantity;
  });
}

export interface HexBytesOptions {
  /** At most this many bytes. */
  maxBytes: number;
}

/** A byte string: "0x" and an even number of hex digits (so "0x" is the empty string), lowercased. */
export function hexBytes(options: HexBytesOptions) {
  const { maxBytes } = options;
  const expected = "0x-prefixed hex bytes";
  return z.string({ error: notAString(expected) }).transform((value, ctx): Hex => {
    // Length first: a huge string is refused before any character scan.
    if (value.length > 2 + maxBytes * 2) {
      ctx.addIssue({ code: "custom", message: `too long: at most ${maxBytes} bytes, got about ${Math.floor((value.length - 2) / 2)}` });
      return z.NEVER;
    }
    const problem = hexShapeProblem(value) ?? (value.length % 2 !== 0 ? "odd number of hex digits" : undefined);
    if (problem !== undefined) {
      ctx.addIssue({ code: "custom", message: `expected ${expected}: ${problem}` });
      return z.NEVER;
    }
    return value.toLowerCase() as Hex;
  });
}

/**
 * A 20-byte address, returned EIP-55 checksummed. All-lowercase and all-uppercase hex are accepted as is;
 * mixed case must be a correct checksum (a wrong one usually means a typo).
 */
export function address() {
  const expected = "a 20-byte address (0x and 40 hex digits)";
  return z.string({ error: notAString(expected) }).transform((value, ctx): Address => {
    const problem = hexShapeProblem(value) ?? (!ADDRESS_RE.test(value) ? "not 40 hex digits" : undefined);
    if (problem !== undefined) {
      ctx.addIssue({ code: "custom", message: `expected ${expected}: ${problem}` });
      return z.NEVER;
    }
    const digits = value.slice(2);
    const checksummed = checksumAddress(value);
    const mixedCase = digits !== digits.toLowerCase() && digits !== digits.toUpperCase();
    if (mixedCase && checksummed !== value) {
      ctx.addIssue({ code: "custom", message: "invalid EIP-55 checksum (send it all lowercase or correctly checksummed)" });
      return z.NEVER;
    }
    return checksummed;
  });
}

// ---------------------------------------------------------------------------------------------------------
// User operations

/** The gas values every version's op carries, each left to the service when absent. */
interface UserOpGasInput {
  callGasLimit?: bigint;
  verificationGasLimit?: bigint;
  preVerificationGas?: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
}

export interface UserOpInputV06 extends UserOpGasInput {
  sender: Address;
  nonce: bigint;
  initCode: Hex;
  callData: Hex;
  signature: Hex;
}

export interface UserOpInputV07 extends UserOpGasInput {
  /** v0.8 only: the EIP-7702 authorization tuple of a delegated-EOA sender (its address is the delegate). */
  eip7702Auth?: Eip7702Authorization;
  sender: Address;
  nonce: bigint;
  factory?: Address;
  factoryData?: Hex;
  callData: Hex;
  paymasterVerificationGasLimit?: bigint;
  paymasterPostOpGasLimit?: bigint;
  signature: Hex;
}

/** v0.8 takes v0.7's unpacked (ERC-7769) fields: its PackedUserOperation is v0.7's. */
export type SponsorRequest = ({ version: "v0.6"; userOp: UserOpInputV06 } | { version: "v0.7" | "v0.8"; userOp: UserOpInputV07 }) & {
  strategyCode?: string;
  token?: string;
};

const gasLimit = () => hexQuantity({ maxBits: USER_OP_LIMITS.gasBits });
const fee = () => hexQuantity({ maxBits: USER_OP_LIMITS.feeBits });

/** Fields shared by both versions' input. */
const commonShape = {
  sender: address(),
  nonce: hexQuantity({ maxBits: USER_OP_LIMITS.nonceBits }),
  callData: hexBytes({ maxBytes: USER_OP_LIMITS.callDataBytes }),
  callGasLimit: gasLimit().optional(),
  verificationGasLimit: gasLimit().optional(),
  preVerificationGas: gasLimit().optional(),
  maxFeePerGas: fee().optional(),
  maxPriorityFeePerGas: fee().optional(),
  signature: hexBytes({ maxBytes: USER_OP_LIMITS.signatureBytes }),
};

const V07_ONLY_FIELDS = new Set([
  "factory",
  "factoryData",
  "paymaster",
  "paymasterVerificationGasLimit",
  "paymasterPostOpGasLimit",
  "paymasterData",
]);
const PACKED_FIELDS = new Set(["accountGasLimits", "gasFees"]);

/** "a, b, c and 4 more", each name cut to a readable length. */
export function listNames(names: readonly string[], max = 5): string {
  const shown = names.slice(0, max).map((name) => JSON.stringify(truncate(name, 40)));
  return names.length > max ? `${shown.join(", ")} and ${names.length - max} more` : shown.join(", ");
}

/** `text` cut to `max` characters with an ellipsis. */
export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Error map of a user operation object: names unknown fields, with a hint when they belong to the other version. */
function userOpObjectError(version: EntryPointVersion) {
  return (issue: { code?: string; keys?: readonly string[]; input?: unknown }): string | undefined => {
    if (issue.code === "unrecognized_keys") {
      const keys = issue.keys ?? [];
      let hint = "";
      if (version === "v0.6" && keys.some((key) => V07_ONLY_FIELDS.has(key))) hint = ' (v0.7 field names: set extra.version to "v0.7" or "v0.8")';
      if (version !== "v0.6" && keys.some((key) => PACKED_FIELDS.has(key))) hint = " (send the unpacked ERC-7769 fields, not the packed ones)";
      return `unknown user operation field${keys.length === 1 ? "" : "s"} ${listNames(keys)}${hint}`;
    }
    if (issue.code === "invalid_type") return `expected the user operation object, got ${jsonTypeOf(issue.input)}`;
    return undefined;
  };
}

/** Copies the defined optional fields (so outputs carry no `key: undefined`). */
function definedOnly<T extends object>(value: T): T {
  const out = {} as T;
  for (const key in value) if (value[key] !== undefined) out[key] = value[key];
  return out;
}

/**
 * A v0.6 user operation: the spec's fields. initCode defaults to "0x"; missing gas fields are left for
 * estimation; paymasterAndData is accepted and ignored (the service supplies its own).
 */
export const userOpV06Schema = z
  .strictObject(
    {
      ...commonShape,
      initCode: hexBytes({ maxBytes: USER_OP_LIMITS.initCodeBytes }).optional(),
      paymasterAndData: hexBytes({ maxBytes: USER_OP_LIMITS.ignoredFieldBytes }).optional(),
    },
    { error: userOpObjectError("v0.6") },
  )
  .transform(
    (op): UserOpInputV06 =>
      definedOnly({
        sender: op.sender,
        nonce: op.nonce,
        initCode: op.initCode ?? "0x",
        callData: op.callData,
        callGasLimit: op.callGasLimit,
        verificationGasLimit: op.verificationGasLimit,
        preVerificationGas: op.preVerificationGas,
        maxFeePerGas: op.maxFeePerGas,
        maxPriorityFeePerGas: op.maxPriorityFeePerGas,
        signature: op.signature,
      }),
  );

/**
 * The EIP-7702 authorization tuple as bundlers take it with a v0.8 op: {chainId, address, nonce, r, s, yParity}
 * (Alto also accepts `contractAddress` for `address` and `v` for `yParity`). Its signature is NOT checked: at the
 * stub stage wallets send a placeholder one, and the bundler's chain checks the real one.
 */
const eip7702AuthSchema = z
  .strictObject(
    {
      chainId: hexQuantity({ maxBits: 256 }),
      address: address().optional(),
      contractAddress: address().optional(),
      nonce: hexQuantity({ maxBits: 64 }),
      r: hexBytes({ maxBytes: 32 }),
      s: hexBytes({ maxBytes: 32 }),
      yParity: hexQuantity({ maxBits: 8 }).optional(),
      v: hexQuantity({ maxBits: 8 }).optional(),
    },
    { error: (issue) => (issue.code === "unrecognized_keys" ? `unknown eip7702Auth field(s) ${issue.keys.join(", ")}` : undefined) },
  )
  .transform((auth, ctx): Eip7702Authorization => {
    const delegate = auth.address ?? auth.contractAddress;
    if (delegate === undefined) {
      ctx.addIssue({ code: "custom", path: ["address"], message: "the delegate address is required (address or contractAddress)" });
      return z.NEVER;
    }
    const yParity = auth.yParity ?? (auth.v === undefined ? 0n : auth.v >= 27n ? auth.v - 27n : auth.v);
    return { chainId: auth.chainId, address: delegate, nonce: auth.nonce, r: auth.r, s: auth.s, yParity: Number(yParity) };
  });

/**
 * A v0.7 user operation, in the spec's names (initCode, split into factory + factoryData) or in the
 * ERC-7769 names (factory, factoryData, paymaster*). The client's own paymaster, paymasterData and
 * paymasterAndData are accepted and ignored; its paymaster gas limits are kept as hints. With a factory the
 * output always has factoryData ("0x" when none); without one it has neither.
 */
export const userOpV07Schema = z
  .strictObject(
    {
      ...commonShape,
      initCode: hexBytes({ maxBytes: USER_OP_LIMITS.initCodeBytes }).optional(),
      // "0x7702" is the short form of the EIP-7702 marker bundlers take (padded here to its 20 bytes).
      factory: z.union([z.literal("0x7702").transform((): Address => EIP7702_MARKER), address()]).optional(),
      factoryData: hexBytes({ maxBytes: USER_OP_LIMITS.initCodeBytes }).optional(),
      eip7702Auth: eip7702AuthSchema.optional(),
      paymasterVerificationGasLimit: gasLimit().optional(),
      paymasterPostOpGasLimit: gasLimit().optional(),
      paymaster: hexBytes({ maxBytes: USER_OP_LIMITS.ignoredFieldBytes }).optional(),
      paymasterData: hexBytes({ maxBytes: USER_OP_LIMITS.ignoredFieldBytes }).optional(),
      paymasterAndData: hexBytes({ maxBytes: USER_OP_LIMITS.ignoredFieldBytes }).optional(),
    },
    { error: userOpObjectError("v0.7") },
  )
  .transform((op, ctx): UserOpInputV07 => {
    let factory: Address | undefined;
    let factoryData: Hex | undefined;
    if (op.initCode !== undefined) {
      if (op.factory !== undefined || op.factoryData !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["initCode"],
          message: "give either initCode or factory/factoryData, not both",
        });
        return z.NEVER;
      }
      const bytes = (op.initCode.length - 2) / 2;
      if (bytes > 0 && bytes < 20) {
        ctx.addIssue({
          code: "custom",
          path: ["initCode"],
          message: "must be empty (0x) or at least 20 bytes (factory address followed by factoryData)",
        });
        return z.NEVER;
      }
      if (bytes >= 20) {
        factory = checksumAddress(op.initCode.slice(0, 42));
        factoryData = `0x${op.initCode.slice(42)}`;
      }
    } else if (op.factory !== undefined) {
      factory = op.factory;
      factoryData = op.factoryData ?? "0x";
    } else if (op.factoryData !== undefined && op.factoryData !== "0x") {
      ctx.addIssue({ code: "custom", path: ["factoryData"], message: "factoryData needs a factory" });
      return z.NEVER;
    }
    return definedOnly({
      eip7702Auth: op.eip7702Auth,
      sender: op.sender,
      nonce: op.nonce,
      factory,
      factoryData,
      callData: op.callData,
      callGasLimit: op.callGasLimit,
      verificationGasLimit: op.verificationGasLimit,
      preVerificationGas: op.preVerificationGas,
      maxFeePerGas: op.maxFeePerGas,
      maxPriorityFeePerGas: op.maxPriorityFeePerGas,
      paymasterVerificationGasLimit: op.paymasterVerificationGasLimit,
      paymasterPostOpGasLimit: op.paymasterPostOpGasLimit,
      signature: op.signature,
    });
  });

// ---------------------------------------------------------------------------------------------------------
// Params

/** strategy_code / token (v1 extra data, ERC-7677 context, quote tokens): safe text of bounded length. */
export const extraText = () =>
  safeText({ error: notAString("a string") }).max(EXTRA_STRING_MAX_CHARS, { error: `too long: at most ${EXTRA_STRING_MAX_CHARS} characters` });

/** strategy_code / token: a string; "" counts as absent. */
const extraString = () => extraText().optional();

/**
 * The extra-data object (second param). `version` is checked by hand before this schema runs, so here it
 * only has to be one of the allowed values.
 */
const extraSchema = z.strictObject(
  {
    strategy_code: extraString(),
    token: extraString(),
    version: z.enum(SPONSOR_VERSIONS, { error: 'expected "v0.6", "v0.7" or "v0.8"' }).optional(),
  },
  {
    error: (issue) => {
      if (issue.code === "unrecognized_keys") {
        return `unknown extra field${issue.keys.length === 1 ? "" : "s"} ${listNames(issue.keys)} (allowed: strategy_code, token, version)`;
      }
      if (issue.code === "invalid_type") return `expected the extra-data object (may be {}), got ${jsonTypeOf(issue.input)}`;
      return undefined;
    },
  },
);

/** Re-reports a sub-schema's issues under `prefix`. */
function forwardIssues(ctx: z.core.$RefinementCtx, prefix: PropertyKey[], issues: readonly z.core.$ZodIssue[]): void {
  for (const issue of issues) {
    ctx.addIssue({ code: "custom", path: [...prefix, ...issue.path], message: issue.message });
  }
}

/**
 * The version a sponsor call asks for: "v0.6" when `extra` has no version, else its value when supported.
 * A version string we do not support is UNSUPPORTED_ENTRYPOINT_VERSION (not a params error): the request is
 * well-formed, we just cannot serve it. A non-string version is a type error, left to the extra schema.
 */
function requestedVersion(extra: unknown): SponsorVersion | undefined {
  if (typeof extra !== "object" || extra === null || Array.isArray(extra) || !Object.hasOwn(extra, "version")) return "v0.6";
  const version = (extra as { version: unknown }).version;
  if (typeof version !== "string") return undefined;
  if (!(SPONSOR_VERSIONS as readonly string[]).includes(version)) {
    throw new RpcError(
      "UNSUPPORTED_ENTRYPOINT_VERSION",
      `Unsupported EntryPoint version ${JSON.stringify(truncate(version, 16))}: use one of ${SPONSOR_VERSIONS.join(", ")} (default v0.6)`,
      { supported: [...SPONSOR_VERSIONS] },
    );
  }
  return version as SponsorVersion;
}

/**
 * pm_sponsorUserOperation params: exactly `[userOp, extra]`. `extra` is `{strategy_code?, token?, version?}`
 * (it may be `{}`); its version (default v0.6) picks the user operation schema. Throws RpcError
 * UNSUPPORTED_ENTRYPOINT_VERSION for an unknown version string and MODE_CONFLICT when both strategy_code
 * and token are given; every other problem is a zod issue (INVALID_PARAMS).
 */
export const sponsorParamsSchema: z.ZodType<SponsorRequest> = z.unknown().transform((params, ctx): SponsorRequest => {
  if (!Array.isArray(params)) {
    ctx.addIssue({
      code: "custom",
      message: `expected params [userOp, extra], got ${params === undefined ? "none" : jsonTypeOf(params)}`,
    });
    return z.NEVER;
  }
  if (params.length !== 2) {
    ctx.addIssue({ code: "custom", message: `expected exactly 2 params [userOp, extra], got ${params.length}` });
    return z.NEVER;
  }
  const [rawUserOp, rawExtra] = params as [unknown, unknown];

  const version = requestedVersion(rawExtra);
  const extra = extraSchema.safeParse(rawExtra);
  const strategyCode = extra.success && extra.data.strategy_code ? extra.data.strategy_code : undefined;
  const token = extra.success && extra.data.token ? extra.data.token : undefined;
  if (strategyCode !== undefined && token !== undefined) {
    throw new RpcError(
      "MODE_CONFLICT",
      "strategy_code and token cannot be used together: give strategy_code for Sponsor mode, token for ERC-20 mode, or neither for User Sponsor mode",
    );
  }

  // Without a usable version the user operation cannot be checked against the right field set.
  const userOp = version === undefined ? undefined : (version === "v0.6" ? userOpV06Schema : userOpV07Schema).safeParse(rawUserOp);
  if (userOp !== undefined && !userOp.success) forwardIssues(ctx, [0], userOp.error.issues);
  if (!extra.success) forwardIssues(ctx, [1], extra.error.issues);
  if (userOp === undefined || !userOp.success || !extra.success || version === undefined) return z.NEVER;
  // EIP-7702: only v0.8 knows it; a marker op's hash binds the delegate, which the service takes from eip7702Auth.
  const op07 = userOp.data as UserOpInputV07;
  if (version !== "v0.8" && version !== "v0.6" && op07.eip7702Auth !== undefined) {
    ctx.addIssue({ code: "custom", path: [0, "eip7702Auth"], message: "eip7702Auth needs EntryPoint v0.8" });
    return z.NEVER;
  }
  if (version === "v0.8" && isEip7702UserOp(op07) && op07.eip7702Auth === undefined) {
    ctx.addIssue({ code: "custom", path: [0, "eip7702Auth"], message: "an EIP-7702 sender (factory 0x7702) needs eip7702Auth: its delegate is part of the signed hash" });
    return z.NEVER;
  }

  const mode = definedOnly({ strategyCode, token });
  return version === "v0.6"
    ? { version, userOp: userOp.data as UserOpInputV06, ...mode }
    : { version, userOp: userOp.data as UserOpInputV07, ...mode };
});

/**
 * Params of a method that takes one object, `[{names}]`: the object parsed by `object`, its issues reported under
 * params[0]. With `none`, no params at all (the field omitted, or []) is accepted too and gives `none()`.
 */
export function objectParams<T>(names: string, object: z.ZodType<T>, none?: () => T): z.ZodType<T> {
  return z.unknown().transform((params, ctx): T => {
    if (none && (params === undefined || (Array.isArray(params) && params.length === 0))) return none();
    if (!Array.isArray(params) || params.length !== 1) {
      const got = Array.isArray(params) ? `${params.length} params` : jsonTypeOf(params);
      ctx.addIssue({ code: "custom", message: `expected params [{${names}}]${none ? " or none" : ""}, got ${got}` });
      return z.NEVER;
    }
    const parsed = object.safeParse(params[0]);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: [0, ...issue.path], message: issue.message });
      return z.NEVER;
    }
    return parsed.data;
  });
}

/** Params of a method that takes none: the field omitted, or []. */
export const noParamsSchema: z.ZodType<undefined> = z.unknown().transform((params, ctx): undefined => {
  if (params === undefined || (Array.isArray(params) && params.length === 0)) return undefined;
  ctx.addIssue({
    code: "custom",
    message: `this method takes no params (omit the field or send []), got ${Array.isArray(params) ? `${params.length} params` : jsonTypeOf(params)}`,
  });
  return z.NEVER;
});
