/**
 * The webhook tables' statements and row conversion (migration 4), used by sql/webhooks.ts and sql/shared.ts: endpoints, and the
 * outbox rows the store writes in the same transaction as the change that causes each event.
 */
import { checkEventTypes } from "../webhooks/admin.ts";
import { eventBody, eventBodyParts, newEventId, subscribes } from "../webhooks/events.ts";
import type { Dialect, Statement } from "./db/types.ts";
import { StoreError } from "./errors.ts";
import {
  type ClaimShare,
  type NewWebhookEndpoint,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEventType,
} from "./types.ts";

const ENDPOINT_COLUMNS = "id, project_id, kind, url, events, timeout_ms, default_decision, created_at";
const DELIVERY_COLUMNS = `e.id, e.endpoint_id, e.project_id, e.type, e.sponsorship_id, e.seq, e.payload, e.status, e.attempts,
  e.next_attempt_ms, e.last_error, e.created_ms, e.delivered_ms`;

export const WEBHOOK_QUERIES = {
  insertEndpoint: `INSERT INTO webhook_endpoints (id, project_id, kind, url, events, secret, timeout_ms, default_decision, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  selectEndpoints: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE project_id = ? ORDER BY created_at, id`,
  selectApproval: `SELECT ${ENDPOINT_COLUMNS}, secret FROM webhook_endpoints WHERE project_id = ? AND kind = 'approval'`,
  deleteEndpointEvents: "DELETE FROM webhook_events WHERE endpoint_id = ?",
  deleteEndpoint: "DELETE FROM webhook_endpoints WHERE id = ?",
  // Due, not leased, and not behind an earlier pending event of the same sponsorship for the same endpoint; at most
  // `perEndpoint` per endpoint, ranked so each endpoint's first due event comes before any endpoint's second:
  // one endpoint's backlog never fills a claim (src/webhooks/worker.ts keeps tenants apart with it).
  selectDue: `SELECT id, endpoint_id FROM (
      SELECT e.id, e.endpoint_id, e.next_attempt_ms, e.created_ms, e.seq,
        ROW_NUMBER() OVER (PARTITION BY e.endpoint_id ORDER BY e.next_attempt_ms, e.created_ms, e.seq) AS endpoint_rank
      FROM webhook_events e JOIN webhook_endpoints w ON w.id = e.endpoint_id
      WHERE e.status = 'pending' AND e.next_attempt_ms <= ? AND (e.lease_until_ms IS NULL OR e.lease_until_ms < ?)
        AND NOT EXISTS (SELECT 1 FROM webhook_events p WHERE p.endpoint_id = e.endpoint_id
          AND p.sponsorship_id = e.sponsorship_id AND p.seq < e.seq AND p.status = 'pending')
    ) due
    WHERE endpoint_rank <= ?
    ORDER BY endpoint_rank, next_attempt_ms, created_ms, seq LIMIT ?`,
  // The claim itself: a compare-and-set on the lease (PostgreSQL re-checks the WHERE after a concurrent update).
  claim: `UPDATE webhook_events SET lease_owner = ?, lease_until_ms = ?, attempts = attempts + 1
    WHERE id = ? AND status = 'pending' AND (lease_until_ms IS NULL OR lease_until_ms < ?)`,
  selectClaimed: `SELECT ${DELIVERY_COLUMNS}, w.url, w.secret FROM webhook_events e JOIN webhook_endpoints w ON w.id = e.endpoint_id
    WHERE e.id = ? AND e.lease_owner = ?`,
  complete: `UPDATE webhook_events SET status = ?, next_attempt_ms = ?, last_error = ?, delivered_ms = ?, lease_owner = NULL,
      lease_until_ms = NULL
    WHERE id = ? AND lease_owner = ? AND status = 'pending'`,
  selectDeliveries: `SELECT ${DELIVERY_COLUMNS} FROM webhook_events e JOIN webhook_endpoints w ON w.id = e.endpoint_id
    WHERE (CAST(? AS TEXT) IS NULL OR e.project_id = ?) AND (CAST(? AS TEXT) IS NULL OR e.status = ?)
    ORDER BY e.created_ms DESC, e.seq DESC, e.id DESC LIMIT ?`,
  selectDelivery: `SELECT ${DELIVERY_COLUMNS} FROM webhook_events e WHERE e.id = ?`,
  // Per endpoint: events waiting (pending) and how long the oldest has waited (the backlog metrics).
  backlog: `SELECT e.endpoint_id, e.project_id, COUNT(*) AS pending, MIN(e.created_ms) AS oldest_ms
    FROM webhook_events e WHERE e.status = 'pending' GROUP BY e.endpoint_id, e.project_id`,
  prune: "DELETE FROM webhook_events WHERE status = 'delivered' AND delivered_ms < ?",
  replay: `UPDATE webhook_events SET status = 'pending', attempts = 0, next_attempt_ms = ?, last_error = NULL, delivered_ms = NULL,
      lease_owner = NULL, lease_until_ms = NULL
    WHERE id = ? AND status IN ('delivered', 'dead')`,
} as const;

