/**
 * The store's input checks: a caller's mistake is StoreError INVALID_INPUT, before anything is read or written;
 * and the new records built from checked input (a strategy, a sponsorship's record). Addresses come out
 * checksummed, hashes lowercase, amounts as bigints no larger than uint256.
 */
import { randomUUID } from "node:crypto";
import { getAddress, isAddress } from "viem/utils";
import type { Address, Hex } from "@paymaster/shared";

import { parseStrategyRules, serializeRules } from "../policy/schema.ts";
import type { CapCheck, CapScope, StrategyRules } from "../policy/types.ts";
import { StoreError } from "./errors.ts";
import type { NewSponsorship, NewStrategy, PriceSource, ProjectStatus, Settlement, SponsorshipFilter, SponsorshipRecord, Strategy, StrategyPatch, StrategyStatus, Token } from "./types.ts";
import type { SponsorMode } from "../policy/types.ts";

/** Amounts are refused above uint256: they mean nothing on an EVM chain (and PostgreSQL's NUMERIC(78,0) holds them). */
export const UINT256_MAX = (1n << 256n) - 1n;

const SPONSOR_MODES: ReadonlySet<string> = new Set<SponsorMode>(["sponsor", "erc20", "user"]);

const VERSIONS: ReadonlySet<string> = new Set(["v0.6", "v0.7", "v0.8"]);

const STRATEGY_STATUSES: ReadonlySet<string> = new Set<StrategyStatus>(["enabled", "disabled"]);

const CAP_SCOPES: ReadonlySet<string> = new Set<CapScope>(["global", "daily", "perSender"]);

const BYTES32_RE = /^0x[0-9a-fA-F]{64}$/;

const HEX_BYTES_RE = /^0x(?:[0-9a-fA-F]{2})*$/;

const UTC_DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function invalid(message: string): never {
  throw new StoreError("INVALID_INPUT", message);
}

export function address(value: unknown, what: string): Address {
  if (typeof value !== "string" || !isAddress(value, { strict: false })) invalid(`${what} is not an address`);
  return getAddress(value);
}

/** A uint256 as a bigint. */
export function amount(value: unknown, what: string): bigint {
  if (typeof value !== "bigint" || value < 0n) invalid(`${what} must be a non-negative bigint`);
  if (value > UINT256_MAX) invalid(`${what} does not fit in 256 bits`);
  return value;
}

function optionalAmount(value: unknown, what: string): bigint | null {
  return value === null || value === undefined ? null : amount(value, what);
}

function unixSeconds(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    invalid(`${what} must be unix seconds (a non-negative integer)`);
  }
  return value;
}

function optionalUnixSeconds(value: unknown, what: string): number | null {
  return value === null || value === undefined ? null : unixSeconds(value, what);
}

function nonEmpty(value: unknown, what: string): string {
  if (typeof value !== "string" || value === "") invalid(`${what} must be a non-empty string`);
  return value;
}

function bytes32(value: unknown, what: string): Hex {
  if (typeof value !== "string" || !BYTES32_RE.test(value)) invalid(`${what} must be 32 bytes of 0x-hex`);
  return value.toLowerCase() as Hex;
}

/** The lowercase form of a well-formed 32-byte hash, else undefined (a lookup by it finds nothing). */
export function hashKey(value: unknown): string | undefined {
  return typeof value === "string" && BYTES32_RE.test(value) ? value.toLowerCase() : undefined;
}

export function projectName(name: unknown): string {
  if (typeof name !== "string" || name.trim() === "") invalid("project name must be a non-empty string");
  return name;
}

export function strategyStatus(status: unknown): StrategyStatus {
  if (typeof status !== "string" || !STRATEGY_STATUSES.has(status)) invalid(`strategy status must be "enabled" or "disabled"`);
  return status as StrategyStatus;
}

/**
 * Rules checked by the rules schema and normalised (checksummed addresses, lowercase selectors): what is stored
 * is `json` (serializeRules), and `rules` is exactly what reading it back gives.
 */
