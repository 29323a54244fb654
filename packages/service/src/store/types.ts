/**
 * The one store interface. Embedded default: SQLite (node:sqlite, a file); PostgreSQL later behind the same
 * interface. Every method is async so both fit. Amounts are bigint (wei or token base units); times are
 * unix seconds. API keys are stored hashed: the plaintext exists only in createApiKey's answer.
 */
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";
import type { CapCheck, SponsorMode, StrategyRules } from "../policy/types.ts";
import type { BillingAccount, BillingEntry, BillingEntryKind, BillingLedgerSlice, BillingPlan, BillingPlanChange, BilledOperation, NewBillingEntry } from "../billing/ledger.ts";
import type { BillingTerms } from "../billing/terms.ts";
import type { StoreHealth } from "./health.ts";


export type ProjectStatus = "active" | "disabled";

export interface Project {
  id: string;
  name: string;
  /** A disabled project's keys are refused. */
  status: ProjectStatus;
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
  /** Unix seconds; null while active. */
  revokedAt: number | null;
  /**
   * Browser origins allowed to use the key (exact "scheme://host[:port]"): null = any origin or none (the
   * default); [] = server-side only (a request carrying an Origin header is refused).
   */
  allowedOrigins: string[] | null;
  /** Client address ranges (CIDR) allowed to use the key; null = any. */
  allowedIps: string[] | null;
}

export interface ApiKeyAccess {
  allowedOrigins: string[] | null;
  allowedIps: string[] | null;
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
  /** Sender lists, call allowlist, caps, gas and fee ceilings ({} = none). */
  rules: StrategyRules;
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
  rules?: StrategyRules;
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

/** Whether one project may draw from one gas tank, and who said so last. */
export interface GasTankConsentRecord {
  network: string;
  sender: Address;
  projectId: string;
  allowed: boolean;
  /** Unix seconds: the signed message's issuedAt, or when the operator changed it. */
  issuedAt: number;
  /** "owner" (a signed consent) or the admin actor. */
  changedBy: string;
  /** Unix seconds: when the service recorded it. */
  updatedAt: number;
  /** Unix seconds: a signed consent must be dated after this to replace this one (tankConsentClock.ts). */
  replaceableAfter: number;
}

/** A change of a tank's consent for one project: `issuedAt` for a signed one (kept only when dated late enough), none by hand. */
export interface GasTankConsentChange {
  network: string;
  sender: Address;
  projectId: string;
  allowed: boolean;
  changedBy: string;
  issuedAt?: number;
}

/**
 * "reserved" (held, not yet signed) is written by no current code path: reserveSponsorship records the op signed.
 * Rows of earlier versions (which reserved, then signed in a second step) may still hold it, and every
 * transition still handles it: released or expired like a signed one, never settled.
 */
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
  /** maxCostWei in USD micro-units (1e-6 USD) at the native price when reserved: what USD caps hold. */
  maxCostUsdMicros: bigint;
  validUntil: number;
  validAfter: number;
  /** Set once signed: the EntryPoint's userOpHash of the op as returned, and its paymasterAndData. */
  userOpHash: Hex | null;
  paymasterAndData: Hex | null;
  status: SponsorshipStatus;
  createdAt: number;
  /** Set when settled from the chain's UserOperationEvent. */
  settlement: Settlement | null;
}

/** What the chain actually charged for a sponsored op, and where the event is. */
export interface Settlement {
  actualGasCostWei: bigint;
  /** actualGasCostWei in USD micro-units at the native price when settled. */
  actualCostUsdMicros: bigint;
  /** ERC-20 mode: the tokens the paymaster charged (TokenCharged), else null. */
  actualTokenCost: bigint | null;
  success: boolean;
  txHash: Hex;
  blockNumber: bigint;
  blockHash: Hex;
  logIndex: number;
}

/** One op the chain charged, as the settlement watcher saw it (Store.settleSponsorships). */
export interface SettleItem {
  userOpHash: Hex;
  /** Where the event was: a sponsorship of another network or EntryPoint with the same hash is not this op's. */
  network: string;
  entryPoint: Address;
  settlement: Settlement;
  /** ERC-20 mode: its token charge went unpaid (recorded whether or not it settles now). */
  tokenUnpaid?: boolean;
}

/**
 * What settling one item did: "settled" now; "alreadySettled" (a rescan, or another watcher); "notSettleable"
 * (its sponsorship can not settle: reserved but never signed, released before signing); "unmatched" (no
 * sponsorship has its userOpHash).
 */
