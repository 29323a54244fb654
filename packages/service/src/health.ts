/**
 * Liveness and readiness, answered on the public listener (load balancers need them) and on the metrics
 * listener:
 *   GET /health  200 {status: "ok", networks}: the process is alive and serving HTTP.
 *   GET /ready   200 when the store works (its health: reads and writes; and a read answers now) and every
 *                configured network is initialised with an RPC upstream that answers and a signer that signs;
 *                else 503, listing what is failing. A replica that is shutting down is not ready.
 * Also here: the store health's log lines and metrics (one line per state change).
 */
import type { Logger } from "pino";
import type { ReadinessReport, ServiceContext } from "./context.ts";
import type { ServiceMetrics } from "./metrics/metrics.ts";
import { knownClientError } from "./dependencies/failure.ts";
import { describeStoreState, type StoreHealth } from "./store/health.ts";

/** How long /ready waits for the store. */
export const READY_STORE_TIMEOUT_MS = 1_000;

export function healthBody(service: ServiceContext): { status: "ok"; networks: string[] } {
  return { status: "ok", networks: [...service.networks.keys()] };
}

/**
 * The store's health (a write that failed is remembered until one succeeds: a full disk leaves reads working),
 * then whether it answers a trivial read within READY_STORE_TIMEOUT_MS (a database that went silent while idle).
 * Never the driver's words, nor any error's own message: /ready is public. A failure the store did not classify
 * is answered as such and logged for the operator.
 */
async function storeCheck(service: ServiceContext): Promise<string> {
  const down = describeStoreState(service.store.health.state());
  if (down !== undefined) return `failing: the database: ${down}`;
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<"silent">((resolve) => {
    timer = setTimeout(() => resolve("silent"), READY_STORE_TIMEOUT_MS);
  });
  try {
    const answer = await Promise.race([service.store.getCursor("ready-check"), silent]);
    return answer === "silent" ? `failing: the database: no answer within ${READY_STORE_TIMEOUT_MS} ms` : "ok";
  } catch (error) {
    // The health has the cause when the read failed for want of the database; a client-safe sentence otherwise.
    const why = describeStoreState(service.store.health.state()) ?? knownClientError(error)?.message;
    if (why !== undefined) return `failing: the database: ${why}`;
    service.logger.error({ component: "store", err: error }, "readiness: the store's read failed with an error it does not classify");
    return "failing: the database: a read failed (unclassified: see the log)";
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The store's state changes as log lines (component "store": one when it goes down or its cause changes, one when
 * it is back) and metrics (paymaster_store_up, paymaster_store_errors_total by cause).
 */
export function reportStoreHealth(health: StoreHealth, logger: Logger, metrics?: ServiceMetrics): void {
  const log = logger.child({ component: "store" });
  metrics?.storeUp.set(health.state().up ? 1 : 0);
  health.onFailure((cause) => metrics?.storeErrors.inc({ cause }));
  health.onChange((now, before) => {
    metrics?.storeUp.set(now.up ? 1 : 0);
    if (now.up) {
      if (!before.up) log.info({ was: before.cause, downForMs: Date.now() - before.since }, "store available again");
      return;
    }
    const fields = { cause: now.cause, scope: now.scope, detail: now.detail };
    if (now.cause === "schema_too_new") log.error(fields, "a newer version of the service migrated the database: this replica reserves and signs nothing until it runs that version (not ready)");
    else if (now.scope === "writes") log.warn(fields, "store cannot write: sponsorships get 503 STORE_UNAVAILABLE until a write succeeds");
    else log.warn(fields, "store unavailable: requests get 503 STORE_UNAVAILABLE; probing until it answers");
  });
}

export async function readiness(service: ServiceContext, extra: { networks: ReadonlyMap<string, () => string | undefined>; shuttingDown: () => boolean }): Promise<ReadinessReport> {
  const checks: Record<string, string> = { store: await storeCheck(service) };
  for (const [name, failing] of extra.networks) {
    const problem = failing();
    checks[`network:${name}`] = problem === undefined ? "ok" : `failing: ${problem}`;
  }
  if (extra.shuttingDown()) checks["process"] = "failing: shutting down";
  return { ready: Object.values(checks).every((c) => c === "ok"), checks };
}
