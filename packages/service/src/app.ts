/**
 * The HTTP application: one error middleware at the top decides what clients see (RpcErrors as they are,
 * anything else INTERNAL_ERROR with a generic message, the real error logged with the request id), then the
 * routes:
 *
 *   POST /api/v1/paymaster/:network?apiKey=KEY   the v1 dialect (src/rpc/v1.ts)
 *   POST /rpc/v1/:network?apiKey=KEY             the standard JSON-RPC 2.0 dialect (src/rpc/standard.ts); it
 *                                                renders its own errors, never the v1 envelope
 *   POST /api/v1/applications[/claim]            the key application process (admin/publicApplications.ts)
 *   GET  /apply                                  the application page for teams (packages/console, console/static.ts)
 *   GET  /health                                 {status: "ok", networks: [...]} (src/health.ts)
 *   GET  /ready                                  200 ready / 503 not ready, with the failing checks
 *   anything else                                ROUTE_NOT_FOUND (404) in the v1 envelope
 *
 * The two JSON-RPC routes in their plain form (POST /rpc/v1/<name>, POST /api/v1/paymaster/<name>) skip Koa:
 * `listen` hands them to the same wrapper and handlers through a plain exchange (src/rpc/exchange.ts), which
 * saves ~80-105 µs of CPU per request. Every other request, and any other form of those paths, goes through Koa.
 *
 * `listen` serves it on a loopback address only.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import { isIPv4, isIPv6, type AddressInfo } from "node:net";
import Koa from "koa";
import { Router } from "@koa/router";
import type { Logger } from "pino";
import type { ServiceContext } from "./context.ts";
import { applicationHandlers } from "./admin/publicApplications.ts";
import { sendSiteFile } from "./console/static.ts";
import { createMethodRegistry } from "./rpc/dispatch.ts";
import { RpcError } from "./errors.ts";
import { knownClientError } from "./dependencies/failure.ts";
import { stringifyJson } from "./rpc/json.ts";
import type { MethodDefinition } from "./rpc/method.ts";
import { plainExchange, sendExchange, type RpcExchange } from "./rpc/exchange.ts";
import { standardHandler } from "./rpc/standard.ts";
import { BUNDLER_METHODS } from "./methods/bundler.ts";
import { TANK_CONSENT_METHODS } from "./methods/gasTankConsent.ts";
import { sendV1Error, v1Handler, type V1State } from "./rpc/v1.ts";
import { Timing } from "./timing.ts";
import { healthBody } from "./health.ts";

export type AppState = V1State;

/** The JSON-RPC routes' plain form: the dialect's prefix and the network name. */
const RPC_PATH = /^\/(rpc\/v1|api\/v1\/paymaster)\/([a-z0-9-]{1,64})$/;

/** The service's Koa application. */
export function createApp(service: ServiceContext, methods: readonly MethodDefinition<any>[]): Koa<AppState> {
  const registry = createMethodRegistry(methods);
  // The bundler methods are standard JSON-RPC only: the v1 dialect is the spec's paymaster API, nothing more.
  // So are the gas tank consent methods (methods/gasTankConsent.ts).
  const standardRegistry = createMethodRegistry([...methods, ...BUNDLER_METHODS, ...TANK_CONSENT_METHODS]);
  const logger = service.logger;
  const app = new Koa<AppState>();

  // Errors that escape every middleware (e.g. a socket failing mid-write) are only logged.
  app.silent = true;
  app.on("error", (error: unknown) => {
    logger.error({ err: error }, "unhandled application error");
  });

  app.use((ctx, next) => serveRequest(exchangeOf(ctx), logger, next));

  // CORS: dapps call the public endpoints straight from the page. No credentials (the key is in the URL,
  // not a cookie), so any origin may ask; which origins may use a key is the key's own setting (access/).
  app.use(async (ctx, next) => {
    const publicPath = ctx.path.startsWith("/api/v1/paymaster/") || ctx.path.startsWith("/rpc/v1/") || ctx.path.startsWith("/api/v1/applications");
    if (!publicPath) return next();
    allowAnyOrigin(exchangeOf(ctx));
    if (ctx.method !== "OPTIONS") return next();
    ctx.set("Access-Control-Allow-Methods", "POST, OPTIONS");
    ctx.set("Access-Control-Allow-Headers", "content-type");
    ctx.set("Access-Control-Max-Age", "600");
    ctx.status = 204;
  });

  // The two JSON-RPC routes in their plain form (POST /api/v1/paymaster/<name>, /rpc/v1/<name>, a name of
  // lowercase letters, digits and dashes) go straight to their handlers without Koa (`listen` takes them, see
  // `plainRpcRoute`); any other form of those paths comes through Koa's router, to the same handlers.
  const v1 = v1Handler(service, registry);
  const standard = standardHandler(service, standardRegistry);
  PLAIN_ROUTES.set(app, plainRpcRoute(logger, { "rpc/v1": standard, "api/v1/paymaster": v1 }));

  const router = new Router<AppState>();
  router.post("/api/v1/paymaster/:network", (ctx) => v1(exchangeOf(ctx)));
  const applications = applicationHandlers(service);
  router.post("/api/v1/applications", applications.submit);
  router.post("/api/v1/applications/claim", applications.claim);
  // The application page teams fill in (it posts to the two routes above); no operator page is ever here.
  // The router matches "/apply" with or without the slash; the page's relative links need it.
  router.get("/apply", (ctx) => (ctx.path === "/apply" ? ctx.redirect("/apply/") : sendSiteFile(ctx, "apply", "")));
  router.get("/apply/*file", (ctx) => sendSiteFile(ctx, "apply", (ctx.params as { file?: string }).file ?? ""));
  router.post("/rpc/v1/:network", (ctx) => standard(exchangeOf(ctx)));
  router.get("/health", (ctx) => {
    ctx.status = 200;
    ctx.type = "application/json";
    ctx.set("Cache-Control", "no-store");
    ctx.body = stringifyJson(healthBody(service));
  });
  router.get("/ready", async (ctx) => {
    const report = service.readiness ? await service.readiness() : { ready: true, checks: {} };
    ctx.status = report.ready ? 200 : 503;
    ctx.type = "application/json";
    ctx.set("Cache-Control", "no-store");
    ctx.body = stringifyJson({ status: report.ready ? "ready" : "not ready", checks: report.checks });
  });
  app.use(router.routes());
  app.use(() => {
    throw new RpcError("ROUTE_NOT_FOUND");
  });
  return app;
}