export interface EndpointRow {
  id: string;
  project_id: string;
  kind: "events" | "approval";
  url: string;
  events: string | null;
  timeout_ms: number | null;
  default_decision: "allow" | "deny" | null;
  created_at: number;
  secret?: string;
}

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  project_id: string;
  type: WebhookEventType;
  sponsorship_id: string | null;
  seq: number;
  payload: string;
  status: WebhookDelivery["status"];
  attempts: number;
  next_attempt_ms: number;
  last_error: string | null;
  created_ms: number;
  delivered_ms: number | null;
}

/**
 * Which of the due rows (ranked by selectDue) a claim takes: up to `limit`, and per endpoint no more than its room
 * (`share.room`, else `share.perEndpoint`). Pure, so the store's claim stays a loop of compare-and-sets.
 */
export function pickDue<T extends { endpoint_id: string }>(due: readonly T[], limit: number, share: ClaimShare): T[] {
  const taken = new Map<string, number>();
  const picked: T[] = [];
  for (const row of due) {
    if (picked.length >= limit) break;
    const n = taken.get(row.endpoint_id) ?? 0;
    if (n >= Math.min(share.room.get(row.endpoint_id) ?? share.perEndpoint, share.perEndpoint)) continue;
    taken.set(row.endpoint_id, n + 1);
    picked.push(row);
  }
  return picked;
}

/** How many due rows to read so that `limit` remain after the endpoints with less room are skipped. */
export function dueReadLimit(limit: number, share: ClaimShare): number {
  let skipped = 0;
  for (const room of share.room.values()) skipped += share.perEndpoint - Math.max(Math.min(room, share.perEndpoint), 0);
  return limit + skipped;
}

export function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    projectId: row.project_id,
    kind: row.kind,
    url: row.url,
    events: row.events === null ? [] : (JSON.parse(row.events) as WebhookEventType[]),
    timeoutMs: row.timeout_ms === null ? null : Number(row.timeout_ms),
    defaultDecision: row.default_decision,
    createdAt: Number(row.created_at),
  };
}

export function toDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    projectId: row.project_id,
    type: row.type,
    sponsorshipId: row.sponsorship_id,
    seq: Number(row.seq),
    payload: row.payload,
    status: row.status,
    attempts: Number(row.attempts),
    nextAttemptMs: Number(row.next_attempt_ms),
    lastError: row.last_error,
    createdMs: Number(row.created_ms),
    deliveredMs: row.delivered_ms === null ? null : Number(row.delivered_ms),
  };
}

/** Checks an endpoint before it is stored (the admin functions check the URL's shape first, with clearer words). */
export function validEndpoint(input: NewWebhookEndpoint): { events: string | null; timeoutMs: number | null; defaultDecision: string | null } {
  if (input.kind !== "events" && input.kind !== "approval") throw new StoreError("INVALID_INPUT", "kind must be 'events' or 'approval'");
  if (typeof input.secret !== "string" || input.secret.length < 16) throw new StoreError("INVALID_INPUT", "a webhook secret is required");
  if (input.kind === "approval") {
    return { events: null, timeoutMs: input.timeoutMs ?? null, defaultDecision: input.defaultDecision ?? "deny" };
  }
  return { events: JSON.stringify(checkEventTypes(input.events ?? [])), timeoutMs: null, defaultDecision: null };
}

/** An event to write to the outbox (store/types.ts WebhookEventType). */
export interface OutboxEvent {
  /** Its project's subscribers, or every project's when null. */
  projectId: string | null;
  type: WebhookEventType;
  data: Record<string, unknown>;
  /** A sponsorship's events are numbered per endpoint (`seq`), in the order its transitions happen. */
  sponsorshipId?: string;
  /** At most one row per (endpoint, dedupe key). */
  dedupeKey?: string;
}

