/**
 * StrategyRules as JSON: the schema that parses stored or submitted rules (admin API, store) and the
 * serializer that writes them back. parse(serializeRules(x)) deep-equals x for every parsed x.
 *
 * JSON form: bigints (wei, gas) as decimal strings ("1000000000000000") or safe integers; addresses in any case
 * with a valid EIP-55 checksum when mixed-case, stored checksummed; selectors as 4-byte hex, stored lowercase; USD as
 * decimal strings with at most 6 decimals ("12.50"); maxOps positive integers; maxFeeMultiplierBps an integer
 * 10000..1000000. Unknown keys are refused (a misspelt rule must not silently restrict nothing), and so is
 * `null`. Issues carry their path (see formatRulesIssues / parseStrategyRules).
 */
import { z } from "zod";
import { getAddress, isAddress } from "viem/utils";
import type { Address, Hex } from "@paymaster/shared";
import type { Cap, StrategyRules } from "./types.ts";

/** Size limits of rules (storage and evaluation stay bounded). */
export const RULE_LIMITS = Object.freeze({
  senderListEntries: 10_000,
  targets: 1_000,
  selectorsPerTarget: 256,
  /** Largest bigint accepted: 2^256 - 1. */
  maxUint: (1n << 256n) - 1n,
  minFeeMultiplierBps: 10_000,
  maxFeeMultiplierBps: 1_000_000,
  maxOutstandingPerClientIp: 1_000,
});

const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const SELECTOR_RE = /^0x[0-9a-fA-F]{8}$/;
const UINT_RE = /^\d{1,78}$/;
const USD_RE = /^\d{1,30}(?:\.\d{1,6})?$/;

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** A schema from a parse function that returns the value or a problem (a message), never echoing the input. */
function primitive<T>(parse: (value: unknown) => { value: T } | { problem: string }) {
  return z.unknown().transform((input, ctx): T => {
    const result = parse(input);
    if ("problem" in result) {
      ctx.addIssue({ code: "custom", message: input === undefined ? "required" : result.problem });
      return z.NEVER;
    }
    return result.value;
  });
}

const addressSchema = primitive<Address>((v) => {
  if (typeof v !== "string") return { problem: `expected an address string, got ${typeName(v)}` };
  if (!ADDRESS_RE.test(v)) return { problem: "expected a 0x-prefixed 20-byte hex address" };
  // EIP-55: all-lowercase and all-uppercase carry no checksum; mixed case must be the checksum.
  const digits = v.slice(2);
  const unchecked = digits === digits.toLowerCase() || digits === digits.toUpperCase();
  if (!unchecked && !isAddress(v, { strict: true })) return { problem: "invalid address checksum (use all-lowercase or the correct mixed case)" };
  return { value: getAddress(v) };
});

const selectorSchema = primitive<Hex>((v) => {
  if (typeof v !== "string") return { problem: `expected a 4-byte selector string, got ${typeName(v)}` };
  if (!SELECTOR_RE.test(v)) return { problem: "expected a 4-byte selector: 0x and 8 hex digits" };
  return { value: v.toLowerCase() as Hex };
});

const uintSchema = primitive<bigint>((v) => {
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v) || v < 0) return { problem: "expected a non-negative integer (use a decimal string above 2^53)" };
    return { value: BigInt(v) };
  }
  if (typeof v !== "string") return { problem: `expected a decimal integer string, got ${typeName(v)}` };
  if (!UINT_RE.test(v)) return { problem: "expected a non-negative decimal integer string" };
  const value = BigInt(v);
  if (value > RULE_LIMITS.maxUint) return { problem: "must be below 2^256" };
  return { value };
});

const usdSchema = primitive<string>((v) => {
  if (typeof v !== "string") return { problem: `expected a USD decimal string such as "12.50", got ${typeName(v)}` };
  if (!USD_RE.test(v)) return { problem: 'expected a non-negative USD decimal string with at most 6 decimals, such as "12.50"' };
  return { value: v };
});

