/**
 * Webhook signatures (pure): HMAC-SHA256 with the endpoint's secret over `${timestamp}.${body}`, sent as
 * `X-Paymaster-Signature: t=<unix seconds>,v1=<hex>`. The timestamp is the attempt's, so a receiver can refuse
 * a captured request replayed later (docs/webhooks.md: tolerance and a verify snippet). The approval webhook's
 * request is signed the same way.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "X-Paymaster-Signature";
export const EVENT_ID_HEADER = "X-Paymaster-Event-Id";
export const EVENT_TYPE_HEADER = "X-Paymaster-Event-Type";

/** A new endpoint secret: 32 random bytes, shown once at creation. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

export function signatureHex(secret: string, timestamp: number, body: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

export function signatureHeader(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${signatureHex(secret, timestamp, body)}`;
}

/** The receiver's side (what docs/webhooks.md shows): true when the header is valid and fresh. */
export function verifySignature(secret: string, header: string, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = new Map(header.split(",").map((p) => p.split("=", 2) as [string, string]));
  const t = Number(parts.get("t"));
  const v1 = parts.get("v1") ?? "";
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds || !/^[0-9a-f]{64}$/.test(v1)) return false;
  return timingSafeEqual(Buffer.from(v1, "hex"), Buffer.from(signatureHex(secret, t, body), "hex"));
}
