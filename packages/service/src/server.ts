/**
 * Wires a configuration into a running service: the store (tokens synced from configuration), each network's
 * runtime (pre-flight checked), the Koa app on loopback. `close()` stops everything in order.
 */
import type { Logger } from "pino";
import type { ServiceConfig } from "./config/types.ts";
import type { NetworkRuntime, ServiceContext } from "./context.ts";
import { createApp, listen } from "./app.ts";
import { createLogger } from "./log.ts";
import { METHODS } from "./methods/index.ts";
import { createNetworkRuntime } from "./network.ts";
import { openStore } from "./store/index.ts";
import { DEFAULT_RATE_LIMIT, createRateLimiter } from "./rpc/rateLimit.ts";
import { startWatcher, type Watcher } from "./settlement/watcher.ts";

export interface RunningService {
  url: string;
  service: ServiceContext;
  /** The settlement watcher of each network with chain access (empty with `watch: false`). */
  watchers: ReadonlyMap<string, Watcher>;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Block poll interval of each network's market snapshot (ms). */
  pollMs?: number;
  now?: () => number;
  /**
   * Run a settlement watcher per network (default true). With several replicas sharing one database, run the
   * watchers in one of them only.
   */
  watch?: boolean;
}

export async function startService(config: ServiceConfig, options: StartOptions = {}): Promise<RunningService> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const store = await openStore(config);
  const networks = new Map<string, NetworkRuntime>();
  try {
    for (const network of config.networks) {
      for (const token of network.tokens) {
        await store.upsertToken({ network: network.name, ...token, enabled: true });
      }
      const runtime = await createNetworkRuntime(network, { pollMs: options.pollMs });
      networks.set(network.name, runtime);
      // How this network simulates (see "Simulation" in the README): an operator sees the fallback and the skip.
      logger.info(
        { network: network.name, v07Simulator: runtime.versions.includes("v0.7") ? runtime.chain?.simulator.kind : undefined, skipFinalSimulation: network.skipFinalSimulation === true },
        "network ready",
      );
    }
  } catch (error) {
    for (const runtime of networks.values()) runtime.chain?.market.stop();
    await store.close();
    throw error;
  }
  const service: ServiceContext = {
    config,
    store,
    networks,
    logger,
    now: options.now ?? (() => Math.floor(Date.now() / 1000)),
    rateLimiter: createRateLimiter(config.rateLimit ?? DEFAULT_RATE_LIMIT),
  };
  const server = await listen(createApp(service, METHODS), { host: config.host, port: config.port });
  logger.info({ url: server.url, networks: [...networks.keys()] }, "paymaster service listening");
  const watchers = new Map<string, Watcher>();
  if (options.watch !== false) {
    for (const runtime of networks.values()) {
      if (runtime.chain) watchers.set(runtime.config.name, startWatcher({ network: runtime, store, logger, options: { now: service.now } }));
    }
  }
  return {
    url: server.url,
    service,
    watchers,
    async close() {
      await server.close();
      for (const watcher of watchers.values()) await watcher.stop();
      for (const runtime of networks.values()) runtime.chain?.market.stop();
      await store.close();
    },
  };
}