export function validRules(rules: unknown): { rules: StrategyRules; json: string } {
  // The JSON form of what was given, key for key (serializeRules would drop unknown keys, which the schema
  // must see to refuse: a misspelt rule must not silently restrict nothing).
  let data: unknown;
  try {
    data = JSON.parse(JSON.stringify(rules, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) ?? "null");
  } catch {
    invalid("strategy rules are not JSON data");
  }
  const parsed = parseStrategyRules(data);
  if (!parsed.ok) invalid(`strategy rules are invalid: ${parsed.errors.join("; ")}`);
  return { rules: parsed.rules, json: JSON.stringify(serializeRules(parsed.rules)) };
}

/** A new strategy, and the JSON of its networks and rules as stored. */
export function newStrategy(input: NewStrategy): { strategy: Strategy; networksJson: string | null; rulesJson: string } {
  const code = nonEmpty(input.code, "strategy code");
  if (typeof input.name !== "string") invalid("strategy name must be a string");
  const status = strategyStatus(input.status ?? "enabled");
  const networks = input.networks ?? null;
  if (networks !== null && (!Array.isArray(networks) || networks.some((n) => typeof n !== "string"))) {
    invalid("strategy networks must be an array of network names or null");
  }
  const { rules, json: rulesJson } = validRules(input.rules ?? {});
  const strategy: Strategy = {
    id: randomUUID(),
    projectId: input.projectId,
    code,
    name: input.name,
    status,
    validFrom: optionalUnixSeconds(input.validFrom, "validFrom"),
    validUntil: optionalUnixSeconds(input.validUntil, "validUntil"),
    networks: networks === null ? null : [...networks],
    rules,
    createdAt: nowSeconds(),
  };
  return { strategy, networksJson: networks === null ? null : JSON.stringify(strategy.networks), rulesJson };
}

/** A strategy with `patch` applied, validated as createStrategy validates, and its stored JSON. */
export function patchedStrategy(current: Strategy, patch: StrategyPatch): { strategy: Strategy; networksJson: string | null; rulesJson: string } {
  if (typeof patch !== "object" || patch === null) invalid("strategy changes must be an object");
  const known = new Set(["name", "status", "validFrom", "validUntil", "networks", "rules"]);
  const unknown = Object.keys(patch).find((k) => !known.has(k));
  if (unknown !== undefined) invalid(`strategy field "${unknown}" cannot be changed (or does not exist)`);
  const next = newStrategy({ ...current, ...patch });
  return { ...next, strategy: { ...next.strategy, id: current.id, createdAt: current.createdAt } };
}

export function projectStatus(status: unknown): ProjectStatus {
  if (status !== "active" && status !== "disabled") invalid('project status must be "active" or "disabled"');
  return status;
}

/** Most rows a list answers at once. */
export const LIST_LIMIT_MAX = 1000;

export function listLimit(limit: unknown): number {
  if (limit === undefined || limit === null) return 100;
  if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) {
    invalid(`limit must be an integer from 1 to ${LIST_LIMIT_MAX}`);
  }
  return limit;
}

/** A sponsorship filter checked and normalised (checksummed sender, lowercase hash; null = no filter). */
export function validSponsorshipFilter(filter: SponsorshipFilter) {
  const f = filter ?? {};
  const text = (v: unknown, what: string): string | null => (v === undefined || v === null ? null : nonEmpty(v, what));
  if (f.status !== undefined && !["reserved", "signed", "settled", "released"].includes(f.status)) {
    invalid("status must be one of reserved, signed, settled, released");
  }
  return {
    projectId: text(f.projectId, "projectId"),
    strategyId: text(f.strategyId, "strategyId"),
    network: text(f.network, "network"),
    sender: f.sender === undefined ? null : address(f.sender, "sender"),
    status: f.status ?? null,
    userOpHash: f.userOpHash === undefined ? null : bytes32(f.userOpHash, "userOpHash"),
    since: f.since === undefined ? 0 : unixSeconds(f.since, "since"),
    until: f.until === undefined ? Number.MAX_SAFE_INTEGER : unixSeconds(f.until, "until"),
    limit: listLimit(f.limit),
  };
}