const maxOpsSchema = primitive<number>((v) => {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) return { problem: "expected a positive integer" };
  return { value: v };
});

const outstandingSchema = primitive<number>((v) => {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > RULE_LIMITS.maxOutstandingPerClientIp) {
    return { problem: `expected an integer from 1 to ${RULE_LIMITS.maxOutstandingPerClientIp}` };
  }
  return { value: v };
});

const bpsSchema = primitive<number>((v) => {
  const { minFeeMultiplierBps: min, maxFeeMultiplierBps: max } = RULE_LIMITS;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    return { problem: `expected an integer number of basis points from ${min} (1x) to ${max} (100x)` };
  }
  return { value: v };
});

function list<T extends z.ZodType>(item: T, max: number, what: string) {
  return z.array(item, { error: (issue) => (issue.input === undefined ? "required" : `expected an array of ${what}, got ${typeName(issue.input)}`) }).max(max, {
    error: `at most ${max} ${what}`,
  });
}

function object<S extends z.core.$ZodLooseShape>(shape: S, what: string) {
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === "unrecognized_keys") return `unknown key(s) ${issue.keys.map((k) => JSON.stringify(k)).join(", ")} in ${what}`;
      return issue.input === undefined ? "required" : `expected ${what}, got ${typeName(issue.input)}`;
    },
  });
}

const capSchema = object({ maxWei: uintSchema.optional(), maxUsd: usdSchema.optional(), maxOps: maxOpsSchema.optional() }, "a cap object");
const perOpCapSchema = object({ maxWei: uintSchema.optional(), maxUsd: usdSchema.optional() }, "a per-operation cap object");

const targetSchema = object(
  {
    address: addressSchema,
    selectors: list(selectorSchema, RULE_LIMITS.selectorsPerTarget, "selectors")
      .min(1, { error: "must not be empty: omit selectors to allow any call to this target" })
      .optional(),
  },
  "a target object",
);

/** Parses StrategyRules from JSON (see the module comment for the form). */
export const strategyRulesSchema = object(
  {
    senderAllowlist: list(addressSchema, RULE_LIMITS.senderListEntries, "addresses").optional(),
    senderDenylist: list(addressSchema, RULE_LIMITS.senderListEntries, "addresses").optional(),
    targets: list(targetSchema, RULE_LIMITS.targets, "targets")
      .superRefine((targets, ctx) => {
        const seen = new Map<string, number>();
        targets.forEach((t, i) => {
          const first = seen.get(t.address.toLowerCase());
          if (first !== undefined) {
            ctx.addIssue({ code: "custom", path: [i, "address"], message: `duplicate target: already listed at targets[${first}]` });
          } else seen.set(t.address.toLowerCase(), i);
        });
      })
      .optional(),
    caps: object(
      { global: capSchema.optional(), daily: capSchema.optional(), perSender: capSchema.optional(), perOp: perOpCapSchema.optional() },
      "a caps object",
    ).optional(),
    gasLimits: object(
      { maxVerificationGasLimit: uintSchema.optional(), maxCallGasLimit: uintSchema.optional(), maxPreVerificationGas: uintSchema.optional() },
      "a gasLimits object",
    ).optional(),
    maxFeeMultiplierBps: bpsSchema.optional(),
    maxOutstandingPerClientIp: outstandingSchema.optional(),
    eip7702: object(
      {
        allow: z.boolean({ error: "expected true or false" }),
        delegates: list(addressSchema, RULE_LIMITS.senderListEntries, "addresses").optional(),
      },
      "an eip7702 object",
    ).optional(),
  },
  "a strategy rules object",
) satisfies z.ZodType<StrategyRules>;

