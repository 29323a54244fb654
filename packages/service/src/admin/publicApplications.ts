/**
 * The public doors of the key application process, on the public listener:
 *
 *   POST /api/v1/applications        {contact, project, networks, use}  -> 202 {id, status: "pending"}
 *   POST /api/v1/applications/claim  {claimToken}                       -> 200 {projectId, apiKeyId, apiKey, networks}
 *
 * Bounded: bodies of at most 8 KiB, a token bucket per client (a few requests a minute; behind a configured
 * trusted proxy, the forwarded address; an IPv6 client's whole /64: access/clientAddress.ts), at most APPLICATION_LIMITS.pending
 * waiting applications, which expire after `applicationExpiryDays`. Answers {error: {code, message}} on
 * refusal. No key is issued without the operator's approval.
 */
import type { Context } from "koa";
import type { ServiceContext } from "../context.ts";
import { clientBucket, requestClientAddress } from "../access/clientAddress.ts";
import { dependencyFailure } from "../dependencies/failure.ts";
import { readBody } from "../rpc/body.ts";
import { memoryBuckets } from "../rateLimit.ts";
import { AdminError, requireSafeText, type AdminContext } from "./context.ts";
import { PUBLIC_PRINCIPAL } from "./roles.ts";
import { claimApplication, submitApplication } from "./applications.ts";

export const APPLICATION_BODY_LIMIT_BYTES = 8 * 1024;
/** Per client address: 5 at once, then one every 12 s. */
export const APPLICATION_RATE = Object.freeze({ rate: 1 / 12, capacity: 5 });

const STATUS = { INVALID_INPUT: 400, UNAUTHORIZED: 401, FORBIDDEN: 403, NOT_FOUND: 404, CONFLICT: 409, UNAVAILABLE: 503 } as const;

export function applicationHandlers(service: ServiceContext) {
  // Per process: applications are rare, and a replica allowing its own 5 at once is still a bound.
  const buckets = memoryBuckets();
  const handle = (action: typeof submitApplication | typeof claimApplication, status: number, what: string) => async (ctx: Context) => {
    ctx.set("Cache-Control", "no-store");
    const client = requestClientAddress(ctx, service.config.trustedProxies);
    const retryAfter = await buckets.take(`${what}:${clientBucket(client, service.config.ipv6ClientPrefix)}`, APPLICATION_RATE);
    if (retryAfter > 0) {
      ctx.status = 429;
      ctx.set("Retry-After", String(Math.ceil(retryAfter)));
      ctx.body = { error: { code: "RATE_LIMITED", message: `too many requests; retry in ${Math.ceil(retryAfter)} s` } };
      return;
    }
    try {
      let body: unknown;
      try {
        body = JSON.parse((await readBody(ctx.req, { limitBytes: APPLICATION_BODY_LIMIT_BYTES })).toString("utf8"));
      } catch (err) {
        if ((err as { reason?: string }).reason === "BODY_TOO_LARGE") {
          ctx.status = 413;
          ctx.body = { error: { code: "BODY_TOO_LARGE", message: `the body is larger than ${APPLICATION_BODY_LIMIT_BYTES} bytes` } };
          return;
        }
        throw new AdminError("INVALID_INPUT", "the body is not valid JSON");
      }
      requireSafeText(body);
      // The public door's principal: an applicant, who may submit and claim and nothing else (admin/roles.ts).
      const admin: AdminContext = {
        store: service.store,
        networks: [...service.networks.keys()],
        actor: `public:${client}`,
        role: PUBLIC_PRINCIPAL,
        applicationExpiryDays: service.config.applicationExpiryDays,
      };
      ctx.body = await action(admin, body);
      ctx.status = status;
    } catch (err) {
      const failure = dependencyFailure(err);
      if (failure) {
        // The database (or another dependency) is away: its name and cause, as every public door answers it.
        ctx.status = STATUS.UNAVAILABLE;
        ctx.body = { error: { code: "UNAVAILABLE", message: failure.message, reason: failure.reason, cause: failure.cause } };
        return;
      }
      if (!(err instanceof AdminError)) throw err;
      ctx.status = STATUS[err.code];
      ctx.body = { error: { code: err.code, message: err.message } };
    }
  };
  return { submit: handle(submitApplication, 202, "submit"), claim: handle(claimApplication, 200, "claim") };
}
