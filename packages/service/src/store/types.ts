/**
 * The one store interface. Embedded default: SQLite (node:sqlite, a file); PostgreSQL later behind the same
 * interface. Every method is async so both fit. Amounts are bigint (wei or token base units); times are
 * unix seconds. API keys are stored hashed: the plaintext exists only in createApiKey's answer.
 */
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";

export interface Project {
  id: string;
  name: string;
  createdAt: number;
}

export type ApiKeyStatus = "active" | "revoked";

export interface ApiKey {
  id: string;
  projectId: string;
  /** First characters of the plaintext, for operators to recognise a key; never enough to use it. */
  prefix: string;
  label: string | null;
  status: ApiKeyStatus;
  createdAt: number;
}

export type StrategyStatus = "enabled" | "disabled";

export interface Strategy {
  id: string;
  projectId: string;
  /** What clients send as `strategy_code`; unique. */
  code: string;
  name: string;
  status: StrategyStatus;
  /** Unix seconds; null = open-ended. */
  validFrom: number | null;
  validUntil: number | null;
  /** Networks the strategy may be used on; null = every configured network. */
  networks: string[] | null;
  createdAt: number;
}

export interface NewStrategy {
  projectId: string;
  code: string;
  name: string;
  status?: StrategyStatus;
  validFrom?: number | null;
  validUntil?: number | null;
  networks?: string[] | null;
}

export type PriceSource = { type: "fixed"; usd: string } | { type: "chainlink"; feed: Address; maxAgeSeconds?: number };

export interface Token {
  network: string;
  symbol: string;
  address: Address;
  decimals: number;
  priceSource: PriceSource;
  /** Markup on the exchange rate, in basis points (100 = 1%). */
  markupBps: number;
  enabled: boolean;
}

export interface GasTank {
  network: string;
  sender: Address;
  /** Credited minus settled spending. */
  balanceWei: bigint;
  /** Held by outstanding reservations. */
  reservedWei: bigint;
}

export type SponsorMode = "sponsor" | "erc20" | "user";
export type SponsorshipStatus = "reserved" | "signed" | "settled" | "released";

export interface SponsorshipRecord {
  id: string;
  network: string;
  entryPoint: Address;
  version: EntryPointVersion;
  sender: Address;
  nonce: bigint;
  mode: SponsorMode;
  projectId: string;
  apiKeyId: string;
  strategyId: string | null;
  /** ERC-20 mode: token address, rate (token base units per 1e18 wei) and the maximum token cost. */
  token: Address | null;
  exchangeRate: bigint | null;
  maxTokenCost: bigint | null;
  maxCostWei: bigint;
  validUntil: number;
  validAfter: number;
  /** Set once signed: the EntryPoint's userOpHash of the op as returned, and its paymasterAndData. */
  userOpHash: Hex | null;
  paymasterAndData: Hex | null;
  status: SponsorshipStatus;
  createdAt: number;
}

export type NewSponsorship = Omit<SponsorshipRecord, "id" | "userOpHash" | "paymasterAndData" | "status" | "createdAt">;

export type ReserveResult =
  | { ok: true; record: SponsorshipRecord; replaced: string | null }
  | { ok: false; reason: "GAS_TANK_INSUFFICIENT"; availableWei: bigint; requiredWei: bigint };

export interface Store {
  // ---- projects and API keys
  createProject(name: string): Promise<Project>;
  getProject(id: string): Promise<Project | undefined>;
  /** A new key for the project; `plaintext` is returned once and only its hash is stored. */
  createApiKey(projectId: string, label?: string): Promise<{ apiKey: ApiKey; plaintext: string }>;
  /** The key whose plaintext hashes to a stored hash (any status), else undefined. */
  findApiKey(plaintext: string): Promise<ApiKey | undefined>;
  revokeApiKey(id: string): Promise<void>;

  // ---- strategies
  createStrategy(input: NewStrategy): Promise<Strategy>;
  getStrategyByCode(code: string): Promise<Strategy | undefined>;
  setStrategyStatus(id: string, status: StrategyStatus): Promise<void>;

  // ---- tokens (the network's token registry; seeded from configuration)
  upsertToken(token: Token): Promise<void>;
  listTokens(network: string): Promise<Token[]>;
  /** By symbol (case-insensitive) or address. */
  findToken(network: string, symbolOrAddress: string): Promise<Token | undefined>;

  // ---- gas tanks (User Sponsor mode)
  /** Adds `amountWei` to the sender's tank; `reference` (e.g. "admin:…" or a tx hash) makes it idempotent. */
  creditGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank>;
  getGasTank(network: string, sender: Address): Promise<GasTank>;

  // ---- sponsorships and reservations
  /**
   * Atomically records a sponsorship and reserves its maximum cost. One reservation per (network, entryPoint,
   * sender, nonce): asking again replaces the earlier one, never doubles it. In User Sponsor mode the sender's
   * tank must cover maxCostWei over its other reservations, else nothing is written.
   */
  reserveSponsorship(input: NewSponsorship): Promise<ReserveResult>;
  /** Records what was signed for a reserved sponsorship. */
  markSigned(id: string, signed: { userOpHash: Hex; paymasterAndData: Hex }): Promise<void>;
  /** Frees a reservation (signing failed, or it expired unused). */
  releaseSponsorship(id: string): Promise<void>;
  getSponsorship(id: string): Promise<SponsorshipRecord | undefined>;
  findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined>;

  close(): Promise<void>;
}
