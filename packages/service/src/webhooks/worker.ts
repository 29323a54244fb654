/**
 * The delivery worker: sends the outbox's due events in the background, in every replica. Each claims rows with
 * a lease (a conditional update the store runs on SQLite and PostgreSQL alike), so replicas never send one row
 * at the same time; the lease outlasts the request's timeout, so a slow receiver's event is never claimed twice.
 * A failed attempt is retried with exponential backoff up to `maxAttempts`, then dead-lettered (the admin
 * functions list and replay them). Sponsorship never waits on any of this: the sponsor path only writes rows.
 *
 * Delivery is at least once: a process killed between the receiver's 2xx and the row being marked delivered
 * sends that event again after the lease expires, with the same id; receivers de-duplicate by it.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { ClaimedDelivery, Store } from "../store/types.ts";
import type { DestinationPolicy } from "./destination.ts";
import { redactedUrl, sendSigned } from "./send.ts";

export interface DeliverySettings {
  /** Attempts before an event is dead-lettered. */
  maxAttempts: number;
  /** Delay after the first failure; doubled after each further one, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** How long one attempt may take (connect, send, answer). */
  timeoutMs: number;
  /** How often the outbox is looked at when idle. */
  pollMs: number;
  /** Deliveries in flight at once per replica. */
  concurrency: number;
  /** Delivered events are deleted this many days after delivery (0: kept forever); dead letters are kept. */
  retentionDays: number;
}

export const DEFAULT_DELIVERY: Readonly<DeliverySettings> = Object.freeze({
  maxAttempts: 10,
  baseDelayMs: 10_000,
  maxDelayMs: 3_600_000,
  timeoutMs: 10_000,
  pollMs: 1_000,
  concurrency: 8,
  retentionDays: 30,
});

/** How often a worker deletes delivered events past their retention. */
const PRUNE_INTERVAL_MS = 3_600_000;

/** Delay before attempt `failed + 1` after `failed` failures: base * 2^(failed-1), capped, plus up to 10% jitter (replicas and endpoints spread out). */
export function backoffMs(failed: number, settings: Pick<DeliverySettings, "baseDelayMs" | "maxDelayMs">, random = Math.random): number {
  const exp = Math.min(settings.baseDelayMs * 2 ** Math.max(failed - 1, 0), settings.maxDelayMs);
  return Math.round(exp * (1 + random() * 0.1));
}

/** A lease comfortably longer than one attempt. */
export function leaseMs(settings: Pick<DeliverySettings, "timeoutMs">): number {
  return settings.timeoutMs * 2 + 5_000;
}

export interface WebhookWorker {
  /** One round now: claims and sends what is due; answers how many were attempted (tests, and the loop). */
  runOnce(): Promise<number>;
  /** Looks at the outbox now instead of at the next poll. */
  wake(): void;
  stop(): Promise<void>;
}

export function startWebhookWorker(args: {
  store: Store;
  logger: Logger;
  settings?: Partial<DeliverySettings>;
  /** Where events may be sent (destination.ts): the service's policy, from webhooks.allowedDestinations. */
  destinations: DestinationPolicy;
  /** Start the polling loop (default true; tests drive runOnce themselves). */
  autoStart?: boolean;
  onAttempt?: (delivery: ClaimedDelivery, outcome: "delivered" | "retry" | "dead") => void;
}): WebhookWorker {
  const settings: DeliverySettings = { ...DEFAULT_DELIVERY, ...args.settings };
  const owner = `worker-${randomUUID()}`;
  const logger = args.logger.child({ component: "webhooks" });
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<number> | undefined;
  let failing = false;
  let prunedAt = 0;
  /** Aborts in-flight requests on stop, so a hanging receiver never holds up shutdown. */
  const stopping = new AbortController();

  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    const result = await sendSigned(
      { url: delivery.url, secret: delivery.secret, body: delivery.payload, id: delivery.id, type: delivery.type },
      { timeoutMs: settings.timeoutMs, cancel: stopping.signal, destinations: args.destinations },
    );
    const now = Date.now();
    const fields = { eventId: delivery.id, type: delivery.type, endpointId: delivery.endpointId, url: redactedUrl(delivery.url), attempt: delivery.attempts };
    if (result.ok) {
      await args.store.completeWebhookDelivery(delivery.id, owner, { delivered: true }, now);
      args.onAttempt?.(delivery, "delivered");
      return;
    }
    if (stopping.signal.aborted) {
      // Not the receiver's fault: hand the event back, due now, to this or another replica (same id).
      await args.store.completeWebhookDelivery(delivery.id, owner, { delivered: false, error: result.error, retryAtMs: now }, now);
      return;
    }
    const dead = delivery.attempts >= settings.maxAttempts;
    const retryAtMs = dead ? undefined : now + backoffMs(delivery.attempts, settings);
    await args.store.completeWebhookDelivery(delivery.id, owner, { delivered: false, error: result.error, retryAtMs }, now);
    if (dead) logger.warn({ ...fields, error: result.error }, "webhook event dead-lettered after its last attempt");
    else logger.info({ ...fields, error: result.error, retryInMs: retryAtMs! - now }, "webhook delivery failed: retrying later");
    args.onAttempt?.(delivery, dead ? "dead" : "retry");
  }

  async function runOnce(): Promise<number> {
    const now = Date.now();
    if (settings.retentionDays > 0 && now - prunedAt >= PRUNE_INTERVAL_MS) {
      prunedAt = now;
      const pruned = await args.store.pruneWebhookDeliveries(now - settings.retentionDays * 86_400_000);
      if (pruned > 0) logger.info({ pruned, retentionDays: settings.retentionDays }, "deleted delivered webhook events past their retention");
    }
    const claimed = await args.store.claimWebhookDeliveries(owner, Date.now(), leaseMs(settings), settings.concurrency);
    await Promise.all(claimed.map((d) => attempt(d).catch((error) => logger.warn({ eventId: d.id, error: String(error) }, "webhook delivery could not be recorded"))));
    return claimed.length;
  }

  function schedule(delay: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(loop, delay);
    timer.unref();
  }

  function loop(): void {
    if (round) return;
    round = (async () => {
      let n = 0;
      try {
        n = await runOnce();
        if (failing) logger.info("webhook outbox reachable again");
        failing = false;
      } catch (error) {
        // The store is unreachable: one line when it starts, not one per poll.
        if (!failing) logger.warn({ error: error instanceof Error ? error.message : String(error) }, "webhook outbox unreachable: deliveries wait");
        failing = true;
      }
      return n;
    })();
    void round.then((n) => {
      round = undefined;
      // A full batch: there is likely more; else wait for the next poll.
      schedule(n >= settings.concurrency ? 0 : settings.pollMs);
    });
  }

  if (args.autoStart !== false) schedule(0);
  return {
    runOnce,
    wake: () => schedule(0),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      stopping.abort();
      await round;
    },
  };
}
