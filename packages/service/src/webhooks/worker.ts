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
import type { ClaimedDelivery, ClaimShare, Store } from "../store/types.ts";
import type { DestinationPolicy } from "./destination.ts";
import { redactedUrl, sendSigned } from "./send.ts";
import { failureFields } from "../dependencies/failure.ts";
import { tracedRoot, type TraceSpan } from "../telemetry/trace.ts";
import { tracedStore } from "../store/traced.ts";
import { redactUrl } from "../text/redactUrl.ts";

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
  /** Deliveries in flight at once per replica: a pool, refilled as soon as one finishes. */
  concurrency: number;
  /** Deliveries in flight at once per replica to one endpoint while it answers; 1 while it fails. */
  perEndpointConcurrency: number;
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
  perEndpointConcurrency: 2,
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

/** What the worker reports per attempt (the per-endpoint metrics: src/metrics/metrics.ts). */
export interface DeliveryObserver {
  attempt(delivery: ClaimedDelivery, outcome: DeliveryOutcomeName, seconds: number): void;
}

export type DeliveryOutcomeName = "delivered" | "retry" | "dead" | "cancelled";

export interface WebhookWorker {
  /** Claims what is due into the free slots now and waits for those attempts; answers how many were claimed (tests). */
  runOnce(): Promise<number>;
  /** Looks at the outbox now instead of at the next poll. */
  wake(): void;
  stop(): Promise<void>;
}

/**
 * The pool: up to `concurrency` attempts in flight; each one that ends frees its slot and the outbox is looked at
 * again at once, so a slow receiver holds only its own slots. Per endpoint, at most `perEndpointConcurrency` in
 * flight, and 1 once an attempt failed (a breaker that stays half-open: one probe at a time until an attempt is
 * delivered), so endpoints that hang or fail cannot take the pool from the others, of this project or another.
 */
