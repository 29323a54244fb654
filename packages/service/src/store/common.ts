/**
 * What the store (sqlStore.ts, one implementation for SQLite and PostgreSQL) needs beyond SQL: input
 * validation, row <-> domain conversion (SQLite returns amounts as decimal text, PostgreSQL as bigint), and the
 * accounting rules — which strategy usage rows and gas tank a sponsorship's transitions change, and by how much,
 * and when a reservation would exceed a cap. The store only reads rows, locks them (in `lockOrder`), applies
 * these functions and writes the results back; no amount is computed in SQL.
 *
 * ## The accounting model
 *
 * A strategy's usage is kept per (strategy_id, scope, key) row of `strategy_usage` (scope "global" with key "",
 * "daily" with the UTC day, "perSender" with the checksummed sender): reserved and spent, each in wei and in USD
 * micro-units, and ops. A sponsorship counts in exactly the rows of the CapChecks it was reserved with, recorded
 * in `sponsorship_usage` when it is reserved and never changed afterwards, so its release, settlement and
 * un-settlement touch exactly those rows even when the day has changed since (a reservation made without caps
 * counts in no row). In User Sponsor mode it also counts in its sender's gas tank (reserved, and balance once
 * settled). Every status change moves the amounts by one `Delta`:
 *
 * | transition                               | usage reserved | usage spent | ops | tank reserved | tank balance |
 * | ---------------------------------------- | -------------- | ----------- | --- | ------------- | ------------ |
 * | reserve (-> reserved)                    | + max          |             | + 1 | + max         |              |
 * | release, replace, expire (-> released)   | - max          |             | - 1 | - max         |              |
 * | settle from signed (-> settled)          | - max          | + actual    |     | - max         | - actual     |
 * | settle from released (-> settled)        |                | + actual    | + 1 |               | - actual     |
 * | unsettle: the exact inverse of its settle                                                                  |
 *
 * (`max` is the sponsorship's maxCostWei and maxCostUsdMicros, `actual` the settlement's actualGasCostWei and
 * actualCostUsdMicros; tank columns apply in User Sponsor mode only, and hold wei only.)
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { getAddress, isAddress } from "viem";
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";

import { parseStrategyRules, serializeRules } from "../policy/schema.ts";
import type { CapCheck, CapScope, StrategyRules } from "../policy/types.ts";
import { StoreError } from "./errors.ts";
import type {
  ApiKey,
  ApiKeyStatus,
  KeyApplication,
  KeyApplicationStatus,
  ProjectStatus,
  SponsorshipFilter,
  StrategyPatch,
  NewSponsorship,
  NewStrategy,
  PriceSource,
  Project,
  ReserveResult,
  Settlement,
  SponsorMode,
  SponsorshipRecord,
  SponsorshipStatus,
  Strategy,
  StrategyStatus,
  Token,
  UsageTotals,
} from "./types.ts";

/** Amounts are refused above uint256: they mean nothing on an EVM chain (and PostgreSQL's NUMERIC(78,0) holds them). */
export const UINT256_MAX = (1n << 256n) - 1n;

/** API keys: `pm_` + 32 random bytes, base64url (43 chars): 46 chars in all. */
const API_KEY_PREFIX = "pm_";
const API_KEY_RANDOM_BYTES = 32;
/** How many leading characters of the plaintext are kept to recognise a key ("pm_" + 7). */
const API_KEY_DISPLAY_PREFIX_LENGTH = 10;
/** Longer inputs are not keys: answer without hashing them. */
const API_KEY_MAX_LENGTH = 256;

const SPONSOR_MODES: ReadonlySet<string> = new Set<SponsorMode>(["sponsor", "erc20", "user"]);
const VERSIONS: ReadonlySet<string> = new Set(["v0.6", "v0.7", "v0.8"]);
const STRATEGY_STATUSES: ReadonlySet<string> = new Set<StrategyStatus>(["enabled", "disabled"]);
const CAP_SCOPES: ReadonlySet<string> = new Set<CapScope>(["global", "daily", "perSender"]);
const BYTES32_RE = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES_RE = /^0x(?:[0-9a-fA-F]{2})*$/;
const UTC_DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

// ---- validation (a caller's mistake is StoreError INVALID_INPUT, before anything is read or written)

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
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


// ---- projects and API keys

export function projectName(name: unknown): string {
  if (typeof name !== "string" || name.trim() === "") invalid("project name must be a non-empty string");
  return name;
}

