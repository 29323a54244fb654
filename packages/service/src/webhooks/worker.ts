/**
 * The delivery worker: sends the outbox's due events in the background, in every replica. Each claims rows with
 * a lease (a conditional update the store runs on SQLite and PostgreSQL alike), so replicas never send one row
 * at the same time; the lease outlasts the request's timeout, so a slow receiver's event is never claimed twice.
 * A failed attempt is retried with exponential backoff up to `maxAttempts`, then dead-lettered (the admin
 * functions list and replay them). Sponsorship never waits on any of this: the sponsor path only writes rows.
 *
 * Delivery is at least once: a process killed between the receiver's 2xx and the row being marked delivered
 * sends that event again after the lease expires, with the same id; receivers de-duplicate by it.
 *
 * The steps, each handed the worker's one WorkerState: claim (due rows into the pool's free slots, within each
 * endpoint's share), deliver (one signed attempt), record the outcome (delivered, retry or dead letter,
 * cancelled on stop), and the loop that polls, wakes and stops.
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

/** The worker's arguments. */
export interface StartWebhookWorkerArgs {
  store: Store;
  logger: Logger;
  settings?: Partial<DeliverySettings>;
  /** Where events may be sent (destination.ts): the service's policy, from webhooks.allowedDestinations. */
  destinations: DestinationPolicy;
  /** Start the polling loop (default true; tests drive runOnce themselves). */
  autoStart?: boolean;
  onAttempt?: (delivery: ClaimedDelivery, outcome: "delivered" | "retry" | "dead") => void;
  observer?: DeliveryObserver;
}

/** One endpoint's attempts in flight in this replica, and whether its last attempt failed. */
interface EndpointState {
  inFlight: number;
  failing: boolean;
}

/** What one worker keeps from its start to its stop, handed to every step. */
interface WorkerState {
  readonly store: Store;
  readonly logger: Logger;
  readonly settings: DeliverySettings;
  /** Deliveries in flight at once to one endpoint while it answers: perEndpointConcurrency, within concurrency. */
  readonly perEndpoint: number;
  /** The name this worker's leases are taken in. */
  readonly owner: string;
  readonly destinations: DestinationPolicy;
  /** The polling loop runs (false: tests drive runOnce). */
  readonly polls: boolean;
  readonly onAttempt: StartWebhookWorkerArgs["onAttempt"];
  readonly observer: DeliveryObserver | undefined;
  /** Attempts in flight, and per endpoint how many and whether its last attempt failed. */
  readonly inFlight: Set<Promise<void>>;
  readonly endpoints: Map<string, EndpointState>;
  /** One claim at a time; a wake during a claim claims again right after it. */
  claiming: Promise<Promise<void>[]> | undefined;
  again: boolean;
  /** Aborts in-flight requests on stop, so a hanging receiver never holds up shutdown. */
  readonly stopping: AbortController;
  stopped: boolean;
  timer: NodeJS.Timeout | undefined;
  /** The outbox was unreachable at the last poll (one log line when that starts, one when it ends). */
  failing: boolean;
  /** When delivered events past their retention were last deleted (ms). */
  prunedAt: number;
}

/**
 * The pool: up to `concurrency` attempts in flight; each one that ends frees its slot and the outbox is looked at
 * again at once, so a slow receiver holds only its own slots. Per endpoint, at most `perEndpointConcurrency` in
 * flight, and 1 once an attempt failed (a breaker that stays half-open: one probe at a time until an attempt is
 * delivered), so endpoints that hang or fail cannot take the pool from the others, of this project or another.
 */
export function startWebhookWorker(args: StartWebhookWorkerArgs): WebhookWorker {
  const settings: DeliverySettings = { ...DEFAULT_DELIVERY, ...args.settings };
  const state: WorkerState = {
    store: args.store,
    logger: args.logger.child({ component: "webhooks" }),
    settings,
    perEndpoint: Math.max(1, Math.min(settings.perEndpointConcurrency, settings.concurrency)),
    owner: `worker-${randomUUID()}`,
    destinations: args.destinations,
    polls: args.autoStart !== false,
    onAttempt: args.onAttempt,
    observer: args.observer,
    inFlight: new Set(),
    endpoints: new Map(),
    claiming: undefined,
    again: false,
    stopping: new AbortController(),
    stopped: false,
    timer: undefined,
    failing: false,
    prunedAt: 0,
  };
  if (state.polls) schedule(state, 0);
  return {
    runOnce: () => runOnce(state),
    wake: () => schedule(state, 0),
    stop: () => stop(state),
  };
}