export type SettleOutcome =
  | { outcome: "settled" | "alreadySettled" | "notSettleable"; record: SponsorshipRecord }
  | { outcome: "unmatched" };

/**
 * A sponsorship as the pipeline records it: already signed (reserve and sign are one step, so no reservation
 * ever waits for its signature), with the op's userOpHash and the paymasterAndData handed out.
 */
export type NewSponsorship = Omit<SponsorshipRecord, "id" | "userOpHash" | "paymasterAndData" | "status" | "createdAt" | "settlement"> & {
  userOpHash: Hex;
  paymasterAndData: Hex;
  /**
   * ERC-20 mode charging its token in postOp: at most one such sponsorship per (network, sender) may be
   * outstanding (what one unpaid charge can cost stays bounded); the op's own earlier one, replaced here, does
   * not count.
   */
  postOpCharge?: boolean;
  /**
   * Checks made in the reservation's own batch (no round trip of their own), each refusing with nothing written:
   * `tankConsent` (User Sponsor mode) the sender's gas tank allowed the project (GAS_TANK_NOT_ALLOWED);
   * `noUnpaidCharge` (with postOpCharge) no postOp charge of the sender on the network went unpaid
   * (TOKEN_CHARGE_UNPAID).
   */
  requires?: { tankConsent?: boolean; noUnpaidCharge?: boolean };
  /**
   * With postOpCharge: the USD the paymaster may have at risk in postOp-charge mode (outstanding postOp-charge
   * sponsorships' maximum costs + charges that went unpaid since `sinceSeconds`), per project and per API key,
   * this op counted (THREAT_MODEL.md, N-4: fresh senders each leaving one charge unpaid).
   */
  postOpChargeRisk?: { maxUsdMicrosPerProject: bigint; maxUsdMicrosPerKey: bigint; sinceSeconds: number };
  /** The requester's client bucket (access/clientAddress.ts clientBucket: an IPv4 address, an IPv6 /64), recorded: what the per-client bound counts. */
  clientBucket?: string;
  /**
   * Bounds on open (reserved or signed) sponsorships, this op counted and the op's own earlier one (replaced
   * here) not: per sender on this network and EntryPoint across nonces, and per (API key, client address)
   * when `maxPerClientIp` is given (browser keys). Reservations are made before the account signs, so
   * without them anyone with any key could hold other people's money with ops nobody will sign.
   */
  outstanding?: { maxPerSender: number; maxPerClientIp?: number };
  /**
   * With `billing`: the most of the project's balance (basis points of it) that open sponsorships may hold per
   * (API key, client address) — `perClientBps`, browser keys — and per API key — `perKeyBps`, this op counted
   * (docs/policies.md "Project billing": nobody holds a project's whole balance with ops nobody signs).
   */
  billingShares?: { perClientBps?: number; perKeyBps?: number };
  /**
   * The config version the request decided under (store/configCache.ts): the reservation is refused
   * (CONFIG_CHANGED) when the version is another by then, and nothing is written.
   */
  configVersion?: number;
  /**
   * The project's events endpoints as the request looked them up (under `configVersion`): the reservation's
   * webhook event is written for them only, without the database looking for subscribers. Absent: it looks.
   */
  webhookEndpoints?: readonly { id: string; projectId: string; events: readonly string[] }[];
  /**
   * The project is billed (its plan is enabled): the terms this op is priced at. Its hold (billing/charge.ts
   * holdFor) must fit in the project's balance minus what its other open sponsorships hold, else nothing is
   * written (BALANCE_EXHAUSTED).
   */
  billing?: BillingTerms;
};