function eventSql(d: Dialect): string {
  // The event id is made once per endpoint row (MATERIALIZED: never re-evaluated) and written twice: as the row's
  // id and inside the payload.
  return `WITH x AS MATERIALIZED (
      SELECT e.id AS endpoint_id, e.project_id, ${d.newEventId} AS event_id FROM webhook_endpoints e
      WHERE e.kind = 'events' AND (CAST(? AS TEXT) IS NULL OR e.project_id = ?) AND CAST(e.events AS TEXT) LIKE ?
    )
    INSERT INTO webhook_events (id, endpoint_id, project_id, type, sponsorship_id, seq, dedupe_key, payload, status, attempts,
      next_attempt_ms, created_ms)
    SELECT x.event_id, x.endpoint_id, x.project_id, ?, CAST(? AS TEXT),
      CASE WHEN CAST(? AS TEXT) IS NULL THEN 0
        ELSE COALESCE((SELECT MAX(w.seq) FROM webhook_events w WHERE w.endpoint_id = x.endpoint_id AND w.sponsorship_id = ?), 0) + 1 END,
      CAST(? AS TEXT), ? || x.event_id || ? || x.project_id || ?, 'pending', 0, ?, ?
    FROM x WHERE 1 = 1
    ON CONFLICT (endpoint_id, dedupe_key) DO NOTHING
    RETURNING id`;
}

const eventSqls = new Map<string, string>();

/**
 * The statement that writes one outbox row per endpoint subscribed to the event's type (of its project, or of
 * every project), answering a row per outbox row written. Run inside the transaction (or batch) that makes the
 * change the event tells of: a sponsorship's transitions hold its row, so two never number alike.
 */
export function eventStatement(d: Dialect, event: OutboxEvent, nowMs: number): Statement {
  let sql = eventSqls.get(d.name);
  if (sql === undefined) eventSqls.set(d.name, (sql = eventSql(d)));
  const [head, middle, tail] = eventBodyParts(event.type, Math.floor(nowMs / 1000), event.data);
  const sponsorship = event.sponsorshipId ?? null;
  return {
    sql,
    params: [event.projectId, event.projectId, `%${JSON.stringify(event.type)}%`, event.type, sponsorship, sponsorship, sponsorship, event.dedupeKey ?? null, head, middle, tail, nowMs, nowMs],
  };
}

/** A project's events endpoint as the caller knows it (under a config version the batch checks). */
export interface KnownEndpoint {
  id: string;
  projectId: string;
  events: readonly string[];
}

const KNOWN_ENDPOINT_EVENT = `INSERT INTO webhook_events (id, endpoint_id, project_id, type, sponsorship_id, seq, dedupe_key, payload, status,
    attempts, next_attempt_ms, created_ms)
  VALUES (?, ?, ?, ?, CAST(? AS TEXT), CASE WHEN CAST(? AS TEXT) IS NULL THEN 0
    ELSE COALESCE((SELECT MAX(w.seq) FROM webhook_events w WHERE w.endpoint_id = ? AND w.sponsorship_id = ?), 0) + 1 END,
    CAST(? AS TEXT), ?, 'pending', 0, ?, ?)
  ON CONFLICT (endpoint_id, dedupe_key) DO NOTHING`;

/**
 * The outbox rows of an event for endpoints the caller already knows (the reservation's, under its config
 * version): one plain insert per subscribed endpoint, none when nobody subscribes — what most projects cost then.
 */
export function knownEndpointEvents(event: OutboxEvent, endpoints: readonly KnownEndpoint[], nowMs: number): Statement[] {
  const sponsorship = event.sponsorshipId ?? null;
  return endpoints
    .filter((e) => (event.projectId === null || e.projectId === event.projectId) && subscribes(e.events, event.type))
    .map((e) => {
      const id = newEventId();
      const payload = eventBody(id, event.type, e.projectId, Math.floor(nowMs / 1000), event.data);
      return { sql: KNOWN_ENDPOINT_EVENT, params: [id, e.id, e.projectId, event.type, sponsorship, sponsorship, e.id, sponsorship, event.dedupeKey ?? null, payload, nowMs, nowMs] };
    });
}
