/** A node's JSON-RPC error answer (src/chain/rpc.ts throws it; simulation reads revert data from it). */

/** The JSON-RPC error object of an answer. */
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
    return revertDataOf(this.data);
  }
}

/** Revert data in a JSON-RPC error's `data`, as nodes variously report it (data, data.data, data.result). */
export function revertDataOf(data: unknown): `0x${string}` | undefined {
  const candidates = [data, (data as { data?: unknown } | undefined)?.data, (data as { result?: unknown } | undefined)?.result];
  for (const candidate of candidates) {
    if (typeof candidate === "string" && /^0x([0-9a-fA-F]{2})*$/.test(candidate)) return candidate as `0x${string}`;
  }
  return undefined;
}
