/**
 * The sponsorship retention pass: deletes sponsorships that never landed (released: expired, replaced, refused
 * after reservation) `releasedDays` after their creation, and settled ones `settledDays` after settlement when
 * the operator sets that (settled rows are money records: kept by default). The store keeps what the console,
 * the strategy history and the counts need of them first (src/store/retention.ts); caps and usage never read them.
 *
 * Every replica runs the loop; one at a time prunes (the store's leadership "retention", taken per pass and
 * given back), in batches of `batchSize` rows, one short transaction each, with a pause between them, so the
 * sponsor path never waits on a long delete. One log line and the metrics per pass.
 */
import type { Logger } from "pino";
import type { ServiceMetrics } from "./metrics/metrics.ts";
import type { PruneCounts, PruneCutoffs, Store } from "./store/types.ts";
import { failureFields } from "./dependencies/failure.ts";
import { tracedRoot, type TraceSpan } from "./telemetry/trace.ts";
import { tracedStore } from "./store/traced.ts";

export interface RetentionSettings {
  /** Released sponsorships are deleted this many days after creation (0: kept forever). */
  releasedDays: number;
  /** Settled sponsorships are deleted this many days after settlement (0: kept forever, the default). */
  settledDays: number;
  /** Minutes between passes. */
  intervalMinutes: number;
  /** Rows per transaction. */
  batchSize: number;
  /** Pause between batches (ms): lets the sponsor path's transactions through. */
  pauseMs: number;
}

export const DEFAULT_RETENTION: Readonly<RetentionSettings> = Object.freeze({
  releasedDays: 7,
  settledDays: 0,
  intervalMinutes: 60,
  batchSize: 500,
  pauseMs: 50,
});

export const RETENTION_LEADERSHIP = "retention";

/** The cutoffs (unix seconds) of a pass at `nowSeconds`; a kind kept forever has none. Pure. */
export function retentionCutoffs(settings: Pick<RetentionSettings, "releasedDays" | "settledDays">, nowSeconds: number): PruneCutoffs {
  return {
    ...(settings.releasedDays > 0 ? { releasedBefore: nowSeconds - settings.releasedDays * 86_400 } : {}),
    ...(settings.settledDays > 0 ? { settledBefore: nowSeconds - settings.settledDays * 86_400 } : {}),
  };
}

export interface PassResult extends PruneCounts {
  batches: number;
  seconds: number;
}

/** Deletes batch after batch until one comes back short (or `stopped` says so). */
export async function prunePass(
  store: Store,
  settings: Pick<RetentionSettings, "batchSize" | "pauseMs">,
  cutoffs: PruneCutoffs,
  stopped: () => boolean = () => false,
): Promise<PassResult> {
  const started = performance.now();
  const total: PassResult = { released: 0, settled: 0, batches: 0, seconds: 0 };
  if (cutoffs.releasedBefore === undefined && cutoffs.settledBefore === undefined) return total;
  while (!stopped()) {
    const batch = await store.pruneSponsorships(cutoffs, settings.batchSize);
    total.batches++;
    total.released += batch.released;
    total.settled += batch.settled;
    if (batch.released + batch.settled < settings.batchSize) break;
    if (settings.pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, settings.pauseMs));
  }
  total.seconds = (performance.now() - started) / 1000;
  return total;
}

export interface RetentionLoop {
  /** One pass now if this replica can lead it (tests); undefined when another replica holds the leadership. */
  runOnce(): Promise<PassResult | undefined>;
  stop(): Promise<void>;
}

export function startRetention(args: {
  store: Store;
  logger: Logger;
  metrics?: ServiceMetrics;
  settings?: Partial<RetentionSettings>;
  /** Start the loop (default true; tests call runOnce). */
  autoStart?: boolean;
  now?: () => number;
}): RetentionLoop {
  const settings: RetentionSettings = { ...DEFAULT_RETENTION, ...args.settings };
  const logger = args.logger.child({ component: "retention" });
  const now = args.now ?? (() => Math.floor(Date.now() / 1000));
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<PassResult | undefined> | undefined;

  /** One pass, its own trace ("retention.pass") while tracing: its store transactions as children. */
  function pass(): Promise<PassResult | undefined> {
    return tracedRoot("retention.pass", "internal", prune, undefined);
  }

  async function prune(_: undefined, span: TraceSpan): Promise<PassResult | undefined> {
    const store = tracedStore(args.store, span);
    const leadership = await store.tryLeadership(RETENTION_LEADERSHIP);
    span.set("paymaster.retention.leader", leadership !== undefined);
    if (!leadership) return undefined;
    try {
      const cutoffs = retentionCutoffs(settings, now());
      const result = await prunePass(store, settings, cutoffs, () => stopped);
      span.set("paymaster.retention.released", result.released);
      span.set("paymaster.retention.settled", result.settled);
      span.set("paymaster.retention.batches", result.batches);
      args.metrics?.retentionPass(result);
      logger.info(
        { released: result.released, settled: result.settled, batches: result.batches, seconds: Number(result.seconds.toFixed(3)), ...cutoffs },
        "sponsorship retention pass",
      );
      return result;
    } finally {
      await leadership.release();
    }
  }

  function runOnce(): Promise<PassResult | undefined> {
    running ??= pass().finally(() => {
      running = undefined;
    });
    return running;
  }

  function schedule(delayMs: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void runOnce()
        .catch((error: unknown) => logger.warn(failureFields(error), "sponsorship retention pass failed: next pass later"))
        .finally(() => schedule(settings.intervalMinutes * 60_000));
    }, delayMs);
    timer.unref();
  }

  const enabled = settings.releasedDays > 0 || settings.settledDays > 0;
  // The first pass a minute after start: not in the middle of a rolling restart's warm-up.
  if (args.autoStart !== false && enabled) schedule(60_000);
  return {
    runOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
