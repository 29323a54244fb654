/**
 * A minimal JSON-RPC client for one node URL. We call the node directly (not through a library transport)
 * because simulation needs the exact revert data of eth_call errors, whatever shape the node gives them.
 */
import { Agent as HttpAgent, request as httpRequest, type RequestOptions } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { urlToHttpOptions } from "node:url";
import { RpcError } from "../rpc/errors.ts";

export interface JsonRpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

/** The node answered with a JSON-RPC error (e.g. an eth_call that reverted). */
export class NodeError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(body: JsonRpcErrorBody) {
    super(body.message);
    this.name = "NodeError";
    this.code = body.code;
    this.data = body.data;
  }

  /** Revert data of a failed eth_call, as nodes variously report it (data, data.data, data.result). */
  get revertData(): `0x${string}` | undefined {
    const candidates = [this.data, (this.data as { data?: unknown })?.data, (this.data as { result?: unknown })?.result];
    for (const candidate of candidates) {
      if (typeof candidate === "string" && /^0x([0-9a-fA-F]{2})*$/.test(candidate)) return candidate as `0x${string}`;
    }
    return undefined;
  }
}

export interface ChainRpc {
  readonly url: string;
  request<T>(method: string, params: unknown[]): Promise<T>;
}

/** Keep-alive connection pools for chain RPC, one per protocol, shared by every network's client. */
const agents = { "http:": new HttpAgent({ keepAlive: true }), "https:": new HttpsAgent({ keepAlive: true }) };

/** Request options of an http(s) URL, else undefined (the URL cannot be reached over HTTP). */
function httpOptions(url: string): { protocol: "http:" | "https:"; options: RequestOptions } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return undefined;
  return { protocol: parsed.protocol, options: urlToHttpOptions(parsed) };
}

/**
 * node:http rather than fetch: the service posts ~45 kB bodies (v0.7 simulations carry the simulation code
 * as a state override) several times per sponsorship, and fetch's request setup and web streams cost the
 * service several times more CPU than a plain http request on a keep-alive socket.
 */
export function createChainRpc(url: string, { timeoutMs = 10_000 }: { timeoutMs?: number } = {}): ChainRpc {
  let nextId = 1;
  // Parsed once: given a URL object, http.request converts it to options on every call.
  const target = httpOptions(url);
  const send = target?.protocol === "https:" ? httpsRequest : httpRequest;
  const agent = target?.protocol === "https:" ? agents["https:"] : agents["http:"];

  /** POSTs `payload`; the response body whatever the status (as fetch did); rejects on a transport failure or the timeout. */
  function post(payload: string): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      if (!target) throw new Error("not an http(s) URL");
      const req = send({
        ...target.options,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload), accept: "application/json" },
      });
      // The whole exchange (connect, send, receive) within timeoutMs, like fetch's AbortSignal.timeout.
      const timer = setTimeout(() => req.destroy(new Error("timeout")), timeoutMs);
      timer.unref();
      const fail = (error: unknown): void => {
        clearTimeout(timer);
        reject(error);
      };
      req.on("error", fail);
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", fail);
        res.on("close", () => {
          if (!res.complete) fail(new Error("the response broke off"));
        });
        res.on("end", () => {
          clearTimeout(timer);
          resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
        });
      });
      req.end(payload);
    });
  }

  return {
    url,
    async request<T>(method: string, params: unknown[]): Promise<T> {
      let raw: Buffer;
      try {
        raw = await post(JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }));
      } catch {
        throw new RpcError("CHAIN_UNAVAILABLE");
      }
      let body: { result?: T; error?: JsonRpcErrorBody };
      try {
        body = JSON.parse(raw.toString("utf8")) as typeof body;
      } catch {
        throw new RpcError("CHAIN_UNAVAILABLE");
      }
      if (body.error) throw new NodeError(body.error);
      if (!("result" in body)) throw new RpcError("CHAIN_UNAVAILABLE");
      return body.result as T;
    },
  };
}
