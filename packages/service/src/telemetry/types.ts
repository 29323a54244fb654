/**
 * The tracing seam's types, apart from both sides of it: src/telemetry/trace.ts (the facade every span source
 * calls) and src/telemetry/otel.ts (the SDK behind it, imported by trace.ts only when tracing is configured).
 */

export type SpanKind = "server" | "client" | "internal";
export type AttributeValue = string | number | boolean;

export interface TraceSpan {
  /** False for NO_SPAN (tracing off): callers skip work that only feeds attributes. */
  readonly recording: boolean;
  /** The W3C trace id (32 hex digits), undefined with tracing off. */
  readonly traceId: string | undefined;
  /**
   * This span as a W3C `traceparent` header value (version 00, hex ids and flags only), sent on the calls it makes
   * so the next service (the bundler, a node that traces) continues the trace; undefined with tracing off.
   */
  readonly traceparent: string | undefined;
  set(key: string, value: AttributeValue | undefined): void;
  /** Marks the span failed; `reason` is a stable word (a refusal reason, a failure cause), never a message. */
  fail(reason: string): void;
  end(): void;
  child(name: string, kind?: SpanKind): TraceSpan;
}

/** The client's W3C trace context headers. */
export interface TraceHeaders {
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

/** What ./otel.ts gives once started. */
export interface TraceBackend {
  root(name: string, kind: SpanKind, headers: TraceHeaders | undefined): TraceSpan;
  /** Exports what is still buffered, then stops. */
  shutdown(): Promise<void>;
}
