/**
 * Administration of webhooks, as plain functions over the store (the admin CLI and API call these): endpoints
 * per project (the secret is generated here and returned once), deliveries and dead letters, replay by id.
 * Input is checked with clear words; a bad value throws StoreError("INVALID_INPUT").
 */
import { StoreError } from "../store/errors.ts";
import { WEBHOOK_EVENT_TYPES, type ApprovalDefault, type Store, type WebhookDelivery, type WebhookDeliveryStatus, type WebhookEndpoint, type WebhookEventType } from "../store/types.ts";
import { APPROVAL_TIMEOUT_RANGE, DEFAULT_APPROVAL_TIMEOUT_MS } from "./approval.ts";
import { staticRefusal, type DestinationPolicy } from "./destination.ts";
import { newWebhookSecret } from "./signature.ts";

/**
 * http(s) only, no credentials in the URL (they would be shown by every listing), and not a destination the
 * policy refuses that can be seen without resolving a name (an internal IP literal, localhost): destination.ts.
 */
export function checkWebhookUrl(url: string, destinations: DestinationPolicy): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StoreError("INVALID_INPUT", "url must be an absolute http:// or https:// URL");
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") throw new StoreError("INVALID_INPUT", "url must be an absolute http:// or https:// URL");
  if (parsed.username !== "" || parsed.password !== "") throw new StoreError("INVALID_INPUT", "url must not contain a user name or password");
  const refusal = staticRefusal(parsed, destinations);
  if (refusal !== undefined) throw new StoreError("INVALID_INPUT", `url: destination refused: ${refusal}`);
  return parsed.toString();
}

export function checkEventTypes(events: readonly string[]): WebhookEventType[] {
  const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (events.length === 0 || unknown.length > 0) {
    throw new StoreError("INVALID_INPUT", `${unknown.length > 0 ? `unknown event type ${unknown.join(", ")}: ` : ""}events must be one or more of ${WEBHOOK_EVENT_TYPES.join(", ")}`);
  }
  return [...new Set(events)] as WebhookEventType[];
}

/** An events endpoint; `secret` is shown this once (store it at the receiver). */
export async function createEventWebhook(
  store: Store,
  input: { projectId: string; url: string; events?: readonly string[] },
  destinations: DestinationPolicy,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const secret = newWebhookSecret();
  const endpoint = await store.createWebhookEndpoint({
    projectId: input.projectId,
    kind: "events",
    url: checkWebhookUrl(input.url, destinations),
    events: checkEventTypes(input.events ?? WEBHOOK_EVENT_TYPES),
    secret,
  });
  return { endpoint, secret };
}

/** The project's approval endpoint (one per project); `secret` is shown this once. */
export async function createApprovalWebhook(
  store: Store,
  input: { projectId: string; url: string; timeoutMs?: number; defaultDecision?: ApprovalDefault },
  destinations: DestinationPolicy,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const timeoutMs = input.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < APPROVAL_TIMEOUT_RANGE.min || timeoutMs > APPROVAL_TIMEOUT_RANGE.max) {
    throw new StoreError("INVALID_INPUT", `timeoutMs must be an integer from ${APPROVAL_TIMEOUT_RANGE.min} to ${APPROVAL_TIMEOUT_RANGE.max}`);
  }
  const defaultDecision = input.defaultDecision ?? "deny";
  if (defaultDecision !== "allow" && defaultDecision !== "deny") throw new StoreError("INVALID_INPUT", "defaultDecision must be 'allow' or 'deny'");
  const secret = newWebhookSecret();
  const endpoint = await store.createWebhookEndpoint({ projectId: input.projectId, kind: "approval", url: checkWebhookUrl(input.url, destinations), secret, timeoutMs, defaultDecision });
  return { endpoint, secret };
}

export function listWebhooks(store: Store, projectId: string): Promise<WebhookEndpoint[]> {
  return store.listWebhookEndpoints(projectId);
}

/** Throws NOT_FOUND for an unknown endpoint. */
export async function deleteWebhook(store: Store, endpointId: string): Promise<void> {
  if (!(await store.deleteWebhookEndpoint(endpointId))) throw new StoreError("NOT_FOUND", `webhook endpoint ${endpointId} not found`);
}

const STATUSES: readonly WebhookDeliveryStatus[] = ["pending", "delivered", "dead"];

/** Deliveries, newest first (`status: "dead"`: the dead-letter list). */
export async function listDeliveries(store: Store, filter: { projectId?: string; status?: string; limit?: number } = {}): Promise<WebhookDelivery[]> {
  if (filter.status !== undefined && !(STATUSES as readonly string[]).includes(filter.status)) {
    throw new StoreError("INVALID_INPUT", `status must be one of ${STATUSES.join(", ")}`);
  }
  return store.listWebhookDeliveries({
    ...(filter.projectId === undefined ? {} : { projectId: filter.projectId }),
    ...(filter.status === undefined ? {} : { status: filter.status as WebhookDeliveryStatus }),
    ...(filter.limit === undefined ? {} : { limit: filter.limit }),
  });
}

export function listDeadLetters(store: Store, projectId?: string): Promise<WebhookDelivery[]> {
  return listDeliveries(store, { ...(projectId === undefined ? {} : { projectId }), status: "dead" });
}

/** Sends a delivered or dead event again (same id, attempts from zero). Throws NOT_FOUND, or INVALID_STATE while pending. */
export async function replayDelivery(store: Store, eventId: string): Promise<void> {
  if (!(await store.replayWebhookDelivery(eventId, Date.now()))) throw new StoreError("NOT_FOUND", `webhook event ${eventId} not found`);
}
