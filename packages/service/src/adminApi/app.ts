/**
 * The admin HTTP API: its own Koa application on its own listener (loopback only, as the public one; off unless
 * PAYMASTER_ADMIN_TOKENS is set), never mounted on the public port. JSON in and out; every call but the
 * OpenAPI document needs `Authorization: Bearer <token>`, compared in constant time against every configured
 * token. The routes (routes.ts) call src/admin — the CLI's functions — with actor "api:<token name>", so every
 * mutating call lands in the audit log.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import Koa from "koa";
import { Router } from "@koa/router";
import type { Logger } from "pino";
import { AdminError } from "../admin/context.ts";
import { listen, type RunningServer } from "../app.ts";
import { readBody } from "../rpc/body.ts";
import { RpcError } from "../rpc/errors.ts";
import type { Store } from "../store/types.ts";
import { ADMIN_API_PREFIX, OPENAPI_PATH, openApiDocument } from "./openapi.ts";
import type { AdminApiOptions, AdminToken } from "./options.ts";
import { ADMIN_ROUTES } from "./routes.ts";

/** Largest admin request body (an apply document with long sender lists fits). */
export const ADMIN_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

const STATUS = { NOT_FOUND: 404, INVALID_INPUT: 400, CONFLICT: 409, UNAUTHORIZED: 401, BODY_TOO_LARGE: 413, INTERNAL: 500 } as const;
type Code = keyof typeof STATUS;

class HttpError extends Error {
  readonly code: Code;
  constructor(code: Code, message: string) {
    super(message);
    this.code = code;
  }
}

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

/**
 * The name of the token presented, else undefined. Both sides are hashed to equal lengths and every configured
 * token is compared (no early exit), so the time taken says nothing about any token.
 */
export function matchToken(tokens: readonly AdminToken[], presented: string): string | undefined {
  const p = digest(presented);
  let name: string | undefined;
  for (const t of tokens) if (timingSafeEqual(p, digest(t.token)) && name === undefined) name = t.name;
  return name;
}

export interface AdminApiDeps {
  store: Store;
  networks: readonly string[];
  logger: Logger;
}

export function createAdminApp(deps: AdminApiDeps, options: AdminApiOptions): Koa {
  const app = new Koa();
  app.silent = true;
  app.on("error", (error: unknown) => deps.logger.error({ err: error }, "admin API: unhandled error"));

  app.use(async (ctx, next) => {
    ctx.set("Cache-Control", "no-store");
    ctx.set("X-Content-Type-Options", "nosniff");
    try {
      await next();
      if (ctx.body === undefined && ctx.status === 404) throw new HttpError("NOT_FOUND", `no admin route ${ctx.method} ${ctx.path.slice(0, 200)} (see ${OPENAPI_PATH})`);
    } catch (err) {
      let code: Code;
      let message: string;
      if (err instanceof AdminError || err instanceof HttpError) [code, message] = [err.code, err.message];
      else if (err instanceof RpcError && err.reason === "BODY_TOO_LARGE") [code, message] = ["BODY_TOO_LARGE", err.message];
      else {
        deps.logger.error({ err, path: ctx.path }, "admin API: internal error");
        [code, message] = ["INTERNAL", "internal error (see the service log)"];
      }
      ctx.status = STATUS[code];
      if (code === "UNAUTHORIZED") ctx.set("WWW-Authenticate", 'Bearer realm="paymaster-admin"');
      ctx.body = { error: { code, message } };
    }
  });

  const router = new Router();
  const document = openApiDocument();
  router.get(OPENAPI_PATH, (ctx) => {
    ctx.body = document;
  });

  // Everything else: the bearer token first.
  app.use(async (ctx, next) => {
    if (ctx.path === OPENAPI_PATH) return next();
    const header = ctx.get("authorization");
    const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
    const name = match ? matchToken(options.tokens, match[1]!) : undefined;
    if (name === undefined) throw new HttpError("UNAUTHORIZED", header === "" ? "missing Authorization: Bearer <admin token>" : "invalid admin token");
    ctx.state.actor = `api:${name}`;
    return next();
  });

  for (const route of ADMIN_ROUTES) {
    router[route.method](ADMIN_API_PREFIX + route.path, async (ctx) => {
      let body: unknown;
      if (route.method !== "get") {
        const raw = await readBody(ctx.req, { limitBytes: ADMIN_BODY_LIMIT_BYTES });
        if (raw.length > 0) {
          try {
            body = JSON.parse(raw.toString("utf8"));
          } catch {
            throw new HttpError("INVALID_INPUT", "the body is not valid JSON");
          }
        }
      }
      const query: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(ctx.query)) {
        if (typeof v !== "string") throw new HttpError("INVALID_INPUT", `query parameter ${k} is given more than once`);
        query[k] = v;
      }
      const admin = { store: deps.store, networks: deps.networks, actor: ctx.state.actor as string };
      const result = await route.handler(admin, { params: ctx.params as Record<string, string>, query, body });
      ctx.status = route.status ?? 200;
      ctx.body = result;
    });
  }
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

/** Serves the admin API on its own loopback listener. */
export function startAdminApi(deps: AdminApiDeps, options: AdminApiOptions): Promise<RunningServer> {
  return listen(createAdminApp(deps, options), { host: options.host, port: options.port });
}
