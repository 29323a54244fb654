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
import { createApp, listen, type RunningServer } from "./app.ts";
import { readiness, reportStoreHealth } from "./health.ts";
import { createLogger } from "./log.ts";
import { METHODS } from "./methods/index.ts";
import { ServiceMetrics } from "./metrics/metrics.ts";
import { startMetricsListener, type MetricsListener } from "./lifecycle/metricsListener.ts";
import { startAlertMonitor, type AlertMonitor } from "./monitor/alerts.ts";
import { startNetwork, type StartedNetwork } from "./network/start.ts";
import { openStore } from "./store/index.ts";
import type { Store } from "./store/types.ts";
import { createConfigCache } from "./store/configCache.ts";
import { DATABASE_DEFAULTS } from "./store/settings.ts";
import { createRateLimiter, memoryBuckets, redisBuckets, type RateLimiter } from "./rateLimit.ts";
import { superviseSettlement, type SettlementSupervisor } from "./settlement/leader.ts";
import type { Watcher } from "./settlement/watcher.ts";
import { startAdminApi } from "./adminApi/app.ts";
import type { AdminApiOptions } from "./adminApi/options.ts";
import { destinationPolicy, type DestinationPolicy } from "./webhooks/destination.ts";
import { startWebhookWorker, type WebhookWorker } from "./webhooks/worker.ts";
import { startRetention, type RetentionLoop } from "./retention.ts";
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

/**
 * The service's start-up, as named steps: tracing, the store, the networks, the context, the listeners, the
 * background loops; then the running service, whose `close()` is the ordered shutdown.
 */
export async function startService(config: ServiceConfig, options: StartOptions = {}): Promise<RunningService> {
  const logger = options.logger ?? createLogger(config.logLevel);
  // First: a sampler or endpoint OpenTelemetry refuses is a start-up error, and every span source below can use it.
  const tracing = await startTracing(options.tracingEnv ?? process.env);
  if (tracing) logger.info("OpenTelemetry traces on (OTLP/HTTP)");
  const { store, metrics } = await openServiceStore(config, logger);
  const started = await startNetworks(config, { store, logger, metrics, tracing, ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }) });
  logNetworkSimulation(started, logger, metrics);
  const core = buildContext(config, options, { store, logger, metrics, started });
  const listeners = await startListeners(core, options.admin, tracing);
  const watch = options.watch ?? config.watch ?? true;
  logListening(core, listeners, watch);
  const loops = startBackgroundLoops(core, watch);
  return runningService(core, listeners, loops, tracing);
}

/** The store, opened (and migrated: store/index.ts), and the metrics over it; the store's health is reported from here on. */
async function openServiceStore(config: ServiceConfig, logger: Logger): Promise<{ store: Store; metrics: ServiceMetrics }> {
  const store = await openStore(config);
  const metrics = new ServiceMetrics({ store, ...(config.alerts?.capWarnPercent === undefined ? {} : { capWarnPercent: config.alerts.capWarnPercent }) });
  reportStoreHealth(store.health, logger, metrics);
  return { store, metrics };
}

/**
 * Each configured network, its tokens synced from the configuration first. A network that cannot start stops the
 * start-up: the ones already started are stopped, the store closed and the traces flushed.
 */
async function startNetworks(
  config: ServiceConfig,
  { store, logger, metrics, tracing, pollMs }: { store: Store; logger: Logger; metrics: ServiceMetrics; tracing: boolean; pollMs?: number },
): Promise<StartedNetwork[]> {
  const started: StartedNetwork[] = [];
  try {
    for (const network of config.networks) {
      for (const token of network.tokens) {
        await store.upsertToken({ network: network.name, ...token, enabled: true });
      }
      started.push(await startNetwork(network, { store, logger, metrics, ...(pollMs === undefined ? {} : { pollMs }) }));
    }
  } catch (error) {
    for (const s of started) s.stop();
    await store.close();
    if (tracing) await stopTracing();
    throw error;
  }
  return started;
}

/** Once each network has passed its pre-flight: its signer in the metrics, and how it simulates in the log. */
function logNetworkSimulation(started: readonly StartedNetwork[], logger: Logger, metrics: ServiceMetrics): void {
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
}

/** What start-up builds before anything listens: the context, and the parts of it the later steps and the shutdown use. */
interface ServiceCore {
  service: ServiceContext;
  config: ServiceConfig;
  store: Store;
  logger: Logger;
  metrics: ServiceMetrics;
  rateLimiter: RateLimiter;
  destinations: DestinationPolicy;
  started: readonly StartedNetwork[];
  /** Set once close() is called: /ready reports the shutdown from then on. */
  lifecycle: { shuttingDown: boolean };
}

