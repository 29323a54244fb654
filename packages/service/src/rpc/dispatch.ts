/**
 * Dialect-independent dispatch: a call that an envelope (v1, or standard JSON-RPC 2.0) has already taken
 * apart is resolved and run in a fixed order: network -> method -> params -> API key -> handler. The result
 * is returned as is; every refusal is thrown as an RpcError for the dialect to render. Errors a handler or
 * a schema throws pass through untouched (RpcErrors stay what they are; anything else is the dialect's
 * INTERNAL_ERROR).
 */
import type { z } from "zod";
import { findNetwork } from "@paymaster/shared";
import type { NetworkRuntime, ServiceContext } from "../context.ts";
import type { ApiKey } from "../store/types.ts";
import { ConfigChanged, directLookups, type ConfigLookups } from "../store/configCache.ts";
import { accessRefusal } from "../access/keyAccess.ts";
import { RpcError } from "../errors.ts";
import { toClientError } from "../dependencies/failure.ts";
import type { Timing } from "../timing.ts";
import { networkForCall } from "../network/callDeadline.ts";
import { RPC_DEFAULTS } from "../chain/rpc.ts";
import { NO_SPAN, rootSpan, tracingOn, type CallerTrace, type TraceSpan } from "../telemetry/trace.ts";
import { fromTrustedProxy } from "../access/clientAddress.ts";
import type { MethodDefinition } from "./method.ts";
import { truncate } from "../wire/schemas.ts";
import { SIGNING_METHODS } from "../rateLimit.ts";

/** Methods by wire name. */
export type MethodRegistry = ReadonlyMap<string, MethodDefinition<any>>;

/** The registry of `methods`; two definitions with one name is a programming error. */
export function createMethodRegistry(methods: readonly MethodDefinition<any>[]): MethodRegistry {
  const registry = new Map<string, MethodDefinition<any>>();
  for (const method of methods) {
    if (registry.has(method.name)) throw new Error(`Method ${method.name} is defined twice`);
    registry.set(method.name, method);
  }
  return registry;
}

/** One call, already out of its envelope. */
export interface DispatchRequest {
  /** The network enum value from the path. */
  network: string;
  /** The apiKey query value(s) as received: absent, once, or (refused) repeated. */
  apiKey: string | readonly string[] | undefined;
  method: string;
  /** The envelope's params; undefined when the field was omitted. */
  params: unknown;
  /** Which envelope it came in (a metrics label). */
  dialect?: "v1" | "standard";
  /** The request's Origin header (browsers), and the client's address: checked against the key's access lists. */
  origin?: string | undefined;
  clientIp?: string | undefined;
  /** The HTTP request's Timing: chain waits are counted there (Server-Timing, metrics). */
  timing?: Timing | undefined;
  /** The call's trace (`callTrace`): dispatch records its outcome and ends it. */
  trace?: TraceSpan | undefined;
}

/** What the exchange tells of the request: its connection's address, and its headers ("" when absent). */
interface CallRequest {
  readonly ip: string;
  get(field: string): string;
}

/**
 * What to make of a caller's `traceparent` (undefined: it sent none): continued only when the configuration's
 * `traceContext` says so — "parent" for every caller, "trusted-proxies" for a connection from `trustedProxies` —
 * else linked from a trace of our own ("link", the default), so a client neither samples our traces nor picks
 * their ids. Its `tracestate` is never read.
 */
export function callerTrace(config: ServiceContext["config"], request: CallRequest): CallerTrace | undefined {
  const traceparent = request.get("traceparent");
  if (traceparent === "") return undefined;
  const mode = config.traceContext ?? "link";
  return { traceparent, continue: mode === "parent" || (mode === "trusted-proxies" && fromTrustedProxy(request.ip, config.trustedProxies)) };
}

/**
 * The root span of one JSON-RPC call (one per item of a batch), linked to the client's W3C trace context or
 * continuing it (callerTrace); NO_SPAN with tracing off. Named after the method when it is one of ours
 * ("unknown" otherwise: a client's text never names a span; nor is an unconfigured network an attribute).
 */
export function callTrace(service: ServiceContext, methods: MethodRegistry, method: string, network: string, request: CallRequest): TraceSpan {
  if (!tracingOn()) return NO_SPAN;
  const known = boundedLabels(service, methods, method, network);
  const span = rootSpan(known.method, "server", callerTrace(service.config, request));
  span.set("rpc.system", "jsonrpc");
  span.set("rpc.method", known.method);
  span.set("paymaster.network", known.network);
  return span;
}

