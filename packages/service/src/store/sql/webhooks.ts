/**
 * The store's part for webhooks: a project's endpoints (events, or its one approval endpoint) and the outbox of
 * deliveries, claimed under a lease by the delivery workers. Statements and row conversion: ../webhookRows.ts.
 */
import { randomUUID } from "node:crypto";
import * as validation from "../validation.ts";
import type { Param } from "../db/types.ts";
import { StoreError } from "../errors.ts";
import { WEBHOOK_QUERIES as W, dueReadLimit, pickDue, toDelivery, toEndpoint, validEndpoint, eventStatement, type DeliveryRow, type EndpointRow } from "../webhookRows.ts";
import type { ClaimShare, WebhookBacklog, ClaimedDelivery, DeliveryOutcome, NewWebhookEndpoint, NewWebhookEvent, Store, WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint } from "../types.ts";
import { isForeignKey, isUnique, nowMs, type SqlShared } from "./shared.ts";

export function webhookStore(s: SqlShared) {
  const { db } = s;

  async function getWebhookDelivery(id: string): Promise<WebhookDelivery | undefined> {
    const row = await db.one<DeliveryRow>(W.selectDelivery, [id]);
    return row && toDelivery(row);
  }

  return {
    async createWebhookEndpoint(input: NewWebhookEndpoint): Promise<WebhookEndpoint> {
      const valid = validEndpoint(input);
      const row: EndpointRow = {
        id: `whe_${randomUUID().replaceAll("-", "")}`,
        project_id: input.projectId,
        kind: input.kind,
        url: input.url,
        events: valid.events,
        timeout_ms: valid.timeoutMs,
        default_decision: valid.defaultDecision as EndpointRow["default_decision"],
        created_at: validation.nowSeconds(),
      };
      try {
        await db.run(W.insertEndpoint, [row.id, row.project_id, row.kind, row.url, row.events, input.secret, row.timeout_ms, row.default_decision, row.created_at]);
      } catch (err) {
        if (isForeignKey(s, err)) throw new StoreError("NOT_FOUND", `project ${input.projectId} not found`);
        if (isUnique(s, err)) throw new StoreError("DUPLICATE", `project ${input.projectId} already has an approval webhook: delete it first`);
        throw err;
      }
      return toEndpoint(row);
    },

    async listWebhookEndpoints(projectId: string): Promise<WebhookEndpoint[]> {
      return (await db.all<EndpointRow>(W.selectEndpoints, [projectId])).map(toEndpoint);
    },

    async getApprovalEndpoint(projectId: string): Promise<(WebhookEndpoint & { secret: string }) | undefined> {
      const row = await db.one<EndpointRow>(W.selectApproval, [projectId]);
      return row && { ...toEndpoint(row), secret: row.secret! };
    },

    async deleteWebhookEndpoint(id: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        await tx.run(W.deleteEndpointEvents, [id]);
        return (await tx.run(W.deleteEndpoint, [id])) === 1;
      });
    },

    async emitWebhookEvent(event: NewWebhookEvent): Promise<number> {
      const st = eventStatement(db.dialect, { projectId: event.projectId, type: event.type, data: event.data, ...(event.dedupeKey === undefined ? {} : { dedupeKey: event.dedupeKey }) }, nowMs());
      return (await db.batch([st]))[0]!.length;
    },

    async claimWebhookDeliveries(owner: string, now: number, leaseMs: number, limit: number, share?: ClaimShare): Promise<ClaimedDelivery[]> {
      const fair = share ?? { perEndpoint: limit, room: new Map<string, number>() };
      const ranked = await db.all<{ id: string; endpoint_id: string }>(W.selectDue, [now, now, fair.perEndpoint, dueReadLimit(limit, fair)]);
      const claimed: ClaimedDelivery[] = [];
      for (const { id } of pickDue(ranked, limit, fair)) {
        if ((await db.run(W.claim, [owner, now + leaseMs, id, now])) !== 1) continue; // another worker has it
        const row = await db.one<DeliveryRow & { url: string; secret: string }>(W.selectClaimed, [id, owner]);
        if (row) claimed.push({ ...toDelivery(row), url: row.url, secret: row.secret });
      }
      return claimed;
    },

    async webhookBacklog(): Promise<WebhookBacklog[]> {
      const rows = await db.all<{ endpoint_id: string; project_id: string; pending: number | string; oldest_ms: number | string }>(W.backlog, []);
      return rows.map((r) => ({ endpointId: r.endpoint_id, projectId: r.project_id, pending: Number(r.pending), oldestMs: Number(r.oldest_ms) }));
    },

    async completeWebhookDelivery(id: string, owner: string, outcome: DeliveryOutcome, now: number): Promise<boolean> {
      const values: Param[] = outcome.delivered
        ? ["delivered", now, null, now]
        : outcome.retryAtMs === undefined
          ? ["dead", now, outcome.error, null]
          : ["pending", outcome.retryAtMs, outcome.error, null];
      return (await db.run(W.complete, [...values, id, owner])) === 1;
    },

    async listWebhookDeliveries(filter: { projectId?: string; status?: WebhookDeliveryStatus; limit?: number }): Promise<WebhookDelivery[]> {
      const project = filter.projectId ?? null;
      const status = filter.status ?? null;
      const limit = Math.min(Math.max(Math.trunc(filter.limit ?? 100), 1), 1000);
      return (await db.all<DeliveryRow>(W.selectDeliveries, [project, project, status, status, limit])).map(toDelivery);
    },

    getWebhookDelivery,

    async pruneWebhookDeliveries(beforeMs: number): Promise<number> {
      return db.run(W.prune, [beforeMs]);
    },

    async replayWebhookDelivery(id: string, now: number): Promise<boolean> {
      if ((await db.run(W.replay, [now, id])) === 1) return true;
      const row = await getWebhookDelivery(id);
      if (!row) return false;
      throw new StoreError("INVALID_STATE", `webhook event ${id} is still pending: it is delivered by itself`);
    },
  } satisfies Partial<Store>;
}