/** A fresh key: the record, the plaintext (returned once) and the hash that is stored in its place. */
export function newApiKey(projectId: string, label?: string): { apiKey: ApiKey; plaintext: string; keyHash: string } {
  const plaintext = API_KEY_PREFIX + randomBytes(API_KEY_RANDOM_BYTES).toString("base64url");
  const apiKey: ApiKey = {
    id: randomUUID(),
    projectId,
    prefix: plaintext.slice(0, API_KEY_DISPLAY_PREFIX_LENGTH),
    label: label ?? null,
    status: "active",
    createdAt: nowSeconds(),
    revokedAt: null,
    allowedOrigins: null,
    allowedIps: null,
  };
  return { apiKey, plaintext, keyHash: sha256Hex(plaintext) };
}

/** The hash to look a presented key up by; undefined for what cannot be a key (answered without hashing). */
export function apiKeyLookupHash(plaintext: unknown): string | undefined {
  if (typeof plaintext !== "string" || plaintext.length === 0 || plaintext.length > API_KEY_MAX_LENGTH) return undefined;
  return sha256Hex(plaintext);
}

// ---- strategies

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

/** Parsed rules by their stored JSON: strategies are read on every request, and parsing a long sender list is not free. */
const rulesCache = new Map<string, StrategyRules>();
const RULES_CACHE_ENTRIES = 256;

/** Stored rules JSON to StrategyRules (a fresh copy per call). Stored rules that no longer parse fail closed. */
export function rulesFromJson(json: string): StrategyRules {
  let rules = rulesCache.get(json);
  if (!rules) {
    const parsed = parseStrategyRules(JSON.parse(json));
    if (!parsed.ok) throw new Error(`stored strategy rules do not parse: ${parsed.errors.join("; ")}`);
    rules = parsed.rules;
    if (rulesCache.size >= RULES_CACHE_ENTRIES) rulesCache.delete(rulesCache.keys().next().value!);
    rulesCache.set(json, rules);
  }
  return structuredClone(rules);
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

export interface KeyApplicationRow {
  id: string;
  created_at: number;
  contact: string;
  project_name: string;
  networks: string;
  intended_use: string;
  status: KeyApplicationStatus;
  decided_at: number | null;
  decided_by: string | null;
  reason: string | null;
  project_id: string | null;
  api_key_id: string | null;
  claimed_at: number | null;
}

export function toKeyApplication(row: KeyApplicationRow): KeyApplication {
  return {
    id: row.id,
    createdAt: row.created_at,
    contact: row.contact,
    projectName: row.project_name,
    networks: JSON.parse(row.networks) as string[],
    intendedUse: row.intended_use,
    status: row.status,
    decidedAt: row.decided_at,
    decidedBy: row.decided_by,
    reason: row.reason,
    projectId: row.project_id,
    apiKeyId: row.api_key_id,
    claimedAt: row.claimed_at,
  };
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

/** JSON text of administration data (bigints as decimal strings). */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
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

// ---- tokens and gas tanks

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

// ---- sponsorships

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
    status: input.pending === true ? "reserved" : "signed",
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

// ---- rows (what the backends' SELECTs return; PostgreSQL's pool parses NUMERIC to bigint and BIGINT to number,
// SQLite returns amounts as decimal TEXT and INTEGER as number; JSON columns are selected as text on both)

type Amount = string | bigint;

export interface ProjectRow {
  id: string;
  name: string;
  status: ProjectStatus;
  created_at: number;
}
export interface ApiKeyRow {
  id: string;
  project_id: string;
  prefix: string;
  label: string | null;
  status: ApiKeyStatus;
  created_at: number;
  revoked_at: number | null;
  allowed_origins: string | null;
  allowed_ips: string | null;
}
export interface StrategyRow {
  id: string;
  project_id: string;
  code: string;
  name: string;
  status: StrategyStatus;
  valid_from: number | null;
  valid_until: number | null;
  networks: string | null;
  rules: string;
  created_at: number;
}
export interface TokenRow {
  network: string;
  address: string;
  symbol: string;
  decimals: number;
  price_source: string;
  markup_bps: number;
  enabled: number | boolean;
}
export interface TankRow {
  balance_wei: Amount;
  reserved_wei: Amount;
}
export interface UsageRow {
  reserved_wei: Amount;
  spent_wei: Amount;
  reserved_usd_micros: Amount;
  spent_usd_micros: Amount;
  ops: number;
}
/** Why a released sponsorship was released (kept when it is settled afterwards: see `settleDelta`). */
export type ReleaseReason = "released" | "replaced" | "expired";
export interface SponsorshipRow {
  id: string;
  network: string;
  entry_point: string;
  version: EntryPointVersion;
  sender: string;
  nonce: Amount;
  mode: SponsorMode;
  project_id: string;
  api_key_id: string;
  strategy_id: string | null;
  token: string | null;
  exchange_rate: Amount | null;
  max_token_cost: Amount | null;
  max_cost_wei: Amount;
  max_cost_usd_micros: Amount;
  valid_until: number;
  valid_after: number;
  user_op_hash: string | null;
  paymaster_and_data: string | null;
  status: SponsorshipStatus;
  release_reason: ReleaseReason | null;
  created_at: number;
  actual_gas_cost_wei: Amount | null;
  actual_cost_usd_micros: Amount | null;
  actual_token_cost: Amount | null;
  settled_success: number | boolean | null;
  settled_tx_hash: string | null;
  settled_block_number: number | null;
  settled_block_hash: string | null;
  settled_log_index: number | null;
}
/** The columns every SponsorshipRow has, in one order (both backends select these). */
export const SPONSORSHIP_COLUMNS = `id, network, entry_point, version, sender, nonce, mode, project_id, api_key_id,
  strategy_id, token, exchange_rate, max_token_cost, max_cost_wei, max_cost_usd_micros, valid_until, valid_after,
  user_op_hash, paymaster_and_data, status, release_reason, created_at, actual_gas_cost_wei, actual_cost_usd_micros,
  actual_token_cost, settled_success, settled_tx_hash, settled_block_number, settled_block_hash, settled_log_index`;

const big = (value: Amount): bigint => BigInt(value);
const optionalBig = (value: Amount | null): bigint | null => (value === null ? null : BigInt(value));

export function toProject(row: ProjectRow): Project {
  return { id: row.id, name: row.name, status: row.status, createdAt: row.created_at };
}

export function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    projectId: row.project_id,
    prefix: row.prefix,
    label: row.label,
    status: row.status,
    createdAt: row.created_at,
    revokedAt: row.revoked_at ?? null,
    allowedOrigins: row.allowed_origins === null || row.allowed_origins === undefined ? null : (JSON.parse(row.allowed_origins) as string[]),
    allowedIps: row.allowed_ips === null || row.allowed_ips === undefined ? null : (JSON.parse(row.allowed_ips) as string[]),
  };
}