export function startWebhookWorker(args: {
  store: Store;
  logger: Logger;
  settings?: Partial<DeliverySettings>;
  /** Where events may be sent (destination.ts): the service's policy, from webhooks.allowedDestinations. */
  destinations: DestinationPolicy;
  /** Start the polling loop (default true; tests drive runOnce themselves). */
  autoStart?: boolean;
  onAttempt?: (delivery: ClaimedDelivery, outcome: "delivered" | "retry" | "dead") => void;
  observer?: DeliveryObserver;
}): WebhookWorker {
  const settings: DeliverySettings = { ...DEFAULT_DELIVERY, ...args.settings };
  const perEndpoint = Math.max(1, Math.min(settings.perEndpointConcurrency, settings.concurrency));
  const owner = `worker-${randomUUID()}`;
  const logger = args.logger.child({ component: "webhooks" });
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let failing = false;
  let prunedAt = 0;
  /** Attempts in flight, and per endpoint how many and whether its last attempt failed. */
  const inFlight = new Set<Promise<void>>();
  const endpoints = new Map<string, { inFlight: number; failing: boolean }>();
  /** One claim at a time; a wake during a claim claims again right after it. */
  let claiming: Promise<Promise<void>[]> | undefined;
  let again = false;
  /** Aborts in-flight requests on stop, so a hanging receiver never holds up shutdown. */
  const stopping = new AbortController();

  /** One delivery attempt, its own trace ("webhook.delivery") while tracing. */
  function attempt(delivery: ClaimedDelivery): Promise<void> {
    return tracedRoot("webhook.delivery", "client", deliver, delivery);
  }

  async function deliver(delivery: ClaimedDelivery, span: TraceSpan): Promise<void> {
    // The event's type and ids, the attempt and the receiver's redacted URL: never the payload or its signature.
    span.set("paymaster.webhook.event_type", delivery.type);
    span.set("paymaster.webhook.endpoint_id", delivery.endpointId);
    span.set("paymaster.webhook.attempt", delivery.attempts);
    // Scheme, host and port only: a receiver's path often carries its own secret (a chat hook's token).
    if (span.recording) span.set("paymaster.webhook.destination", redactUrl(delivery.url));
    const store = tracedStore(args.store, span);
    const started = performance.now();
    const result = await sendSigned(
      { url: delivery.url, secret: delivery.secret, body: delivery.payload, id: delivery.id, type: delivery.type },
      { timeoutMs: settings.timeoutMs, cancel: stopping.signal, destinations: args.destinations },
    );
    const seconds = (performance.now() - started) / 1000;
    const now = Date.now();
    const fields = { eventId: delivery.id, type: delivery.type, endpointId: delivery.endpointId, url: redactedUrl(delivery.url), attempt: delivery.attempts };
    const state = endpointState(delivery.endpointId);
    if (result.ok) {
      state.failing = false;
      span.set("paymaster.webhook.outcome", "delivered");
      await store.completeWebhookDelivery(delivery.id, owner, { delivered: true }, now);
      args.observer?.attempt(delivery, "delivered", seconds);
      args.onAttempt?.(delivery, "delivered");
      return;
    }
    if (stopping.signal.aborted) {
      // Not the receiver's fault: hand the event back, due now, to this or another replica (same id).
      span.set("paymaster.webhook.outcome", "cancelled");
      await store.completeWebhookDelivery(delivery.id, owner, { delivered: false, error: result.error, retryAtMs: now }, now);
      args.observer?.attempt(delivery, "cancelled", seconds);
      return;
    }
    state.failing = true;
    const dead = delivery.attempts >= settings.maxAttempts;
    const retryAtMs = dead ? undefined : now + backoffMs(delivery.attempts, settings);
    span.set("paymaster.webhook.outcome", dead ? "dead" : "retry");
    span.fail("delivery_failed");
    await store.completeWebhookDelivery(delivery.id, owner, { delivered: false, error: result.error, retryAtMs }, now);
    if (dead) logger.warn({ ...fields, error: result.error }, "webhook event dead-lettered after its last attempt");
    else logger.info({ ...fields, error: result.error, retryInMs: retryAtMs! - now }, "webhook delivery failed: retrying later");
    args.observer?.attempt(delivery, dead ? "dead" : "retry", seconds);
    args.onAttempt?.(delivery, dead ? "dead" : "retry");
  }

  function endpointState(id: string): { inFlight: number; failing: boolean } {
    let state = endpoints.get(id);
    if (!state) endpoints.set(id, (state = { inFlight: 0, failing: false }));
    return state;
  }

  /** The room each endpoint with something in flight, or failing, has left in this replica. */
  function share(): ClaimShare {
    const room = new Map<string, number>();
    for (const [id, state] of endpoints) room.set(id, Math.max((state.failing ? 1 : perEndpoint) - state.inFlight, 0));
    return { perEndpoint, room };
  }

  /** Starts one claimed delivery in the pool; its end frees the slot and looks at the outbox again. */
  function launch(delivery: ClaimedDelivery): Promise<void> {
    const state = endpointState(delivery.endpointId);
    state.inFlight++;
    const run = attempt(delivery)
      .catch((error) => logger.warn({ eventId: delivery.id, ...failureFields(error) }, "webhook delivery could not be recorded"))
      .finally(() => {
        inFlight.delete(run);
        state.inFlight--;
        if (state.inFlight === 0 && !state.failing) endpoints.delete(delivery.endpointId);
        if (!stopped && args.autoStart !== false) schedule(0);
      });
    inFlight.add(run);
    return run;
  }

  async function pruneIfDue(now: number): Promise<void> {
    if (settings.retentionDays <= 0 || now - prunedAt < PRUNE_INTERVAL_MS) return;
    prunedAt = now;
    const pruned = await args.store.pruneWebhookDeliveries(now - settings.retentionDays * 86_400_000);
    if (pruned > 0) logger.info({ pruned, retentionDays: settings.retentionDays }, "deleted delivered webhook events past their retention");
  }

  /** Fills the free slots with due events; answers the attempts started. */
  function fill(): Promise<Promise<void>[]> {
    if (claiming) {
      again = true;
      return claiming.then(() => []);
    }
    claiming = (async () => {
      const started: Promise<void>[] = [];
      do {
        again = false;
        const free = settings.concurrency - inFlight.size;
        if (stopped || free <= 0) break;
        const now = Date.now();
        await pruneIfDue(now);
        const claimed = await args.store.claimWebhookDeliveries(owner, now, leaseMs(settings), free, share());
        started.push(...claimed.map(launch));
        // Slots still free and a full claim: there is likely more (of endpoints not yet at their share).
        if (claimed.length === free) again = true;
        if (claimed.length === 0) break;
      } while (again);
      return started;
    })().finally(() => {
      claiming = undefined;
      // A wake that came as the claim was ending: serve it now rather than at the next poll.
      if (again && args.autoStart !== false) schedule(0);
    });
    return claiming;
  }

  async function runOnce(): Promise<number> {
    const started = await fill();
    await Promise.all(started);
    return started.length;
  }

  function schedule(delay: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(loop, delay);
    timer.unref();
  }

  function loop(): void {
    void fill().then(
      () => {
        if (failing) logger.info("webhook outbox reachable again");
        failing = false;
        schedule(settings.pollMs);
      },
      (error: unknown) => {
        // The store is unreachable: one line when it starts, not one per poll.
        if (!failing) logger.warn(failureFields(error), "webhook outbox unreachable: deliveries wait");
        failing = true;
        schedule(settings.pollMs);
      },
    );
  }

  if (args.autoStart !== false) schedule(0);
  return {
    runOnce,
    wake: () => schedule(0),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      stopping.abort();
      await claiming?.catch(() => undefined);
      await Promise.all(inFlight);
    },
  };
}
