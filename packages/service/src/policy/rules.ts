/**
 * Sponsor-mode policy evaluation: pure functions over a strategy's rules and one operation. No I/O.
 *
 * `evaluateRules` judges every rule that needs no stored totals and returns a verdict for each configured
 * rule, in a fixed order (RULE_ORDER), passing or failing, so the same call serves refusals (the first
 * failing verdict) and the dry run (all of them). `capChecks` lists the caps that need stored totals, for the
 * store to enforce atomically with the reservation.
 *
 * A present list restricts even when empty: `senderAllowlist: []` admits nobody, `targets: []` admits only
 * operations that make no calls. Verdicts of the sender lists report the list's size, not its entries (a
 * refusal goes to the caller, who has no business learning who else is listed).
 */
import { getAddress } from "viem/utils";
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";
import { decodeAccountCalls, type AccountCall } from "./callData.ts";
import type { CapCheck, RuleVerdict, StrategyRules } from "./types.ts";

export type { CapCheck, CapScope } from "./types.ts";

export interface RuleInput {
  sender: Address;
  callData: Hex;
  gas: { callGasLimit: bigint; verificationGasLimit: bigint; preVerificationGas: bigint; maxFeePerGas: bigint };
  /** The chain's current maxFeePerGas (what the service would fill). */
  marketMaxFeePerGas: bigint;
  /** This op's maximum cost, in wei and in USD micro-units (1e-6 USD). */
  maxCostWei: bigint;
  maxCostUsdMicros: bigint;
  /** The operation's EntryPoint version; under v0.6 the executeUserOp prefix is not decoded (see callData.ts). */
  entryPointVersion?: EntryPointVersion;
  /** A v0.8 op's EIP-7702 delegate (eip7702Auth.address), if it carries an authorization. */
  eip7702Delegate?: Address;
}

/** The rules `evaluateRules` judges, in the order of its verdicts. */
export const RULE_ORDER = Object.freeze([
  "senderDenylist",
  "senderAllowlist",
  "eip7702.allow",
  "eip7702.delegates",
  "targets",
  "caps.perOp.maxWei",
  "caps.perOp.maxUsd",
  "gasLimits.maxVerificationGasLimit",
  "gasLimits.maxCallGasLimit",
  "gasLimits.maxPreVerificationGas",
  "maxFeeMultiplierBps",
] as const);

export type EvaluatedRule = (typeof RULE_ORDER)[number];

/** The operation as the checks see it: the input, and its sender as shown in verdicts and as compared. */
interface RuleSubject {
  input: RuleInput;
  /** Checksummed when it is an address (displayAddress). */
  sender: string;
  senderKey: string;
}

/** One rule's check: its verdict, or undefined when the strategy does not configure the rule. */
type RuleCheck = (rules: StrategyRules, subject: RuleSubject) => RuleVerdict | undefined;

/** Verdicts for every configured rule that needs no stored totals, in RULE_ORDER. */
export function evaluateRules(rules: StrategyRules, input: RuleInput): RuleVerdict[] {
  const subject: RuleSubject = { input, sender: displayAddress(input.sender), senderKey: input.sender.toLowerCase() };
  const verdicts: RuleVerdict[] = [];
  for (const rule of RULE_ORDER) {
    const verdict = RULE_CHECKS[rule](rules, subject);
    if (verdict) verdicts.push(verdict);
  }
  return verdicts;
}

/** The denylist: a listed sender fails. */
function senderDenylistVerdict(rules: StrategyRules, { sender, senderKey }: RuleSubject): RuleVerdict | undefined {
  if (rules.senderDenylist === undefined) return undefined;
  const listed = rules.senderDenylist.some((a) => a.toLowerCase() === senderKey);
  return {
    rule: "senderDenylist",
    pass: !listed,
    limit: { size: rules.senderDenylist.length },
    value: sender,
    message: listed ? `Sender ${sender} is on this strategy's denylist` : `Sender ${sender} is not on this strategy's denylist`,
  };
}

/** The allowlist: only a listed sender passes. */
function senderAllowlistVerdict(rules: StrategyRules, { sender, senderKey }: RuleSubject): RuleVerdict | undefined {
  if (rules.senderAllowlist === undefined) return undefined;
  const listed = rules.senderAllowlist.some((a) => a.toLowerCase() === senderKey);
  return {
    rule: "senderAllowlist",
    pass: listed,
    limit: { size: rules.senderAllowlist.length },
    value: sender,
    message: listed ? `Sender ${sender} is on this strategy's allowlist` : `Sender ${sender} is not on this strategy's allowlist`,
  };
}