// ---- claim

/** Fills the free slots with due events; answers the attempts started. */
function fill(state: WorkerState): Promise<Promise<void>[]> {
  if (state.claiming) {
    state.again = true;
    return state.claiming.then(() => []);
  }
  state.claiming = claimUntilFull(state).finally(() => {
    state.claiming = undefined;
    // A wake that came as the claim was ending: serve it now rather than at the next poll.
    if (state.again && state.polls) schedule(state, 0);
  });
  return state.claiming;
}

/** Claims due events into the free slots and starts them, again while a claim came back full or a wake came. */
async function claimUntilFull(state: WorkerState): Promise<Promise<void>[]> {
  const started: Promise<void>[] = [];
  do {
    state.again = false;
    const free = state.settings.concurrency - state.inFlight.size;
    if (state.stopped || free <= 0) break;
    const now = Date.now();
    await pruneIfDue(state, now);
    const claimed = await state.store.claimWebhookDeliveries(state.owner, now, leaseMs(state.settings), free, share(state));
    started.push(...claimed.map((delivery) => launch(state, delivery)));
    // Slots still free and a full claim: there is likely more (of endpoints not yet at their share).
    if (claimed.length === free) state.again = true;
    if (claimed.length === 0) break;
  } while (state.again);
  return started;
}

function endpointState(state: WorkerState, id: string): EndpointState {
  let endpoint = state.endpoints.get(id);
  if (!endpoint) state.endpoints.set(id, (endpoint = { inFlight: 0, failing: false }));
  return endpoint;
}

/** The room each endpoint with something in flight, or failing, has left in this replica. */
function share(state: WorkerState): ClaimShare {
  const room = new Map<string, number>();
  for (const [id, endpoint] of state.endpoints) room.set(id, Math.max((endpoint.failing ? 1 : state.perEndpoint) - endpoint.inFlight, 0));
  return { perEndpoint: state.perEndpoint, room };
}

async function pruneIfDue(state: WorkerState, now: number): Promise<void> {
  const { retentionDays } = state.settings;
  if (retentionDays <= 0 || now - state.prunedAt < PRUNE_INTERVAL_MS) return;
  state.prunedAt = now;
  const pruned = await state.store.pruneWebhookDeliveries(now - retentionDays * 86_400_000);
  if (pruned > 0) state.logger.info({ pruned, retentionDays }, "deleted delivered webhook events past their retention");
}

/** Starts one claimed delivery in the pool; its end frees the slot and looks at the outbox again. */
function launch(state: WorkerState, delivery: ClaimedDelivery): Promise<void> {
  const endpoint = endpointState(state, delivery.endpointId);
  endpoint.inFlight++;
  const run = attempt(state, delivery)
    .catch((error) => state.logger.warn({ eventId: delivery.id, ...failureFields(error) }, "webhook delivery could not be recorded"))
    .finally(() => {
      state.inFlight.delete(run);
      endpoint.inFlight--;
      if (endpoint.inFlight === 0 && !endpoint.failing) state.endpoints.delete(delivery.endpointId);
      if (!state.stopped && state.polls) schedule(state, 0);
    });
  state.inFlight.add(run);
  return run;
}

// ---- deliver

/** One delivery attempt, its own trace ("webhook.delivery") while tracing. */
function attempt(state: WorkerState, delivery: ClaimedDelivery): Promise<void> {
  return tracedRoot("webhook.delivery", "client", (claimed: ClaimedDelivery, span: TraceSpan) => deliver(state, claimed, span), delivery);
}

/** An attempt that has had its answer (or none), to be recorded. */
interface Attempted {
  delivery: ClaimedDelivery;
  /** The store seen through the attempt's span. */
  store: Store;
  span: TraceSpan;
  seconds: number;
  /** When the answer came (ms). */
  now: number;
}

