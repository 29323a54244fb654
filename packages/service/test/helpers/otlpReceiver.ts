// A real OTLP/HTTP trace receiver on 127.0.0.1 (POST /v1/traces, the JSON encoding the service's exporter
// sends), keeping every span it was sent, flattened with its resource's and its own attributes as plain values.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
  /** The W3C tracestate the span carries ("" when none). */
  traceState: string;
  /** Its links: the span contexts it points to, each with the tracestate the link carries ("" when none). */
  links: { traceId: string; spanId: string; traceState: string }[];
  /** When it started and ended (Unix nanoseconds, the service's clock). */
  startNs: bigint;
  endNs: bigint;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Requests received (every POST, whatever its path). */
  requests: number;
  /** Content types the exporter sent. */
  contentTypes: Set<string>;
  /** Resolves once `predicate` holds for the spans received (polls; rejects after `timeoutMs`). */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };

function plain(attributes: { key: string; value: OtlpValue }[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const receiver = { requests: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      receiver.requests++;
      contentTypes.add(String(req.headers["content-type"]));
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans?: { resource?: { attributes?: { key: string; value: OtlpValue }[] }; scopeSpans?: { spans?: any[] }[] }[];
      };
      for (const resourceSpans of body.resourceSpans ?? []) {
        const resource = plain(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? "",
              name: span.name,
              kind: span.kind,
              status: span.status?.code ?? 0,
              attributes: plain(span.attributes),
              resource,
              traceState: span.traceState ?? "",
              links: ((span.links ?? []) as { traceId: string; spanId: string; traceState?: string }[]).map((l) => ({ traceId: l.traceId, spanId: l.spanId, traceState: l.traceState ?? "" })),
              startNs: BigInt(span.startTimeUnixNano ?? 0),
              endNs: BigInt(span.endTimeUnixNano ?? 0),
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    get requests() {
      return receiver.requests;
    },
    contentTypes,
    async waitFor(predicate, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > until) throw new Error(`the receiver did not get the expected spans in ${timeoutMs} ms; it has: ${spans.map((s) => s.name).join(", ")}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