/** "targets[0].selectors[1]: expected a 4-byte selector..." for each issue ("(root)" for the whole value). */
export function formatRulesIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`);
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) out += typeof part === "number" ? `[${part}]` : out === "" ? String(part) : `.${String(part)}`;
  return out === "" ? "(root)" : out;
}

/** strategyRulesSchema.safeParse with path-named error strings. */
export function parseStrategyRules(input: unknown): { ok: true; rules: StrategyRules } | { ok: false; errors: string[] } {
  const result = strategyRulesSchema.safeParse(input);
  return result.success ? { ok: true, rules: result.data } : { ok: false, errors: formatRulesIssues(result.error) };
}

/** A Cap in JSON. */
export interface CapJson {
  maxWei?: string;
  maxUsd?: string;
  maxOps?: number;
}

/** StrategyRules in JSON: bigints as decimal strings. */
export interface StrategyRulesJson {
  senderAllowlist?: string[];
  senderDenylist?: string[];
  targets?: { address: string; selectors?: string[] }[];
  caps?: { global?: CapJson; daily?: CapJson; perSender?: CapJson; perOp?: Omit<CapJson, "maxOps"> };
  gasLimits?: { maxVerificationGasLimit?: string; maxCallGasLimit?: string; maxPreVerificationGas?: string };
  maxFeeMultiplierBps?: number;
  maxOutstandingPerClientIp?: number;
  eip7702?: { allow: boolean; delegates?: string[] };
}

/** StrategyRules to JSON-safe data (bigints as decimal strings); absent fields stay absent. */
export function serializeRules(rules: StrategyRules): StrategyRulesJson {
  const out: StrategyRulesJson = {};
  if (rules.senderAllowlist !== undefined) out.senderAllowlist = [...rules.senderAllowlist];
  if (rules.senderDenylist !== undefined) out.senderDenylist = [...rules.senderDenylist];
  if (rules.eip7702 !== undefined) {
    out.eip7702 = { allow: rules.eip7702.allow, ...(rules.eip7702.delegates ? { delegates: [...rules.eip7702.delegates] } : {}) };
  }
  if (rules.targets !== undefined) {
    out.targets = rules.targets.map((t) => (t.selectors === undefined ? { address: t.address } : { address: t.address, selectors: [...t.selectors] }));
  }
  if (rules.caps !== undefined) {
    const caps: NonNullable<StrategyRulesJson["caps"]> = {};
    if (rules.caps.global !== undefined) caps.global = capJson(rules.caps.global);
    if (rules.caps.daily !== undefined) caps.daily = capJson(rules.caps.daily);
    if (rules.caps.perSender !== undefined) caps.perSender = capJson(rules.caps.perSender);
    if (rules.caps.perOp !== undefined) caps.perOp = capJson(rules.caps.perOp);
    out.caps = caps;
  }
  if (rules.gasLimits !== undefined) {
    const g = rules.gasLimits;
    const gas: NonNullable<StrategyRulesJson["gasLimits"]> = {};
    if (g.maxVerificationGasLimit !== undefined) gas.maxVerificationGasLimit = g.maxVerificationGasLimit.toString();
    if (g.maxCallGasLimit !== undefined) gas.maxCallGasLimit = g.maxCallGasLimit.toString();
    if (g.maxPreVerificationGas !== undefined) gas.maxPreVerificationGas = g.maxPreVerificationGas.toString();
    out.gasLimits = gas;
  }
  if (rules.maxFeeMultiplierBps !== undefined) out.maxFeeMultiplierBps = rules.maxFeeMultiplierBps;
  if (rules.maxOutstandingPerClientIp !== undefined) out.maxOutstandingPerClientIp = rules.maxOutstandingPerClientIp;
  return out;
}

function capJson(cap: Cap): CapJson {
  const out: CapJson = {};
  if (cap.maxWei !== undefined) out.maxWei = cap.maxWei.toString();
  if (cap.maxUsd !== undefined) out.maxUsd = cap.maxUsd;
  if (cap.maxOps !== undefined) out.maxOps = cap.maxOps;
  return out;
}
