/**
 * Liveness and readiness, answered on the public listener (load balancers need them) and on the metrics
 * listener:
 *   GET /health  200 {status: "ok", networks}: the process is alive and serving HTTP.
 *   GET /ready   200 when the store answers and every configured network is initialised with an RPC upstream
 *                that answers; else 503, listing what is failing. A replica that is shutting down is not ready.
 */
import type { ReadinessReport, ServiceContext } from "./context.ts";

/** How long /ready waits for the store. */
export const READY_STORE_TIMEOUT_MS = 1_000;

export function healthBody(service: ServiceContext): { status: "ok"; networks: string[] } {
  return { status: "ok", networks: [...service.networks.keys()] };
}

/** Whether the store answers a trivial read within READY_STORE_TIMEOUT_MS. */
async function storeCheck(service: ServiceContext): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      service.store.getCursor("ready-check"),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${READY_STORE_TIMEOUT_MS} ms`)), READY_STORE_TIMEOUT_MS);
      }),
    ]);
    return "ok";
  } catch (error) {
    return `failing: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    clearTimeout(timer);
  }
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
