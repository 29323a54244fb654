/**
 * One HTTP request and its answer, as the public routes' code sees it: what the JSON-RPC handlers
 * (src/rpc/v1.ts, src/rpc/standard.ts) and the app's request wrapper (src/app.ts `serveRequest`) read and
 * write. Koa's context has every member, so the routes that go through Koa pass it as is; the two JSON-RPC
 * routes in their plain form skip Koa and get a `plainExchange` instead, written out by `sendExchange`.
 *
 * Why two doors: Koa's context, its middleware chain and its response handling cost ~80-105 µs of CPU per
 * request on the sponsorship path, a quarter of a stub call's CPU (measured by A/B with `bench:own`, see "The
 * service's own work" in the README). Everything a request does is still written once: the plain door only
 * builds the exchange and writes it out.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Timing } from "../timing.ts";

/** What the v1 handler keeps on the exchange's `state` (set by the app's first request wrapper). */
export interface V1State {
  /** process.hrtime.bigint() when handling began. */
  startedAt: bigint;
  requestId: string;
  /** The method name once the envelope parsed (for logs). */
  rpcMethod?: string;
  /** Where the request's time goes (chain waits vs own work): the Server-Timing header. */
  timing?: Timing;
  /** With tracing on: the trace id of each JSON-RPC call of the request (one per item of a batch), for its log line and error body. */
  traceIds?: string[];
}

export interface RpcExchange {
  readonly req: IncomingMessage;
  readonly method: string;
  /** The path, without the query string. */
  readonly path: string;
  /** Query values by name: one string, or an array when the name repeats (as Koa parses them). */
  readonly query: Readonly<Record<string, string | string[] | undefined>>;
  /** Route parameters (`network`). */
  readonly params: Readonly<Record<string, string>>;
  /** The client's address (the socket's: no proxy header is trusted). */
  readonly ip: string;
  state: V1State;
  /** A request header, "" when absent. */
  get(field: string): string;
  /** Sets a response header. */
  set(field: string, value: string): void;
  status: number;
  /** The response's media type, e.g. "application/json". */
  type: string;
  /** The response body: a string (JSON) or nothing. */
  body: unknown;
}

/** Query values the way Koa parses them (URLSearchParams; a repeated name gives every value). */
function parseQuery(search: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = Object.create(null);
  if (search === "") return query;
  const params = new URLSearchParams(search);
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name);
    query[name] = values.length === 1 ? values[0]! : values;
  }
  return query;
}

/** The exchange of a request that skips Koa; its answer is collected here until `sendExchange`. */
export function plainExchange(req: IncomingMessage, path: string, search: string, params: Record<string, string>): RpcExchange & { readonly headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  let query: Record<string, string | string[]> | undefined;
  return {
    req,
    method: req.method ?? "",
    path,
    get query() {
      return (query ??= parseQuery(search));
    },
    params,
    ip: req.socket.remoteAddress ?? "",
    state: { startedAt: 0n, requestId: "" },
    get(field) {
      const value = req.headers[field.toLowerCase()];
      return Array.isArray(value) ? value.join(", ") : (value ?? "");
    },
    set(field, value) {
      headers[field] = value;
    },
    headers,
    status: 404,
    type: "",
    body: undefined,
  };
}

/** Bodiless statuses: no body and no content headers are sent with them. */
const EMPTY_STATUSES = new Set([204, 205, 304]);

/** Writes a plain exchange's answer (as Koa would have: JSON with its charset and length, none for 204). */
export function sendExchange(res: ServerResponse, exchange: RpcExchange & { readonly headers: Record<string, string> }): void {
  const { headers, status } = exchange;
  if (EMPTY_STATUSES.has(status) || typeof exchange.body !== "string") {
    res.writeHead(status, headers).end();
    return;
  }
  const body = exchange.body;
  if (exchange.type !== "") headers["Content-Type"] = exchange.type.includes("charset=") ? exchange.type : `${exchange.type}; charset=utf-8`;
  headers["Content-Length"] = String(Buffer.byteLength(body));
  res.writeHead(status, headers).end(body);
}
