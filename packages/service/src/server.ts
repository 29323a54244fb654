/**
 * Wires a configuration into a running service: the store (tokens synced from configuration), each network
 * (pre-flight checked; a network whose RPC does not answer yet starts "not ready" and comes up by itself), the
 * Koa app on loopback, the metrics listener (when configured), the settlement watchers under leader election,
 * the alert checks. `close()` shuts down in order: stop accepting and drain in-flight requests (bounded), stop
 * the watchers and checks, then close the chain clients, the rate limiter and the store.
 */
import type { Logger } from "pino";
import type { ServiceConfig } from "./config/types.ts";
import type { NetworkRuntime, ServiceContext } from "./context.ts";
import { createApp, listen } from "./app.ts";
import { readiness, reportStoreHealth } from "./health.ts";
import { createLogger } from "./log.ts";
import { METHODS } from "./methods/index.ts";
import { ServiceMetrics } from "./metrics/metrics.ts";
import { startMetricsListener, type MetricsListener } from "./metrics/listener.ts";
import { startAlertMonitor, type AlertMonitor } from "./monitor/alerts.ts";
import { startNetwork, type StartedNetwork } from "./network.ts";
import { openStore } from "./store/index.ts";
import { createConfigCache } from "./store/configCache.ts";
import { createRateLimiter, memoryBuckets, redisBuckets, type RateLimiter } from "./rpc/rateLimit.ts";
import { superviseSettlement, type SettlementSupervisor } from "./settlement/leader.ts";
import type { Watcher } from "./settlement/watcher.ts";
import { startAdminApi } from "./adminApi/app.ts";
import type { AdminApiOptions } from "./adminApi/options.ts";
import { destinationPolicy } from "./webhooks/destination.ts";
import { startWebhookWorker, type WebhookWorker } from "./webhooks/worker.ts";
import { startRetention } from "./lifecycle/retention.ts";
import { startRequestCountFlusher, type RequestCountFlusher } from "./metrics/requestCounts.ts";
import { startTracing, stopTracing } from "./telemetry/trace.ts";

export interface RunningService {
  url: string;
  /** The metrics listener's URL (`metrics` configured), else undefined. */
  metricsUrl?: string;
  /** The admin API's URL, when it runs (its own listener; see adminApi/options.ts). */
  adminUrl?: string;
  service: ServiceContext;
  /** The settlement watcher of `network` while this process leads it (never with `watch: false`). */
  watcher(network: string): Watcher | undefined;
  /** The alert checks (they run every ALERT_INTERVAL_MS; `check()` runs a round now). */
  alerts: AlertMonitor;
  /** The webhook delivery worker (absent with `webhooks.enabled: false`). */
  webhooks?: WebhookWorker;
  /** Writes the per-minute request counts the console charts (src/metrics/requestCounts.ts). */
  requestCounts: RequestCountFlusher;
  /** Resolves when every network has passed its pre-flight (tests; production watches /ready). */
  initialised: Promise<void>;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Block poll interval of each network's market snapshot (ms). */
  pollMs?: number;
  now?: () => number;
  /**
   * Run the settlement watchers (default: the configuration's `watch`, else true). Every replica may run them:
   * leader election lets one settle each network at a time.
   */
  watch?: boolean;
  /** Shared rate-limit buckets (default: Redis at REDIS_URL when set, else this process's memory). */
  redisUrl?: string;
  /** Serve the admin HTTP API on its own listener (adminApiOptionsFromEnv; off when undefined). */
  admin?: AdminApiOptions;
  /** Where the OpenTelemetry settings are read (OTEL_*; default process.env): tracing is off unless they configure an exporter. */
  tracingEnv?: NodeJS.ProcessEnv;
}

