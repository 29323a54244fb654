/**
 * One signed POST to a webhook endpoint, bounded in time: the events' deliveries and the approval question both
 * go through here. Redirects are not followed (a 3xx is a failure: the endpoint is the URL the operator set),
 * the response body is dropped unread beyond what an approval answer needs, and a failure is described by its
 * cause (timed out, connection refused, HTTP status) without the URL's query (it may hold a receiver's token).
 */
import { EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signatureHeader } from "./signature.ts";

/** The largest approval answer read (bytes); events' response bodies are not read at all. */
const MAX_ANSWER_BYTES = 16 * 1024;

export type SendResult = { ok: true; status: number; body: string } | { ok: false; error: string; timedOut: boolean };

export async function sendSigned(
  request: { url: string; secret: string; body: string; id: string; type: string },
  options: { timeoutMs: number; readBody?: boolean; now?: () => number; /** Aborts the request early (shutdown). */ cancel?: AbortSignal },
): Promise<SendResult> {
  const timestamp = Math.floor((options.now?.() ?? Date.now()) / 1000);
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.cancel ? AbortSignal.any([timeout, options.cancel]) : timeout;
  try {
    const response = await fetch(request.url, {
      method: "POST",
      redirect: "manual",
      signal,
      headers: {
        "content-type": "application/json",
        "user-agent": "paymaster-webhooks/1",
        [SIGNATURE_HEADER]: signatureHeader(request.secret, timestamp, request.body),
        [EVENT_ID_HEADER]: request.id,
        [EVENT_TYPE_HEADER]: request.type,
      },
      body: request.body,
    });
    const body = options.readBody ? (await response.text()).slice(0, MAX_ANSWER_BYTES) : "";
    if (!options.readBody) await response.body?.cancel().catch(() => {});
    if (response.status < 200 || response.status > 299) return { ok: false, error: `HTTP ${response.status}`, timedOut: false };
    return { ok: true, status: response.status, body };
  } catch (error) {
    if (options.cancel?.aborted) return { ok: false, error: "cancelled: the service is stopping", timedOut: false };
    if (timeout.aborted) return { ok: false, error: `timed out after ${options.timeoutMs} ms`, timedOut: true };
    return { ok: false, error: describeFailure(error), timedOut: false };
  }
}

/** "connection refused (ECONNREFUSED)" and the like: the cause's code, never a stack or the URL. */
function describeFailure(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code;
  const words: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ECONNRESET: "connection reset",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "host lookup failed",
    UND_ERR_SOCKET: "connection closed",
    ETIMEDOUT: "connection timed out",
  };
  if (code) return `${words[code] ?? "request failed"} (${code})`;
  return "request failed";
}

/** The endpoint's origin and path, for logs (no query, no credentials). */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}