export function toStrategy(row: StrategyRow): Strategy {
  return {
    id: row.id,
    projectId: row.project_id,
    code: row.code,
    name: row.name,
    status: row.status,
    validFrom: row.valid_from,
    validUntil: row.valid_until,
    networks: row.networks === null ? null : (JSON.parse(row.networks) as string[]),
    rules: rulesFromJson(row.rules),
    createdAt: row.created_at,
  };
}

export function toToken(row: TokenRow): Token {
  return {
    network: row.network,
    symbol: row.symbol,
    address: row.address as Address,
    decimals: row.decimals,
    priceSource: JSON.parse(row.price_source) as PriceSource,
    markupBps: row.markup_bps,
    enabled: row.enabled === true || row.enabled === 1,
  };
}

export function toTank(row: TankRow | undefined): { balanceWei: bigint; reservedWei: bigint } {
  return { balanceWei: row ? big(row.balance_wei) : 0n, reservedWei: row ? big(row.reserved_wei) : 0n };
}

export const ZERO_USAGE: Readonly<UsageTotals> = Object.freeze({
  reservedWei: 0n,
  spentWei: 0n,
  reservedUsdMicros: 0n,
  spentUsdMicros: 0n,
  ops: 0,
});

export function toUsage(row: UsageRow | undefined): UsageTotals {
  if (!row) return { ...ZERO_USAGE };
  return {
    reservedWei: big(row.reserved_wei),
    spentWei: big(row.spent_wei),
    reservedUsdMicros: big(row.reserved_usd_micros),
    spentUsdMicros: big(row.spent_usd_micros),
    ops: Number(row.ops),
  };
}

