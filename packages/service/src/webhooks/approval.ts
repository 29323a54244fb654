/**
 * The optional approval webhook: before signing, the project's approval endpoint is asked whether to sponsor
 * this op. It answers 2xx with `{"approve": true}` or `{"approve": false, "reason": "..."}`; anything else — a
 * timeout (the endpoint's `timeoutMs`), a refused connection, a non-2xx status, a body that is not that JSON —
 * is decided by the endpoint's `defaultDecision` ("deny" unless set to "allow"). The request is signed like
 * the events (docs/webhooks.md), so the endpoint knows it comes from this service.
 */
import { randomUUID } from "node:crypto";
import type { WebhookEndpoint } from "../store/types.ts";
import { PUBLIC_ONLY, type DestinationPolicy } from "./destination.ts";
import { sendSigned } from "./send.ts";

export const DEFAULT_APPROVAL_TIMEOUT_MS = 2_000;
export const APPROVAL_TIMEOUT_RANGE = { min: 100, max: 10_000 } as const;
/** The longest refusal reason passed on to the client. */
const MAX_REASON = 200;

export type ApprovalDecision = { approved: true; by: "endpoint" | "default" } | { approved: false; by: "endpoint" | "default"; reason: string };

/** The op as the approval endpoint sees it (amounts as decimal strings). */
export type ApprovalQuestion = Record<string, unknown>;

export async function askApproval(
  endpoint: WebhookEndpoint & { secret: string },
  question: ApprovalQuestion,
  /** `destinations`: where webhooks may go (default: public addresses only). */
  options: { destinations?: DestinationPolicy | undefined; now?: () => number } = {},
): Promise<ApprovalDecision> {
  const now = options.now ?? Date.now;
  const id = `apr_${randomUUID().replaceAll("-", "")}`;
  const timeoutMs = endpoint.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  const body = JSON.stringify({ id, type: "sponsorship.approval", createdAt: Math.floor(now() / 1000), projectId: endpoint.projectId, data: question });
  const result = await sendSigned({ url: endpoint.url, secret: endpoint.secret, body, id, type: "sponsorship.approval" }, { timeoutMs, readBody: true, now, destinations: options.destinations ?? PUBLIC_ONLY });
  const answer = result.ok ? parseAnswer(result.body) : undefined;
  if (answer) return answer.approve ? { approved: true, by: "endpoint" } : { approved: false, by: "endpoint", reason: answer.reason ?? "no reason given" };
  const failure = !result.ok ? result.error : "the answer is not {\"approve\": true|false}";
  if (endpoint.defaultDecision === "allow") return { approved: true, by: "default" };
  return { approved: false, by: "default", reason: `the approval webhook gave no decision (${failure}) and this project denies by default` };
}

function parseAnswer(text: string): { approve: boolean; reason?: string } | undefined {
  try {
    const value = JSON.parse(text) as { approve?: unknown; reason?: unknown };
    if (typeof value !== "object" || value === null || typeof value.approve !== "boolean") return undefined;
    // Printable text only, bounded: the reason goes back to the client inside our error.
    const reason = typeof value.reason === "string" ? value.reason.replace(/[^\x20-\x7e]/g, "").slice(0, MAX_REASON) : undefined;
    return { approve: value.approve, ...(reason ? { reason } : {}) };
  } catch {
    return undefined;
  }
}