/** EIP-7702 senders at all (judged only for an op that carries an authorization). */
function eip7702AllowVerdict(rules: StrategyRules, { input }: RuleSubject): RuleVerdict | undefined {
  if (rules.eip7702 === undefined || input.eip7702Delegate === undefined) return undefined;
  return {
    rule: "eip7702.allow",
    pass: rules.eip7702.allow,
    limit: rules.eip7702.allow,
    value: displayAddress(input.eip7702Delegate),
    message: rules.eip7702.allow ? "This strategy sponsors EIP-7702 senders" : "This strategy does not sponsor EIP-7702 senders",
  };
}

/** The EIP-7702 delegate allowlist (judged only for an op that carries an authorization). */
function eip7702DelegatesVerdict(rules: StrategyRules, { input }: RuleSubject): RuleVerdict | undefined {
  const delegates = rules.eip7702?.delegates;
  if (delegates === undefined || input.eip7702Delegate === undefined) return undefined;
  const delegate = displayAddress(input.eip7702Delegate);
  const listed = delegates.some((a) => a.toLowerCase() === delegate.toLowerCase());
  return {
    rule: "eip7702.delegates",
    pass: listed,
    limit: delegates.map(displayAddress),
    value: delegate,
    message: `The EIP-7702 delegate ${delegate} is ${listed ? "" : "not "}on this strategy's delegate allowlist`,
  };
}

/** The per-operation cap in wei: the op's maximum cost within it. */
function perOpMaxWeiVerdict(rules: StrategyRules, { input }: RuleSubject): RuleVerdict | undefined {
  const maxWei = rules.caps?.perOp?.maxWei;
  if (maxWei === undefined) return undefined;
  const pass = input.maxCostWei <= maxWei;
  return {
    rule: "caps.perOp.maxWei",
    pass,
    limit: maxWei.toString(),
    value: input.maxCostWei.toString(),
    message: `The operation's maximum cost of ${input.maxCostWei} wei ${pass ? "is within" : "exceeds"} this strategy's per-operation cap of ${maxWei} wei`,
  };
}

/** The per-operation cap in USD: the op's maximum cost, in micro-USD, within it. */
function perOpMaxUsdVerdict(rules: StrategyRules, { input }: RuleSubject): RuleVerdict | undefined {
  const maxUsd = rules.caps?.perOp?.maxUsd;
  if (maxUsd === undefined) return undefined;
  const pass = input.maxCostUsdMicros <= usdToMicros(maxUsd);
  const value = formatUsdMicros(input.maxCostUsdMicros);
  return {
    rule: "caps.perOp.maxUsd",
    pass,
    limit: maxUsd,
    value,
    message: `The operation's maximum cost of $${value} ${pass ? "is within" : "exceeds"} this strategy's per-operation cap of $${maxUsd}`,
  };
}

/** One gas-limit ceiling: `field` of the op at most `limit`. */
function gasCeilingVerdict(rule: EvaluatedRule, field: string, limit: bigint | undefined, value: bigint): RuleVerdict | undefined {
  if (limit === undefined) return undefined;
  const pass = value <= limit;
  return {
    rule,
    pass,
    limit: limit.toString(),
    value: value.toString(),
    message: `${field} ${value} ${pass ? "is within" : "exceeds"} this strategy's ceiling of ${limit}`,
  };
}

/** maxFeePerGas at most the strategy's multiple of the market's. */
function maxFeeMultiplierVerdict(rules: StrategyRules, { input }: RuleSubject): RuleVerdict | undefined {
  if (rules.maxFeeMultiplierBps === undefined) return undefined;
  const bps = BigInt(rules.maxFeeMultiplierBps);
  const ceiling = (input.marketMaxFeePerGas * bps) / 10_000n;
  // Exact: maxFeePerGas <= floor(market x bps / 10000)  <=>  maxFeePerGas x 10000 <= market x bps.
  const pass = input.gas.maxFeePerGas * 10_000n <= input.marketMaxFeePerGas * bps;
  const multiple = formatBps(rules.maxFeeMultiplierBps);
  return {
    rule: "maxFeeMultiplierBps",
    pass,
    limit: ceiling.toString(),
    value: input.gas.maxFeePerGas.toString(),
    message:
      `maxFeePerGas ${input.gas.maxFeePerGas} wei ${pass ? "is within" : "exceeds"} ${multiple}x the market's ` +
      `${input.marketMaxFeePerGas} wei (at most ${ceiling} wei)`,
  };
}

