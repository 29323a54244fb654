/**
 * What a request looks up about its caller — the API key with its project's status, the strategy it names,
 * the project's approval endpoint, billing plan and events endpoints, the ERC-20 token it pays with — kept per
 * config version (Store.configVersion: a counter that database triggers bump in the transaction of every change
 * to projects, API keys, strategies, webhook endpoints, billing plans and tokens).
 *
 * The lookups of one version are read once and kept (frozen: no request can change what another one reads); a
 * different version drops them all. When the version is read again:
 * - at most `maxAgeMs` after it was last read (the service's `database.configMaxAgeMs`: 1 s with PostgreSQL, where
 *   a read is a round trip; 0 with SQLite, where it is a function call), and at once after this process changed
 *   the configuration itself (Store.configWrites);
 * - before a key, a strategy or a token is answered as unknown (`fresh`): one created anywhere works on its first use;
 * - by the reservation itself: a sponsorship is reserved under the version its request decided with, and refused
 *   (ConfigChanged) if the version moved since — the request then runs again with fresh lookups. So whatever
 *   signs and holds money is decided on the configuration as it is (a key revoked, a strategy paused anywhere
 *   is refused at once), while methods that sign nothing see a change within `maxAgeMs`.
 * Unknown keys and codes are kept too (creating one bumps the version), so a flood of made-up keys costs one
 * version read each, never a lookup.
 */
import { apiKeyLookupHash } from "./apiKeys.ts";
import type { ApiKey, ProjectStatus, Store, Strategy, Token, WebhookEndpoint } from "./types.ts";
import { asciiLower } from "./db/types.ts";
import type { BillingPlan } from "../billing/ledger.ts";

export type KeyWithProject = { apiKey: ApiKey; projectStatus: ProjectStatus };
export type ApprovalEndpoint = WebhookEndpoint & { secret: string };

/** The lookups of one request, all under one config version. */
export interface ConfigLookups {
  /** The config version they were looked up under (undefined: straight from the store, no version). */
  readonly version: number | undefined;
  apiKey(plaintext: string): Promise<KeyWithProject | undefined>;
  strategyByCode(code: string): Promise<Strategy | undefined>;
  approvalEndpoint(projectId: string): Promise<ApprovalEndpoint | undefined>;
  /** The project's billing plan, if it has one (billed only when enabled). */
  billingPlan(projectId: string): Promise<BillingPlan | undefined>;
  /** The project's events endpoints (what a sponsorship's webhook events go to). */
  eventEndpoints(projectId: string): Promise<readonly WebhookEndpoint[]>;
  /** The network's token by symbol (any ASCII case) or address (Store.findToken). */
  token(network: string, symbolOrAddress: string): Promise<Token | undefined>;
  /** The network's tokens, enabled or not (Store.listTokens). */
  tokens(network: string): Promise<readonly Token[]>;
  /** The lookups under the version as it is now (one read of it): what "unknown" is answered from. */
  fresh(): Promise<ConfigLookups>;
}

/**
 * What `read` finds under `lookups`, else under the version as it is now (`fresh`, one read of it): a strategy or a
 * token created anywhere a moment ago is known on its first use, while a known one costs no read of the version.
 */
export async function knownNow<T>(lookups: ConfigLookups, read: (l: ConfigLookups) => Promise<T | undefined>): Promise<T | undefined> {
  return (await read(lookups)) ?? (await read(await lookups.fresh()));
}

export interface ConfigCache {
  /** The lookups under the version last read, reading it again when it is older than the cache's max age. */
  current(): Promise<ConfigLookups>;
}

/**
 * A reservation refused because the configuration changed since its request looked it up: the request runs again
 * on fresh lookups (rpc/dispatch.ts). Never reaches a client.
 */
export class ConfigChanged extends Error {
  override name = "ConfigChanged";
  constructor() {
    super("the configuration changed while the request ran");
  }
}

/** Most entries kept per kind; past it that kind starts over (a flood of made-up keys cannot grow memory). */
const MAX_ENTRIES = 10_000;