function validPriceSource(source: unknown): PriceSource {
  const s = source as Partial<Record<string, unknown>> | null;
  if (s?.type === "fixed" && typeof s.usd === "string" && /^\d+(\.\d+)?$/.test(s.usd)) {
    return { type: "fixed", usd: s.usd };
  }
  if (s?.type === "chainlink") {
    const feed = address(s.feed, "priceSource.feed");
    if (s.maxAgeSeconds === undefined) return { type: "chainlink", feed };
    if (typeof s.maxAgeSeconds !== "number" || !Number.isSafeInteger(s.maxAgeSeconds) || s.maxAgeSeconds <= 0) {
      invalid("priceSource.maxAgeSeconds must be a positive integer");
    }
    return { type: "chainlink", feed, maxAgeSeconds: s.maxAgeSeconds };
  }
  return invalid('priceSource must be {type:"fixed", usd:"<decimal>"} or {type:"chainlink", feed:<address>}');
}

/** A token as stored: checksummed address, price source as JSON. */
export function validToken(token: Token): { address: Address; priceSourceJson: string } {
  const addr = address(token.address, "token address");
  if (typeof token.symbol !== "string" || token.symbol === "") invalid("token symbol must be a non-empty string");
  if (!Number.isInteger(token.decimals) || token.decimals < 0 || token.decimals > 255) {
    invalid("token decimals must be an integer in [0, 255]");
  }
  if (!Number.isInteger(token.markupBps) || token.markupBps < 0 || token.markupBps > 10_000) {
    invalid("token markupBps must be an integer in [0, 10000]");
  }
  return { address: addr, priceSourceJson: JSON.stringify(validPriceSource(token.priceSource)) };
}

export function validCredit(sender: unknown, amountWei: unknown, reference: unknown): { sender: Address; amountWei: bigint } {
  const who = address(sender, "sender");
  if (typeof amountWei !== "bigint" || amountWei <= 0n) invalid("credit amount must be a positive bigint (wei)");
  if (amountWei > UINT256_MAX) invalid("credit amount does not fit in 256 bits");
  nonEmpty(reference, "credit reference");
  return { sender: who, amountWei };
}

export function creditConflict(
  reference: string,
  prior: { network: string; sender: string; amount_wei: string | bigint },
): StoreError {
  return new StoreError(
    "CONFLICT",
    `credit reference "${reference}" was already used for ${prior.amount_wei} wei to ${prior.sender} on ${prior.network}`,
  );
}

/** A reservation's input checked and normalised (checksummed addresses), as the record it becomes. */
export function newSponsorshipRecord(input: NewSponsorship, now: number): SponsorshipRecord {
  if (!SPONSOR_MODES.has(input.mode)) invalid(`mode must be one of sponsor, erc20, user`);
  if (!VERSIONS.has(input.version)) invalid(`version must be v0.6 or v0.7`);
  const { userOpHash, paymasterAndData } = validSigned(input);
  return {
    id: randomUUID(),
    network: nonEmpty(input.network, "network"),
    entryPoint: address(input.entryPoint, "entryPoint"),
    version: input.version,
    sender: address(input.sender, "sender"),
    nonce: amount(input.nonce, "nonce"),
    mode: input.mode,
    projectId: input.projectId,
    apiKeyId: input.apiKeyId,
    strategyId: input.strategyId ?? null,
    token: input.token === null || input.token === undefined ? null : address(input.token, "token"),
    exchangeRate: optionalAmount(input.exchangeRate, "exchangeRate"),
    maxTokenCost: optionalAmount(input.maxTokenCost, "maxTokenCost"),
    maxCostWei: amount(input.maxCostWei, "maxCostWei"),
    maxCostUsdMicros: amount(input.maxCostUsdMicros, "maxCostUsdMicros"),
    validUntil: unixSeconds(input.validUntil, "validUntil"),
    validAfter: unixSeconds(input.validAfter, "validAfter"),
    userOpHash,
    paymasterAndData,
    status: "signed",
    createdAt: now,
    settlement: null,
  };
}

function validSigned(signed: { userOpHash: Hex; paymasterAndData: Hex }): { userOpHash: Hex; paymasterAndData: Hex } {
  const userOpHash = bytes32(signed?.userOpHash, "userOpHash");
  if (typeof signed.paymasterAndData !== "string" || !HEX_BYTES_RE.test(signed.paymasterAndData)) {
    invalid("paymasterAndData must be 0x-hex bytes");
  }
  return { userOpHash, paymasterAndData: signed.paymasterAndData };
}

