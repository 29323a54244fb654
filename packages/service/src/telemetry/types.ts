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

/**
 * A caller's W3C trace context (its `traceparent`; its `tracestate` is never read) and what to make of it:
 * `continue` makes our span its child, so the caller's sampled flag and trace id decide; otherwise our span starts
 * a trace of our own (our sampler decides) with a link to the caller's span.
 */
export interface CallerTrace {
  traceparent: string;
  continue: boolean;
}

/** What ./otel.ts gives once started. */
export interface TraceBackend {
  root(name: string, kind: SpanKind, caller: CallerTrace | undefined): TraceSpan;
  /** Exports what is still buffered, then stops. */
  shutdown(): Promise<void>;
}
