/** Webhooks: events from the store's outbox, the delivery worker, the approval question, administration. */
export * from "./admin.ts";
export { askApproval, DEFAULT_APPROVAL_TIMEOUT_MS, type ApprovalDecision } from "./approval.ts";
export { SIGNATURE_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, verifySignature, signatureHeader } from "./signature.ts";
export { startWebhookWorker, backoffMs, DEFAULT_DELIVERY, type DeliveryObserver, type DeliverySettings, type WebhookWorker } from "./worker.ts";
