/**
 * The standard dialect: plain JSON-RPC 2.0 on POST /rpc/v1/<network>?apiKey=KEY, for ERC-7677 clients such as
 * viem's paymaster client.
 *
 *   request   {jsonrpc: "2.0", id?, method, params?}  (id: string, number or null; absent = notification)
 *   response  {jsonrpc: "2.0", id, result} | {jsonrpc: "2.0", id, error: {code, message, data: {reason, ...details}}}
 *
 * Batches: a non-empty array of at most STANDARD_BATCH_MAX requests, answered in order; notifications get no
 * entry (a batch of only notifications answers 204 with no body, as does a single notification). HTTP 200
 * once the body is read, whatever the outcome (a parse error is {id: null, error -32700}); only a body over
 * the limit is 413. `error.code` is REASONS[reason].jsonRpcCode. Calls go through the same `dispatch` as
 * v1. Every error is rendered here, never by the app's v1 error middleware.
 */
import { requestClientAddress } from "../access/clientAddress.ts";
import type { ServiceContext } from "../context.ts";
import { readBody } from "./body.ts";
import { callTrace, dispatch, type MethodRegistry } from "./dispatch.ts";
import { RpcError } from "../errors.ts";
import { knownClientError } from "../dependencies/failure.ts";
import { stringifyJson } from "./json.ts";
import { jsonTypeOf, truncate } from "../wire/schemas.ts";
import { parseJsonBody } from "./v1.ts";
import type { RpcExchange } from "./exchange.ts";

/** Most requests in one batch. */
export const STANDARD_BATCH_MAX = 100;
const METHOD_MAX_CHARS = 128;
const ID_MAX_CHARS = 256;

export type JsonRpcId = string | number | null;

export interface StandardSuccess {
  jsonrpc: "2.0";
  id: JsonRpcId;
  result: unknown;
}

export interface StandardFailure {
  jsonrpc: "2.0";
  id: JsonRpcId;
  error: { code: number; message: string; data: Record<string, unknown> };
}

export type StandardResponse = StandardSuccess | StandardFailure;

/** An RpcError as a JSON-RPC error object: code from the catalogue, data = RpcError.data (reason, details, traceId). */
export function standardError(id: JsonRpcId, error: RpcError, traceId?: string): StandardFailure {
  return { jsonrpc: "2.0", id, error: { code: error.jsonRpcCode, message: error.message, data: error.data(traceId) } };
}

function validId(id: unknown): id is JsonRpcId {
  return id === null || (typeof id === "string" && id.length <= ID_MAX_CHARS) || (typeof id === "number" && Number.isFinite(id));
}

interface ParsedCall {
  /** undefined: a notification (no answer). */
  id: JsonRpcId | undefined;
  method: string;
  params: unknown;
}

/** One request object; INVALID_REQUEST (thrown with the id it could recover) when it is not one. */
function parseRequest(value: unknown): ParsedCall | { id: JsonRpcId; error: RpcError } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { id: null, error: new RpcError("INVALID_REQUEST", `A request must be a JSON object, got ${jsonTypeOf(value)}`, { field: null }) };
  }
  const request = value as Record<string, unknown>;
  const hasId = Object.hasOwn(request, "id");
  if (hasId && !validId(request["id"])) {
    return { id: null, error: new RpcError("INVALID_REQUEST", "id must be a string, a number or null", { field: "id" }) };
  }
  const id = hasId ? (request["id"] as JsonRpcId) : null;
  const fail = (field: string, message: string) => ({ id, error: new RpcError("INVALID_REQUEST", message, { field }) });
  const unknown = Object.keys(request).filter((key) => !["jsonrpc", "id", "method", "params"].includes(key));
  if (unknown.length > 0) return fail(truncate(unknown[0]!, 64), "A request has only jsonrpc, id, method and params");
  if (request["jsonrpc"] !== "2.0") return fail("jsonrpc", 'jsonrpc must be the string "2.0"');
  const method = request["method"];
  if (typeof method !== "string" || method.length === 0 || method.length > METHOD_MAX_CHARS) {
    return fail("method", `method must be a string of 1 to ${METHOD_MAX_CHARS} characters`);
  }
  const params = request["params"];
  if (params !== undefined && !Array.isArray(params)) {
    // Our methods take positional params only.
    return fail("params", `params must be an array when present, got ${jsonTypeOf(params)}`);
  }
  return { id: hasId ? id : undefined, method, params };
}