/** The service context every request and loop uses: the networks, the rate limiter, the config cache, readiness. */
function buildContext(
  config: ServiceConfig,
  options: StartOptions,
  { store, logger, metrics, started }: { store: Store; logger: Logger; metrics: ServiceMetrics; started: readonly StartedNetwork[] },
): ServiceCore {
  const rateLimiter = serviceRateLimiter(config, options.redisUrl ?? process.env.REDIS_URL, logger, metrics);
  const lifecycle = { shuttingDown: false };
  const failingOf = new Map(started.map((s) => [s.runtime.config.name, () => s.failing()] as const));
  // This service's own listeners are added as they start: never a webhook destination.
  const destinations = destinationPolicy({ allowed: config.webhooks?.allowedDestinations ?? [] });
  const service: ServiceContext = {
    config,
    store,
    networks: new Map(started.map((s) => [s.runtime.config.name, s.runtime] as const)),
    logger,
    now: options.now ?? (() => Math.floor(Date.now() / 1000)),
    rateLimiter,
    metrics,
    // PostgreSQL: a version read is a round trip, served from memory for a moment; SQLite: a function call, every request.
    configCache: createConfigCache(store, { maxAgeMs: config.databaseUrl ? (config.database?.configMaxAgeMs ?? DATABASE_DEFAULTS.configMaxAgeMs) : 0 }),
    webhookDestinations: destinations,
    readiness: async () => {
      const report = await readiness(service, { networks: failingOf, shuttingDown: () => lifecycle.shuttingDown });
      recordNetworksReady(started, metrics);
      return report;
    },
  };
  recordNetworksReady(started, metrics);
  return { service, config, store, logger, metrics, rateLimiter, destinations, started, lifecycle };
}

/** Per-key and per-project limits over shared buckets: Redis at `redisUrl` when set, else this process's memory. */
function serviceRateLimiter(config: ServiceConfig, redisUrl: string | undefined, logger: Logger, metrics: ServiceMetrics): RateLimiter {
  return createRateLimiter(
    config.rateLimit ?? {},
    redisUrl ? redisBuckets(redisUrl, logger, undefined, metrics) : memoryBuckets(),
    redisUrl ? "redis" : "memory",
  );
}

/** Each network's readiness as a gauge. */
function recordNetworksReady(started: readonly StartedNetwork[], metrics: ServiceMetrics): void {
  for (const s of started) metrics.networkReady.set({ network: s.runtime.config.name }, s.ready() ? 1 : 0);
}

/** The service's listeners, all on loopback; each one's port is kept out of the webhook destinations. */
interface Listeners {
  server: RunningServer;
  metricsListener?: MetricsListener;
  adminServer?: RunningServer;
}

/**
 * The JSON-RPC app, then the metrics listener (when configured) and the admin API (when given). One that cannot
 * listen (the JSON-RPC port taken, say) stops the start-up: what is up so far is closed, the traces flushed.
 */
async function startListeners(core: ServiceCore, admin: AdminApiOptions | undefined, tracing: boolean): Promise<Listeners> {
  const { service, config, store, logger } = core;
  const ownListener = (url: string) => core.destinations.ownPorts.add(Number(new URL(url).port));
  const listeners: Partial<Listeners> = {};
  try {
    listeners.server = await listen(createApp(service, METHODS), { host: config.host, port: config.port });
    ownListener(listeners.server.url);
    if (config.metrics) {
      listeners.metricsListener = await startMetricsListener(service, core.metrics, config.metrics);
      ownListener(listeners.metricsListener.url);
    }
    if (admin) {
      listeners.adminServer = await startAdminApi({ store, networks: [...service.networks.keys()], logger, service }, admin);
      ownListener(listeners.adminServer.url);
    }
  } catch (error) {
    await closeAfterFailedListener(core, listeners, tracing);
    throw error;
  }
  const { adminServer } = listeners;
  if (adminServer) logger.info({ url: adminServer.url, console: `${adminServer.url}/console/` }, "admin API and console listening");
  return listeners as Listeners;
}

/** A listener could not start: the ones up, the networks, the rate limiter and the store are closed; the traces flushed. */
async function closeAfterFailedListener(core: ServiceCore, listeners: Partial<Listeners>, tracing: boolean): Promise<void> {
  await listeners.server?.close();
  await listeners.metricsListener?.close();
  for (const s of core.started) s.stop();
  await core.rateLimiter.close();
  await core.store.close();
  if (tracing) await stopTracing().catch((error: unknown) => core.logger.warn({ err: error }, "could not flush the last traces"));
}

