/**
 * Webhook events that no store transition causes: deposit.low, from the alert checks (src/monitor/alerts.ts)
 * when a paymaster's EntryPoint deposit falls below its network's `depositAlertWei`. The deposit is shared by
 * every project, so every project's subscribed endpoints receive it. Each replica runs the checks: the event's
 * de-duplication key (network, paymaster, UTC hour) lets only the first replica's event in that hour through.
 */
import type { Store } from "../store/types.ts";

export async function emitDepositLow(
  store: Store,
  data: { network: string; version: string; kind: string; paymaster: string; depositWei: string; thresholdWei: string },
  nowMs: number = Date.now(),
): Promise<number> {
  const hour = new Date(nowMs).toISOString().slice(0, 13);
  return store.emitWebhookEvent({ projectId: null, type: "deposit.low", data, dedupeKey: `deposit.low:${data.network}:${data.paymaster}:${hour}` });
}
