/**
 * Runs a network's settlement watcher in whichever replica holds the network's leadership (store.tryLeadership:
 * a PostgreSQL advisory lock on a dedicated connection; SQLite: always this process). Every replica runs this
 * loop; exactly one settles at a time, and when the leader dies its lock goes with its connection, so another
 * replica takes over within `retryMs` (plus the time PostgreSQL needs to see the connection gone: at once for
 * a killed process, TCP keepalive for a vanished host). One settler per network also closes the race of two
 * watchers appending to the deposit journal at once (src/settlement/journal.ts).
 */
import type { Logger } from "pino";
import { failureFields } from "../dependencies/failure.ts";
import type { ServiceMetrics } from "../metrics/metrics.ts";
import type { StartedNetwork } from "../network/start.ts";
import type { Leadership, Store } from "../store/types.ts";
import { startWatcher, type Watcher, type WatcherOptions } from "./watcher.ts";

export const DEFAULT_LEADER_RETRY_MS = 2_000;
/** Beyond this many blocks behind the head the watcher is "lagging" (one log line when it starts, one when it ends). */
export const DEFAULT_WATCHER_LAG_BLOCKS = 100;

export interface SettlementSupervisor {
  /** The running watcher while this process leads, else undefined. */
  watcher(): Watcher | undefined;
  stop(): Promise<void>;
}

export function leadershipName(network: string): string {
  return `settlement:${network}`;
}

export function superviseSettlement(args: {
  network: StartedNetwork;
  store: Store;
  logger: Logger;
  metrics?: ServiceMetrics;
  retryMs?: number;
  /** Log when the watcher falls further behind the head than this (default DEFAULT_WATCHER_LAG_BLOCKS). */
  lagBlocks?: number;
  watcherOptions?: Partial<WatcherOptions>;
}): SettlementSupervisor {
  const { network, store, metrics } = args;
  const name = network.runtime.config.name;
  const logger = args.logger.child({ component: "settlement", network: name });
  const retryMs = args.retryMs ?? DEFAULT_LEADER_RETRY_MS;
  const lagBlocks = BigInt(args.lagBlocks ?? DEFAULT_WATCHER_LAG_BLOCKS);
  let lagging = false;
  const noteLag = (head: bigint, cursor: bigint) => {
    const now = head - cursor > lagBlocks;
    if (now === lagging) return;
    lagging = now;
    const fields = { head: head.toString(), cursor: cursor.toString(), lagBlocks: (head - cursor).toString(), threshold: lagBlocks.toString() };
    if (now) logger.warn(fields, "settlement watcher lagging behind the chain head");
    else logger.info(fields, "settlement watcher caught up");
  };
  let stopped = false;
  let current: Watcher | undefined;
  let leadership: Leadership | undefined;
  let wake: (() => void) | undefined;
  const stopSignal = new Promise<void>((resolve) => (wake = resolve));
  metrics?.watcherLeader.set({ network: name }, 0);

  const pause = (ms: number) =>
    Promise.race([stopSignal, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);

  const loop = async () => {
    await Promise.race([network.initialised, stopSignal]);
    let lastProblem: string | undefined;
    while (!stopped) {
      try {
        leadership = await store.tryLeadership(leadershipName(name));
        lastProblem = undefined;
      } catch (error) {
        const fields = failureFields(error);
        if (fields.problem !== lastProblem) logger.warn(fields, "cannot ask for the settlement leadership: retrying");
        lastProblem = fields.problem;
        await pause(retryMs);
        continue;
      }
      if (!leadership) {
        await pause(retryMs);
        continue;
      }
      if (stopped) break;
      logger.info("this replica leads: settlement watcher started");
      metrics?.watcherLeader.set({ network: name }, 1);
      current = startWatcher({
        network: network.runtime,
        store,
        logger: args.logger,
        options: args.watcherOptions ?? {},
        observer: {
          passed: (r) => {
            noteLag(r.head, r.cursor);
            if (!metrics) return;
            metrics.watcherHead.set({ network: name }, Number(r.head));
            metrics.watcherCursor.set({ network: name }, Number(r.cursor));
            metrics.watcherLag.set({ network: name }, Number(r.head - r.cursor));
            metrics.watcherLastTick.set({ network: name }, Date.now() / 1000);
            if (r.settled > 0) metrics.sponsorshipsSettled.inc({ network: name }, r.settled);
            if (r.released > 0) metrics.sponsorshipsReleased.inc({ network: name }, r.released);
            if (r.deposits > r.contractDeposits) metrics.gasTankDeposits.inc({ network: name, source: "transfer" }, r.deposits - r.contractDeposits);
            if (r.contractDeposits > 0) metrics.gasTankDeposits.inc({ network: name, source: "contract" }, r.contractDeposits);
            if (r.depositsReverted > 0) metrics.gasTankDepositsReverted.inc({ network: name }, r.depositsReverted);
          },
          failed: () => metrics?.watcherErrors.inc({ network: name }),
        },
      });
      const lost = await Promise.race([leadership.lost.then(() => true), stopSignal.then(() => false)]);
      await current.stop();
      current = undefined;
      metrics?.watcherLeader.set({ network: name }, 0);
      if (lost) logger.warn("settlement leadership lost (database connection broke): watcher stopped; trying to lead again");
      await leadership.release();
      leadership = undefined;
    }
  };
  const done = loop();

  return {
    watcher: () => current,
    async stop() {
      stopped = true;
      wake?.();
      await done;
    },
  };
}
