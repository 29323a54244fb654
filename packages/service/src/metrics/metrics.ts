/**
 * The service's Prometheus metrics (prom-client), on a registry of their own (one per running service, so
 * tests can run several in one process). Names follow Prometheus conventions (`paymaster_` prefix, base units:
 * seconds and wei, `_total` counters); every label value is bounded: network names and methods come from the
 * configuration and the method registry, reasons from the error catalogue, strategies and projects are the
 * operator's own (no userOpHash, sender or API key is ever a label). The list with meanings: docs/operations.md.
 *
 * Values that live in the store (sponsorships by status, cap usage, gas tanks) are read when scraped, once per
 * scrape (shared by the gauges), so every replica reports the same shared totals: aggregate them with max().
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Store, WebhookBacklog } from "../store/types.ts";
import type { BillingAccount, BillingPlan } from "../billing/ledger.ts";
import type { DeliveryObserver } from "../webhooks/worker.ts";
import type { RpcObserver } from "../chain/rpc.ts";
import { capLines, type CapLine } from "./caps.ts";

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 5, 10];

/** Wei as a float: Prometheus samples are doubles (precise to ~15 digits, plenty for monitoring). */
export const weiToFloat = (wei: bigint): number => Number(wei);

export interface StoreSnapshot {
  sponsorships: { network: string; mode: string; version: string; status: string; count: number }[];
  gasTanks: { network: string; balanceWei: bigint; reservedWei: bigint; tanks: number }[];
  caps: CapLine[];
  webhookBacklog: WebhookBacklog[];
  billing: { projectId: string; plan: BillingPlan | undefined; account: BillingAccount }[];
}

/** USD micro-units as dollars, a float (monitoring precision). */
const usdMicrosToFloat = (micros: bigint): number => Number(micros) / 1e6;

