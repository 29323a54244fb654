/**
 * The operator's alarms, checked in the background every ALERT_INTERVAL_MS whatever scrapes the metrics: each
 * paymaster's EntryPoint deposit against the network's `depositAlertWei`, whether each paymaster still
 * accepts the signer in use, and every strategy's global and daily caps against `alerts.capWarnPercent`
 * (nearly reached) and 100% (reached). Each condition sets a metric (the Prometheus rules in ops/alerts.yml
 * fire on them) and logs one line when it changes, never one per check. Watcher lag and RPC failover are
 * reported where they happen (src/settlement/leader.ts, src/chain/rpc.ts).
 */
import type { Logger } from "pino";
import type { ServiceMetrics } from "../metrics/metrics.ts";
import { capFill, capLines } from "../metrics/caps.ts";
import type { StartedNetwork } from "../network/start.ts";
import { isSignerAccepted } from "../network/start.ts";
import type { Store } from "../store/types.ts";
import { emitDepositLow } from "../webhooks/systemEvents.ts";
import { describeFailure } from "../dependencies/failure.ts";

export const ALERT_INTERVAL_MS = 15_000;
export const DEFAULT_CAP_WARN_PERCENT = 80;

export interface AlertMonitor {
  /** One round of checks now (tests; the timer runs them every interval). */
  check(): Promise<void>;
  stop(): void;
}

export function startAlertMonitor(args: {
  networks: readonly StartedNetwork[];
  store: Store;
  logger: Logger;
  metrics?: ServiceMetrics;
  capWarnPercent?: number;
  intervalMs?: number;
}): AlertMonitor {
  const { networks, store, metrics } = args;
  const logger = args.logger.child({ component: "alerts" });
  const warnRatio = (args.capWarnPercent ?? DEFAULT_CAP_WARN_PERCENT) / 100;
  /** Last state per condition key: a line is logged when it changes. */
  const states = new Map<string, string>();
  const changed = (key: string, state: string): boolean => {
    const before = states.get(key);
    states.set(key, state);
    return before !== state && !(before === undefined && state === "ok");
  };

  async function checkNetwork(network: StartedNetwork): Promise<void> {
    const chain = network.runtime.chain;
    if (!chain) return;
    const config = network.runtime.config;
    const threshold = config.depositAlertWei;
    if (threshold !== undefined) metrics?.depositAlertWei.set({ network: config.name }, Number(threshold));
    const market = await chain.market.current();
    for (const version of network.runtime.versions) {
      const entry = config.entryPoints[version]!;
      for (const [kind, paymaster] of [["verifying", entry.verifyingPaymaster], ["erc20", entry.erc20Paymaster]] as const) {
        const labels = { network: config.name, version, kind, paymaster };
        const [deposit, accepted] = await Promise.all([
          chain.deposits.deposit(entry.entryPoint, paymaster, market.blockNumber),
          isSignerAccepted(chain.rpc, paymaster, chain.signer.address),
        ]);
        metrics?.paymasterDeposit.set(labels, Number(deposit));
        metrics?.signerAccepted.set(labels, accepted ? 1 : 0);
        const low = threshold !== undefined && deposit < threshold;
        metrics?.paymasterDepositLow.set(labels, low ? 1 : 0);
        if (changed(`deposit:${config.name}:${paymaster}`, low ? "low" : "ok")) {
          if (low) {
            logger.warn({ ...labels, depositWei: deposit.toString(), thresholdWei: threshold!.toString() }, "paymaster deposit low: top it up");
            await emitDepositLow(store, { ...labels, depositWei: deposit.toString(), thresholdWei: threshold!.toString() });
          }
          else logger.info({ ...labels, depositWei: deposit.toString() }, "paymaster deposit back above the threshold");
        }
        if (changed(`signer:${config.name}:${paymaster}`, accepted ? "ok" : "rejected")) {
          if (!accepted) logger.error({ ...labels, signer: chain.signer.address }, "the paymaster does not accept the signer in use: its signatures will be refused on chain");
          else logger.info({ ...labels, signer: chain.signer.address }, "the paymaster accepts the signer again");
        }
      }
    }
  }

  async function checkCaps(): Promise<void> {
    for (const line of await capLines(store, Math.floor(Date.now() / 1000))) {
      const fill = capFill(line);
      const state = fill >= 1 ? "reached" : fill >= warnRatio ? "nearly reached" : "ok";
      if (changed(`cap:${line.strategy}:${line.cap}:${line.unit}`, state)) {
        const fields = { strategy: line.strategy, cap: line.cap, unit: line.unit, limit: line.limit, used: line.reserved + line.spent };
        if (state === "ok") logger.info(fields, "strategy cap below its warning level again");
        else logger.warn(fields, `strategy cap ${state}`);
      }
    }
  }

  async function check(): Promise<void> {
    const failures: string[] = [];
    await Promise.all([
      ...networks.map((n) => checkNetwork(n).catch((e: unknown) => void failures.push(`${n.runtime.config.name}: ${describeFailure(e)}`))),
      checkCaps().catch((e: unknown) => void failures.push(`caps: ${describeFailure(e)}`)),
    ]);
    // A failed check (RPC or store away) is reported by /ready and the RPC's own lines; say it once here too.
    const state = failures.length === 0 ? "ok" : failures.join("; ");
    if (changed("checks", state)) {
      if (state === "ok") logger.info("alert checks run again");
      else logger.warn({ problem: state }, "alert checks could not run");
    }
  }

  // One round at a time: a round that overlaps the one in progress waits for it instead.
  let round: Promise<void> | undefined;
  const once = (): Promise<void> => {
    round ??= check().finally(() => (round = undefined));
    return round;
  };
  const timer = setInterval(() => void once(), args.intervalMs ?? ALERT_INTERVAL_MS);
  timer.unref();
  // A first round as soon as every network is up, so the deposit and signer gauges do not wait an interval.
  void Promise.all(networks.map((n) => n.initialised)).then(() => once());
  return { check: once, stop: () => clearInterval(timer) };
}
