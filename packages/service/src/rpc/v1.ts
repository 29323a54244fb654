/**
 * The v1 dialect (the spec exactly): POST /api/v1/paymaster/<network>?apiKey=KEY with a body
 * `{id, jsonrpc: "2.0", method, params?}`, answered with `{code, message, data, cost}` and nothing else.
 * The HTTP status equals `code`. Success: code 200, message "", data = the method's result. Error: code =
 * the reason's status, message = the error's message, data = `{reason, ...details}`.
 *
 * This file only does the envelope; the call itself goes through `dispatch`.
 */
import { requestClientAddress } from "../access/clientAddress.ts";
import type { ServiceContext } from "../context.ts";
import { readBody } from "./body.ts";
import { callTrace, dispatch, type MethodRegistry } from "./dispatch.ts";
import { RpcError } from "../errors.ts";
import { stringifyJson } from "./json.ts";
import { jsonTypeOf, listNames, truncate } from "../wire/schemas.ts";
import type { RpcExchange } from "./exchange.ts";

/** The response envelope. */
export interface V1Response {
  code: number;
  message: string;
  data: unknown;
  cost: string;
}

/** A parsed request envelope. */
export interface V1Request {
  id: number;
  jsonrpc: "2.0";
  method: string;
  /** undefined when the field was omitted. */
  params: unknown[] | undefined;
}

export type { V1State } from "./exchange.ts";

const NS_PER_SECOND = 1_000_000_000n;

/**
 * Elapsed time in the spec's duration notation: `<h>h<m>m<s>s`, seconds with up to 9 decimals and no
 * trailing zeros (`0h0m0.003125s`, `1h2m3s`). Negative durations count as 0.
 */
export function formatCost(nanoseconds: bigint): string {
  const total = nanoseconds < 0n ? 0n : nanoseconds;
  const hours = total / (3600n * NS_PER_SECOND);
  const minutes = (total / (60n * NS_PER_SECOND)) % 60n;
  const seconds = (total / NS_PER_SECOND) % 60n;
  const fraction = (total % NS_PER_SECOND).toString().padStart(9, "0").replace(/0+$/, "");
  return `${hours}h${minutes}m${seconds}${fraction === "" ? "" : `.${fraction}`}s`;
}

const ENVELOPE_FIELDS = ["id", "jsonrpc", "method", "params"] as const;
const METHOD_MAX_CHARS = 128;

function invalidRequest(field: string, message: string): RpcError {
  return new RpcError("INVALID_REQUEST", message, { field });
}

/** The body's bytes as JSON; PARSE_ERROR when they are not UTF-8 JSON. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) throw new RpcError("PARSE_ERROR", "The body is empty: expected a JSON object");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    throw new RpcError("PARSE_ERROR", "The body is not valid UTF-8");
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new RpcError("PARSE_ERROR");
  }
}

/**
 * A strictly valid envelope: a JSON object with exactly the fields id (safe integer), jsonrpc ("2.0"),
 * method (non-empty string) and optionally params (array). Anything else is INVALID_REQUEST naming the
 * field in `details.field`.
 */