function toSettlement(row: SponsorshipRow): Settlement | null {
  if (row.status !== "settled" || row.actual_gas_cost_wei === null) return null;
  return {
    actualGasCostWei: big(row.actual_gas_cost_wei),
    actualCostUsdMicros: big(row.actual_cost_usd_micros ?? 0n),
    actualTokenCost: optionalBig(row.actual_token_cost),
    success: row.settled_success === true || row.settled_success === 1,
    txHash: row.settled_tx_hash as Hex,
    blockNumber: BigInt(row.settled_block_number ?? 0),
    blockHash: row.settled_block_hash as Hex,
    logIndex: row.settled_log_index ?? 0,
  };
}

export function toSponsorship(row: SponsorshipRow): SponsorshipRecord {
  return {
    id: row.id,
    network: row.network,
    entryPoint: row.entry_point as Address,
    version: row.version,
    sender: row.sender as Address,
    nonce: big(row.nonce),
    mode: row.mode,
    projectId: row.project_id,
    apiKeyId: row.api_key_id,
    strategyId: row.strategy_id,
    token: row.token as Address | null,
    exchangeRate: optionalBig(row.exchange_rate),
    maxTokenCost: optionalBig(row.max_token_cost),
    maxCostWei: big(row.max_cost_wei),
    maxCostUsdMicros: big(row.max_cost_usd_micros),
    validUntil: row.valid_until,
    validAfter: row.valid_after,
    userOpHash: row.user_op_hash as Hex | null,
    paymasterAndData: row.paymaster_and_data as Hex | null,
    status: row.status,
    createdAt: row.created_at,
    settlement: toSettlement(row),
  };
}

/** The settlement's column values, in the order of the store's settle statement (actual_gas_cost_wei … settled_log_index). */
export function settlementColumns(s: Settlement): (bigint | boolean | string | number | null)[] {
  return [
    s.actualGasCostWei,
    s.actualCostUsdMicros,
    s.actualTokenCost,
    s.success,
    s.txHash,
    Number(s.blockNumber),
    s.blockHash,
    s.logIndex,
  ];
}

// ---- usage rows: keys and the lock order

/** One `strategy_usage` row. */
export interface UsageKey {
  strategyId: string;
  scope: CapScope;
  key: string;
}

/** A map key for a usage row. */
export function usageId(k: UsageKey): string {
  return `${k.strategyId}\u0000${k.scope}\u0000${k.key}`;
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
 * The order in which a transaction locks usage rows (PostgreSQL): sorted by (strategy_id, scope, key) in
 * UTF-16 code-unit order, duplicates dropped. Every transaction that locks more than one usage row takes them in
 * this order, after the tank row and before any sponsorship row, so no two wait on each other in a cycle.
 */
export function lockOrder(keys: readonly UsageKey[]): UsageKey[] {
  const unique = new Map(keys.map((k) => [usageId(k), k]));
  return [...unique.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, k]) => k);
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

// ---- deltas and transitions

/** What one transition of one sponsorship changes: its usage rows (each of them) and, in User Sponsor mode, its tank. */
export interface Delta {
  reservedWei: bigint;
  reservedUsdMicros: bigint;
  spentWei: bigint;
  spentUsdMicros: bigint;
  ops: number;
  tankReservedWei: bigint;
  tankBalanceWei: bigint;
}

/** A sponsorship's maximum cost, or a settlement's actual cost. */
export interface Cost {
  wei: bigint;
  usdMicros: bigint;
}

export function maxCostOf(s: { maxCostWei: bigint; maxCostUsdMicros: bigint }): Cost {
  return { wei: s.maxCostWei, usdMicros: s.maxCostUsdMicros };
}

export function rowCost(row: { max_cost_wei: Amount; max_cost_usd_micros: Amount }): Cost {
  return { wei: big(row.max_cost_wei), usdMicros: big(row.max_cost_usd_micros) };
}

function negate(d: Delta): Delta {
  return {
    reservedWei: -d.reservedWei,
    reservedUsdMicros: -d.reservedUsdMicros,
    spentWei: -d.spentWei,
    spentUsdMicros: -d.spentUsdMicros,
    ops: -d.ops,
    tankReservedWei: -d.tankReservedWei,
    tankBalanceWei: -d.tankBalanceWei,
  };
}

/** -> reserved: the maximum cost is held and the op counted. */
export function reserveDelta(max: Cost): Delta {
  return {
    reservedWei: max.wei,
    reservedUsdMicros: max.usdMicros,
    spentWei: 0n,
    spentUsdMicros: 0n,
    ops: 1,
    tankReservedWei: max.wei,
    tankBalanceWei: 0n,
  };
}