export type ReserveResult =
  | { ok: true; record: SponsorshipRecord; replaced: string | null }
  | { ok: false; reason: "GAS_TANK_INSUFFICIENT"; availableWei: bigint; requiredWei: bigint }
  /**
   * A cap would be exceeded: the cap's rule (e.g. "caps.daily.maxUsd"), its limit and the total it would
   * reach, as decimal strings (USD in micro-units, 1e-6 USD).
   */
  | { ok: false; reason: "CAP_EXCEEDED"; rule: string; limit: string; value: string }
  /** input.postOpCharge, and the sender already has an outstanding postOp-charge sponsorship on the network. */
  | { ok: false; reason: "POSTOP_CHARGE_PENDING" }
  /** input.postOpChargeRisk would be exceeded for the project or the key: the scope, its limit and the total it would reach (USD micros). */
  | { ok: false; reason: "POSTOP_CHARGE_AT_RISK"; scope: "project" | "apiKey"; limit: string; value: string }
  /** input.outstanding would be exceeded: by the sender's or by the (key, client address)'s open sponsorships. */
  | { ok: false; reason: "TOO_MANY_OUTSTANDING"; scope: "sender" | "clientIp"; limit: number }
  /** input.billingShares would be exceeded: what the (key, client address)'s or the key's open sponsorships would hold (USD micros). */
  /** input.configVersion is not the version any more: the request decided on a configuration that changed. */
  | { ok: false; reason: "CONFIG_CHANGED" }
  /** input.requires.tankConsent: the sender's gas tank has not allowed the project. */
  | { ok: false; reason: "GAS_TANK_NOT_ALLOWED" }
  /** input.requires.noUnpaidCharge: a postOp charge of the sender on the network went unpaid. */
  | { ok: false; reason: "TOKEN_CHARGE_UNPAID" }
  | { ok: false; reason: "HOLD_SHARE_EXCEEDED"; scope: "clientIp" | "apiKey"; shareBps: number; heldUsdMicros: bigint }
  /** input.billing: the project's available balance (balance - held, USD micros) is below this op's hold. */
  | { ok: false; reason: "BALANCE_EXHAUSTED"; availableUsdMicros: bigint; requiredUsdMicros: bigint };

export type KeyApplicationStatus = "pending" | "approved" | "rejected" | "claimed";

export interface KeyApplication {
  id: string;
  createdAt: number;
  contact: string;
  projectName: string;
  networks: string[];
  intendedUse: string;
  status: KeyApplicationStatus;
  decidedAt: number | null;
  decidedBy: string | null;
  reason: string | null;
  /** Set on approval. */
  projectId: string | null;
  /** Set when claimed. */
  apiKeyId: string | null;
  claimedAt: number | null;
}

export type NewKeyApplication = Pick<KeyApplication, "contact" | "projectName" | "networks" | "intendedUse">;

/** What `updateStrategy` may change (absent = unchanged); the code and project never change. */
export type StrategyPatch = Partial<Pick<Strategy, "name" | "status" | "validFrom" | "validUntil" | "networks" | "rules">>;

/** Filters of `listSponsorships` (all optional, combined with AND); newest first. */
export interface SponsorshipFilter {
  projectId?: string;
  strategyId?: string;
  network?: string;
  sender?: Address;
  status?: SponsorshipStatus;
  userOpHash?: Hex;
  /** createdAt >= since, createdAt < until (unix seconds). */
  since?: number;
  until?: number;
  /** At most this many (default 100, at most 1000). */
  limit?: number;
}

/** One mutating administration call, as the audit log keeps it. */
export interface AuditEntry {
  id: string;
  at: number;
  actor: string;
  /**
   * The role the actor acted with (src/admin/roles.ts: viewer, operator, admin; the CLI acts as admin), null for
   * the public door's changes (an applicant's claim). Rows written before roles existed (migration 14) say admin:
   * every token was.
   */
  role: string | null;
  action: string;
  target: string | null;
  before: unknown;
  after: unknown;
}

/** A strategy's totals in one cap scope: active reservations, settled spending and operations counted. */
export interface UsageTotals {
  reservedWei: bigint;
  spentWei: bigint;
  reservedUsdMicros: bigint;
  spentUsdMicros: bigint;
  /** Reserved, signed and settled sponsorships (released ones do not count). */
  ops: number;
}

/** How many sponsorship records have one (network, mode, version, status). */
export interface SponsorshipCount {
  network: string;
  mode: SponsorMode;
  version: EntryPointVersion;
  status: SponsorshipStatus;
  count: number;
}

/** The gas tanks of one network added up. */
export interface GasTankTotals {
  network: string;
  balanceWei: bigint;
  reservedWei: bigint;
  tanks: number;
}

import type { Leadership } from "./db/types.ts";
export type { Leadership };


// ---- the operator console's reads (src/store/consoleRows.ts)

/** JSON-RPC calls one process answered in one minute (migration 9): what it adds at each flush. */
export interface RequestCount {
  /** The minute's first unix second. */
  minute: number;
  network: string;
  method: string;
  /** "ok" or the error reason. */
  outcome: string;
  count: number;
}

/** Request counts added up per time bucket (`bucket`: its first unix second). */
export interface RequestCountBucket {
  bucket: number;
  network: string;
  method: string;
  outcome: string;
  count: number;
}

