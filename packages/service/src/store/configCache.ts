/**
 * What a request looks up about its caller — the API key with its project's status, the strategy it names,
 * the project's approval endpoint and billing plan — kept per config version (Store.configVersion: a counter that
 * database triggers bump in the transaction of every change to projects, API keys, strategies, webhook endpoints
 * and billing plans).
 *
 * Each request reads the version once (one small query, where the three lookups were three queries) and uses
 * what was looked up under that same version; a different version drops everything. So a key revoked, a
 * project disabled or a strategy paused by any replica, the CLI or the admin API is seen on the next request
 * by every replica, as when every lookup read the database. Unknown keys and codes are kept too (creating one
 * bumps the version). Cached values are frozen: no request can change what another one reads.
 */
import { apiKeyLookupHash } from "./common.ts";
import type { ApiKey, BillingPlan, ProjectStatus, Store, Strategy, WebhookEndpoint } from "./types.ts";

export type KeyWithProject = { apiKey: ApiKey; projectStatus: ProjectStatus };
export type ApprovalEndpoint = WebhookEndpoint & { secret: string };

/** The lookups of one request, all under one config version. */
export interface ConfigLookups {
  apiKey(plaintext: string): Promise<KeyWithProject | undefined>;
  strategyByCode(code: string): Promise<Strategy | undefined>;
  approvalEndpoint(projectId: string): Promise<ApprovalEndpoint | undefined>;
  /** The project's billing plan, if it has one (billed only when enabled). */
  billingPlan(projectId: string): Promise<BillingPlan | undefined>;
}

export interface ConfigCache {
  /** Reads the config version and answers the lookups valid under it. */
  current(): Promise<ConfigLookups>;
}

/** Most entries kept per kind; past it that kind starts over (a flood of made-up keys cannot grow memory). */
const MAX_ENTRIES = 10_000;

/** The request's lookups: its CallContext's, else straight from the store. */
export function lookupsOf(call: { readonly service: { readonly store: Store }; readonly lookups?: ConfigLookups | undefined }): ConfigLookups {
  return call.lookups ?? directLookups(call.service.store);
}

/** The lookups straight from the store, every time (no cache: tests and tools that build a CallContext by hand). */
export function directLookups(store: Store): ConfigLookups {
  return {
    apiKey: (plaintext) => store.findApiKeyWithProject(plaintext),
    strategyByCode: (code) => store.getStrategyByCode(code),
    approvalEndpoint: (projectId) => store.getApprovalEndpoint(projectId),
    billingPlan: (projectId) => store.getBillingPlan(projectId),
  };
}

export function createConfigCache(store: Store, maxEntries = MAX_ENTRIES): ConfigCache {
  let cached: { version: number; lookups: ConfigLookups } | undefined;
  return {
    async current() {
      const version = await store.configVersion();
      if (cached?.version !== version) cached = { version, lookups: memoized(directLookups(store), maxEntries) };
      return cached.lookups;
    },
  };
}

/** `lookups` remembered by argument (a failed lookup is not remembered). */
function memoized(lookups: ConfigLookups, maxEntries: number): ConfigLookups {
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
  return {
    // By the key's lookup hash, so no plaintext key is kept in memory.
    apiKey: (plaintext) => {
      const hash = apiKeyLookupHash(plaintext);
      return hash === undefined ? Promise.resolve(undefined) : apiKey(plaintext, hash);
    },
    strategyByCode: (code) => strategyByCode(code),
    approvalEndpoint: (projectId) => approvalEndpoint(projectId),
    billingPlan: (projectId) => billingPlan(projectId),
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const field of Object.values(value)) deepFreeze(field);
  }
  return value;
}