/** A call's method and network as a label or attribute: ours as they are, anything a client made up "unknown". */
function boundedLabels(service: ServiceContext, methods: MethodRegistry, method: string, network: string): { method: string; network: string } {
  return { method: methods.has(method) ? method : "unknown", network: service.networks.has(network) ? network : "unknown" };
}

/** Longest API key looked up in the store; longer ones cannot be ours. */
export const API_KEY_MAX_CHARS = 256;

/** Longest client string echoed back in a message or details. */
const ECHO_MAX_CHARS = 64;

/** Runs one call and counts it in the metrics: its outcome (ok or the reason) and where its time went. */
export async function dispatch(service: ServiceContext, methods: MethodRegistry, request: DispatchRequest): Promise<unknown> {
  const metrics = service.metrics;
  const trace = request.trace ?? NO_SPAN;
  if (!metrics && trace === NO_SPAN) return dispatchCall(service, methods, request);
  const timing = request.timing;
  const chainBefore = timing?.chainNs ?? 0n;
  const started = process.hrtime.bigint();
  let outcome = "ok";
  try {
    return await dispatchCall(service, methods, request);
  } catch (error) {
    outcome = toClientError(error).reason;
    trace.set("paymaster.refusal_reason", outcome);
    trace.fail(outcome);
    throw error;
  } finally {
    trace.set("paymaster.outcome", outcome === "ok" ? "ok" : outcome === "INTERNAL_ERROR" ? "error" : "refused");
    trace.end();
    if (metrics) {
      // Bounded labels: unknown methods and networks are counted as "unknown", never by what the client sent.
      const known = boundedLabels(service, methods, request.method, request.network);
      const labels = { dialect: request.dialect ?? "v1", method: known.method };
      const totalNs = process.hrtime.bigint() - started;
      const chainNs = (timing?.chainNs ?? 0n) - chainBefore;
      metrics.requests.inc({ ...labels, network: known.network, outcome });
      metrics.requestDuration.observe(labels, Number(totalNs) / 1e9);
      metrics.requestChainWait.observe(labels, Number(chainNs) / 1e9);
      metrics.requestOwnTime.observe(labels, Number(totalNs - chainNs) / 1e9);
    }
  }
}

/**
 * Runs one call: resolves the network, the method and its params, authenticates, calls the handler. A
 * reservation that found the configuration changed since the call looked it up (ConfigChanged: nothing was
 * written, no signature left) runs the call once more on fresh lookups: the key, the strategy and the plan as
 * they are now decide.
 */
async function dispatchCall(service: ServiceContext, methods: MethodRegistry, request: DispatchRequest): Promise<unknown> {
  const network = resolveNetwork(service, request.network);
  const method = findMethod(methods, request.method);
  const params = parseParams(method, request.params);
  const lookups = service.configCache ? await service.configCache.current() : directLookups(service.store);
  try {
    return await authorizedCall(service, method, params, request, network, lookups, true);
  } catch (error) {
    if (!(error instanceof ConfigChanged)) throw error;
    return authorizedCall(service, method, params, request, network, await lookups.fresh(), false);
  }
}

/** Authenticates, checks the key's access and the rate limits (`count`: not again on a re-run), calls the handler. */
async function authorizedCall<P>(
  service: ServiceContext,
  method: MethodDefinition<P>,
  params: P,
  request: DispatchRequest,
  network: NetworkRuntime,
  given: ConfigLookups,
  count: boolean,
): Promise<unknown> {
  const { apiKey, lookups } = await authenticate(given, request.apiKey);
  const refusal = accessRefusal(apiKey, request);
  if (refusal) throw new RpcError(refusal.reason, refusal.message);
  if (count) await takeRateLimits(service, method, apiKey);
  // One deadline for the waits of every chain call this call makes (src/network/callDeadline.ts).
  const forCall = networkForCall(network, network.config.rpcDeadlineMs ?? RPC_DEFAULTS.deadlineMs);
  try {
    return await method.handler(params, { service, network: forCall.network, apiKey, clientIp: request.clientIp, timing: request.timing, lookups, trace: request.trace });
  } finally {
    forCall.end();
  }
}

async function takeRateLimits(service: ServiceContext, method: MethodDefinition<unknown>, apiKey: ApiKey): Promise<void> {
  const retryAfterSeconds = (await service.rateLimiter?.takeRequest(apiKey)) ?? 0;
  if (retryAfterSeconds > 0) throw new RpcError("RATE_LIMITED", undefined, { retryAfterSeconds });
  if (SIGNING_METHODS.has(method.name)) {
    const wait = (await service.rateLimiter?.takeSponsorship(apiKey)) ?? 0;
    if (wait > 0) throw new RpcError("RATE_LIMITED", "Too many sponsorships for this API key or project", { retryAfterSeconds: wait, limit: "sponsorshipsPerMinute" });
  }
}

