/**
 * Request counts per minute in the store (migration 9), so the console can chart requests and error reasons
 * over time across restarts and replicas. A request costs nothing more than the counter increment dispatch
 * already makes (metrics.requests): every REQUEST_COUNT_FLUSH_MS this reads that counter, takes what grew since
 * the last flush, and adds it to the current minute's rows in one store transaction. Counts are attributed to
 * the minute of the flush (at most one interval late). A failed flush keeps its counts for the next one; the
 * last flush runs when the service closes. Rows older than the retention are pruned once an hour.
 */
import type { Logger } from "pino";
import type { RequestCount, Store } from "../store/types.ts";
import type { ServiceMetrics } from "./metrics.ts";
import { failureFields } from "../dependencies/failure.ts";

export const REQUEST_COUNT_FLUSH_MS = 15_000;
export const REQUEST_COUNT_RETENTION_DAYS = 35;
const PRUNE_EVERY_MS = 3_600_000;

export interface RequestCountFlusher {
  /** Writes what was counted since the last flush (tests; the timer does it every interval). */
  flush(): Promise<void>;
  /** Stops the timer and flushes one last time. */
  stop(): Promise<void>;
}

const keyOf = (network: string, method: string, outcome: string) => `${network}\u0000${method}\u0000${outcome}`;

/** The requests counter's values added up over the dialects, by (network, method, outcome). */
async function counted(metrics: ServiceMetrics): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  for (const v of (await metrics.requests.get()).values) {
    const l = v.labels as { network?: string; method?: string; outcome?: string };
    const key = keyOf(String(l.network), String(l.method), String(l.outcome));
    totals.set(key, (totals.get(key) ?? 0) + v.value);
  }
  return totals;
}

export function startRequestCountFlusher(args: {
  metrics: ServiceMetrics;
  store: Store;
  logger: Logger;
  intervalMs?: number;
  nowMs?: () => number;
}): RequestCountFlusher {
  const { metrics, store } = args;
  const logger = args.logger.child({ component: "request-counts" });
  const nowMs = args.nowMs ?? Date.now;
  /** What the counter stood at when its counts were last written. */
  let written = new Map<string, number>();
  let lastPrune = 0;
  let failing = false;

  async function write(): Promise<void> {
    const current = await counted(metrics);
    const minute = Math.floor(nowMs() / 60_000) * 60;
    const rows: RequestCount[] = [];
    for (const [key, value] of current) {
      const delta = value - (written.get(key) ?? 0);
      if (delta <= 0) continue;
      const [network, method, outcome] = key.split("\u0000") as [string, string, string];
      rows.push({ minute, network, method, outcome, count: delta });
    }
    await store.addRequestCounts(rows);
    written = current;
    if (nowMs() - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = nowMs();
      await store.pruneRequestCounts(minute - REQUEST_COUNT_RETENTION_DAYS * 86_400);
    }
  }

  // One flush at a time: an overlapping call waits for the one in progress, then runs its own.
  let running: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    running = running.then(() =>
      write().then(
        () => {
          if (failing) logger.info("request counts written again");
          failing = false;
        },
        (error: unknown) => {
          // Kept for the next flush: the counter still holds them.
          if (!failing) logger.warn(failureFields(error), "cannot write request counts to the store: retrying");
          failing = true;
        },
      ),
    );
    return running;
  };
  const timer = setInterval(() => void flush(), args.intervalMs ?? REQUEST_COUNT_FLUSH_MS);
  timer.unref();
  return {
    flush,
    async stop() {
      clearInterval(timer);
      await flush();
    },
  };
}
