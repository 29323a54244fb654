/**
 * One signed POST to a webhook endpoint, bounded in time: the events' deliveries and the approval question both
 * go through here. The destination is checked on the address the host resolves to and the connection made to
 * that very address (destination.ts). Redirects are not followed (a 3xx is a failure: the endpoint is the URL the operator set),
 * the response body is dropped unread beyond what an approval answer needs, and a failure is described by its
 * cause (timed out, connection refused, HTTP status) without the URL's query (it may hold a receiver's token).
 */
import http from "node:http";
import https from "node:https";
import type { BlockList, LookupFunction } from "node:net";
import { resolveDestination, socketBlockList, type DestinationPolicy, type ResolvedAddress } from "./destination.ts";
import { EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signatureHeader } from "./signature.ts";

/** The largest approval answer read (bytes); events' response bodies are not read at all. */
const MAX_ANSWER_BYTES = 16 * 1024;

export type SendResult = { ok: true; status: number; body: string } | { ok: false; error: string; timedOut: boolean };

/** A lookup that answers the already checked address, whatever is asked: the connection goes where the check looked. */
function pinned(address: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, all: ResolvedAddress[]) => void)(null, [address]);
    else callback(null, address.address, address.family);
  };
}

export async function sendSigned(
  request: { url: string; secret: string; body: string; id: string; type: string },
  options: {
    timeoutMs: number;
    /** Where this service may send (destination.ts): checked on the resolved address, which is then the one connected to. */
    destinations: DestinationPolicy;
    readBody?: boolean;
    now?: () => number;
    /** Aborts the request early (shutdown). */ cancel?: AbortSignal;
  },
): Promise<SendResult> {
  const timestamp = Math.floor((options.now?.() ?? Date.now()) / 1000);
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.cancel ? AbortSignal.any([timeout, options.cancel]) : timeout;
  try {
    const url = new URL(request.url);
    // The name's resolution counts toward the attempt's time like the request itself.
    const destination = await Promise.race([resolveDestination(url, options.destinations), aborted(signal)]);
    if ("refused" in destination) return { ok: false, error: destination.refused, timedOut: false };
    const response = await post(url, destination.address, {
      signal,
      blockList: socketBlockList(destination.address.address, options.destinations),
      headers: {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(request.body)),
        "user-agent": "paymaster-webhooks/1",
        [SIGNATURE_HEADER]: signatureHeader(request.secret, timestamp, request.body),
        [EVENT_ID_HEADER]: request.id,
        [EVENT_TYPE_HEADER]: request.type,
      },
      body: request.body,
      readBody: options.readBody === true,
    });
    // Redirects are not followed: a 3xx is a failure like any other non-2xx.
    if (response.status < 200 || response.status > 299) return { ok: false, error: `HTTP ${response.status}`, timedOut: false };
    return { ok: true, status: response.status, body: response.body };
  } catch (error) {
    if (options.cancel?.aborted) return { ok: false, error: "cancelled: the service is stopping", timedOut: false };
    if (timeout.aborted) return { ok: false, error: `timed out after ${options.timeoutMs} ms`, timedOut: true };
    return { ok: false, error: describeFailure(error), timedOut: false };
  }
}

/** Rejects when `signal` aborts (never resolves). */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/** One POST to `address` (the URL's host checked and resolved), reading at most MAX_ANSWER_BYTES of the answer when asked. */
function post(
  url: URL,
  address: ResolvedAddress,
  options: { signal: AbortSignal; blockList: BlockList | undefined; headers: Record<string, string>; body: string; readBody: boolean },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http;
    const connect = { lookup: pinned(address), ...(options.blockList ? { blockList: options.blockList } : {}) };
    const req = client.request(url, { method: "POST", headers: options.headers, signal: options.signal, agent: false, ...connect }, (res) => {
      const status = res.statusCode ?? 0;
      if (!options.readBody) {
        res.destroy();
        resolve({ status, body: "" });
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= MAX_ANSWER_BYTES) res.destroy();
      });
      const done = () => resolve({ status, body: Buffer.concat(chunks).toString("utf8").slice(0, MAX_ANSWER_BYTES) });
      res.on("end", done);
      res.on("close", done);
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

/** "connection refused (ECONNREFUSED)" and the like: the cause's code, never a stack or the URL. */
function describeFailure(error: unknown): string {
  const code = (error as { code?: string })?.code ?? (error as { cause?: { code?: string } })?.cause?.code;
  const words: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ECONNRESET: "connection reset",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "host lookup failed",
    UND_ERR_SOCKET: "connection closed",
    ETIMEDOUT: "connection timed out",
    ECONNABORTED: "connection aborted",
    ERR_IP_BLOCKED: "destination refused",
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