/** Reserved or signed -> released (explicitly, replaced or expired): the exact inverse of its reservation. */
export function releaseDelta(max: Cost): Delta {
  return negate(reserveDelta(max));
}

/**
 * -> settled. From "signed" the reservation leaves and the actual cost is spent (ops unchanged: the op was
 * already counted). From "released" (see `settleDelta`) nothing is held any more, so the op is counted again
 * and only the actual cost is added.
 */
function settleDeltaFrom(fromReleased: boolean, max: Cost, actual: Cost): Delta {
  return {
    reservedWei: fromReleased ? 0n : -max.wei,
    reservedUsdMicros: fromReleased ? 0n : -max.usdMicros,
    spentWei: actual.wei,
    spentUsdMicros: actual.usdMicros,
    ops: fromReleased ? 1 : 0,
    tankReservedWei: fromReleased ? 0n : -max.wei,
    // The tank pays what the chain charged, even beyond its balance: the balance may go negative (the chain
    // charged more than the tank held); clamping would lose that debt.
    tankBalanceWei: -actual.wei,
  };
}

/** The locked state of a sponsorship that settle and unsettle decide on. */
export interface SponsorshipState {
  status: SponsorshipStatus;
  release_reason: ReleaseReason | null;
  user_op_hash: string | null;
  max_cost_wei: Amount;
  max_cost_usd_micros: Amount;
  actual_gas_cost_wei: Amount | null;
  actual_cost_usd_micros: Amount | null;
}

/**
 * How a settlement changes a sponsorship, or null when it must not (settleSponsorship answers false):
 * - "signed": settled (the normal case).
 * - "released" after it was signed (a userOpHash is recorded): settled too, re-counted. Its signature stayed
 *   valid on chain after its reservation was released — by expiry (validUntil + grace passed before the event
 *   was seen), by a replacement (the first signature of a nonce can still land instead of the second) or
 *   explicitly — and an event proves the chain charged it, so it is accounted. Its release_reason is kept: it
 *   tells unsettle where to go back to.
 * - anything else (already settled, reserved but never signed, released before signing): null.
 */
export function settleDelta(state: SponsorshipState, actual: Cost): Delta | null {
  const max = rowCost(state);
  if (state.status === "signed") return settleDeltaFrom(false, max, actual);
  if (state.status === "released" && state.user_op_hash !== null) return settleDeltaFrom(true, max, actual);
  return null;
}

/**
 * How un-settling changes a settled sponsorship (null when it is not settled): the exact inverse of its
 * settlement. Settled from "signed" it is signed again with its reservation held — unless the op (network,
 * EntryPoint, sender, nonce) has been reserved again since (`opTaken`: only one sponsorship of an op may be
 * active), in which case it becomes released (reason "replaced") and holds nothing. Settled from "released" it
 * is released again, with the reason it had.
 */
export function unsettleTransition(
  state: SponsorshipState,
  opTaken: boolean,
): { status: "signed" | "released"; releaseReason: ReleaseReason | null; delta: Delta } | null {
  if (state.status !== "settled" || state.actual_gas_cost_wei === null) return null;
  const max = rowCost(state);
  const actual = { wei: big(state.actual_gas_cost_wei), usdMicros: big(state.actual_cost_usd_micros ?? 0n) };
  const fromReleased = state.release_reason !== null || opTaken;
  return {
    status: fromReleased ? "released" : "signed",
    releaseReason: state.release_reason ?? (opTaken ? "replaced" : null),
    delta: negate(settleDeltaFrom(fromReleased, max, actual)),
  };
}

const floor0 = (value: bigint): bigint => (value < 0n ? 0n : value);

/**
 * A usage row after a delta. Never below zero: with every change made under the rows' locks this cannot
 * happen; should the rows ever have drifted, a release or settlement still goes through instead of failing.
 */
export function applyUsage(u: UsageTotals, d: Delta): UsageTotals {
  return {
    reservedWei: floor0(u.reservedWei + d.reservedWei),
    spentWei: floor0(u.spentWei + d.spentWei),
    reservedUsdMicros: floor0(u.reservedUsdMicros + d.reservedUsdMicros),
    spentUsdMicros: floor0(u.spentUsdMicros + d.spentUsdMicros),
    ops: Math.max(0, u.ops + d.ops),
  };
}