/** The start-up line: where the service listens, its networks, whether it watches, its rate limits. */
function logListening(core: ServiceCore, { server, metricsListener }: Listeners, watch: boolean): void {
  core.logger.info(
    {
      url: server.url,
      ...(metricsListener ? { metricsUrl: `${metricsListener.url}/metrics` } : {}),
      networks: core.started.map((s) => ({ name: s.runtime.config.name, ready: s.ready() })),
      watch,
      rateLimits: core.rateLimiter.describe(),
    },
    "paymaster service listening",
  );
}

/** The loops that run beside the requests until the shutdown stops them. */
interface BackgroundLoops {
  /** The settlement supervisor of each network (none with `watch: false`). */
  supervisors: ReadonlyMap<string, SettlementSupervisor>;
  monitor: AlertMonitor;
  webhooks: WebhookWorker | undefined;
  requestCounts: RequestCountFlusher;
  retention: RetentionLoop;
}

/** Settlement (when watching), the alert checks, webhook delivery (unless disabled), the request counts, retention. */
function startBackgroundLoops(core: ServiceCore, watch: boolean): BackgroundLoops {
  const { config, store, logger, metrics } = core;
  const supervisors = watch ? superviseNetworks(core) : new Map<string, SettlementSupervisor>();
  const monitor = startAlertMonitor({
    networks: core.started,
    store,
    logger,
    metrics,
    ...(config.alerts?.capWarnPercent === undefined ? {} : { capWarnPercent: config.alerts.capWarnPercent }),
  });
  // Every replica delivers: claims are leased per row, so none is sent twice (src/webhooks/worker.ts).
  const { enabled: webhooksEnabled, allowedDestinations: _allowed, ...deliverySettings } = config.webhooks ?? {};
  const webhooks = webhooksEnabled === false ? undefined : startWebhookWorker({ store, logger, settings: deliverySettings, destinations: core.destinations, observer: metrics.webhookObserver() });
  const requestCounts = startRequestCountFlusher({ metrics, store, logger });
  // Every replica runs the loop; one at a time prunes (its own leadership, per pass).
  const retention = startRetention({ store, logger, metrics, ...(config.retention === undefined ? {} : { settings: config.retention }) });
  return { supervisors, monitor, webhooks, requestCounts, retention };
}

/** A settlement supervisor per network: leader election lets one replica settle each network at a time. */
function superviseNetworks({ config, store, logger, metrics, started, service }: ServiceCore): Map<string, SettlementSupervisor> {
  const supervisors = new Map<string, SettlementSupervisor>();
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
  return supervisors;
}

/** The running service; `close()` runs the shutdown once (later calls get the same promise). */
function runningService(core: ServiceCore, listeners: Listeners, loops: BackgroundLoops, tracing: boolean): RunningService {
  const { server, metricsListener, adminServer } = listeners;
  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    ...(metricsListener ? { metricsUrl: metricsListener.url } : {}),
    ...(adminServer ? { adminUrl: adminServer.url } : {}),
    service: core.service,
    watcher: (network) => loops.supervisors.get(network)?.watcher(),
    alerts: loops.monitor,
    ...(loops.webhooks ? { webhooks: loops.webhooks } : {}),
    requestCounts: loops.requestCounts,
    initialised: Promise.all(core.started.map((s) => s.initialised)).then(() => undefined),
    close() {
      closing ??= shutDown(core, listeners, loops, tracing);
      return closing;
    },
  };
}

/**
 * The ordered shutdown: stop accepting and drain in-flight requests (bounded), stop the loops, then close the
 * metrics listener, the chain clients, the rate limiter and the store; last, flush the traces.
 */
async function shutDown(core: ServiceCore, { server, metricsListener, adminServer }: Listeners, loops: BackgroundLoops, tracing: boolean): Promise<void> {
  core.lifecycle.shuttingDown = true;
  await server.close(); // stops accepting; in-flight requests finish (at most SHUTDOWN_GRACE_MS)
  await adminServer?.close();
  await loops.requestCounts.stop(); // the last counts, once no request is in flight
  loops.monitor.stop();
  await loops.webhooks?.stop();
  await loops.retention.stop();
  for (const supervisor of loops.supervisors.values()) await supervisor.stop();
  await metricsListener?.close();
  for (const s of core.started) s.stop();
  await core.rateLimiter.close();
  await core.store.close();
  // Last: the spans of everything above (the drained requests, the last passes) reach the collector.
  if (tracing) await stopTracing().catch((error: unknown) => core.logger.warn({ err: error }, "could not flush the last traces"));
}
