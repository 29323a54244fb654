/**
 * The webhook events' bodies (pure): what each event type carries. The store renders a body once, when it writes
 * the outbox row, and every attempt sends those exact bytes (the signature covers them). Amounts are decimal
 * strings (wei does not fit a JSON number), times unix seconds. docs/webhooks.md lists every field.
 */
import { randomUUID } from "node:crypto";
import type { SponsorshipRecord, WebhookEventType } from "../store/types.ts";

/** A new event id: receivers de-duplicate by it (a retry or a replay carries the same id). */
export function newEventId(): string {
  return `evt_${randomUUID().replaceAll("-", "")}`;
}

/** The body of one event: the same envelope for every type. */
export function eventBody(id: string, type: WebhookEventType, projectId: string, createdAt: number, data: Record<string, unknown>): string {
  const [head, middle, tail] = eventBodyParts(type, createdAt, data);
  return `${head}${id}${middle}${projectId}${tail}`;
}

/**
 * The envelope around the two strings the database fills in when it writes the outbox rows (store/webhookRows.ts):
 * head + id + middle + projectId + tail is the body (`{"id", "type", "createdAt", "projectId", "data"}`). Both are
 * plain tokens (an event id, a project id: no character JSON would escape).
 */
export function eventBodyParts(type: WebhookEventType, createdAt: number, data: Record<string, unknown>): [head: string, middle: string, tail: string] {
  return ['{"id":"', `","type":${JSON.stringify(type)},"createdAt":${createdAt},"projectId":"`, `","data":${JSON.stringify(data)}}`];
}

/** What every sponsorship event says about its sponsorship. */
export function sponsorshipData(record: SponsorshipRecord): Record<string, unknown> {
  return {
    sponsorshipId: record.id,
    network: record.network,
    entryPoint: record.entryPoint,
    version: record.version,
    sender: record.sender,
    nonce: record.nonce.toString(),
    mode: record.mode,
    strategyId: record.strategyId,
    apiKeyId: record.apiKeyId,
    userOpHash: record.userOpHash,
    maxCostWei: record.maxCostWei.toString(),
    validUntil: record.validUntil,
    validAfter: record.validAfter,
    ...(record.token === null ? {} : { token: record.token, maxTokenCost: record.maxTokenCost?.toString() ?? null }),
  };
}

/** sponsorship.settled: what the chain charged and where. */
export function settledData(record: SponsorshipRecord): Record<string, unknown> {
  const s = record.settlement;
  return {
    ...sponsorshipData(record),
    ...(s === null
      ? {}
      : {
          actualGasCostWei: s.actualGasCostWei.toString(),
          actualCostUsdMicros: s.actualCostUsdMicros.toString(),
          actualTokenCost: s.actualTokenCost?.toString() ?? null,
          success: s.success,
          txHash: s.txHash,
          blockNumber: s.blockNumber.toString(),
          blockHash: s.blockHash,
          logIndex: s.logIndex,
        }),
  };
}

/** sponsorship.released: why (released after a failure, expired unused, replaced by a newer request for the op). */
export function releasedData(record: SponsorshipRecord, reason: string): Record<string, unknown> {
  return { ...sponsorshipData(record), reason };
}

/** Which endpoint subscriptions receive an event type. */
export function subscribes(events: readonly string[], type: WebhookEventType): boolean {
  return events.includes(type);
}