/** A tank after a delta: reserved never below zero (as applyUsage); the balance may go negative (see settleDeltaFrom). */
export function applyTank(t: { balanceWei: bigint; reservedWei: bigint }, d: Delta): { balanceWei: bigint; reservedWei: bigint } {
  return { balanceWei: t.balanceWei + d.tankBalanceWei, reservedWei: floor0(t.reservedWei + d.tankReservedWei) };
}

// ---- reserving

/**
 * The User Sponsor mode check: the tank must cover the new maximum cost over its other reservations (the op's
 * previous user-mode reservation, `freedWei`, is given back first). Answers the tank's new reserved amount.
 */
export function planTank(
  mode: SponsorMode,
  tank: { balanceWei: bigint; reservedWei: bigint },
  freedWei: bigint,
  maxCostWei: bigint,
): { ok: true; reservedWei: bigint } | Extract<ReserveResult, { reason: "GAS_TANK_INSUFFICIENT" }> {
  const reservedWei = floor0(tank.reservedWei - freedWei);
  if (mode !== "user") return { ok: true, reservedWei };
  const availableWei = floor0(tank.balanceWei - reservedWei);
  if (availableWei < maxCostWei) return { ok: false, reason: "GAS_TANK_INSUFFICIENT", availableWei, requiredWei: maxCostWei };
  return { ok: true, reservedWei: reservedWei + maxCostWei };
}

/**
 * The cap check of a reservation, and the usage rows it writes.
 *
 * The new op counts in one row per check (its `links`); a previous active reservation of the same op (being
 * replaced) leaves the rows it was linked to — possibly other rows, e.g. yesterday's daily row. With each row
 * after both moves, every check must hold, in the order given and within a check maxWei, maxUsd, maxOps:
 *   reserved + spent <= maxWei, reservedUsd + spentUsd <= maxUsdMicros, ops <= maxOps
 * i.e. the new op's maximum cost is added and, where the replaced one counted in the same row, its maximum
 * cost is taken out and the op is not counted twice. The first check that fails is the refusal: its rule
 * (`${rulePrefix}.maxWei|maxUsd|maxOps`), its limit and the value the row would reach, as decimal strings
 * (USD in micro-units, 1e-6 USD: "2500000" is $2.50).
 *
 * `totals` holds the current totals of every row of `links` and `previous.links` (zeros for a new row).
 */
export function planCaps(input: {
  strategyId: string | null;
  checks: readonly CapCheck[];
  cost: Cost;
  previous: { links: readonly UsageKey[]; max: Cost } | null;
  totals: ReadonlyMap<string, UsageTotals>;
}):
  | { ok: true; links: UsageKey[]; writes: { key: UsageKey; totals: UsageTotals }[] }
  | Extract<ReserveResult, { reason: "CAP_EXCEEDED" }> {
  const links: UsageKey[] =
    input.strategyId === null ? [] : input.checks.map((c) => ({ strategyId: input.strategyId!, scope: c.scope, key: c.key }));
  const after = new Map<string, { key: UsageKey; totals: UsageTotals }>();
  const move = (key: UsageKey, delta: Delta) => {
    const id = usageId(key);
    const current = after.get(id)?.totals ?? input.totals.get(id) ?? ZERO_USAGE;
    after.set(id, { key, totals: applyUsage(current, delta) });
  };
  if (input.previous) for (const key of input.previous.links) move(key, releaseDelta(input.previous.max));
  for (const key of links) move(key, reserveDelta(input.cost));

  for (const [i, check] of input.checks.entries()) {
    const u = after.get(usageId(links[i]!))!.totals;
    const wei = u.reservedWei + u.spentWei;
    const usd = u.reservedUsdMicros + u.spentUsdMicros;
    const refuse = (kind: string, limit: bigint | number, value: bigint | number) =>
      ({ ok: false, reason: "CAP_EXCEEDED", rule: `${check.rulePrefix}.${kind}`, limit: `${limit}`, value: `${value}` }) as const;
    if (check.maxWei !== undefined && wei > check.maxWei) return refuse("maxWei", check.maxWei, wei);
    if (check.maxUsdMicros !== undefined && usd > check.maxUsdMicros) return refuse("maxUsd", check.maxUsdMicros, usd);
    if (check.maxOps !== undefined && u.ops > check.maxOps) return refuse("maxOps", check.maxOps, u.ops);
  }
  return { ok: true, links, writes: [...after.values()] };
}