export class ServiceMetrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: "paymaster_requests_total",
    help: "JSON-RPC calls answered, by dialect (v1, standard), method, network and outcome (ok or the error reason)",
    labelNames: ["dialect", "method", "network", "outcome"] as const,
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: "paymaster_request_duration_seconds",
    help: "Time to answer a JSON-RPC call, whole",
    labelNames: ["dialect", "method"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly requestChainWait = new Histogram({
    name: "paymaster_request_chain_wait_seconds",
    help: "Part of a call's time spent waiting on the chain RPC",
    labelNames: ["dialect", "method"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly requestOwnTime = new Histogram({
    name: "paymaster_request_own_seconds",
    help: "Part of a call's time spent in the service itself (store, policy, signing)",
    labelNames: ["dialect", "method"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly sponsorshipsSigned = new Counter({
    name: "paymaster_sponsorships_signed_total",
    help: "Sponsorships signed by this process, by network, mode (sponsor, erc20, user) and EntryPoint version",
    labelNames: ["network", "mode", "version"] as const,
    registers: [this.registry],
  });
  readonly oneCallSponsorships = new Counter({
    name: "paymaster_one_call_sponsorships_total",
    help: "Sponsorships whose gas the service estimated and signed on the estimate's one simulation, with no simulation of the signed op (docs/pipeline.md, One round trip), by network, mode and EntryPoint version",
    labelNames: ["network", "mode", "version"] as const,
    registers: [this.registry],
  });
  readonly oneCallFallbacks = new Counter({
    name: "paymaster_one_call_fallbacks_total",
    help: "Sponsorships whose gas the service estimated but whose signed op it simulated too before signing it out (the fallback), by network, mode, EntryPoint version and reason",
    labelNames: ["network", "mode", "version", "reason"] as const,
    registers: [this.registry],
  });
  readonly sponsorshipsSettled = new Counter({
    name: "paymaster_sponsorships_settled_total",
    help: "Sponsorships settled from the chain by this process's watcher",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly sponsorshipsReleased = new Counter({
    name: "paymaster_sponsorships_expired_total",
    help: "Reservations released after their signature expired unused, by this process's watcher",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly gasTankDeposits = new Counter({
    name: "paymaster_gas_tank_deposits_total",
    help: "Deposits credited to gas tanks by this process's watcher, by network and source (transfer: to the deposit address; contract: a GasTankDeposit event)",
    labelNames: ["network", "source"] as const,
    registers: [this.registry],
  });
  readonly rateLimitFallback = new Gauge({
    name: "paymaster_rate_limit_fallback",
    help: "1 while Redis does not answer and this process rate-limits with its own buckets (each replica then allows the full limit)",
    registers: [this.registry],
  });
  readonly rateLimitFallbackTakes = new Counter({
    name: "paymaster_rate_limit_fallback_takes_total",
    help: "Rate-limit bucket takes answered by this process's own buckets because Redis did not answer",
    registers: [this.registry],
  });
  readonly gasTankDepositsReverted = new Counter({
    name: "paymaster_gas_tank_deposits_reverted_total",
    help: "Gas-tank credits this process's watcher reverted because their block was reorganised away",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly sponsorships = new Gauge({
    name: "paymaster_sponsorships",
    help: "Sponsorship records in the store, by network, mode, version and status (reserved, signed, settled, released)",
    labelNames: ["network", "mode", "version", "status"] as const,
    registers: [this.registry],
  });
  readonly capLimit = new Gauge({
    name: "paymaster_strategy_cap_limit",
    help: "A strategy cap's limit (unit: wei, usd or ops; cap: global or daily)",
    labelNames: ["strategy", "cap", "unit"] as const,
    registers: [this.registry],
  });
  readonly capReserved = new Gauge({
    name: "paymaster_strategy_cap_reserved",
    help: "Held by outstanding reservations in a strategy cap's current period",
    labelNames: ["strategy", "cap", "unit"] as const,
    registers: [this.registry],
  });
  readonly capSpent = new Gauge({
    name: "paymaster_strategy_cap_spent",
    help: "Settled spending (ops: operations counted) in a strategy cap's current period",
    labelNames: ["strategy", "cap", "unit"] as const,
    registers: [this.registry],
  });
  readonly capRemaining = new Gauge({
    name: "paymaster_strategy_cap_remaining",
    help: "limit - reserved - spent of a strategy cap's current period",
    labelNames: ["strategy", "cap", "unit"] as const,
    registers: [this.registry],
  });
  readonly gasTankBalance = new Gauge({
    name: "paymaster_gas_tank_balance_wei",
    help: "Sum of the gas tanks' balances of a network",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly gasTankReserved = new Gauge({
    name: "paymaster_gas_tank_reserved_wei",
    help: "Sum held in the gas tanks by outstanding reservations",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly gasTanks = new Gauge({
    name: "paymaster_gas_tanks",
    help: "Number of gas tanks of a network",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly watcherLeader = new Gauge({
    name: "paymaster_watcher_leader",
    help: "1 when this process runs the network's settlement watcher (it holds the leadership), else 0",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly watcherHead = new Gauge({
    name: "paymaster_watcher_head_block",
    help: "The chain head the settlement watcher saw last",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly watcherCursor = new Gauge({
    name: "paymaster_watcher_cursor_block",
    help: "The last block the settlement watcher fully processed",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly watcherLag = new Gauge({
    name: "paymaster_watcher_lag_blocks",
    help: "head - cursor of the settlement watcher (confirmations included)",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly watcherLastTick = new Gauge({
    name: "paymaster_watcher_last_success_timestamp_seconds",
    help: "When the settlement watcher last completed a pass",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly watcherErrors = new Counter({
    name: "paymaster_watcher_errors_total",
    help: "Settlement watcher passes that failed",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly rpcRequests = new Counter({
    name: "paymaster_rpc_requests_total",
    help: "Chain RPC attempts per upstream (redacted URL), JSON-RPC method and outcome (ok, jsonrpc_error, refused, timeout, connection, dns, http_status, invalid_response, bad_url, rate_limited)",
    labelNames: ["network", "upstream", "method", "outcome"] as const,
    registers: [this.registry],
  });
  readonly rpcDuration = new Histogram({
    name: "paymaster_rpc_request_duration_seconds",
    help: "Chain RPC attempt latency per upstream",
    labelNames: ["network", "upstream"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly rpcUpstreamUp = new Gauge({
    name: "paymaster_rpc_upstream_up",
    help: "1 when the upstream answered its last exchange or probe, 0 while it is down",
    labelNames: ["network", "upstream"] as const,
    registers: [this.registry],
  });
  readonly rpcFailovers = new Counter({
    name: "paymaster_rpc_failovers_total",
    help: "Chain RPC calls that moved to another upstream after one failed",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly networkReady = new Gauge({
    name: "paymaster_network_ready",
    help: "1 when the network is initialised and an RPC upstream is up (what /ready reports)",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly paymasterDeposit = new Gauge({
    name: "paymaster_paymaster_deposit_wei",
    help: "A paymaster contract's deposit in its EntryPoint",
    labelNames: ["network", "version", "kind", "paymaster"] as const,
    registers: [this.registry],
  });
  readonly paymasterDepositLow = new Gauge({
    name: "paymaster_paymaster_deposit_low",
    help: "1 when the paymaster's deposit is below the network's depositAlertWei",
    labelNames: ["network", "version", "kind", "paymaster"] as const,
    registers: [this.registry],
  });
  readonly depositAlertWei = new Gauge({
    name: "paymaster_deposit_alert_threshold_wei",
    help: "The configured low-deposit threshold of a network (depositAlertWei)",
    labelNames: ["network"] as const,
    registers: [this.registry],
  });
  readonly signerInfo = new Gauge({
    name: "paymaster_signer_info",
    help: "The signer key in use on a network (its address), always 1",
    labelNames: ["network", "signer"] as const,
    registers: [this.registry],
  });
  readonly signerAccepted = new Gauge({
    name: "paymaster_signer_accepted",
    help: "1 when the paymaster contract lists the signer in use (isSigner), 0 when it does not",
    labelNames: ["network", "version", "kind", "paymaster"] as const,
    registers: [this.registry],
  });
  // Webhook delivery per endpoint (endpoint ids are bounded by the endpoints the projects configured).
  readonly webhookDeliveries = new Counter({
    name: "paymaster_webhook_deliveries_total",
    help: "Webhook delivery attempts by this replica, by endpoint and outcome (delivered, retry, dead, cancelled)",
    labelNames: ["endpoint", "project", "outcome"] as const,
    registers: [this.registry],
  });
  readonly webhookDeliveryDuration = new Histogram({
    name: "paymaster_webhook_delivery_duration_seconds",
    help: "How long one webhook delivery attempt took (to the receiver's answer, an error or the timeout), by endpoint",
    labelNames: ["endpoint", "project"] as const,
    buckets: [...LATENCY_BUCKETS, 30, 60],
    registers: [this.registry],
  });
  readonly webhookBacklog = new Gauge({
    name: "paymaster_webhook_backlog",
    help: "Webhook events waiting for delivery (pending, retries included), by endpoint (shared: read from the store)",
    labelNames: ["endpoint", "project"] as const,
    registers: [this.registry],
  });
  readonly webhookOldestPending = new Gauge({
    name: "paymaster_webhook_oldest_pending_seconds",
    help: "Age of the oldest webhook event still waiting for delivery, by endpoint (shared: read from the store)",
    labelNames: ["endpoint", "project"] as const,
    registers: [this.registry],
  });

  // Project billing (docs/policies.md "Project billing"): projects whose plan is enabled only, so a deployment
  // that bills nobody exports none of these.
  readonly projectBalance = new Gauge({
    name: "paymaster_project_balance_usd",
    help: "A billed project's prepaid balance in USD: credits minus what its settled operations were billed (shared: read from the store)",
    labelNames: ["project"] as const,
    registers: [this.registry],
  });
  readonly projectHeld = new Gauge({
    name: "paymaster_project_balance_held_usd",
    help: "What a billed project's open sponsorships hold of its balance, in USD (shared)",
    labelNames: ["project"] as const,
    registers: [this.registry],
  });
  readonly projectAlertBelow = new Gauge({
    name: "paymaster_project_balance_alert_usd",
    help: "A billed project's low-balance threshold in USD (its plan's alertBelowUsd; absent when none)",
    labelNames: ["project"] as const,
    registers: [this.registry],
  });

  // The sponsorship retention pass (src/retention.ts), in whichever replica ran it.
  readonly sponsorshipsPruned = new Counter({
    name: "paymaster_sponsorships_pruned_total",
    help: "Sponsorships deleted by the retention pass of this replica, by status (released, settled)",
    labelNames: ["status"] as const,
    registers: [this.registry],
  });
  readonly retentionLastPass = new Gauge({
    name: "paymaster_retention_last_pass_timestamp_seconds",
    help: "End of this replica's last sponsorship retention pass",
    registers: [this.registry],
  });
  readonly retentionLastPassDuration = new Gauge({
    name: "paymaster_retention_last_pass_duration_seconds",
    help: "How long this replica's last sponsorship retention pass took",
    registers: [this.registry],
  });

  readonly capAlertRatio = new Gauge({
    name: "paymaster_cap_warn_ratio",
    help: "The configured 'cap nearly reached' threshold (alerts.capWarnPercent / 100)",
    registers: [this.registry],
  });

  readonly storeUp = new Gauge({
    name: "paymaster_store_up",
    help: "1 while the database answers reads and writes; 0 while it is unavailable or cannot write (/ready and the log say why)",
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: "paymaster_store_errors_total",
    help: "Statements that failed for want of the database, by cause (refused, timeout, connection, busy, disk_full, read_only, …)",
    labelNames: ["cause"] as const,
    registers: [this.registry],
  });
  readonly storeSnapshotSeconds = new Gauge({
    name: "paymaster_store_snapshot_seconds",
    help: "How long the last read of the store-backed gauges took (a read of 250 ms or more is reused for 10 times as long, at most 5 minutes)",
    registers: [this.registry],
  });

  #snapshot: SnapshotEntry | undefined;

  constructor(options: { store?: Store; defaultMetrics?: boolean; capWarnPercent?: number } = {}) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: "paymaster_process_" });
    this.capAlertRatio.set((options.capWarnPercent ?? 80) / 100);
    const store = options.store;
    if (!store) return;
    // Store-backed gauges: one snapshot per scrape (prom-client collects every metric of a scrape in the same
    // tick, so they share the snapshot in flight), reset and refilled each time. A slow read (a large history:
    // the counts read every row) is reused for a while after it (snapshotReusable), so scraping never keeps the
    // database busy more than about a tenth of the time.
    const snapshot = (): Promise<StoreSnapshot | undefined> => {
      const now = Date.now();
      const held = this.#snapshot;
      if (held && (held.finishedAt === undefined || snapshotReusable(held.finishedAt, held.tookMs!, now))) return held.value;
      const value = readSnapshot(store).catch(() => undefined);
      const entry: SnapshotEntry = { value };
      this.#snapshot = entry;
      void value.then((s) => {
        if (!s) {
          if (this.#snapshot === entry) this.#snapshot = undefined; // a failed read is not kept
          return;
        }
        entry.finishedAt = Date.now();
        entry.tookMs = entry.finishedAt - now;
        this.storeSnapshotSeconds.set(entry.tookMs / 1000);
      });
      return value;
    };
    const fill = async () => {
      const s = await snapshot();
      if (!s) return; // the store did not answer: keep the last values (/ready reports the store)
      this.sponsorships.reset();
      for (const row of s.sponsorships) this.sponsorships.set({ network: row.network, mode: row.mode, version: row.version, status: row.status }, row.count);
      for (const g of [this.gasTankBalance, this.gasTankReserved, this.gasTanks]) g.reset();
      for (const t of s.gasTanks) {
        this.gasTankBalance.set({ network: t.network }, weiToFloat(t.balanceWei));
        this.gasTankReserved.set({ network: t.network }, weiToFloat(t.reservedWei));
        this.gasTanks.set({ network: t.network }, t.tanks);
      }
      for (const g of [this.capLimit, this.capReserved, this.capSpent, this.capRemaining]) g.reset();
      for (const c of s.caps) {
        const labels = { strategy: c.strategy, cap: c.cap, unit: c.unit };
        this.capLimit.set(labels, c.limit);
        this.capReserved.set(labels, c.reserved);
        this.capSpent.set(labels, c.spent);
        this.capRemaining.set(labels, c.limit - c.reserved - c.spent);
      }
      for (const g of [this.webhookBacklog, this.webhookOldestPending]) g.reset();
      const nowMs = Date.now();
      for (const b of s.webhookBacklog) {
        const labels = { endpoint: b.endpointId, project: b.projectId };
        this.webhookBacklog.set(labels, b.pending);
        this.webhookOldestPending.set(labels, Math.max(nowMs - b.oldestMs, 0) / 1000);
      }
      for (const g of [this.projectBalance, this.projectHeld, this.projectAlertBelow]) g.reset();
      for (const { projectId, plan, account } of s.billing) {
        if (!plan?.enabled) continue;
        const labels = { project: projectId };
        this.projectBalance.set(labels, usdMicrosToFloat(account.balanceUsdMicros));
        this.projectHeld.set(labels, usdMicrosToFloat(account.heldUsdMicros));
        if (plan.alertBelowUsdMicros !== null) this.projectAlertBelow.set(labels, usdMicrosToFloat(plan.alertBelowUsdMicros));
      }
    };
    // prom-client calls each metric's collect on a scrape; all of them share the one snapshot.
    for (const gauge of [this.sponsorships, this.gasTankBalance, this.gasTankReserved, this.gasTanks, this.capLimit, this.capReserved, this.capSpent, this.capRemaining, this.webhookBacklog, this.webhookOldestPending, this.projectBalance, this.projectHeld, this.projectAlertBelow]) {
      (gauge as unknown as { collect: () => Promise<void> }).collect = fill;
    }
  }

  /** The observer a network's RPC client reports to. */
  rpcObserver(network: string): RpcObserver {
    return {
      attempt: (upstream, method, outcome, seconds) => {
        this.rpcRequests.inc({ network, upstream, method, outcome });
        this.rpcDuration.observe({ network, upstream }, seconds);
      },
      upstreamState: (upstream, up) => this.rpcUpstreamUp.set({ network, upstream }, up ? 1 : 0),
      failover: () => this.rpcFailovers.inc({ network }),
    };
  }

  /** A retention pass ended (src/retention.ts). */
  retentionPass(pass: { released: number; settled: number; seconds: number }): void {
    this.sponsorshipsPruned.inc({ status: "released" }, pass.released);
    this.sponsorshipsPruned.inc({ status: "settled" }, pass.settled);
    this.retentionLastPass.set(Date.now() / 1000);
    this.retentionLastPassDuration.set(pass.seconds);
  }

  /** The observer the webhook worker reports each attempt to. */
  webhookObserver(): DeliveryObserver {
    return {
      attempt: (delivery, outcome, seconds) => {
        const labels = { endpoint: delivery.endpointId, project: delivery.projectId };
        this.webhookDeliveries.inc({ ...labels, outcome });
        this.webhookDeliveryDuration.observe(labels, seconds);
      },
    };
  }

  /** Prometheus text exposition. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** A read of the store-backed gauges: in flight, or finished (when, and how long it took). */
interface SnapshotEntry {
  value: Promise<StoreSnapshot | undefined>;
  finishedAt?: number;
  tookMs?: number;
}

/**
 * A store snapshot that took at least `slowMs` to read is reused for `factor` times its duration, at most
 * `maxMs`; a quicker one never is (every scrape reads afresh).
 */
export const SNAPSHOT_REUSE = Object.freeze({ slowMs: 250, factor: 10, maxMs: 300_000 });

/** Whether a snapshot read in `tookMs`, finished at `finishedAt`, may still answer a scrape at `now` (ms). */
export function snapshotReusable(finishedAt: number, tookMs: number, now: number): boolean {
  return tookMs >= SNAPSHOT_REUSE.slowMs && now - finishedAt < Math.min(tookMs * SNAPSHOT_REUSE.factor, SNAPSHOT_REUSE.maxMs);
}

async function readSnapshot(store: Store): Promise<StoreSnapshot> {
  const [sponsorships, gasTanks, caps, webhookBacklog, billing] = await Promise.all([
    store.sponsorshipCounts(),
    store.gasTankTotals(),
    capLines(store, Math.floor(Date.now() / 1000)),
    store.webhookBacklog(),
    store.listBillingAccounts(),
  ]);
  return { sponsorships, gasTanks, caps, webhookBacklog, billing };
}
