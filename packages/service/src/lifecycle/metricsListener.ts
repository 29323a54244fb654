/**
 * The metrics listener: GET /metrics (Prometheus text), /health and /ready on a loopback address and port of
 * their own (config `metrics: {host, port}`), so scrapes never share the public port and the public port never
 * shows metrics. Plain node:http: three read-only routes need no framework.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { isLoopbackHost } from "../app.ts";
import type { ServiceContext } from "../context.ts";
import { healthBody } from "../health.ts";
import type { ServiceMetrics } from "../metrics/metrics.ts";

export interface MetricsListener {
  readonly url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(service: ServiceContext, metrics: ServiceMetrics, { host, port }: { host: string; port: number }): Promise<MetricsListener> {
  if (!isLoopbackHost(host === "localhost" ? "127.0.0.1" : host)) throw new Error(`Refusing to serve metrics on ${JSON.stringify(host)}: loopback only`);
  const server = createServer((req, res) => {
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      res.end(body);
    };
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET") return send(405, "text/plain", "GET only\n");
    if (path === "/metrics") {
      metrics.exposition().then(
        ({ contentType, body }) => send(200, contentType, body),
        (error: unknown) => {
          service.logger.warn({ problem: (error as Error).message }, "metrics scrape failed");
          send(500, "text/plain", "metrics unavailable\n");
        },
      );
      return;
    }
    if (path === "/health") return send(200, "application/json", JSON.stringify(healthBody(service)));
    if (path === "/ready") {
      const report = service.readiness ? service.readiness() : Promise.resolve({ ready: true, checks: {} });
      report.then((r) => send(r.ready ? 200 : 503, "application/json", JSON.stringify({ status: r.ready ? "ready" : "not ready", checks: r.checks })));
      return;
    }
    send(404, "text/plain", "GET /metrics, /health or /ready\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: host === "localhost" ? "127.0.0.1" : host, port }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