/** The check of each rule `evaluateRules` judges (it walks them in RULE_ORDER). */
const RULE_CHECKS: Readonly<Record<EvaluatedRule, RuleCheck>> = {
  senderDenylist: senderDenylistVerdict,
  senderAllowlist: senderAllowlistVerdict,
  "eip7702.allow": eip7702AllowVerdict,
  "eip7702.delegates": eip7702DelegatesVerdict,
  targets: (rules, { input }) => (rules.targets === undefined ? undefined : targetsVerdict(rules.targets, input)),
  "caps.perOp.maxWei": perOpMaxWeiVerdict,
  "caps.perOp.maxUsd": perOpMaxUsdVerdict,
  "gasLimits.maxVerificationGasLimit": (rules, { input }) =>
    gasCeilingVerdict("gasLimits.maxVerificationGasLimit", "verificationGasLimit", rules.gasLimits?.maxVerificationGasLimit, input.gas.verificationGasLimit),
  "gasLimits.maxCallGasLimit": (rules, { input }) =>
    gasCeilingVerdict("gasLimits.maxCallGasLimit", "callGasLimit", rules.gasLimits?.maxCallGasLimit, input.gas.callGasLimit),
  "gasLimits.maxPreVerificationGas": (rules, { input }) =>
    gasCeilingVerdict("gasLimits.maxPreVerificationGas", "preVerificationGas", rules.gasLimits?.maxPreVerificationGas, input.gas.preVerificationGas),
  maxFeeMultiplierBps: maxFeeMultiplierVerdict,
};

/** The targets rule: every decoded call to a listed target, with an allowed selector when selectors are listed. */
function targetsVerdict(targets: NonNullable<StrategyRules["targets"]>, input: RuleInput): RuleVerdict {
  const limit = targets.map((t) => (t.selectors === undefined ? { address: t.address } : { address: t.address, selectors: [...t.selectors] }));
  const decoded = decodeAccountCalls(input.callData, { entryPointVersion: input.entryPointVersion });
  if (!decoded.ok) {
    return {
      rule: "targets",
      pass: false,
      limit,
      value: { undecodable: decoded.reason },
      message: `The callData cannot be decoded (${decoded.reason}), so its calls cannot be checked against this strategy's allowed targets`,
    };
  }
  const allowed = allowedTargets(targets);
  const { calls } = decoded;
  const failures = calls.flatMap((call, index) => callFailure(call, index, calls.length, allowed) ?? []);
  const first = failures[0];
  if (first) {
    const more = failures.length > 1 ? ` (${failures.length - 1} more call(s) are not allowed either)` : "";
    return {
      rule: "targets",
      pass: false,
      limit,
      value: { call: first.index, target: first.call.target, selector: first.selector },
      message: `${first.why}${more}`,
    };
  }
  return {
    rule: "targets",
    pass: true,
    limit,
    value: calls.map((c) => ({ target: c.target, selector: c.data.length >= 10 ? c.data.slice(0, 10).toLowerCase() : null })),
    message:
      calls.length === 0
        ? "The operation makes no calls"
        : `All ${calls.length} call(s) go to allowed targets with allowed selectors`,
  };
}

/** An allowed target by lowercase address; `selectors` undefined: any call to it. */
type AllowedTargets = Map<string, { address: Address; selectors?: Set<string> }>;

/** One decoded call the targets rule refuses, and why. */
interface CallFailure {
  index: number;
  call: AccountCall;
  why: string;
  selector: Hex | null;
}

/** The strategy's targets merged by address (selectors lowercased). */
function allowedTargets(targets: NonNullable<StrategyRules["targets"]>): AllowedTargets {
  const allowed: AllowedTargets = new Map();
  for (const t of targets) {
    const key = t.address.toLowerCase();
    const entry = allowed.get(key);
    const selectors = t.selectors === undefined ? undefined : new Set(t.selectors.map((s) => s.toLowerCase()));
    if (!entry) allowed.set(key, { address: t.address, selectors });
    // The same target listed twice: any entry without selectors allows everything, else the union.
    else if (entry.selectors !== undefined) entry.selectors = selectors === undefined ? undefined : new Set([...entry.selectors, ...selectors]);
  }
  return allowed;
}

/** Why the call at `index` (of `count`) is not allowed, or undefined when it is. */
function callFailure(call: AccountCall, index: number, count: number, allowed: AllowedTargets): CallFailure | undefined {
  const entry = allowed.get(call.target.toLowerCase());
  const where = `calls[${index}] (of ${count})`;
  const selector = call.data.length >= 10 ? (call.data.slice(0, 10).toLowerCase() as Hex) : null;
  if (!entry) return { index, call, selector, why: `${where} goes to ${call.target}, which is not an allowed target` };
  if (entry.selectors === undefined) return undefined;
  const list = entry.selectors.size === 0 ? "none" : [...entry.selectors].join(", ");
  if (call.data === "0x") {
    return { index, call, selector, why: `${where} sends a call with empty data to ${call.target}, but that target only allows the selectors ${list}` };
  }
  if (selector === null) {
    return {
      index,
      call,
      selector,
      why: `${where} sends ${(call.data.length - 2) / 2} byte(s) of data to ${call.target}, shorter than a selector, but that target only allows the selectors ${list}`,
    };
  }
  if (!entry.selectors.has(selector)) {
    return { index, call, selector, why: `${where} calls selector ${selector} on ${call.target}, which is not among that target's allowed selectors (${list})` };
  }
  return undefined;
}

