/**
 * Rows as the databases return them and their domain form: PostgreSQL's pool parses NUMERIC to bigint and BIGINT
 * to number, SQLite returns amounts as decimal TEXT and INTEGER as number; JSON columns are selected as text on
 * both. Also the stored forms going the other way (rules JSON, a settlement's columns, administration JSON).
 */
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";
import { parseStrategyRules } from "../policy/schema.ts";
import type { StrategyRules } from "../policy/types.ts";
import type { ApiKey, ApiKeyStatus, KeyApplication, KeyApplicationStatus, PriceSource, Project, ProjectStatus, Settlement, SponsorshipRecord, SponsorshipStatus, Strategy, StrategyStatus, Token, UsageTotals } from "./types.ts";
import type { SponsorMode } from "../policy/types.ts";

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

/** JSON text of administration data (bigints as decimal strings). */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
}

export type Amount = string | bigint;

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
