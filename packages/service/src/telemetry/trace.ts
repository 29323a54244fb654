/**
 * The service's tracing seam: what request handling, the sponsor pipeline, the chain client, the store and the
 * background loops call to make spans. OpenTelemetry stays behind it: with tracing off (the default) every call
 * here returns the one constant `NO_SPAN` and no OpenTelemetry module of ours is ever loaded; `startTracing` loads the
 * SDK (./otel.ts) with a dynamic import only when the standard environment configures an exporter.
 *
 * Spans are handed down explicitly (CallContext.trace, CallOptions.trace), like Timing, never through
 * AsyncLocalStorage: its promise hooks cost every promise of the process (see src/timing.ts).
 *
 * Attribute values are ours to choose: names, reasons, counts, redacted URLs. Never a secret (API key,
 * signature, paymasterAndData, admin token, PIN) and never a client's free text.
 */

import type { CallerTrace, SpanKind, TraceBackend, TraceSpan } from "./types.ts";

export type { AttributeValue, CallerTrace, SpanKind, TraceBackend, TraceSpan } from "./types.ts";

/** The span of everything while tracing is off: one frozen constant, every method a no-op. */
export const NO_SPAN: TraceSpan = Object.freeze({
  recording: false,
  traceId: undefined,
  traceparent: undefined,
  set() {},
  fail() {},
  end() {},
  child: () => NO_SPAN,
});

let backend: TraceBackend | undefined;

/** Whether tracing is on in this process. */
export function tracingOn(): boolean {
  return backend !== undefined;
}

/** A new trace (linked to the `caller`'s, or continuing it when it is to be continued), NO_SPAN while tracing is off. */
export function rootSpan(name: string, kind: SpanKind = "internal", caller?: CallerTrace): TraceSpan {
  return backend === undefined ? NO_SPAN : backend.root(name, kind, caller);
}

/**
 * Whether the standard OpenTelemetry environment asks for traces: OTEL_TRACES_EXPORTER=otlp, or an OTLP
 * endpoint (OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) without OTEL_TRACES_EXPORTER
 * saying otherwise (none, console, ...). OTEL_SDK_DISABLED=true turns it all off.
 */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  const exporters = env.OTEL_TRACES_EXPORTER?.split(",").map((name) => name.trim().toLowerCase()).filter((name) => name !== "");
  if (exporters !== undefined && exporters.length > 0) return exporters.includes("otlp");
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/**
 * Starts tracing when `env` configures it (see tracingConfigured); loads the SDK only then. Process-wide: the
 * first configured start wins, `stopTracing` ends it. A setting it cannot use (an endpoint that is no http(s)
 * URL, an unknown sampler, a ratio out of 0–1) is a ConfigError naming the variable: a start-up error (exit 2).
 */
export async function startTracing(env: NodeJS.ProcessEnv): Promise<boolean> {
  if (backend !== undefined || !tracingConfigured(env)) return false;
  const { otelBackend } = await import("./otel.ts");
  backend = otelBackend(env);
  return true;
}

/** Flushes the spans still buffered to the exporter and stops tracing (the drain on SIGTERM ends here). */
export async function stopTracing(): Promise<void> {
  const stopping = backend;
  backend = undefined;
  await stopping?.shutdown();
}

/** A span's failure reason from an error: the refusal's reason, an upstream's cause, else the error's class. */
export function failureReason(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const reason = (error as { reason?: unknown }).reason;
    if (typeof reason === "string") return reason;
    const cause = (error as { cause?: unknown }).cause;
    if (typeof cause === "string") return cause;
    if (error instanceof Error) return error.name;
  }
  return "error";
}

/**
 * Runs `fn(input, span)` inside a child span `name` (of `kind`, internal unless said) of `parent`, ending it when
 * `fn` settles (failed with the error's reason when it throws). With tracing off: `fn(input, NO_SPAN)`, nothing else.
 */
export function traced<I, O>(parent: TraceSpan | undefined, name: string, fn: (input: I, span: TraceSpan) => O, input: I, kind: SpanKind = "internal"): O {
  if (parent === undefined || !parent.recording) return fn(input, NO_SPAN);
  return within(parent.child(name, kind), fn, input);
}

/** Runs `fn(input, span)` as a trace of its own (a background pass, a delivery): `traced` without a parent. */
export function tracedRoot<I, O>(name: string, kind: SpanKind, fn: (input: I, span: TraceSpan) => O, input: I): O {
  if (backend === undefined) return fn(input, NO_SPAN);
  return within(backend.root(name, kind, undefined), fn, input);
}

/** `fn(input, span)`, then `span` ended, failed first when `fn` threw or rejected. */
function within<I, O>(span: TraceSpan, fn: (input: I, span: TraceSpan) => O, input: I): O {
  let out: O;
  try {
    out = fn(input, span);
  } catch (error) {
    span.fail(failureReason(error));
    span.end();
    throw error;
  }
  if (!(out instanceof Promise)) {
    span.end();
    return out;
  }
  return out.then(
    (value: unknown) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      span.fail(failureReason(error));
      span.end();
      throw error;
    },
  ) as O;
}