/**
 * The caps that need stored totals, for the store to enforce atomically: one check per configured scope
 * (global, daily, perSender, in that order) that sets at least one limit. `now` is unix seconds; `sender`
 * must be a valid address (getAddress throws otherwise).
 */
export function capChecks(rules: StrategyRules, context: { now: number; sender: Address }): CapCheck[] {
  const checks: CapCheck[] = [];
  const caps = rules.caps;
  if (!caps) return checks;
  const scopes = [
    { scope: "global", rulePrefix: "caps.global", cap: caps.global, key: () => "" },
    { scope: "daily", rulePrefix: "caps.daily", cap: caps.daily, key: () => utcDayKey(context.now) },
    { scope: "perSender", rulePrefix: "caps.perSender", cap: caps.perSender, key: () => getAddress(context.sender) },
  ] as const;
  for (const { scope, rulePrefix, cap, key } of scopes) {
    if (!cap || (cap.maxWei === undefined && cap.maxUsd === undefined && cap.maxOps === undefined)) continue;
    const check: CapCheck = { scope, key: key(), rulePrefix };
    if (cap.maxWei !== undefined) check.maxWei = cap.maxWei;
    if (cap.maxUsd !== undefined) check.maxUsdMicros = usdToMicros(cap.maxUsd);
    if (cap.maxOps !== undefined) check.maxOps = cap.maxOps;
    checks.push(check);
  }
  return checks;
}

/** The UTC day of a unix time in seconds, "YYYY-MM-DD" (the daily caps' key). */
export function utcDayKey(now: number): string {
  if (!Number.isFinite(now)) throw new RangeError(`not a unix time: ${now}`);
  return new Date(Math.floor(now) * 1000).toISOString().slice(0, 10);
}

const USD_RE = /^(\d+)(?:\.(\d+))?$/;

/** "12.5" -> 12500000n: a non-negative USD decimal string in micro-units, exact; past 6 decimals rounds down. */
export function usdToMicros(decimal: string): bigint {
  const match = USD_RE.exec(decimal);
  if (!match) throw new RangeError(`not a non-negative USD decimal: ${JSON.stringify(decimal)}`);
  const fraction = (match[2] ?? "").slice(0, 6).padEnd(6, "0");
  return BigInt(match[1]!) * 1_000_000n + BigInt(fraction);
}

/** 12500000n -> "12.50", 12345n -> "0.012345": micro-USD as a decimal string (at least 2 decimals). */
export function formatUsdMicros(micros: bigint): string {
  const negative = micros < 0n;
  const abs = negative ? -micros : micros;
  let fraction = (abs % 1_000_000n).toString().padStart(6, "0");
  while (fraction.length > 2 && fraction.endsWith("0")) fraction = fraction.slice(0, -1);
  return `${negative ? "-" : ""}${abs / 1_000_000n}.${fraction}`;
}

/**
 * The USD value of `wei` in micro-units, rounded up (conservative for caps). `nativeUsd` is the price of one
 * native coin (1e18 wei) in USD as an exact fraction, as the price oracle gives it.
 */
export function weiToUsdMicros(wei: bigint, nativeUsd: { numerator: bigint; denominator: bigint }): bigint {
  if (wei < 0n) throw new RangeError("wei must not be negative");
  if (nativeUsd.numerator < 0n || nativeUsd.denominator <= 0n) throw new RangeError("the native USD price must be a non-negative fraction");
  // wei / 1e18 coins x (numerator / denominator) USD x 1e6 micros = wei x numerator / (denominator x 1e12)
  const numerator = wei * nativeUsd.numerator;
  const denominator = nativeUsd.denominator * 1_000_000_000_000n;
  return (numerator + denominator - 1n) / denominator;
}

/** 15000 -> "1.5", 10000 -> "1", 12345 -> "1.2345". */
function formatBps(bps: number): string {
  const whole = Math.floor(bps / 10_000);
  const fraction = (bps % 10_000).toString().padStart(4, "0").replace(/0+$/, "");
  return fraction === "" ? `${whole}` : `${whole}.${fraction}`;
}

/** Checksummed when it is an address, as given otherwise (never throws). */
function displayAddress(address: string): string {
  try {
    return getAddress(address);
  } catch {
    return address;
  }
}