/** Which sponsorships an activity series covers: created in [since, until), bucketed by `bucketSeconds`. */
export interface ActivityFilter {
  since: number;
  until: number;
  bucketSeconds: number;
  network?: string;
  projectId?: string;
  strategyId?: string;
}

/** The sponsorships of one bucket (by creation time), network and status, with their costs added up. */
export interface SponsorshipActivity {
  bucket: number;
  network: string;
  status: SponsorshipStatus;
  count: number;
  maxCostWei: bigint;
  maxCostUsdMicros: bigint;
  /** Settled ones only (0 otherwise): what the chain charged. */
  actualCostWei: bigint;
  actualCostUsdMicros: bigint;
}

/** A gas tank as listed, with when it last changed. */
export interface GasTankListing extends GasTank {
  updatedAt: number;
}

/** One movement of a gas tank: a credit (deposit or by hand), a debit by hand, or a settled op it paid for. */
export interface TankLedgerEntry {
  kind: "credit" | "debit" | "spend";
  at: number;
  amountWei: bigint;
  /** The credit's or debit's reference; a spend's sponsorship id. */
  reference: string;
  /** Spends: the op and the transaction it landed in. */
  userOpHash?: Hex | null;
  txHash?: Hex | null;
}

/** When a sponsorship changed state (reserve and sign are one step: both at createdAt). */
export interface SponsorshipTimeline {
  createdAt: number;
  /** Set when released (expired, replaced or by hand) and not settled since; the reason stays once settled. */
  releasedAt: number | null;
  releaseReason: "released" | "replaced" | "expired" | null;
  settledAt: number | null;
}

// ---- project billing: its types are src/billing/ledger.ts's

// ---- webhooks (src/webhooks, docs/webhooks.md)