/** The configured network named `name`, else NETWORK_NOT_FOUND listing the configured ones. */
export function resolveNetwork(service: ServiceContext, name: string): NetworkRuntime {
  const network = service.networks.get(name);
  if (network !== undefined) return network;
  const supported = [...service.networks.keys()];
  const quoted = JSON.stringify(truncate(name, ECHO_MAX_CHARS));
  const known = findNetwork(name, service.config.customNetworks) !== undefined;
  const what = known ? `Network ${quoted} is not configured on this service` : `Unknown network ${quoted}`;
  throw new RpcError("NETWORK_NOT_FOUND", `${what}; supported networks: ${supported.join(", ") || "none"}`, { supported });
}

/** The method named `name`, else METHOD_NOT_FOUND. */
export function findMethod(methods: MethodRegistry, name: string): MethodDefinition<any> {
  const method = methods.get(name);
  if (method !== undefined) return method;
  throw new RpcError("METHOD_NOT_FOUND", `Unknown method ${JSON.stringify(truncate(name, ECHO_MAX_CHARS))}`, {
    methods: [...methods.keys()],
  });
}

/** At most this many issues are reported. */
const MAX_ISSUES = 20;
const MAX_ISSUE_MESSAGE_CHARS = 240;

export interface ParamsIssue {
  /** Where in `params` (indices and keys), e.g. [0, "callData"]. */
  path: (string | number)[];
  message: string;
}

/** A path as text: params[0].callData. */
export function formatParamsPath(path: readonly (string | number)[]): string {
  return path.reduce<string>(
    (text, key) => (typeof key === "number" ? `${text}[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `${text}.${key}` : `${text}[${JSON.stringify(key)}]`),
    "params",
  );
}

/** Zod issues as bounded, client-safe details. */
export function toParamsIssues(issues: readonly z.core.$ZodIssue[]): ParamsIssue[] {
  return issues.slice(0, MAX_ISSUES).map((issue) => ({
    path: issue.path.map((key) => (typeof key === "number" ? key : truncate(String(key), ECHO_MAX_CHARS))),
    message: truncate(issue.message, MAX_ISSUE_MESSAGE_CHARS),
  }));
}

/**
 * The method's params, parsed by its schema; INVALID_PARAMS with `details.issues` when they do not fit.
 * Synchronously: no schema has an async step (zod's async parse costs a promise per node).
 */
export function parseParams<P>(method: MethodDefinition<P>, params: unknown): P {
  // RpcErrors thrown from inside a schema (UNSUPPORTED_ENTRYPOINT_VERSION, MODE_CONFLICT) propagate as is.
  const parsed = method.params.safeParse(params);
  if (parsed.success) return parsed.data;
  const issues = toParamsIssues(parsed.error.issues);
  const first = issues[0];
  const more = parsed.error.issues.length - 1;
  const summary = first === undefined ? "" : `: ${formatParamsPath(first.path)}: ${first.message}${more > 0 ? ` (and ${more} more)` : ""}`;
  throw new RpcError("INVALID_PARAMS", `Invalid params for ${method.name}${summary}`, { issues });
}

/**
 * The active key behind the apiKey query value, else API_KEY_MISSING / API_KEY_INVALID / API_KEY_REVOKED (a
 * revoked key, or a key of a disabled project). Looked up under the config version read for this request
 * (src/store/configCache.ts): a key revoked by any replica or by the operator's CLI is refused on its next
 * request everywhere.
 */
export async function authenticate(given: ConfigLookups, apiKey: string | readonly string[] | undefined): Promise<{ apiKey: ApiKey; lookups: ConfigLookups }> {
  if (apiKey === undefined || apiKey === "") throw new RpcError("API_KEY_MISSING");
  if (typeof apiKey !== "string") throw new RpcError("API_KEY_INVALID", "Give the apiKey query parameter once");
  if (apiKey.length > API_KEY_MAX_CHARS) throw new RpcError("API_KEY_INVALID");
  let lookups = given;
  let found = await lookups.apiKey(apiKey);
  // Unknown under lookups that may be a moment old: a key just created anywhere is known under the version as it is now.
  if (found === undefined) found = await (lookups = await given.fresh()).apiKey(apiKey);
  if (found === undefined) throw new RpcError("API_KEY_INVALID");
  if (found.apiKey.status !== "active") throw new RpcError("API_KEY_REVOKED");
  if (found.projectStatus !== "active") throw new RpcError("API_KEY_REVOKED", "This API key's project is disabled");
  return { apiKey: found.apiKey, lookups };
}