/** The handler of POST /rpc/v1/:network. Renders every outcome itself. */
export function standardHandler(service: ServiceContext, methods: MethodRegistry) {
  return async (ctx: RpcExchange): Promise<void> => {
    const state = ctx.state;
    const network = ctx.params["network"] ?? "";
    const apiKey = ctx.query["apiKey"];
    const log = (error: unknown, traceId?: string): RpcError => {
      const known = knownClientError(error);
      if (known) return known;
      service.logger.error({ err: error, requestId: state.requestId, traceId, path: ctx.path }, "internal error");
      return new RpcError("INTERNAL_ERROR", "Internal error; quote the requestId to the operator", { requestId: state.requestId });
    };
    const send = (status: number, payload: unknown): void => {
      ctx.status = status;
      ctx.type = "application/json";
      ctx.set("Cache-Control", "no-store");
      ctx.body = safeStringify(payload, state.requestId);
    };

    let body: unknown;
    try {
      body = parseJsonBody(await readBody(ctx.req, { limitBytes: service.config.bodyLimitBytes }));
    } catch (error) {
      const clientError = log(error);
      send(clientError.reason === "BODY_TOO_LARGE" ? 413 : 200, standardError(null, clientError));
      return;
    }

    const runOne = async (value: unknown): Promise<StandardResponse | undefined> => {
      const parsed = parseRequest(value);
      if ("error" in parsed) return standardError(parsed.id, parsed.error);
      const trace = callTrace(service, methods, parsed.method, network, ctx);
      if (trace.traceId !== undefined) (state.traceIds ??= []).push(trace.traceId);
      try {
        const result = await dispatch(service, methods, {
          network,
          apiKey,
          method: parsed.method,
          params: parsed.params,
          dialect: "standard",
          origin: ctx.get("origin") || undefined,
          clientIp: requestClientAddress(ctx, service.config.trustedProxies),
          timing: state.timing,
          trace,
        });
        return parsed.id === undefined ? undefined : { jsonrpc: "2.0", id: parsed.id, result: result === undefined ? null : result };
      } catch (error) {
        const clientError = log(error, trace.traceId);
        return parsed.id === undefined ? undefined : standardError(parsed.id, clientError, trace.traceId);
      }
    };

    if (Array.isArray(body)) {
      if (body.length === 0) return send(200, standardError(null, new RpcError("INVALID_REQUEST", "A batch must not be empty", { field: null })));
      if (body.length > STANDARD_BATCH_MAX) {
        return send(200, standardError(null, new RpcError("INVALID_REQUEST", `A batch holds at most ${STANDARD_BATCH_MAX} requests`, { field: null, limit: STANDARD_BATCH_MAX })));
      }
      state.rpcMethod = "batch";
      // In order, one after another: a batch is no way around the per-call cost.
      const answers: StandardResponse[] = [];
      for (const entry of body) {
        const answer = await runOne(entry);
        if (answer !== undefined) answers.push(answer);
      }
      if (answers.length === 0) {
        ctx.status = 204;
        return;
      }
      return send(200, answers);
    }
    if (typeof body === "object" && body !== null && typeof (body as { method?: unknown }).method === "string") {
      state.rpcMethod = truncate((body as { method: string }).method, 64);
    }
    const answer = await runOne(body);
    if (answer === undefined) {
      ctx.status = 204;
      return;
    }
    send(200, answer);
  };
}

/** The JSON text of `payload`; a payload that cannot be serialized becomes INTERNAL_ERROR. */
function safeStringify(payload: unknown, requestId: string): string {
  try {
    return stringifyJson(payload);
  } catch {
    return stringifyJson(standardError(null, new RpcError("INTERNAL_ERROR", "Internal error; quote the requestId to the operator", { requestId })));
  }
}