export async function startService(config: ServiceConfig, options: StartOptions = {}): Promise<RunningService> {
  const logger = options.logger ?? createLogger(config.logLevel);
  // First: a sampler or endpoint OpenTelemetry refuses is a start-up error, and every span source below can use it.
  const tracing = await startTracing(options.tracingEnv ?? process.env);
  if (tracing) logger.info("OpenTelemetry traces on (OTLP/HTTP)");
  const store = await openStore(config);
  const metrics = new ServiceMetrics({ store, ...(config.alerts?.capWarnPercent === undefined ? {} : { capWarnPercent: config.alerts.capWarnPercent }) });
  reportStoreHealth(store.health, logger, metrics);
  const started: StartedNetwork[] = [];
  const networks = new Map<string, NetworkRuntime>();
  try {
    for (const network of config.networks) {
      for (const token of network.tokens) {
        await store.upsertToken({ network: network.name, ...token, enabled: true });
      }
      const s = await startNetwork(network, { store, logger, metrics, ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }) });
      started.push(s);
      networks.set(network.name, s.runtime);
    }
  } catch (error) {
    for (const s of started) s.stop();
    await store.close();
    if (tracing) await stopTracing();
    throw error;
  }
  for (const s of started) {
    const name = s.runtime.config.name;
    void s.initialised.then((chain) => {
      metrics.signerInfo.set({ network: name, signer: chain.signer.address }, 1);
      // How this network simulates (see "Simulation" in the README): an operator sees the fallback and the skip.
      const config = s.runtime.config;
      logger.info(
        {
          network: name,
          v07Simulator: s.runtime.versions.includes("v0.7") ? chain.simulator["v0.7"].kind : undefined,
          v08Simulator: s.runtime.versions.includes("v0.8") ? chain.simulator["v0.8"].kind : undefined,
          sponsorProbe: chain.probe.kind,
          skipFinalSimulation: config.skipFinalSimulation === true,
        },
        "network simulation",
      );
    });
  }

  const redisUrl = options.redisUrl ?? process.env.REDIS_URL;
  const rateLimiter: RateLimiter = createRateLimiter(
    config.rateLimit ?? {},
    redisUrl ? redisBuckets(redisUrl, logger, undefined, metrics) : memoryBuckets(),
    redisUrl ? "redis" : "memory",
  );
  let shuttingDown = false;
  const failingOf = new Map(started.map((s) => [s.runtime.config.name, () => s.failing()] as const));
  const service: ServiceContext = {
    config,
    store,
    networks,
    logger,
    now: options.now ?? (() => Math.floor(Date.now() / 1000)),
    rateLimiter,
    metrics,
    configCache: createConfigCache(store),
    // This service's own listeners are added as they start: never a webhook destination.
    webhookDestinations: destinationPolicy({ allowed: config.webhooks?.allowedDestinations ?? [] }),
    readiness: async () => {
      const report = await readiness(service, { networks: failingOf, shuttingDown: () => shuttingDown });
      for (const s of started) metrics.networkReady.set({ network: s.runtime.config.name }, s.ready() ? 1 : 0);
      return report;
    },
  };
  for (const s of started) metrics.networkReady.set({ network: s.runtime.config.name }, s.ready() ? 1 : 0);

  const server = await listen(createApp(service, METHODS), { host: config.host, port: config.port });
  const ownListener = (url: string) => service.webhookDestinations!.ownPorts.add(Number(new URL(url).port));
  ownListener(server.url);
  let metricsListener: MetricsListener | undefined;
  if (config.metrics) {
    try {
      metricsListener = await startMetricsListener(service, metrics, config.metrics);
      ownListener(metricsListener.url);
    } catch (error) {
      await server.close();
      for (const s of started) s.stop();
      await rateLimiter.close();
      await store.close();
      throw error;
    }
  }
  let adminServer: Awaited<ReturnType<typeof startAdminApi>> | undefined;
  if (options.admin) {
    try {
      adminServer = await startAdminApi({ store, networks: [...networks.keys()], logger, service }, options.admin);
      ownListener(adminServer.url);
    } catch (error) {
      await server.close();
      await metricsListener?.close();
      for (const s of started) s.stop();
      await rateLimiter.close();
      await store.close();
      throw error;
    }
    logger.info({ url: adminServer.url, console: `${adminServer.url}/console/` }, "admin API and console listening");
  }
  const watch = options.watch ?? config.watch ?? true;
  logger.info(
    {
      url: server.url,
      ...(metricsListener ? { metricsUrl: `${metricsListener.url}/metrics` } : {}),
      networks: started.map((s) => ({ name: s.runtime.config.name, ready: s.ready() })),
      watch,
      rateLimits: rateLimiter.describe(),
    },
    "paymaster service listening",
  );

  const supervisors = new Map<string, SettlementSupervisor>();
  if (watch) {
    for (const s of started) {
      supervisors.set(
        s.runtime.config.name,
        superviseSettlement({
          network: s,
          store,
          logger,
          metrics,
          ...(config.leaderRetryMs === undefined ? {} : { retryMs: config.leaderRetryMs }),
          ...(config.alerts?.watcherLagBlocks === undefined ? {} : { lagBlocks: config.alerts.watcherLagBlocks }),
          watcherOptions: { now: service.now },
        }),
      );
    }
  }
  const monitor: AlertMonitor = startAlertMonitor({
    networks: started,
    store,
    logger,
    metrics,
    ...(config.alerts?.capWarnPercent === undefined ? {} : { capWarnPercent: config.alerts.capWarnPercent }),
  });
  // Every replica delivers: claims are leased per row, so none is sent twice (src/webhooks/worker.ts).
  const { enabled: webhooksEnabled, allowedDestinations: _allowed, ...deliverySettings } = config.webhooks ?? {};
  const webhooks = webhooksEnabled === false ? undefined : startWebhookWorker({ store, logger, settings: deliverySettings, destinations: service.webhookDestinations!, observer: metrics.webhookObserver() });
  const requestCounts = startRequestCountFlusher({ metrics, store, logger });
  // Every replica runs the loop; one at a time prunes (its own leadership, per pass).
  const retention = startRetention({ store, logger, metrics, ...(config.retention === undefined ? {} : { settings: config.retention }) });

  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    ...(metricsListener ? { metricsUrl: metricsListener.url } : {}),
    ...(adminServer ? { adminUrl: adminServer.url } : {}),
    service,
    watcher: (network) => supervisors.get(network)?.watcher(),
    alerts: monitor,
    ...(webhooks ? { webhooks } : {}),
    requestCounts,
    initialised: Promise.all(started.map((s) => s.initialised)).then(() => undefined),
    close() {
      closing ??= (async () => {
        shuttingDown = true;
        await server.close(); // stops accepting; in-flight requests finish (at most SHUTDOWN_GRACE_MS)
        await adminServer?.close();
        await requestCounts.stop(); // the last counts, once no request is in flight
        monitor.stop();
        await webhooks?.stop();
        await retention.stop();
        for (const supervisor of supervisors.values()) await supervisor.stop();
        await metricsListener?.close();
        for (const s of started) s.stop();
        await rateLimiter.close();
        await store.close();
        // Last: the spans of everything above (the drained requests, the last passes) reach the collector.
        if (tracing) await stopTracing().catch((error: unknown) => logger.warn({ err: error }, "could not flush the last traces"));
      })();
      return closing;
    },
  };
}
