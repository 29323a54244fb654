/**
 * The error catalogue: every refusal the service can answer, with a stable `reason` (UPPER_SNAKE), the
 * v1 dialect's HTTP status, and the JSON-RPC 2.0 code the standard dialect uses. A handler throws
 * `RpcError`; only the envelope decides how it is rendered. A dependency that failed is answered by its name
 * (CHAIN_UNAVAILABLE, STORE_UNAVAILABLE, SIGNER_UNAVAILABLE, BUNDLER_UNAVAILABLE: 503 with a `cause`;
 * src/dependencies/failure.ts turns the store's StoreUnavailableError into STORE_UNAVAILABLE). Anything else
 * that is not an RpcError becomes INTERNAL_ERROR with a generic message: no stack trace or internal text ever
 * reaches a client. At the bottom of the house: it imports nothing of ours.
 */
export interface ReasonSpec {
  /** v1 dialect: HTTP status and envelope `code`. */
  readonly status: number;
  /** Standard dialect: JSON-RPC error code (EIP-1474 / ERC-7769). */
  readonly jsonRpcCode: number;
  /** Default message when the thrower gives none. */
  readonly message: string;
}

export const REASONS = {
  // ---- the request itself
  PARSE_ERROR: { status: 400, jsonRpcCode: -32700, message: "The body is not valid JSON" },
  INVALID_REQUEST: { status: 400, jsonRpcCode: -32600, message: "The request envelope is invalid" },
  BODY_TOO_LARGE: { status: 413, jsonRpcCode: -32600, message: "The request body is too large" },
  ROUTE_NOT_FOUND: { status: 404, jsonRpcCode: -32601, message: "No such endpoint: use POST /api/v1/paymaster/<network>?apiKey=<API_KEY>" },
  METHOD_NOT_FOUND: { status: 404, jsonRpcCode: -32601, message: "Unknown method" },
  METHOD_NOT_AVAILABLE: { status: 501, jsonRpcCode: -32601, message: "This method is not available yet" },
  INVALID_PARAMS: { status: 400, jsonRpcCode: -32602, message: "Invalid params" },
  NETWORK_NOT_FOUND: { status: 404, jsonRpcCode: -32602, message: "Unknown or unsupported network" },
  UNSUPPORTED_ENTRYPOINT_VERSION: { status: 400, jsonRpcCode: -32602, message: "Unsupported EntryPoint version" },
  ENTRYPOINT_NOT_SUPPORTED: { status: 400, jsonRpcCode: -32602, message: "This network does not serve that EntryPoint" },
  CHAIN_ID_MISMATCH: { status: 400, jsonRpcCode: -32602, message: "The chain id is not this network's" },
  MODE_CONFLICT: { status: 400, jsonRpcCode: -32602, message: "strategy_code and token cannot be used together" },
  // ---- who is asking
  API_KEY_MISSING: { status: 401, jsonRpcCode: -32001, message: "The apiKey query parameter is missing" },
  API_KEY_INVALID: { status: 401, jsonRpcCode: -32001, message: "The API key is not valid" },
  API_KEY_REVOKED: { status: 401, jsonRpcCode: -32001, message: "The API key has been revoked" },
  ORIGIN_NOT_ALLOWED: { status: 403, jsonRpcCode: -32001, message: "This API key is not allowed from this origin" },
  CLIENT_IP_NOT_ALLOWED: { status: 403, jsonRpcCode: -32001, message: "This API key is not allowed from this client address" },
  RATE_LIMITED: { status: 429, jsonRpcCode: -32504, message: "Too many requests for this API key" },
  // ---- the mode and its policy
  STRATEGY_NOT_FOUND: { status: 404, jsonRpcCode: -32501, message: "Unknown strategy" },
  STRATEGY_NOT_ALLOWED: { status: 403, jsonRpcCode: -32501, message: "The strategy does not allow this request" },
  TOKEN_NOT_SUPPORTED: { status: 400, jsonRpcCode: -32501, message: "The token is not supported on this network" },
  TOKEN_BALANCE_INSUFFICIENT: { status: 402, jsonRpcCode: -32501, message: "The sender's token balance cannot cover the maximum cost" },
  TOKEN_ALLOWANCE_INSUFFICIENT: { status: 402, jsonRpcCode: -32501, message: "The sender's allowance to the paymaster cannot cover the maximum cost" },
  TOKEN_CHARGE_UNPAID: { status: 403, jsonRpcCode: -32501, message: "An earlier token charge of this sender went unpaid: only pre-charge is offered (approve the paymaster for the maximum cost first)" },
  POSTOP_CHARGE_PENDING: { status: 409, jsonRpcCode: -32501, message: "This sender already has an unsettled sponsorship charged in postOp: wait for it to land or expire, or approve the paymaster for the maximum cost" },
  TOO_MANY_OUTSTANDING: { status: 429, jsonRpcCode: -32504, message: "Too many open sponsorships for this sender or client: send or let expire the ones already signed" },
  POSTOP_CHARGE_AT_RISK: { status: 403, jsonRpcCode: -32501, message: "Charging in postOp is paused for this project or API key (too much at risk): approve the paymaster for the maximum cost to be charged up front" },
  GAS_TANK_NOT_ALLOWED: { status: 403, jsonRpcCode: -32501, message: "The sender's gas tank has not allowed this project to draw from it" },
  INVALID_CONSENT: { status: 400, jsonRpcCode: -32602, message: "The gas tank consent is not valid" },
  GAS_TANK_INSUFFICIENT: { status: 402, jsonRpcCode: -32501, message: "The sender's gas tank cannot cover the maximum cost" },
  PROJECT_BALANCE_EXHAUSTED: { status: 402, jsonRpcCode: -32501, message: "The project's prepaid balance with the paymaster cannot cover this user operation: the project's owner must add credit" },
  APPROVAL_DENIED: { status: 403, jsonRpcCode: -32501, message: "The project's approval webhook refused this user operation" },
  GAS_LIMIT_TOO_HIGH: { status: 400, jsonRpcCode: -32501, message: "A gas limit is above this network's cap" },
  FEE_TOO_HIGH: { status: 400, jsonRpcCode: -32501, message: "A fee is far above the market" },
  // ---- what the chain says
  SIMULATION_FAILED: { status: 422, jsonRpcCode: -32501, message: "The EntryPoint would reject this user operation" },
  EXECUTION_REVERTED: { status: 422, jsonRpcCode: -32521, message: "The user operation's calls revert" },
  PAYMASTER_DEPOSIT_LOW: { status: 503, jsonRpcCode: -32508, message: "The paymaster's deposit cannot cover this user operation" },
  CHAIN_UNAVAILABLE: { status: 503, jsonRpcCode: -32002, message: "The network's RPC endpoint is unavailable" },
  SIGNER_UNAVAILABLE: { status: 503, jsonRpcCode: -32002, message: "The paymaster's signing key is unavailable" },
  // ---- the service's own database
  STORE_UNAVAILABLE: { status: 503, jsonRpcCode: -32002, message: "The paymaster's database is unavailable" },
  // ---- the network's bundler (standard endpoint only: src/methods/bundler.ts)
  BUNDLER_UNAVAILABLE: { status: 503, jsonRpcCode: -32002, message: "The network's bundler is unavailable" },
  /** The bundler's own JSON-RPC error; the standard dialect answers with the bundler's code (BundlerRejection). */
  BUNDLER_REJECTED: { status: 400, jsonRpcCode: -32000, message: "The bundler refused the call" },
  // ---- concurrency
  SPONSORSHIP_CONFLICT: { status: 409, jsonRpcCode: -32010, message: "A concurrent request for the same user operation (sender and nonce) replaced this one: retry" },
  // ---- ours
  INTERNAL_ERROR: { status: 500, jsonRpcCode: -32603, message: "Internal error" },
} as const satisfies Record<string, ReasonSpec>;

export type Reason = keyof typeof REASONS;

/** A refusal that is safe to show the client: a stable reason, a clear message, and plain details. */
export class RpcError extends Error {
  readonly reason: Reason;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(reason: Reason, message?: string, details: Record<string, unknown> = {}) {
    super(message ?? REASONS[reason].message);
    this.name = "RpcError";
    this.reason = reason;
    this.details = details;
  }

  get status(): number {
    return REASONS[this.reason].status;
  }

  get jsonRpcCode(): number {
    return REASONS[this.reason].jsonRpcCode;
  }

  /**
   * What both dialects answer beside the message (v1's `data`, JSON-RPC's `error.data`): the reason first, then the
   * details, and with tracing on the call's `traceId` (beside the request id: X-Request-Id, INTERNAL_ERROR's details).
   */
  data(traceId?: string): Record<string, unknown> {
    const { reason: _ignored, ...details } = this.details as Record<string, unknown>;
    return traceId === undefined ? { reason: this.reason, ...details } : { reason: this.reason, ...details, traceId };
  }
}
