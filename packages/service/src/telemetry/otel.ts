/**
 * The OpenTelemetry side of src/telemetry/trace.ts (the seam's types: ./types.ts), loaded (dynamically) only when tracing is configured:
 * the SDK's tracer provider with a batch processor and the OTLP/HTTP exporter (JSON), a resource named by
 * OTEL_SERVICE_NAME (default "paymaster") plus OTEL_RESOURCE_ATTRIBUTES, and the sampler OTEL_TRACES_SAMPLER /
 * OTEL_TRACES_SAMPLER_ARG name (default parentbased_always_on; a caller's span is a parent only where the door
 * continues it, else a link: CallerTrace). The exporter reads its own standard settings
 * (OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, _TIMEOUT, _COMPRESSION, certificates); the endpoint is resolved here
 * from the same `env` the decision to trace was made on.
 *
 * No global provider, no context manager: parents are passed explicitly (trace.ts), so nothing else in the
 * process (alto's own instrumentation, if any) is affected.
 */
import { ROOT_CONTEXT, SpanKind as OtelSpanKind, SpanStatusCode, trace, type Context, type Span, type SpanContext, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler } from "@opentelemetry/sdk-trace";
import type { AttributeValue, CallerTrace, SpanKind, TraceBackend, TraceSpan } from "./types.ts";
import { ConfigError } from "../config/errors.ts";

const KINDS: Record<SpanKind, OtelSpanKind> = { server: OtelSpanKind.SERVER, client: OtelSpanKind.CLIENT, internal: OtelSpanKind.INTERNAL };

/** The sampler OTEL_TRACES_SAMPLER names (the specification's values); anything else is a start-up error. */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || "parentbased_always_on";
  const ratio = (): number => {
    const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    if (raw === undefined || raw === "") return 1;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0 || value > 1) throw new ConfigError([`OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1, got ${JSON.stringify(raw.slice(0, 32))}`]);
    return value;
  };
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio());
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      throw new ConfigError([
        `OTEL_TRACES_SAMPLER: ${JSON.stringify(name.slice(0, 32))} is not supported: use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio`,
      ]);
  }
}

/** Where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, else the exporter's default. */
export function tracesEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (specific) return httpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", specific);
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (base) return httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", `${base.replace(/\/+$/, "")}/v1/traces`);
  return undefined;
}

/** `text` as an http(s) URL; else a configuration error naming the variable (never its value: it may hold credentials). */
function httpUrl(variable: string, text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError([`${variable}: not a URL (OTLP over HTTP wants http://host:port or https://…)`]);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError([`${variable}: OTLP over HTTP wants an http:// or https:// URL, got ${url.protocol}`]);
  return url.href;
}

/** The batch processor's standard settings (OTEL_BSP_*), each a positive integer when set. */
export function batchFromEnv(env: NodeJS.ProcessEnv): { scheduledDelayMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number; exportTimeoutMillis?: number } {
  const read = (name: string): number | undefined => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === "") return undefined;
    const value = Number(raw);
    if (!Number.isInteger(value) || value <= 0) throw new ConfigError([`${name}: must be a positive integer, got ${JSON.stringify(raw.slice(0, 32))}`]);
    return value;
  };
  const settings = {
    scheduledDelayMillis: read("OTEL_BSP_SCHEDULE_DELAY"),
    maxQueueSize: read("OTEL_BSP_MAX_QUEUE_SIZE"),
    maxExportBatchSize: read("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
    exportTimeoutMillis: read("OTEL_BSP_EXPORT_TIMEOUT"),
  };
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined));
}

/** One SDK span behind the facade. */
class OtelSpan implements TraceSpan {
  readonly #span: Span;
  readonly #tracer: Tracer;
  #context: Context | undefined;
  readonly recording: boolean;
  readonly traceId: string;
  #traceparent: string | undefined;

  constructor(span: Span, tracer: Tracer) {
    this.#span = span;
    this.#tracer = tracer;
    this.recording = span.isRecording();
    this.traceId = span.spanContext().traceId;
  }

  get traceparent(): string {
    if (this.#traceparent === undefined) {
      const { traceId, spanId, traceFlags } = this.#span.spanContext();
      this.#traceparent = `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}`;
    }
    return this.#traceparent;
  }

  set(key: string, value: AttributeValue | undefined): void {
    if (value !== undefined) this.#span.setAttribute(key, value);
  }

  fail(reason: string): void {
    this.#span.setAttribute("error.type", reason);
    this.#span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
  }

  end(): void {
    this.#span.end();
  }

  child(name: string, kind: SpanKind = "internal"): TraceSpan {
    // The parent's context, made once for all its children (a call's span has a dozen).
    this.#context ??= trace.setSpan(ROOT_CONTEXT, this.#span);
    return new OtelSpan(this.#tracer.startSpan(name, { kind: KINDS[kind] }, this.#context), this.#tracer);
  }
}

export function otelBackend(env: NodeJS.ProcessEnv): TraceBackend {
  const endpoint = tracesEndpoint(env);
  const resource = detectResources({ detectors: [envDetector] }).merge(resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME?.trim() || "paymaster" }));
  const provider = new TracerProvider({
    resource,
    sampler: samplerFromEnv(env),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(endpoint === undefined ? {} : { url: endpoint }), ...batchFromEnv(env) })],
  });
  const tracer = provider.getTracer("paymaster");
  const propagator = new W3CTraceContextPropagator();
  // Only traceparent is ever handed to the propagator: a caller's tracestate is never read, so never exported.
  const getter = { keys: () => ["traceparent"], get: (carrier: string, key: string) => (key === "traceparent" ? carrier : undefined) };
  /** The caller's span context, when its traceparent is a valid one. */
  const callerContext = (traceparent: string): SpanContext | undefined => trace.getSpanContext(propagator.extract(ROOT_CONTEXT, traceparent, getter));
  return {
    root(name, kind, caller) {
      const remote = caller === undefined ? undefined : callerContext(caller.traceparent);
      if (remote !== undefined && caller!.continue) return new OtelSpan(tracer.startSpan(name, { kind: KINDS[kind] }, trace.setSpanContext(ROOT_CONTEXT, remote)), tracer);
      // A trace of our own, our sampler's decision; the caller's span, if any, only linked.
      return new OtelSpan(tracer.startSpan(name, { kind: KINDS[kind], root: true, ...(remote === undefined ? {} : { links: [{ context: remote }] }) }, ROOT_CONTEXT), tracer);
    },
    shutdown: () => provider.shutdown(),
  };
}
