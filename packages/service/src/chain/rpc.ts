/**
 * A minimal JSON-RPC client for one node URL. We call the node directly (not through a library transport)
 * because simulation needs the exact revert data of eth_call errors, whatever shape the node gives them.
 */
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

export function createChainRpc(url: string, { timeoutMs = 10_000 }: { timeoutMs?: number } = {}): ChainRpc {
  let nextId = 1;
  return {
    url,
    async request<T>(method: string, params: unknown[]): Promise<T> {
      let response: Response;
      try {
        response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch {
        throw new RpcError("CHAIN_UNAVAILABLE");
      }
      let body: { result?: T; error?: JsonRpcErrorBody };
      try {
        body = (await response.json()) as typeof body;
      } catch {
        throw new RpcError("CHAIN_UNAVAILABLE");
      }
      if (body.error) throw new NodeError(body.error);
      if (!("result" in body)) throw new RpcError("CHAIN_UNAVAILABLE");
      return body.result as T;
    },
  };
}
