/**
 * Webhooks, as the operator administers them (CLI `paymaster webhook …` and the admin API): endpoints per
 * project (the secret shown once, never in the audit log), deliveries, the dead-letter list, replay by id.
 * The work is src/webhooks/admin.ts; here the operator's doors get audit rows and AdminErrors.
 */
import { createApprovalWebhook, createEventWebhook, deleteWebhook, listDeliveries, listWebhooks, replayDelivery } from "../webhooks/admin.ts";
import type { ApprovalDefault, WebhookDelivery, WebhookEndpoint } from "../store/types.ts";
import { PUBLIC_ONLY } from "../webhooks/destination.ts";
import { redactUrl } from "../text/redactUrl.ts";
import { audit, guarded, type AdminContext, mutation, read } from "./context.ts";
import { isRole, roleIncludes, type Principal } from "./roles.ts";

/** An endpoint as listed and audited: never its secret. */
function view(endpoint: WebhookEndpoint): Omit<WebhookEndpoint, "secret"> {
  const { secret: _secret, ...rest } = endpoint as WebhookEndpoint & { secret?: string };
  return rest;
}

/**
 * A receiver's URL as `principal` may see it: whole for an operator (who sets it), else its scheme and host only
 * ("https://hooks.example/…"), since a receiver's path or query often holds its own token.
 */
export function webhookUrlFor(principal: Principal, url: string): string {
  return seesWebhookUrls(principal) ? url : redactUrl(url);
}

/** Whether `principal` sees webhook URLs whole (an operator or admin: a receiver's token may sit in the path or query). */
export function seesWebhookUrls(principal: Principal): boolean {
  return isRole(principal) && roleIncludes(principal, "operator");
}

export const createWebhook = mutation("operator", async function createWebhook(
  ctx: AdminContext,
  input: { projectId: string; url: string; kind?: "events" | "approval"; events?: readonly string[]; timeoutMs?: number; defaultDecision?: ApprovalDefault },
): Promise<{ endpoint: Omit<WebhookEndpoint, "secret">; secret: string }> {
  // The running service's policy (admin API), the configuration's (CLI), else public addresses only.
  const destinations = ctx.webhookDestinations ?? ctx.service?.webhookDestinations ?? PUBLIC_ONLY;
  const created = await guarded(() =>
    input.kind === "approval"
      ? createApprovalWebhook(ctx.store, {
          projectId: input.projectId,
          url: input.url,
          ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
          ...(input.defaultDecision === undefined ? {} : { defaultDecision: input.defaultDecision }),
        }, destinations)
      : createEventWebhook(ctx.store, { projectId: input.projectId, url: input.url, ...(input.events ? { events: input.events } : {}) }, destinations),
  );
  await audit(ctx, "webhook.create", created.endpoint.id, null, view(created.endpoint));
  return { endpoint: view(created.endpoint), secret: created.secret };
});

/** A project's endpoints; a viewer sees each URL's scheme and host only (webhookUrlFor). */
export const listProjectWebhooks = read("viewer", async function listProjectWebhooks(ctx: AdminContext, projectId: string): Promise<Omit<WebhookEndpoint, "secret">[]> {
  return (await guarded(() => listWebhooks(ctx.store, projectId))).map((endpoint) => ({ ...view(endpoint), url: webhookUrlFor(ctx.role, endpoint.url) }));
});

export const removeWebhook = mutation("operator", async function removeWebhook(ctx: AdminContext, endpointId: string): Promise<{ deleted: string }> {
  await guarded(() => deleteWebhook(ctx.store, endpointId));
  await audit(ctx, "webhook.delete", endpointId, null, null);
  return { deleted: endpointId };
});

/** Deliveries, newest first; `status: "dead"` is the dead-letter list. */
export const webhookDeliveries = read("viewer", function webhookDeliveries(ctx: AdminContext, filter: { projectId?: string; status?: string; limit?: number }): Promise<WebhookDelivery[]> {
  return guarded(() => listDeliveries(ctx.store, filter));
});

export const replayWebhook = mutation("operator", async function replayWebhook(ctx: AdminContext, eventId: string): Promise<{ replayed: string }> {
  await guarded(() => replayDelivery(ctx.store, eventId));
  await audit(ctx, "webhook.replay", eventId, null, null);
  return { replayed: eventId };
});