/**
 * Runs one public request, whichever door it came through: request id, headers and timing first; then the
 * route, whose errors are rendered here (RpcErrors as they are, in the v1 envelope; anything else
 * INTERNAL_ERROR with a generic message, the real error logged with the request id; the standard dialect
 * renders its own); then the Server-Timing header and one log line.
 */
async function serveRequest(x: RpcExchange, logger: Logger, route: () => Promise<unknown>): Promise<void> {
  const startedAt = process.hrtime.bigint();
  const requestId = randomUUID();
  const timing = new Timing();
  x.state.startedAt = startedAt;
  x.state.requestId = requestId;
  x.state.timing = timing;
  x.set("X-Request-Id", requestId);
  x.set("X-Content-Type-Options", "nosniff");
  let reason: string | undefined;
  try {
    await route();
  } catch (error) {
    const known = knownClientError(error);
    reason = known?.reason ?? "INTERNAL_ERROR";
    const internal = (): RpcError => new RpcError("INTERNAL_ERROR", "Internal error; quote the requestId to the operator", { requestId });
    if (known) {
      // A dependency's failure is logged once per state change where it is seen (store, chain RPC, signer), not per request.
      try {
        sendV1Error(x, known);
      } catch (renderError) {
        // Details that cannot be serialized (a cycle) are a bug of the thrower, not the client's business.
        logger.error({ err: renderError, requestId, reason: known.reason }, "could not render an error");
        reason = "INTERNAL_ERROR";
        sendV1Error(x, internal());
      }
    } else {
      // The real error stays here; the client gets a generic message and the id to quote.
      logger.error({ err: error, requestId, ...traceFields(x.state.traceIds), rpcMethod: x.state.rpcMethod, path: x.path }, "internal error");
      sendV1Error(x, internal());
    }
  } finally {
    x.set("Server-Timing", timing.serverTiming());
    // The path never includes the query string, so the apiKey is not logged.
    logger.info(
      {
        requestId,
        ...traceFields(x.state.traceIds),
        httpMethod: x.method,
        path: x.path.length > 200 ? `${x.path.slice(0, 200)}…` : x.path,
        status: x.status,
        rpcMethod: x.state.rpcMethod,
        reason,
        durationMs: Number(process.hrtime.bigint() - startedAt) / 1e6,
        chainMs: Number(timing.chainNs) / 1e6,
      },
      "request",
    );
  }
}

/** A log line's trace fields (tracing on): `traceId` of the request's one call, `traceIds` of a batch's. */
function traceFields(traceIds: readonly string[] | undefined): { traceId?: string; traceIds?: readonly string[] } | undefined {
  if (traceIds === undefined) return undefined;
  return traceIds.length === 1 ? { traceId: traceIds[0]! } : { traceIds };
}

/** CORS for the public endpoints: dapps call them straight from the page, and no credentials are involved. */
function allowAnyOrigin(x: RpcExchange): void {
  x.set("Access-Control-Allow-Origin", "*");
}