/** The request's lookups: its CallContext's, else straight from the store. */
export function lookupsOf(call: { readonly service: { readonly store: Store }; readonly lookups?: ConfigLookups | undefined }): ConfigLookups {
  return call.lookups ?? directLookups(call.service.store);
}

/** The lookups straight from the store, every time (no cache: tests and tools that build a CallContext by hand). */
export function directLookups(store: Store): ConfigLookups {
  const lookups: ConfigLookups = {
    version: undefined,
    apiKey: (plaintext) => store.findApiKeyWithProject(plaintext),
    strategyByCode: (code) => store.getStrategyByCode(code),
    approvalEndpoint: (projectId) => store.getApprovalEndpoint(projectId),
    billingPlan: (projectId) => store.getBillingPlan(projectId),
    eventEndpoints: async (projectId) => (await store.listWebhookEndpoints(projectId)).filter((e) => e.kind === "events"),
    token: (network, symbolOrAddress) => store.findToken(network, symbolOrAddress),
    tokens: (network) => store.listTokens(network),
    fresh: async () => lookups,
  };
  return lookups;
}

export function createConfigCache(store: Store, options: { maxAgeMs?: number; maxEntries?: number } = {}): ConfigCache {
  const maxAgeMs = options.maxAgeMs ?? 0;
  let cached: { version: number; lookups: ConfigLookups; readAt: number; writes: number } | undefined;
  const read = async (): Promise<ConfigLookups> => {
    const writes = store.configWrites();
    const version = await store.configVersion();
    if (cached?.version !== version) cached = { version, lookups: memoized(store, version, options.maxEntries ?? MAX_ENTRIES, read), readAt: 0, writes };
    cached.readAt = performance.now();
    cached.writes = writes;
    return cached.lookups;
  };
  return {
    current() {
      if (cached && performance.now() - cached.readAt < maxAgeMs && store.configWrites() === cached.writes) return Promise.resolve(cached.lookups);
      return read();
    },
  };
}

/** The store's lookups remembered by argument under `version` (a failed lookup is not remembered). */
function memoized(store: Store, version: number, maxEntries: number, fresh: () => Promise<ConfigLookups>): ConfigLookups {
  const lookups = directLookups(store);
  const remember = <T>(load: (key: string) => Promise<T>) => {
    const entries = new Map<string, Promise<T>>();
    return (key: string, storeKey: string = key): Promise<T> => {
      let entry = entries.get(storeKey);
      if (entry === undefined) {
        if (entries.size >= maxEntries) entries.clear();
        entry = load(key).then(deepFreeze);
        entries.set(storeKey, entry);
        entry.catch(() => entries.delete(storeKey));
      }
      return entry;
    };
  };
  const apiKey = remember(lookups.apiKey);
  const strategyByCode = remember(lookups.strategyByCode);
  const approvalEndpoint = remember(lookups.approvalEndpoint);
  const billingPlan = remember(lookups.billingPlan);
  const eventEndpoints = remember(lookups.eventEndpoints);
  const tokens = remember(lookups.tokens);
  const token = remember((key) => {
    const split = key.indexOf("\n");
    return lookups.token(key.slice(0, split), key.slice(split + 1));
  });
  return {
    version,
    // By the key's lookup hash, so no plaintext key is kept in memory.
    apiKey: (plaintext) => {
      const hash = apiKeyLookupHash(plaintext);
      return hash === undefined ? Promise.resolve(undefined) : apiKey(plaintext, hash);
    },
    strategyByCode: (code) => strategyByCode(code),
    approvalEndpoint: (projectId) => approvalEndpoint(projectId),
    billingPlan: (projectId) => billingPlan(projectId),
    eventEndpoints: (projectId) => eventEndpoints(projectId),
    // Keyed as the store matches (a symbol in any ASCII case, an address in any case): one entry per token asked.
    token: (network, symbolOrAddress) => token(`${network}\n${symbolOrAddress}`, `${network}\n${asciiLower(symbolOrAddress)}`),
    tokens: (network) => tokens(network),
    fresh,
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const field of Object.values(value)) deepFreeze(field);
  }
  return value;
}