export const WEBHOOK_EVENT_TYPES = [
  "sponsorship.signed",
  "sponsorship.settled",
  "sponsorship.released",
  "cap.reached",
  "deposit.low",
  "balance.low",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export type WebhookEndpointKind = "events" | "approval";
export type ApprovalDefault = "allow" | "deny";

/** A project's webhook endpoint, as listed (never with its secret). */
export interface WebhookEndpoint {
  id: string;
  projectId: string;
  kind: WebhookEndpointKind;
  url: string;
  /** 'events' endpoints: the event types it receives; approval: []. */
  events: WebhookEventType[];
  /** Approval: how long to wait for the answer (ms), and what a timeout or error means. */
  timeoutMs: number | null;
  defaultDecision: ApprovalDefault | null;
  createdAt: number;
}

export interface NewWebhookEndpoint {
  projectId: string;
  kind: WebhookEndpointKind;
  url: string;
  events?: readonly WebhookEventType[];
  /** Generated by src/webhooks (never chosen by the caller). */
  secret: string;
  timeoutMs?: number;
  defaultDecision?: ApprovalDefault;
}

export type WebhookDeliveryStatus = "pending" | "delivered" | "dead";

/** One event for one endpoint in the outbox (its delivery state). */
export interface WebhookDelivery {
  /** The event id (the body's `id`): receivers de-duplicate by it. */
  id: string;
  endpointId: string;
  projectId: string;
  type: WebhookEventType;
  sponsorshipId: string | null;
  seq: number;
  /** The exact JSON body sent. */
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  nextAttemptMs: number;
  lastError: string | null;
  createdMs: number;
  deliveredMs: number | null;
}

/** A claimed delivery: what the worker needs to send it. */
export interface ClaimedDelivery extends WebhookDelivery {
  url: string;
  secret: string;
}

/** A claim's share per endpoint: at most `perEndpoint` rows of one endpoint, fewer for those listed in `room`. */
export interface ClaimShare {
  perEndpoint: number;
  /** The room left to some endpoints (e.g. in flight already, or failing): endpoint id to rows. */
  room: ReadonlyMap<string, number>;
}

/** One endpoint's waiting events (the backlog metrics). */
export interface WebhookBacklog {
  endpointId: string;
  projectId: string;
  pending: number;
  oldestMs: number;
}

/** How a delivery attempt ended. */
export type DeliveryOutcome =
  | { delivered: true }
  | { delivered: false; error: string; /** undefined: no attempt left, dead-lettered. */ retryAtMs: number | undefined };

/** An event not caused by a store transition (deposit.low): for one project, or every project (null). */
export interface NewWebhookEvent {
  projectId: string | null;
  type: WebhookEventType;
  data: Record<string, unknown>;
  /** At most one event per endpoint with this key (repeats are ignored). */
  dedupeKey?: string;
}

export interface Store {
  /**
   * Whether the database works (./health.ts): what /ready, the metrics and the store's log lines report. A call
   * that fails for want of the database throws a StoreUnavailableError (./unavailable.ts) with its cause.
   */
  readonly health: StoreHealth;

  /**
   * Runs `operation` (written against this store's ordinary methods) as one transaction: every write it makes
   * commits together or not at all. The admin operations run each change and its audit row this way.
   */
  atomically<T>(operation: () => Promise<T>): Promise<T>;

  // ---- projects and API keys
  createProject(name: string): Promise<Project>;
  getProject(id: string): Promise<Project | undefined>;
  /** A new key for the project; `plaintext` is returned once and only its hash is stored. */
  createApiKey(projectId: string, label?: string): Promise<{ apiKey: ApiKey; plaintext: string }>;
  /** The key whose plaintext hashes to a stored hash (any status), else undefined. */
  findApiKey(plaintext: string): Promise<ApiKey | undefined>;
  revokeApiKey(id: string): Promise<void>;
  listProjects(): Promise<Project[]>;
  setProjectStatus(id: string, status: ProjectStatus): Promise<void>;
  /** Keys of one project (or every key), oldest first; never the plaintext or its hash. */
  listApiKeys(projectId?: string): Promise<ApiKey[]>;
  getApiKey(id: string): Promise<ApiKey | undefined>;
  /** Replaces the key's allowed origins and client IP ranges (validated by the caller: admin/keys.ts). */
  setApiKeyAccess(id: string, access: ApiKeyAccess): Promise<void>;
  /**
   * The project's status for a presented key. Undefined when the key is unknown. The request path reads it
   * through src/store/configCache.ts, under the config version (a revoked key or a disabled project is refused
   * on the next request by every replica).
   */
  findApiKeyWithProject(plaintext: string): Promise<{ apiKey: ApiKey; projectStatus: ProjectStatus } | undefined>;
  /**
   * The config version: a counter that every change of a project, API key, strategy or webhook endpoint bumps in
   * its own transaction (database triggers, whoever writes). Equal versions mean none of those rows changed.
   */
  configVersion(): Promise<number>;
  /** How many calls of this store instance changed what the config version covers (in this process: no read). */
  configWrites(): number;

  // ---- strategies
  createStrategy(input: NewStrategy): Promise<Strategy>;
  getStrategyByCode(code: string): Promise<Strategy | undefined>;
  setStrategyStatus(id: string, status: StrategyStatus): Promise<void>;
  setStrategyRules(id: string, rules: StrategyRules): Promise<void>;
  getStrategy(id: string): Promise<Strategy | undefined>;
  /** Every strategy (of one project), by code. */
  listStrategies(projectId?: string): Promise<Strategy[]>;
  /** Changes the given fields, validated like createStrategy; answers the strategy as stored. */
  updateStrategy(id: string, patch: StrategyPatch): Promise<Strategy>;
  /** A strategy's totals for one cap scope (`key`: "" for global, "YYYY-MM-DD" for daily, the sender for perSender). */
  getUsage(strategyId: string, scope: CapCheck["scope"], key: string): Promise<UsageTotals>;

  // ---- tokens (the network's token registry; seeded from configuration)
  upsertToken(token: Token): Promise<void>;
  listTokens(network: string): Promise<Token[]>;
  /** By symbol (case-insensitive) or address. */
  findToken(network: string, symbolOrAddress: string): Promise<Token | undefined>;

  // ---- gas tanks (User Sponsor mode)
  /** Adds `amountWei` to the sender's tank; `reference` (e.g. "admin:…" or a tx hash) makes it idempotent. */
  creditGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank>;
  getGasTank(network: string, sender: Address): Promise<GasTank>;
  /**
   * Takes `amountWei` from the sender's tank by hand; `reference` makes it idempotent. Refused (INVALID_STATE)
   * when the tank's available balance (balance - reserved) does not cover it: a debit never creates a debt.
   */
  debitGasTank(network: string, sender: Address, amountWei: bigint, reference: string): Promise<GasTank>;
  /** Whether the project may draw from the sender's tank: only when a consent says allowed (deny by default). */
  gasTankAllows(network: string, sender: Address, projectId: string): Promise<boolean>;
  /** The tank's consents, most recently changed first. */
  gasTankConsents(network: string, sender: Address): Promise<GasTankConsentRecord[]>;
  /**
   * Records a consent. A signed one (with issuedAt) is kept only when dated after the recorded one's
   * `replaceableAfter` (its recording time; for a withdrawal, plus the future skew: tankConsentClock.ts), else
   * `applied: false` and nothing changes; one by hand always is, dated when recorded. Unknown project:
   * NOT_FOUND. Answers the consent recorded now and the one before.
   */
  setGasTankConsent(change: GasTankConsentChange): Promise<{ applied: boolean; consent: GasTankConsentRecord; previous: GasTankConsentRecord | undefined }>;

  // ---- sponsorships and reservations
  /**
   * Atomically records a signed sponsorship (status "signed", with its userOpHash and paymasterAndData) and
   * reserves its maximum cost, in one transaction. One reservation per (network, entryPoint, sender, nonce):
   * asking again replaces the earlier one, never doubles it. In User Sponsor mode the sender's tank must cover
   * maxCostWei over its other reservations (checked first); every cap in `caps` (for input.strategyId; the
   * pipeline passes them in Sponsor mode) must hold with this op counted: reserved + spent + maxCost <= maxWei /
   * maxUsdMicros, and ops + 1 <= maxOps (a replaced reservation of the same op is not counted twice); with
   * input.postOpCharge, no other postOp-charge sponsorship of the sender may be outstanding. Else nothing is
   * written. Throws StoreError CONFLICT when concurrent reservations of the same op kept replacing this one's
   * view of it (PostgreSQL, after its bounded retries): asking again is safe.
   */
  reserveSponsorship(input: NewSponsorship, caps?: readonly CapCheck[]): Promise<ReserveResult>;
  /** Frees a reservation (signing failed, or it expired unused). */
  releaseSponsorship(id: string): Promise<void>;
  /**
   * Settles a signed sponsorship at what the chain charged: its reservation leaves the strategy's usage and
   * the tank, the actual cost is added to spent (strategy usage in wei and USD; User Sponsor mode: the tank's
   * balance is debited, and may go negative: a debt). Idempotent: false if already settled, never signed or
   * unknown. A signed sponsorship that was since released (expired, replaced) is still settled when its op
   * lands: the first signature for a nonce stays valid on chain, so it must be paid for.
   */
  settleSponsorship(id: string, settlement: Settlement): Promise<boolean>;
  /** Undoes a settlement (its event was reorganised away): back to signed, the reservation held again. */
  unsettleSponsorship(id: string): Promise<boolean>;
  /**
   * Settles the sponsorships signed with each item's userOpHash, all in two round trips (the settlement watcher
   * settles a block's ops at once); records each unpaid token charge. Answers per item what happened.
   */
  settleSponsorships(items: readonly SettleItem[]): Promise<SettleOutcome[]>;
  /** Settled sponsorships of `network` settled in blocks >= fromBlock (the watcher re-checks them for reorgs). */
  listSettledSince(network: string, fromBlock: bigint): Promise<SponsorshipRecord[]>;
  /**
   * Releases reserved or signed sponsorships with validUntil + graceSeconds < now (of `network` only, when
   * given: each network's watcher judges expiry by its own chain's clock); returns how many.
   */
  releaseExpired(now: number, graceSeconds: number, network?: string): Promise<number>;
  /** Removes a credit (a deposit whose transaction was reorganised away): false if unknown. */
  revertGasTankCredit(reference: string): Promise<boolean>;
  /** Named cursors (e.g. the last block a watcher fully processed). */
  getCursor(name: string): Promise<bigint | undefined>;
  setCursor(name: string, value: bigint): Promise<void>;
  getSponsorship(id: string): Promise<SponsorshipRecord | undefined>;

  // ---- operations (metrics, deposit check, leader election)
  /** Sponsorship records counted by network, mode, version and status. */
  sponsorshipCounts(): Promise<SponsorshipCount[]>;
  /** Each network's gas tanks added up. */
  gasTankTotals(): Promise<GasTankTotals[]>;
  /** The maximum costs held by reserved or signed sponsorships of (network, entryPoint) in `modes`: what a paymaster may still be charged. */
  outstandingMaxCost(network: string, entryPoint: Address, modes: readonly SponsorMode[]): Promise<bigint>;
  /** Takes the leadership of `name` if no other process holds it; undefined when another does. */
  tryLeadership(name: string): Promise<Leadership | undefined>;
  findSponsorshipByUserOpHash(userOpHash: Hex): Promise<SponsorshipRecord | undefined>;
  listSponsorships(filter: SponsorshipFilter): Promise<SponsorshipRecord[]>;
  /**
   * The op's active (reserved or signed) sponsorship and the usage rows it counts in: what a new reservation of
   * the same op would replace (the dry run counts it as reserveSponsorship does).
   */
  findActiveSponsorship(op: { network: string; entryPoint: Address; sender: Address; nonce: bigint }): Promise<
    { record: SponsorshipRecord; links: { strategyId: string; scope: CapCheck["scope"]; key: string }[] } | undefined
  >;

  // ---- API key applications (the spec's application process)
  createKeyApplication(input: NewKeyApplication): Promise<KeyApplication>;
  getKeyApplication(id: string): Promise<KeyApplication | undefined>;
  /** Oldest first; of one status when given. */
  listKeyApplications(status?: KeyApplicationStatus): Promise<KeyApplication[]>;
  countKeyApplications(status: KeyApplicationStatus): Promise<number>;
  /** Pending applications created more than `ttlSeconds` ago -> rejected by "expiry"; answers how many. */
  expireKeyApplications(ttlSeconds: number): Promise<number>;
  /**
   * pending -> approved, in one transaction: creates the project (named as applied) and records the hash of
   * the claim token. INVALID_STATE when it is not pending (never two projects for one application).
   */
  approveKeyApplication(id: string, decision: { decidedBy: string; claimTokenHash: string }): Promise<KeyApplication>;
  /** pending -> rejected with a reason; INVALID_STATE when it is not pending. */
  rejectKeyApplication(id: string, decision: { decidedBy: string; reason: string }): Promise<KeyApplication>;
  /**
   * approved -> claimed by the claim token's hash, creating the project's API key in the same transaction: of
   * concurrent claims exactly one gets the key; undefined for an unknown, already claimed or rejected token.
   */
  claimKeyApplication(claimTokenHash: string): Promise<{ application: KeyApplication; apiKey: ApiKey; plaintext: string } | undefined>;

  // ---- audit log (administration)
  appendAudit(entry: Omit<AuditEntry, "id" | "at" | "role"> & { role?: string | null }): Promise<AuditEntry>;
  /** Newest first. */
  listAudit(filter?: { action?: string; target?: string; limit?: number }): Promise<AuditEntry[]>;

  // ---- ERC-20 token charges at risk (charge-in-postOp mode can be left unpaid by the op's own calls; which
  // sponsorships charge in postOp is recorded by reserveSponsorship)
  /**
   * Records (true) that a sponsorship's token charge went unpaid on chain (the settlement watcher), or clears it
   * (false: its settlement was reorganised away). Unknown sponsorships are ignored.
   */
  setTokenChargeUnpaid(id: string, unpaid: boolean): Promise<void>;
  /** Whether `sender` has a recorded unpaid token charge on `network`. */
  hasUnpaidTokenCharge(network: string, sender: Address): Promise<boolean>;

  // ---- webhooks (the outbox is written by reserveSponsorship (signed, replaced, cap refusals), settleSponsorship and
  // the releases, in their own transactions; see docs/webhooks.md)
  /** Throws NOT_FOUND for an unknown project, DUPLICATE for a second approval endpoint. */
  createWebhookEndpoint(input: NewWebhookEndpoint): Promise<WebhookEndpoint>;
  listWebhookEndpoints(projectId: string): Promise<WebhookEndpoint[]>;
  /** The project's approval endpoint with its secret, if it has one. */
  getApprovalEndpoint(projectId: string): Promise<(WebhookEndpoint & { secret: string }) | undefined>;
  /** Deletes the endpoint and its outbox rows (delivered, pending and dead); false if unknown. */
  deleteWebhookEndpoint(id: string): Promise<boolean>;
  /** Writes an event for every subscribed endpoint (of the project, or of all projects); returns how many rows. */
  emitWebhookEvent(event: NewWebhookEvent): Promise<number>;
  /**
   * Claims up to `limit` due deliveries for `owner` until nowMs + leaseMs (a conditional update: two workers
   * never hold one row), counting the attempt. Never one whose sponsorship has an earlier pending event for the
   * same endpoint: a sponsorship's events go out one at a time, in order. With `share`, no endpoint takes more
   * than its share, and every endpoint's first due event comes before any endpoint's second.
   */
  claimWebhookDeliveries(owner: string, nowMs: number, leaseMs: number, limit: number, share?: ClaimShare): Promise<ClaimedDelivery[]>;
  /** Pending events per endpoint, with the oldest one's creation time. */
  webhookBacklog(): Promise<WebhookBacklog[]>;
  /** Records an attempt's outcome; false if `owner` no longer holds the lease. */
  completeWebhookDelivery(id: string, owner: string, outcome: DeliveryOutcome, nowMs: number): Promise<boolean>;
  /** Newest first. */
  listWebhookDeliveries(filter: { projectId?: string; status?: WebhookDeliveryStatus; limit?: number }): Promise<WebhookDelivery[]>;
  getWebhookDelivery(id: string): Promise<WebhookDelivery | undefined>;
  /** Makes a delivered or dead event pending again, due now, with its attempts reset (same id); false if unknown. */
  replayWebhookDelivery(id: string, nowMs: number): Promise<boolean>;
  /** Deletes delivered events delivered before `beforeMs` (pending and dead ones stay); returns how many. */
  pruneWebhookDeliveries(beforeMs: number): Promise<number>;

  // ---- the operator console's reads (and the per-minute request counts it charts)
  /** Adds each row's count to its (minute, network, method, outcome) row, in one transaction. */
  addRequestCounts(rows: readonly RequestCount[]): Promise<void>;
  /** Request counts of minutes in [since, until), added up per bucket (a multiple of 60 s); oldest first. */
  requestCounts(filter: { since: number; until: number; bucketSeconds: number; network?: string }): Promise<RequestCountBucket[]>;
  /** Deletes the request counts of minutes before `beforeMinute`; returns how many rows. */
  pruneRequestCounts(beforeMinute: number): Promise<number>;
  /**
   * Sponsorships created in [since, until) added up per bucket, network and status (costs summed exactly, as
   * bigints), by the database, with those retention deleted (from their rollup). `truncated` is always false
   * now (kept for the answers that carry it: nothing is cut).
   */
  sponsorshipActivity(filter: ActivityFilter): Promise<{ buckets: SponsorshipActivity[]; truncated: boolean }>;
  /**
   * Retention (src/store/retention.ts): deletes at most `limit` final sponsorships older than the cutoffs in one
   * transaction, first adding them into the rollups that activity, history and the counts read beside the rows.
   */
  pruneSponsorships(cutoffs: PruneCutoffs, limit: number): Promise<PruneCounts>;
  /** What pruneSponsorships would delete with these cutoffs (nothing is changed). */
  countPrunableSponsorships(cutoffs: PruneCutoffs): Promise<PrunableCounts>;
  /** Gas tanks, most recently changed first (of one network when given). */
  listGasTanks(filter: { network?: string; limit?: number }): Promise<GasTankListing[]>;
  /** A tank's credits, debits and the settled ops it paid for, newest first (at most `limit` of each kind). */
  gasTankLedger(network: string, sender: Address, limit?: number): Promise<TankLedgerEntry[]>;
  sponsorshipTimeline(id: string): Promise<SponsorshipTimeline | undefined>;

  // ---- project billing (store/sql/billing.ts; the holds and bills move with reservations and their transitions)
  getBillingPlan(projectId: string): Promise<BillingPlan | undefined>;
  /** Creates or changes a project's plan (absent fields: unchanged, or the defaults); unknown project: NOT_FOUND. */
  setBillingPlan(projectId: string, change: BillingPlanChange): Promise<{ plan: BillingPlan; previous: BillingPlan | undefined }>;
  /** The project's balance and holds (zeros, updatedAt null, when it has none yet). */
  getBillingAccount(projectId: string): Promise<BillingAccount>;
  /**
   * Appends a credit or a correction by hand, idempotent by its reference: the same reference again with the same
   * project, kind and amount changes nothing (`duplicate: true`); with anything else it is CONFLICT. Unknown
   * project: NOT_FOUND.
   */
  addBillingEntry(entry: NewBillingEntry): Promise<{ entry: BillingEntry; account: BillingAccount; duplicate: boolean }>;
  /** The project's ledger entries with since <= at < until, in order, and the balance before them. */
  billingLedger(projectId: string, since: number, until: number): Promise<BillingLedgerSlice>;
  /** Every project with a plan or an account (what the metrics and the admin list show). */
  listBillingAccounts(): Promise<{ projectId: string; plan: BillingPlan | undefined; account: BillingAccount }[]>;

  close(): Promise<void>;
}

// ---- retention (src/store/retention.ts)

/** Unix seconds: rows before these go; undefined keeps that kind. */
export interface PruneCutoffs {
  releasedBefore?: number;
  settledBefore?: number;
}

export interface PruneCounts {
  released: number;
  settled: number;
}

/** What a pass would delete, and the oldest of each (unix seconds; null when none). */
export interface PrunableCounts extends PruneCounts {
  oldestReleased: number | null;
  oldestSettled: number | null;
}