export function validSettlement(s: Settlement): Settlement {
  if (typeof s !== "object" || s === null) invalid("settlement must be an object");
  if (typeof s.success !== "boolean") invalid("settlement.success must be a boolean");
  const blockNumber = amount(s.blockNumber, "settlement.blockNumber");
  // Stored as a 64-bit integer (indexed for listSettledSince) and read back as a JS number.
  if (blockNumber > BigInt(Number.MAX_SAFE_INTEGER)) invalid("settlement.blockNumber is out of range");
  if (typeof s.logIndex !== "number" || !Number.isSafeInteger(s.logIndex) || s.logIndex < 0) {
    invalid("settlement.logIndex must be a non-negative integer");
  }
  return {
    actualGasCostWei: amount(s.actualGasCostWei, "settlement.actualGasCostWei"),
    actualCostUsdMicros: amount(s.actualCostUsdMicros, "settlement.actualCostUsdMicros"),
    actualTokenCost: optionalAmount(s.actualTokenCost, "settlement.actualTokenCost"),
    success: s.success,
    txHash: bytes32(s.txHash, "settlement.txHash"),
    blockNumber,
    blockHash: bytes32(s.blockHash, "settlement.blockHash"),
    logIndex: s.logIndex,
  };
}

export function cursorName(name: unknown): string {
  return nonEmpty(name, "cursor name");
}

export function validExpiry(now: unknown, graceSeconds: unknown): number {
  return unixSeconds(now, "now") - unixSeconds(graceSeconds, "graceSeconds");
}

/** The key of a scope, normalised: "" (global), a UTC day "YYYY-MM-DD" (daily), a checksummed sender (perSender). */
export function scopeKey(scope: unknown, key: unknown): { scope: CapScope; key: string } {
  if (typeof scope !== "string" || !CAP_SCOPES.has(scope)) invalid("cap scope must be global, daily or perSender");
  if (scope === "global") {
    if (key !== "") invalid('the global cap scope\'s key must be ""');
    return { scope, key: "" };
  }
  if (scope === "daily") {
    if (typeof key !== "string" || !UTC_DAY_RE.test(key)) invalid("the daily cap scope's key must be a UTC day YYYY-MM-DD");
    return { scope, key };
  }
  return { scope: scope as CapScope, key: address(key, "the perSender cap scope's key") };
}

/**
 * The CapChecks a reservation must hold, checked: one per (scope, key), each rule named after its scope, limits
 * non-negative, and a strategy to count them against. Caps that are given are enforced whatever the mode (the
 * pipeline gives them in Sponsor mode); in User Sponsor mode the tank is checked first.
 */
export function validCapChecks(caps: readonly CapCheck[] | undefined, strategyId: string | null): CapCheck[] {
  if (caps === undefined || caps === null) return [];
  if (!Array.isArray(caps)) invalid("caps must be an array of cap checks");
  if (caps.length > 0 && strategyId === null) invalid("caps need the sponsorship's strategyId");
  const seen = new Set<string>();
  return caps.map((c: CapCheck) => {
    const { scope, key } = scopeKey(c?.scope, c?.key);
    if (c.rulePrefix !== `caps.${scope}`) invalid(`a ${scope} cap's rulePrefix must be "caps.${scope}"`);
    if (seen.has(`${scope}\u0000${key}`)) invalid(`caps name the ${scope} scope "${key}" twice`);
    seen.add(`${scope}\u0000${key}`);
    const check: CapCheck = { scope, key, rulePrefix: c.rulePrefix };
    if (c.maxWei !== undefined) check.maxWei = amount(c.maxWei, `${c.rulePrefix}.maxWei`);
    if (c.maxUsdMicros !== undefined) check.maxUsdMicros = amount(c.maxUsdMicros, `${c.rulePrefix}.maxUsdMicros`);
    if (c.maxOps !== undefined) {
      if (typeof c.maxOps !== "number" || !Number.isSafeInteger(c.maxOps) || c.maxOps < 0) {
        invalid(`${c.rulePrefix}.maxOps must be a non-negative integer`);
      }
      check.maxOps = c.maxOps;
    }
    return check;
  });
}

/** A nonce whose key (its upper 192 bits) is not 0: a 2-D nonce. */
export const parallelNonce = (nonce: bigint): boolean => nonce >> 64n !== 0n;