/** Sends the event, signed, to its endpoint, then records the outcome. */
async function deliver(state: WorkerState, delivery: ClaimedDelivery, span: TraceSpan): Promise<void> {
  // The event's type and ids, the attempt and the receiver's redacted URL: never the payload or its signature.
  span.set("paymaster.webhook.event_type", delivery.type);
  span.set("paymaster.webhook.endpoint_id", delivery.endpointId);
  span.set("paymaster.webhook.attempt", delivery.attempts);
  // Scheme, host and port only: a receiver's path often carries its own secret (a chat hook's token).
  if (span.recording) span.set("paymaster.webhook.destination", redactUrl(delivery.url));
  const store = tracedStore(state.store, span);
  const started = performance.now();
  const result = await sendSigned(
    { url: delivery.url, secret: delivery.secret, body: delivery.payload, id: delivery.id, type: delivery.type },
    { timeoutMs: state.settings.timeoutMs, cancel: state.stopping.signal, destinations: state.destinations },
  );
  const attempted: Attempted = { delivery, store, span, seconds: (performance.now() - started) / 1000, now: Date.now() };
  const endpoint = endpointState(state, delivery.endpointId);
  if (result.ok) return recordDelivered(state, attempted, endpoint);
  if (state.stopping.signal.aborted) return recordCancelled(state, attempted, result.error);
  return recordFailed(state, attempted, endpoint, result.error);
}

// ---- record the outcome

async function recordDelivered(state: WorkerState, { delivery, store, span, seconds, now }: Attempted, endpoint: EndpointState): Promise<void> {
  endpoint.failing = false;
  span.set("paymaster.webhook.outcome", "delivered");
  await store.completeWebhookDelivery(delivery.id, state.owner, { delivered: true }, now);
  state.observer?.attempt(delivery, "delivered", seconds);
  state.onAttempt?.(delivery, "delivered");
}

/** Stopped mid-attempt: not the receiver's fault, so the event goes back, due now, to this or another replica (same id). */
async function recordCancelled(state: WorkerState, { delivery, store, span, seconds, now }: Attempted, error: string): Promise<void> {
  span.set("paymaster.webhook.outcome", "cancelled");
  await store.completeWebhookDelivery(delivery.id, state.owner, { delivered: false, error, retryAtMs: now }, now);
  state.observer?.attempt(delivery, "cancelled", seconds);
}

/** A failed attempt: retried after backoffMs, or dead-lettered after its last; the endpoint gets one slot until it answers. */
async function recordFailed(state: WorkerState, { delivery, store, span, seconds, now }: Attempted, endpoint: EndpointState, error: string): Promise<void> {
  endpoint.failing = true;
  const dead = delivery.attempts >= state.settings.maxAttempts;
  const retryAtMs = dead ? undefined : now + backoffMs(delivery.attempts, state.settings);
  span.set("paymaster.webhook.outcome", dead ? "dead" : "retry");
  span.fail("delivery_failed");
  await store.completeWebhookDelivery(delivery.id, state.owner, { delivered: false, error, retryAtMs }, now);
  const fields = { eventId: delivery.id, type: delivery.type, endpointId: delivery.endpointId, url: redactedUrl(delivery.url), attempt: delivery.attempts };
  if (dead) state.logger.warn({ ...fields, error }, "webhook event dead-lettered after its last attempt");
  else state.logger.info({ ...fields, error, retryInMs: retryAtMs! - now }, "webhook delivery failed: retrying later");
  state.observer?.attempt(delivery, dead ? "dead" : "retry", seconds);
  state.onAttempt?.(delivery, dead ? "dead" : "retry");
}

// ---- the loop

/** Claims what is due into the free slots now and waits for those attempts; answers how many were claimed. */
async function runOnce(state: WorkerState): Promise<number> {
  const started = await fill(state);
  await Promise.all(started);
  return started.length;
}

/** The next look at the outbox in `delay` ms (replacing one already planned). */
function schedule(state: WorkerState, delay: number): void {
  if (state.stopped) return;
  clearTimeout(state.timer);
  state.timer = setTimeout(() => poll(state), delay);
  state.timer.unref();
}

/** One look at the outbox, then the next in pollMs. */
function poll(state: WorkerState): void {
  void fill(state).then(
    () => {
      if (state.failing) state.logger.info("webhook outbox reachable again");
      state.failing = false;
      schedule(state, state.settings.pollMs);
    },
    (error: unknown) => {
      // The store is unreachable: one line when it starts, not one per poll.
      if (!state.failing) state.logger.warn(failureFields(error), "webhook outbox unreachable: deliveries wait");
      state.failing = true;
      schedule(state, state.settings.pollMs);
    },
  );
}

async function stop(state: WorkerState): Promise<void> {
  state.stopped = true;
  clearTimeout(state.timer);
  state.stopping.abort();
  await state.claiming?.catch(() => undefined);
  await Promise.all(state.inFlight);
}