/** Koa's context as the exchange the handlers take (it has every member; `params` once the router matched). */
function exchangeOf(ctx: Koa.Context): RpcExchange {
  return ctx as unknown as RpcExchange;
}

/** A request listener for the routes that skip Koa: it answers and returns true, or returns false (not one of them). */
type PlainRoute = (req: IncomingMessage, res: ServerResponse) => boolean;

/** The plain routes of each app `createApp` made (`listen` looks them up). */
const PLAIN_ROUTES = new WeakMap<Koa<any, any>, PlainRoute>();

/** POST /rpc/v1/<name> and /api/v1/paymaster/<name> (the plain form only), run as Koa would run them. */
function plainRpcRoute(logger: Logger, handlers: Record<string, (x: RpcExchange) => Promise<void>>): PlainRoute {
  return (req, res) => {
    if (req.method !== "POST") return false;
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const match = RPC_PATH.exec(path);
    if (!match) return false;
    const x = plainExchange(req, path, q < 0 ? "" : url.slice(q + 1), { network: match[2]! });
    allowAnyOrigin(x);
    const handler = handlers[match[1]!]!;
    serveRequest(x, logger, () => handler(x)).then(
      () => sendExchange(res, x),
      (error: unknown) => {
        // serveRequest renders every error: only a failure to do even that lands here.
        logger.error({ err: error, requestId: x.state.requestId }, "unhandled application error");
        res.destroy();
      },
    );
    return true;
  };
}

// ---------------------------------------------------------------------------------------------------------
// Serving

export interface ListenOptions {
  /** A loopback address: 127.0.0.0/8 or ::1. Anything else is refused. */
  host: string;
  /** 0 picks a free port. */
  port: number;
}

export interface RunningServer {
  /** e.g. http://127.0.0.1:8080 */
  readonly url: string;
  readonly server: Server;
  /** Stops accepting, lets in-flight requests finish (at most `SHUTDOWN_GRACE_MS`), then resolves. */
  close(): Promise<void>;
}

/** Server timeouts: slow clients cannot hold a connection or a request open for long. */
export const SERVER_TIMEOUTS = Object.freeze({
  /** Time to receive the request headers. */
  headersTimeoutMs: 10_000,
  /** Time to receive the whole request (headers and body). */
  requestTimeoutMs: 30_000,
  /** Idle time of a kept-alive connection between requests. */
  keepAliveTimeoutMs: 5_000,
  /** Inactivity of a socket (no bytes either way) before it is closed. */
  socketTimeoutMs: 120_000,
});

export const SHUTDOWN_GRACE_MS = 10_000;

/** Whether `host` is a literal loopback address (127.0.0.0/8 or ::1); host names are not resolved. */
export function isLoopbackHost(host: string): boolean {
  if (isIPv4(host)) return host.startsWith("127.");
  if (isIPv6(host)) {
    const lower = host.toLowerCase();
    return lower === "::1" || lower === "0:0:0:0:0:0:0:1" || /^::ffff:127\.\d+\.\d+\.\d+$/.test(lower);
  }
  return false;
}

/** Koa's listener for `app`, after the plain routes `createApp` gave it (if any). */
function requestListener(app: Koa<any, any>): RequestListener {
  const koa = app.callback();
  const plain = PLAIN_ROUTES.get(app);
  if (!plain) return koa;
  return (req, res) => {
    if (!plain(req, res)) void koa(req, res);
  };
}

/** Serves `app` on a loopback address; refuses any other host. */
export async function listen(app: Koa<any, any>, options: ListenOptions): Promise<RunningServer> {
  const { host, port } = options;
  if (!isLoopbackHost(host)) {
    throw new Error(`Refusing to listen on ${JSON.stringify(host)}: only loopback addresses (127.0.0.0/8, ::1) are allowed`);
  }
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`Invalid port ${port}`);

  const server = createServer(
    {
      headersTimeout: SERVER_TIMEOUTS.headersTimeoutMs,
      requestTimeout: SERVER_TIMEOUTS.requestTimeoutMs,
      keepAliveTimeout: SERVER_TIMEOUTS.keepAliveTimeoutMs,
    },
    requestListener(app),
  );
  server.headersTimeout = SERVER_TIMEOUTS.headersTimeoutMs;
  server.requestTimeout = SERVER_TIMEOUTS.requestTimeoutMs;
  server.keepAliveTimeout = SERVER_TIMEOUTS.keepAliveTimeoutMs;
  server.setTimeout(SERVER_TIMEOUTS.socketTimeoutMs);

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
      force.unref();
      server.close(() => {
        clearTimeout(force);
        resolve();
      });
      server.closeIdleConnections();
    });
    return closing;
  };
  return { url, server, close };
}