export function parseV1Envelope(body: unknown): V1Request {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    const batch = Array.isArray(body) ? " (this endpoint takes no batches)" : "";
    throw new RpcError("INVALID_REQUEST", `The body must be a JSON object, got ${jsonTypeOf(body)}${batch}`, { field: null });
  }
  const unknownFields = Object.keys(body).filter((key) => !(ENVELOPE_FIELDS as readonly string[]).includes(key));
  const firstUnknown = unknownFields[0];
  if (firstUnknown !== undefined) {
    throw invalidRequest(
      truncate(firstUnknown, 64),
      `Unknown envelope field${unknownFields.length === 1 ? "" : "s"} ${listNames(unknownFields)}: the envelope has only id, jsonrpc, method and params`,
    );
  }
  const { id, jsonrpc, method, params } = body as Record<string, unknown>;
  if (id === undefined) throw invalidRequest("id", "Missing envelope field id (an integer)");
  if (typeof id !== "number" || !Number.isSafeInteger(id)) {
    throw invalidRequest("id", `Envelope field id must be an integer, got ${typeof id === "number" ? "a non-integer number" : jsonTypeOf(id)}`);
  }
  if (jsonrpc === undefined) throw invalidRequest("jsonrpc", 'Missing envelope field jsonrpc (the string "2.0")');
  if (jsonrpc !== "2.0") throw invalidRequest("jsonrpc", 'Envelope field jsonrpc must be the string "2.0"');
  if (method === undefined) throw invalidRequest("method", "Missing envelope field method (a method name)");
  if (typeof method !== "string") throw invalidRequest("method", `Envelope field method must be a string, got ${jsonTypeOf(method)}`);
  if (method.length === 0 || method.length > METHOD_MAX_CHARS) {
    throw invalidRequest("method", `Envelope field method must be 1 to ${METHOD_MAX_CHARS} characters`);
  }
  if (params !== undefined && !Array.isArray(params)) {
    throw invalidRequest("params", `Envelope field params must be an array when present, got ${jsonTypeOf(params)}`);
  }
  return { id, jsonrpc, method, params };
}

/** Writes a v1 envelope as the response; HTTP status = code. */
export function sendV1(ctx: RpcExchange, code: number, message: string, data: unknown): void {
  const startedAt = ctx.state.startedAt;
  const cost = formatCost(startedAt === undefined ? 0n : process.hrtime.bigint() - startedAt);
  const envelope: V1Response = { code, message, data, cost };
  const json = stringifyJson(envelope);
  ctx.status = code;
  ctx.type = "application/json";
  ctx.set("Cache-Control", "no-store");
  ctx.body = json;
}

/**
 * Writes an RpcError as a v1 envelope: data = {reason, ...details}. An error that tells when to come back
 * (`details.retryAfterSeconds`: RATE_LIMITED, a rate-limited CHAIN_UNAVAILABLE, …) also sets the HTTP
 * Retry-After header (RFC 9110), which HTTP clients and proxies read on a 429 or a 503.
 */
export function sendV1Error(ctx: RpcExchange, error: RpcError): void {
  const retryAfter = error.details["retryAfterSeconds"];
  if (typeof retryAfter === "number" && Number.isFinite(retryAfter) && retryAfter > 0) ctx.set("Retry-After", String(Math.ceil(retryAfter)));
  sendV1(ctx, error.status, error.message, error.data(ctx.state.traceIds?.[0]));
}

/** The apiKey query value(s) as received. */
function apiKeyOf(ctx: RpcExchange): string | readonly string[] | undefined {
  return ctx.query["apiKey"];
}

/**
 * The handler of POST /api/v1/paymaster/:network. Errors are thrown (RpcError or not) for the app's request
 * wrapper to render, so there is one place deciding what clients see.
 */
export function v1Handler(service: ServiceContext, methods: MethodRegistry) {
  return async (ctx: RpcExchange): Promise<void> => {
    const body = await readBody(ctx.req, { limitBytes: service.config.bodyLimitBytes });
    const envelope = parseV1Envelope(parseJsonBody(body));
    ctx.state.rpcMethod = truncate(envelope.method, 64);
    const network = ctx.params["network"] ?? "";
    const trace = callTrace(service, methods, envelope.method, network, ctx);
    if (trace.traceId !== undefined) ctx.state.traceIds = [trace.traceId];
    const result = await dispatch(service, methods, {
      network,
      apiKey: apiKeyOf(ctx),
      method: envelope.method,
      params: envelope.params,
      dialect: "v1",
      origin: ctx.get("origin") || undefined,
      clientIp: requestClientAddress(ctx, service.config.trustedProxies),
      timing: ctx.state.timing,
      trace,
    });
    sendV1(ctx, 200, "", result === undefined ? null : result);
  };
}
