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

export interface RunningService {
  url: string;
  service: ServiceContext;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Block poll interval of each network's market snapshot (ms). */
  pollMs?: number;
  now?: () => number;
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
      networks.set(network.name, await createNetworkRuntime(network, { pollMs: options.pollMs }));
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
  };
  const server = await listen(createApp(service, METHODS), { host: config.host, port: config.port });
  logger.info({ url: server.url, networks: [...networks.keys()] }, "paymaster service listening");
  return {
    url: server.url,
    service,
    async close() {
      await server.close();
      for (const runtime of networks.values()) runtime.chain?.market.stop();
      await store.close();
    },
  };
}
