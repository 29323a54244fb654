// Metrics and health from outside: /metrics only on the metrics listener (never the public port); counts
// scraped during and after a concurrent load run match what the test sent; the alerts' metrics and log lines
// (low deposit, cap nearly reached); and every metric the Grafana dashboard and the Prometheus rules use exists
// in a real scrape.
import { readFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { startService, type RunningService } from "../src/server.ts";
import { ServiceMetrics, snapshotReusable } from "../src/metrics/metrics.ts";
import { openStore } from "../src/store/index.ts";
import type { Store } from "../src/store/types.ts";
import { encodeFunctionData, type Abi } from "viem";
import { GasTankDepositArtifact } from "@paymaster/contracts/artifacts";
import { call, chainRequest, newWallet, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const OPS_DIR = new URL("../ops/", import.meta.url);

/** The value of one sample line `name{labels} value` in a scrape (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const inner = line.slice(name.length).match(/^\{(.*)\} (.+)$/);
    const pairs = inner ? inner[1]!.split(/,(?=[a-zA-Z_]+=")/) : [];
    if (wanted.every((w) => pairs.includes(w)) && pairs.length === wanted.length) return Number(inner ? inner[2] : line.split(" ")[1]);
  }
  return 0;
}

describe("metrics, health and alerts", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let running: RunningService;
  const logs: Record<string, any>[] = [];
  let endpoint: string;
  let code: string;
  let standard: string;

  before(async () => {
    embedded = await startTestStack();
    const network = {
      ...localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey }),
      depositAlertWei: 10n ** 30n, // far above any deposit: the low-deposit alert must fire
      confirmations: 2, // with watcherLagBlocks 1 below: the watcher counts as lagging (head - cursor = 2)
      pollMs: 200,
    };
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-metrics-")), "data");
    const config = { ...embeddedConfig(network, dataDir, 0, "info" as const), metrics: { host: "127.0.0.1", port: 0 }, alerts: { capWarnPercent: 70, watcherLagBlocks: 1 } };
    running = await startService(config, { logger: createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line)) }), pollMs: 100 });
    await running.initialised;
    const store = running.service.store;
    const project = await store.createProject("metrics");
    const { plaintext } = await store.createApiKey(project.id);
    code = "METRICS";
    await store.createStrategy({ projectId: project.id, code, name: code, rules: { caps: { global: { maxOps: 40 } } } });
    endpoint = `${running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
    standard = `${running.url}/rpc/v1/local?apiKey=${plaintext}`;
  });
  after(async () => {
    await running?.close();
    await embedded?.close();
  });

  const scrape = async () => {
    const response = await fetch(`${running.metricsUrl}/metrics`);
    expect(response.status).to.equal(200);
    expect(response.headers.get("content-type")).to.match(/^text\/plain/);
    return response.text();
  };

  it("serves /metrics only on the metrics listener; /health and /ready on both", async () => {
    expect(running.metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(running.metricsUrl).to.not.equal(running.url);
    const publicMetrics = await fetch(`${running.url}/metrics`);
    expect(publicMetrics.status).to.equal(404);
    for (const base of [running.url, running.metricsUrl!]) {
      const health = await fetch(`${base}/health`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.equal({ status: "ok", networks: ["local"] });
      const ready = await fetch(`${base}/ready`);
      expect(ready.status).to.equal(200);
      expect(await ready.json()).to.deep.equal({ status: "ready", checks: { store: "ok", "network:local": "ok" } });
    }
  });

  it("counts scraped during and after a concurrent load run match the requests the test made", async () => {
    const SIGNED = 24;
    const UNKNOWN_STRATEGY = 8;
    const STANDARD = 6;
    const ops = await Promise.all(Array.from({ length: SIGNED }, async () => {
      const wallet = await newWallet(embedded, "v0.7");
      return wireOp(wallet, executeCallData(wallet.owner.address));
    }));
    const during: string[] = [];
    let loading = true;
    const scraper = (async () => {
      while (loading) {
        during.push(await scrape());
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const answers = await Promise.all([
      ...ops.map((op) => call(endpoint, "pm_sponsorUserOperation", [op, { strategy_code: code, version: "v0.7" }])),
      ...ops.slice(0, UNKNOWN_STRATEGY).map((op) => call(endpoint, "pm_sponsorUserOperation", [op, { strategy_code: "NO_SUCH", version: "v0.7" }])),
      ...Array.from({ length: STANDARD }, (_, i) =>
        fetch(standard, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "pm_supportEntrypoint" }) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })),
      ),
    ]);
    loading = false;
    await scraper;
    expect(answers.slice(0, SIGNED).map((a) => a.status)).to.deep.equal(Array(SIGNED).fill(200));
    expect(answers.slice(SIGNED, SIGNED + UNKNOWN_STRATEGY).map((a) => a.body.data.reason)).to.deep.equal(Array(UNKNOWN_STRATEGY).fill("STRATEGY_NOT_FOUND"));

    const sponsorOk = { dialect: "v1", method: "pm_sponsorUserOperation", network: "local", outcome: "ok" };
    const text = await scrape();
    expect(sample(text, "paymaster_requests_total", sponsorOk)).to.equal(SIGNED);
    expect(sample(text, "paymaster_requests_total", { ...sponsorOk, outcome: "STRATEGY_NOT_FOUND" })).to.equal(UNKNOWN_STRATEGY);
    expect(sample(text, "paymaster_requests_total", { dialect: "standard", method: "pm_supportEntrypoint", network: "local", outcome: "ok" })).to.equal(STANDARD);
    expect(sample(text, "paymaster_request_duration_seconds_count", { dialect: "v1", method: "pm_sponsorUserOperation" })).to.equal(SIGNED + UNKNOWN_STRATEGY);
    expect(sample(text, "paymaster_request_chain_wait_seconds_count", { dialect: "v1", method: "pm_sponsorUserOperation" })).to.equal(SIGNED + UNKNOWN_STRATEGY);
    expect(sample(text, "paymaster_sponsorships_signed_total", { network: "local", mode: "sponsor", version: "v0.7" })).to.equal(SIGNED);
    // From the store: the signed records, and the strategy's cap usage (24 of 40 ops).
    expect(sample(text, "paymaster_sponsorships", { network: "local", mode: "sponsor", version: "v0.7", status: "signed" })).to.equal(SIGNED);
    expect(sample(text, "paymaster_strategy_cap_limit", { strategy: code, cap: "global", unit: "ops" })).to.equal(40);
    expect(sample(text, "paymaster_strategy_cap_spent", { strategy: code, cap: "global", unit: "ops" })).to.equal(SIGNED);
    expect(sample(text, "paymaster_strategy_cap_remaining", { strategy: code, cap: "global", unit: "ops" })).to.equal(40 - SIGNED);
    // Chain wait is part of the whole: the sums say so.
    const whole = sample(text, "paymaster_request_duration_seconds_sum", { dialect: "v1", method: "pm_sponsorUserOperation" });
    const chain = sample(text, "paymaster_request_chain_wait_seconds_sum", { dialect: "v1", method: "pm_sponsorUserOperation" });
    const own = sample(text, "paymaster_request_own_seconds_sum", { dialect: "v1", method: "pm_sponsorUserOperation" });
    expect(chain).to.be.greaterThan(0);
    expect(Math.abs(whole - chain - own)).to.be.below(1e-6 * (SIGNED + UNKNOWN_STRATEGY) + 1e-3);
    // Scrapes during the run never ran ahead of what was sent, and never went backwards.
    expect(during.length).to.be.greaterThan(0);
    let last = 0;
    for (const t of during) {
      const n = sample(t, "paymaster_requests_total", sponsorOk);
      expect(n).to.be.within(last, SIGNED);
      last = n;
    }
    expect(sample(text, "paymaster_rpc_requests_total", { network: "local", upstream: new URL(embedded.stack.chain.url).origin, method: "eth_call", outcome: "ok" })).to.be.greaterThan(0);
  });

  it("alerts: a low deposit and a cap past its warning level set their metrics and log one line each", async () => {
    // 24 of 40 ops used (60%) is under the 70% warning; 4 more make 70%.
    for (let i = 0; i < 4; i++) {
      const wallet = await newWallet(embedded, "v0.7");
      const answer = await call(endpoint, "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: code, version: "v0.7" }]);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    }
    await running.alerts.check();
    await running.alerts.check(); // a second round: no new lines (one per state change)
    const text = await scrape();
    const manifest = embedded.stack.manifest.entryPoints["v0.7"];
    const labels = { network: "local", version: "v0.7", kind: "verifying", paymaster: manifest.verifyingPaymaster };
    expect(sample(text, "paymaster_paymaster_deposit_low", labels)).to.equal(1);
    expect(sample(text, "paymaster_paymaster_deposit_wei", labels)).to.be.greaterThan(0);
    expect(sample(text, "paymaster_signer_accepted", labels)).to.equal(1);
    expect(sample(text, "paymaster_cap_warn_ratio", {})).to.equal(0.7);
    const lows = logs.filter((l) => l.msg === "paymaster deposit low: top it up");
    expect(lows, "one line per paymaster (3 versions x 2 kinds)").to.have.length(6);
    const caps = logs.filter((l) => l.msg === "strategy cap nearly reached" && l.strategy === code);
    expect(caps).to.have.length(1);
    expect(caps[0]!.used).to.equal(28);
  });

  it("every metric the Grafana dashboard and the Prometheus alert rules use exists in a real scrape", async () => {
    // Let the watcher (this replica leads on SQLite) complete a pass so its gauges have samples.
    for (let i = 0; i < 50 && running.watcher("local") === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => setTimeout(resolve, 400));
    const text = await scrape();
    const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const dashboard = JSON.parse(readFileSync(new URL("grafana-dashboard.json", OPS_DIR), "utf8")) as { panels: { targets: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    const rules = readFileSync(new URL("alerts.yml", OPS_DIR), "utf8");
    const used = new Set([...exprs.join("\n").concat("\n", rules).matchAll(/\bpaymaster_[a-z0-9_]+/g)].map((m) => m[0]));
    expect(used.size).to.be.greaterThan(20);
    const missing = [...used].filter((name) => !exported.has(name) && !exported.has(name.replace(/_(bucket|sum|count)$/, "")));
    expect(missing, "metrics referenced but not exported").to.deep.equal([]);
    expect(sample(text, "paymaster_watcher_leader", { network: "local" })).to.equal(1);
    expect(sample(text, "paymaster_watcher_cursor_block", { network: "local" })).to.be.greaterThan(0);
    expect(sample(text, "paymaster_network_ready", { network: "local" })).to.equal(1);
    expect(sample(text, "paymaster_watcher_lag_blocks", { network: "local" })).to.equal(2);
    // Several passes, one line: the watcher started lagging (by the configured threshold) and stayed so.
    const lagging = logs.filter((l) => l.msg === "settlement watcher lagging behind the chain head");
    expect(lagging).to.have.length(1);
    expect(lagging[0]!.lagBlocks).to.equal("2");
  });

  it("counts the deposits the watcher credits, by source, and logs each one", async () => {
    const sender = embedded.stack.chain.accounts[12]!.address;
    const from = embedded.stack.chain.accounts[13]!.address;
    const data = encodeFunctionData({ abi: GasTankDepositArtifact.abi as Abi, functionName: "depositFor", args: [sender] });
    await chainRequest(embedded, "eth_sendTransaction", [{ from, to: embedded.stack.manifest.gasTankDeposit, data, value: "0x2386f26fc10000" }]);
    for (let i = 0; i < 2; i++) await chainRequest(embedded, "evm_mine", []); // confirmations: 2
    let counted = 0;
    for (let i = 0; i < 100 && counted === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      counted = sample(await scrape(), "paymaster_gas_tank_deposits_total", { network: "local", source: "contract" });
    }
    expect(counted).to.equal(1);
    expect((await running.service.store.getGasTank("local", sender)).balanceWei).to.equal(10n ** 16n);
    const line = logs.find((l) => l.msg === "deposit credited to the gas tank" && l.sender === sender);
    expect(line).to.deep.include({ network: "local", via: "contract", from, wei: "10000000000000000" });
  });
});

describe("store-backed gauges on a large history: a slow read is reused, a quick one never", function () {
  this.timeout(30_000);

  it("snapshotReusable: only reads of 250 ms or more, for 10 times their duration, at most 5 minutes", () => {
    expect(snapshotReusable(1_000, 249, 1_001)).to.equal(false);
    expect(snapshotReusable(1_000, 300, 3_999)).to.equal(true);
    expect(snapshotReusable(1_000, 300, 4_000)).to.equal(false);
    expect(snapshotReusable(0, 60_000, 299_999)).to.equal(true);
    expect(snapshotReusable(0, 60_000, 300_000)).to.equal(false);
  });

  it("a scrape right after a slow read answers from it; with a quick store every scrape reads afresh", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pm-metrics-snapshot-"));
    const store = await openStore({ databasePath: path.join(dir, "db.sqlite") });
    try {
      const tanks = async (metrics: ServiceMetrics) => /paymaster_gas_tanks\{network="local"\} (\d+)/.exec((await metrics.exposition()).body)?.[1];
      const quick = new ServiceMetrics({ store, defaultMetrics: false });
      await store.creditGasTank("local", "0x1111111111111111111111111111111111111111", 1n, "t1");
      expect(await tanks(quick)).to.equal("1");
      await store.creditGasTank("local", "0x2222222222222222222222222222222222222222", 1n, "t2");
      expect(await tanks(quick), "a quick read is never reused").to.equal("2");

      // The same store whose counts take 300 ms, as a history of millions of rows does.
      const slowStore = Object.create(store) as Store;
      slowStore.sponsorshipCounts = async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return store.sponsorshipCounts();
      };
      const slow = new ServiceMetrics({ store: slowStore, defaultMetrics: false });
      expect(await tanks(slow)).to.equal("2");
      await store.creditGasTank("local", "0x3333333333333333333333333333333333333333", 1n, "t3");
      const second = (await slow.exposition()).body;
      expect(/paymaster_gas_tanks\{network="local"\} (\d+)/.exec(second)?.[1], "answered from the slow read just made").to.equal("2");
      expect(Number(/^paymaster_store_snapshot_seconds (\S+)$/m.exec(second)?.[1])).to.be.at.least(0.25);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
