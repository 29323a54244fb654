/**
 * The service's own work per request, against the local chain (everything on 127.0.0.1):
 *
 *   pnpm --filter @paymaster/service bench:own -- [--concurrency 8] [--requests 400] [--method sponsor|data|stub]
 *       [--mode sponsor|erc20|user] [--version v0.6|v0.7] [--signer memory|pkcs11] [--billing] [--postgres URL] [--cpu-prof DIR]
 *       [--rpc-delay-ms 25] [--traces] [--traces-ratio 0.1] [--db-delay-ms 2.5] [--replicas 2] [--caps] [--dev-clock]
 *
 * Three processes: the local chain (the contracts package's start-local), our service (bench/serve.ts: the
 * embedded configuration, its metrics listener on) and this client, so each one's CPU is read apart from /proc
 * and the client's work never lands in the service's figures (it shares no event loop with it).
 *
 * Methods: `sponsor` pm_sponsorUserOperation with the gas left to the service (the estimate's one call, the
 * sponsorship probe; the final simulation too only when it falls back); `data` pm_getPaymasterData with client-filled gas (the final simulation only); `stub`
 * pm_getPaymasterStubData (no chain call). One deployed SimpleAccount; every request uses its own 2-D nonce key,
 * so every op is valid and new.
 *
 * Prints per phase (concurrency 1, then `--concurrency`): throughput; client latency and, from the
 * `Server-Timing` header, the server's time split into waiting on the chain (chain calls' encoding included), on a PKCS#11 token (--signer pkcs11)
 * and its own work, p50 and p99; the service process's CPU per request; the chain's; and the chain calls per
 * request by JSON-RPC method (from the service's /metrics). `--postgres URL` (e.g.
 * postgres://postgres@127.0.0.1:5432/test): the service's store on a throwaway database of that server, dropped
 * at the end; SQLite otherwise. `--signer pkcs11`: the service signs with a key in a throwaway SoftHSM2 token
 * (bench/serve.ts) instead of the key in memory. `--billing`: the service bills the key's project (a plan with markup
 * and fee, a balance that never runs out), so every reservation holds against its balance and every settlement bills
 * it; without it billing is off, as by default. `--rpc-delay-ms MS`: the service reaches the chain through a
 * forwarder in this process that adds MS to every call's round trip (half each way: a hosted RPC's distance,
 * bench/forwarder.ts) and records each call; the concurrency-1 phase then also prints how many chain calls sat
 * on each request's critical path (one after the other, bench/criticalPath.ts). `--traces`: OpenTelemetry
 * traces on in the service, every request sampled (OTEL_TRACES_SAMPLER=always_on), exported over OTLP/HTTP to a
 * receiver in this process (test/helpers/otlpReceiver.ts); the spans received per request are printed.
 * `--traces-ratio R` (with --traces): a share R of the calls sampled instead (traceidratio), the rest traced
 * but not recorded, as a production deployment would sample. `--db-delay-ms MS` (with --postgres): the service
 * reaches PostgreSQL through a forwarder process adding MS to every round trip (a managed database's distance,
 * bench/dbDistance.ts), which counts them: the phases print the round trips to the database per request (all of the
 * service's database work, the settlement watcher's included). `--replicas 2`: a second service process on the
 * same database (with --postgres) serving the same demo project; requests alternate between them. `--caps`: the
 * demo strategy gets caps (global, daily and per sender, never reached), so every reservation checks them.
 * `--dev-clock`: the local chain's network keeps `chainClock: "auto"` (every signing request reads the development
 * chain's fresh clocks beside its chain call, src/sponsor/chainClock.ts); by default the bench sets "wall", the clock
 * a public chain keeps, so its figures are what a hosted network costs.
 * Bounded: at most 5000 requests per phase and 120 s in all, then it stops by itself.
 */
import { mkdtempSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { encodeFunctionData, maxUint256, numberToHex, type Abi } from "viem";
import { SimpleAccountFactoryV06Artifact, SimpleAccountV06Artifact, TestTokenArtifact } from "@paymaster/contracts/artifacts";
import { readManifest } from "@paymaster/contracts/manifest";
import { STUB_SIGNATURE, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { createChainRpc } from "../src/chain/rpc.ts";
import { executeCallData } from "../src/local/embedded.ts";
import { openStore } from "../src/store/index.ts";
import { cpuSecondsOf, startChainProcess } from "./chainProcess.ts";
import { startSystemProcess } from "./systemProcess.ts";
import { throwawayDatabase } from "./postgres.ts";
import { startRpcDistance } from "./forwarder.ts";
import { startDbDistance } from "./dbDistance.ts";
import { criticalPath, describeAddedDelay, describePaths, type PathCount } from "./criticalPath.ts";
import { startOtlpReceiver, type ReceivedSpan } from "../test/helpers/otlpReceiver.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: {
    concurrency: { type: "string", default: "8" },
    requests: { type: "string", default: "400" },
    method: { type: "string", default: "sponsor" },
    mode: { type: "string", default: "sponsor" },
    version: { type: "string", default: "v0.7" },
    "cpu-prof": { type: "string" },
    postgres: { type: "string" },
    signer: { type: "string", default: "memory" },
    billing: { type: "boolean", default: false },
    "rpc-delay-ms": { type: "string" },
    traces: { type: "boolean", default: false },
    "traces-ratio": { type: "string" },
    "db-delay-ms": { type: "string" },
    replicas: { type: "string", default: "1" },
    caps: { type: "boolean", default: false },
    "dev-clock": { type: "boolean", default: false },
  },
});
const replicaCount = Math.max(1, Math.min(2, Number(values.replicas)));
if ((values["db-delay-ms"] !== undefined || replicaCount > 1) && values.postgres === undefined) throw new Error("--db-delay-ms and --replicas need --postgres");
const concurrency = Math.max(1, Math.min(64, Number(values.concurrency)));
const requests = Math.max(10, Math.min(5000, Number(values.requests)));
const method = values.method as "sponsor" | "data" | "stub";
const mode = values.mode as "sponsor" | "erc20" | "user";
const version = values.version as EntryPointVersion;
if (!["memory", "pkcs11"].includes(values.signer)) throw new Error(`--signer must be memory or pkcs11, got ${values.signer}`);
if (!["sponsor", "data", "stub"].includes(method)) throw new Error(`--method must be sponsor, data or stub, got ${method}`);
const deadline = Date.now() + 120_000;

const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-bench-")), "data");
const manifestPath = path.join(dataDir, "manifest.json");

const postgres = values.postgres === undefined ? undefined : await throwawayDatabase(values.postgres);
if (values.postgres !== undefined && !postgres) throw new Error("--postgres: the PostgreSQL server did not answer");
const chainProcess = await startChainProcess(manifestPath);
const distance = await startRpcDistance(chainProcess.url, values["rpc-delay-ms"]);
const receiver = values.traces ? await startOtlpReceiver() : undefined;
// Tracing on only with --traces: the service inherits this process's environment, so any OTEL_* set here is cleared.
const tracingEnv: Record<string, string> = receiver
  ? {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_SERVICE_NAME: "paymaster-bench",
      ...(values["traces-ratio"] === undefined ? { OTEL_TRACES_SAMPLER: "always_on" } : { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: values["traces-ratio"] }),
    }
  : { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "", OTEL_TRACES_EXPORTER: "none" };
const wire = postgres && values["db-delay-ms"] !== undefined ? await startDbDistance(postgres.url, Number(values["db-delay-ms"])) : undefined;
const startReplica = (demo?: { apiKey: string; strategyCode: string }) =>
  startSystemProcess("ours", {
    chainUrl: chainProcess.url,
    ...(distance ? { systemChainUrl: distance.url } : {}),
    manifestPath,
    env: {
      BENCH_SIGNER_KEY: chainProcess.signerKey,
      BENCH_DATA_DIR: dataDir,
      BENCH_SIGNER: values.signer,
      BENCH_CHAIN_CLOCK: values["dev-clock"] ? "auto" : "wall",
      ...(postgres ? { BENCH_DATABASE_URL: wire?.url ?? postgres.url } : {}),
      ...(demo ? { BENCH_DEMO: JSON.stringify(demo) } : {}),
      ...tracingEnv,
    },
    ...(values["cpu-prof"] ? { cpuProfDir: values["cpu-prof"] } : {}),
  });
const service = await startReplica();
const demo = { apiKey: new URL(service.url).searchParams.get("apiKey")!, strategyCode: (service.context as { strategy_code: string }).strategy_code };
const replicas = [service, ...(replicaCount > 1 ? [await startReplica(demo)] : [])];
const rpc = createChainRpc(chainProcess.url, { timeoutMs: 60_000 });
const request = (name: string, params: unknown[]) => rpc.request<unknown>(name, params);
const manifest = await readManifest(manifestPath);
const entry = manifest.entryPoints[version];
const accounts = (await request("eth_accounts", [])) as Address[];
const strategyCode = (service.context as { strategy_code: string }).strategy_code;

// One deployed SimpleAccount (owner: dev account #4); every request uses its own 2-D nonce key, so all are valid.
const owner = accounts[4]!;
const factoryAbi = SimpleAccountFactoryV06Artifact.abi as Abi;
await request("eth_sendTransaction", [{ from: owner, to: entry.simpleAccountFactory, data: encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [owner, 0n] }) }]);
const senderWord = (await request("eth_call", [{ to: entry.simpleAccountFactory, data: encodeFunctionData({ abi: factoryAbi, functionName: "getAddress", args: [owner, 0n] }) }, "latest"])) as Hex;
const sender = `0x${senderWord.slice(-40)}` as Address;
const callData: Hex = executeCallData(owner);
if (mode === "user" || values.billing || values.caps) {
  // The service's store (several processes may share it): the sender's gas tank; the projects' billing.
  const store = await openStore({ databasePath: path.join(dataDir, "paymaster.sqlite"), ...(postgres ? { databaseUrl: postgres.url } : {}) });
  if (mode === "user") {
    await store.creditGasTank("local", sender, 10n ** 21n, "bench");
    // The tank's owner lets the bench key's project draw from it (User Sponsor mode refuses a project it has not allowed).
    for (const project of await store.listProjects()) await store.setGasTankConsent({ network: "local", sender, projectId: project.id, allowed: true, changedBy: "bench" });
  }
  if (values.caps) {
    const strategy = (await store.getStrategyByCode(strategyCode))!;
    await store.setStrategyRules(strategy.id, { ...strategy.rules, caps: { global: { maxOps: 10_000_000 }, daily: { maxUsd: "100000000" }, perSender: { maxOps: 10_000_000 } } });
  }
  if (values.billing) {
    for (const project of await store.listProjects()) {
      await store.setBillingPlan(project.id, { enabled: true, markupBps: 1500, feeUsdMicros: 5000n });
      await store.addBillingEntry({ projectId: project.id, kind: "credit", amountUsdMicros: 10n ** 15n, reference: `bench-${project.id}`, actor: "cli:bench" });
    }
  }
  await store.close();
}
const usdc = manifest.tokens.find((t) => t.symbol === "USDC")!;
if (mode === "erc20") {
  await request("eth_sendTransaction", [{ from: owner, to: usdc.address, data: encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "mint", args: [sender, 10n ** 15n] }) }]);
  const approve = encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "approve", args: [entry.erc20Paymaster, maxUint256] });
  await request("eth_sendTransaction", [{ from: owner, to: sender, data: encodeFunctionData({ abi: SimpleAccountV06Artifact.abi as Abi, functionName: "execute", args: [usdc.address, 0n, approve] }) }]);
}
const block = (await request("eth_getBlockByNumber", ["latest", false])) as { baseFeePerGas: string };
// Client-filled gas (data, stub): generous for a deployed SimpleAccount's validation and a no-op call.
const clientGas = {
  callGasLimit: numberToHex(50_000),
  verificationGasLimit: numberToHex(150_000),
  preVerificationGas: numberToHex(60_000),
  maxFeePerGas: numberToHex(BigInt(block.baseFeePerGas) * 3n + 10n ** 9n),
  maxPriorityFeePerGas: numberToHex(10n ** 9n),
};
const extra: Record<string, string> = version === "v0.6" ? {} : { version };
const context: Record<string, string> | null = mode === "sponsor" ? { strategy_code: strategyCode } : mode === "erc20" ? { token: "USDC" } : null;
if (mode === "sponsor") extra.strategy_code = strategyCode;
if (mode === "erc20") extra.token = "USDC";

let nonceKey = 1n;
/** The next request: [url, body], alternating between the replicas. */
function next(): [string, string] {
  const service = replicas[Number(nonceKey % BigInt(replicas.length))]!;
  const nonce = `0x${(nonceKey++ << 64n).toString(16)}`;
  const op = { sender, nonce, ...(version === "v0.6" ? { initCode: "0x" } : {}), callData, signature: STUB_SIGNATURE };
  if (method === "sponsor") {
    return [service.v1Url!, JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [op, extra] })];
  }
  const name = method === "data" ? "pm_getPaymasterData" : "pm_getPaymasterStubData";
  return [service.url, JSON.stringify({ id: 1, jsonrpc: "2.0", method: name, params: [{ ...op, ...clientGas }, entry.entryPoint, numberToHex(31337), context] })];
}

interface Sample {
  latencyMs: number;
  chainMs: number;
  /** Waiting on a PKCS#11 token (0 with the key in memory). */
  signerMs: number;
  ownMs: number;
  /** When the request was sent and its answer read (performance.now()). */
  window: { start: number; end: number };
}

/** Keep-alive node:http: the client's own cost stays small (it runs in a process of its own anyway). */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
function post(url: string, body: string): Promise<{ status: number; text: string; timing: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8"), timing: String(res.headers["server-timing"] ?? "") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function one(): Promise<Sample> {
  const [url, body] = next();
  const started = performance.now();
  const { status, text, timing } = await post(url, body);
  const ended = performance.now();
  const latencyMs = ended - started;
  if (status !== 200 || text.includes('"error"') || text.includes('"reason"')) throw new Error(`HTTP ${status}: ${text.slice(0, 300)}`);
  const chainMs = Number(/chain;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN);
  const ownMs = Number(/own;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN);
  const signerMs = Number(/signer;dur=([\d.]+)/.exec(timing)?.[1] ?? 0);
  return { latencyMs, chainMs, signerMs, ownMs, window: { start: started, end: ended } };
}

/** Keys of chainCalls() that are not a JSON-RPC method: attempts that got no answer, and failovers. */
const FAILED = " failed attempts";
const FAILOVERS = " failovers";

/**
 * The service's chain RPC attempts so far, by JSON-RPC method (paymaster_rpc_requests_total), and under
 * FAILED / FAILOVERS those that got no answer (timeout, refused, rate-limited, …) and the calls moved to
 * another upstream (paymaster_rpc_failovers_total): what retries and failover cost, off the happy path.
 */
async function chainCalls(): Promise<Map<string, number>> {
  const text = (await Promise.all(replicas.map(async (r) => (await fetch(r.metricsUrl!)).text()))).join("\n");
  const calls = new Map<string, number>([[FAILED, 0], [FAILOVERS, 0]]);
  const add = (key: string, n: number) => calls.set(key, (calls.get(key) ?? 0) + n);
  for (const match of text.matchAll(/^paymaster_rpc_requests_total\{([^}]*)\} (\d+)/gm)) {
    const labels = match[1]!;
    const method = /method="([^"]+)"/.exec(labels)?.[1] ?? "?";
    const outcome = /outcome="([^"]+)"/.exec(labels)?.[1] ?? "ok";
    add(outcome === "ok" || outcome === "jsonrpc_error" ? method : FAILED, Number(match[2]));
  }
  for (const match of text.matchAll(/^paymaster_rpc_failovers_total\{[^}]*\} (\d+)/gm)) add(FAILOVERS, Number(match[1]));
  return calls;
}

interface Phase {
  samples: Sample[];
  seconds: number;
  serviceCpuMs: number;
  chainCpuMs: number;
  clientCpuMs: number;
  /** Chain calls per request, by method. */
  calls: [string, number][];
  /** Per request: attempts that got no answer, and calls moved to another upstream. */
  setBacks: { failed: number; failovers: number };
  /** With --rpc-delay-ms: the calls the forwarder passed, per request (the attempts the service made, seen from outside). */
  forwarded: number | undefined;
  /** With --rpc-delay-ms: each request's critical path (read it when one request ran at a time), and what the forwarder added per call. */
  paths: PathCount[] | undefined;
  added: string | undefined;
  /** With --db-delay-ms: round trips to the database per request, counted on the wire. */
  dbRoundTrips: number | undefined;
}

async function run(count: number, parallel: number): Promise<Phase> {
  const samples: Sample[] = [];
  let issued = 0;
  const callsBefore = await chainCalls();
  if (distance) distance.calls.length = 0; // each phase's windows are read against its own calls
  const serviceCpu = replicas.reduce((sum, r) => sum + cpuSecondsOf(r.pid), 0);
  await wire?.roundTrips(true);
  const chainCpu = cpuSecondsOf(chainProcess.pid);
  const clientCpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (issued < count && Date.now() < deadline) {
        issued++;
        samples.push(await one());
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(clientCpu);
  const serviceCpuMs = ((replicas.reduce((sum, r) => sum + cpuSecondsOf(r.pid), 0) - serviceCpu) * 1000) / samples.length;
  const dbRoundTrips = wire ? (await wire.roundTrips()) / samples.length : undefined;
  const chainCpuMs = ((cpuSecondsOf(chainProcess.pid) - chainCpu) * 1000) / samples.length;
  const callsAfter = await chainCalls();
  // The poller's eth_blockNumber runs on a timer whatever the load: counted too, it is part of the cost.
  const perRequest = (name: string) => ((callsAfter.get(name) ?? 0) - (callsBefore.get(name) ?? 0)) / samples.length;
  const calls = [...callsAfter.keys()].filter((name) => name !== FAILED && name !== FAILOVERS).map((name): [string, number] => [name, perRequest(name)]).filter(([, n]) => n > 0);
  const setBacks = { failed: perRequest(FAILED), failovers: perRequest(FAILOVERS) };
  const paths = distance ? samples.map((s) => criticalPath(distance.calls, s.window)) : undefined;
  const added = distance ? describeAddedDelay(distance.calls) : undefined;
  const forwarded = distance ? distance.calls.length / samples.length : undefined;
  return { samples, seconds, serviceCpuMs, chainCpuMs, clientCpuMs: (client.user + client.system) / 1000 / samples.length, calls, setBacks, forwarded, paths, added, dbRoundTrips };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Where a sequential request's time goes, step by step: each span name's p50 duration and how often it ran per call. */
function stepTimes(spans: readonly ReceivedSpan[]): string {
  const calls = Math.max(1, spans.filter((s) => s.kind === 2).length);
  const byName = new Map<string, number[]>();
  for (const span of spans) {
    const list = byName.get(span.name) ?? [];
    list.push(Number(span.endNs - span.startNs) / 1e6);
    byName.set(span.name, list);
  }
  const rows = [...byName.entries()].map(([name, ms]) => ({ name, p50: ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)]!, perCall: ms.length / calls }));
  rows.sort((a, b) => b.p50 - a.p50);
  const lines = rows.map((r) => `  ${r.name.padEnd(44)} p50 ${r.p50.toFixed(3).padStart(8)} ms  ${r.perCall.toFixed(2)} per call`);
  return [`the sequential phase's spans (${calls} calls), by p50 duration:`, ...lines].join("\n");
}

function report(label: string, phase: Phase): { ownP50: number; serviceCpuMs: number } {
  const { samples, seconds } = phase;
  const col = (f: (s: Sample) => number) => samples.map(f);
  const fmt = (ms: number) => `${ms.toFixed(3)} ms`.padStart(11);
  console.log(`\n${label}: ${samples.length} requests in ${seconds.toFixed(2)} s = ${(samples.length / seconds).toFixed(1)} req/s`);
  console.log(`                           p50         p99`);
  console.log(`  client latency   ${fmt(percentile(col((s) => s.latencyMs), 50))} ${fmt(percentile(col((s) => s.latencyMs), 99))}`);
  console.log(`  server: chain    ${fmt(percentile(col((s) => s.chainMs), 50))} ${fmt(percentile(col((s) => s.chainMs), 99))}`);
  if (samples.some((s) => s.signerMs > 0)) console.log(`  server: signer   ${fmt(percentile(col((s) => s.signerMs), 50))} ${fmt(percentile(col((s) => s.signerMs), 99))}  (waiting on the PKCS#11 token)`);
  console.log(`  server: own      ${fmt(percentile(col((s) => s.ownMs), 50))} ${fmt(percentile(col((s) => s.ownMs), 99))}`);
  console.log(`  CPU per request: service ${phase.serviceCpuMs.toFixed(3)} ms, chain ${phase.chainCpuMs.toFixed(3)} ms, client ${phase.clientCpuMs.toFixed(3)} ms (from /proc: every thread, in ns)`);
  console.log(`  chain calls per request: ${phase.calls.map(([name, n]) => `${name} ${n.toFixed(2)}`).join(", ") || "none"}`);
  if (phase.paths && label.startsWith("concurrency 1 ")) console.log(`  chain calls on the critical path (one after the other): ${describePaths(phase.paths)}`);
  if (phase.added) console.log(`  round trip the forwarder added per chain call: ${phase.added}`);
  const attempts = phase.calls.reduce((sum, [, n]) => sum + n, 0) + phase.setBacks.failed;
  const seen = phase.forwarded === undefined ? "" : `; the forwarder passed ${phase.forwarded.toFixed(2)} calls per request against the service's ${attempts.toFixed(2)} attempts`;
  console.log(`  retries and failover per request: attempts without an answer ${phase.setBacks.failed.toFixed(2)}, failovers ${phase.setBacks.failovers.toFixed(2)}${seen}`);
  if (phase.dbRoundTrips !== undefined) console.log(`  round trips to the database per request (all the service's database work, counted on the wire): ${phase.dbRoundTrips.toFixed(2)}`);
  return { ownP50: percentile(col((s) => s.ownMs), 50), serviceCpuMs: phase.serviceCpuMs };
}

try {
  const methodName = { sponsor: "pm_sponsorUserOperation (the service estimates gas)", data: "pm_getPaymasterData (client gas)", stub: "pm_getPaymasterStubData" }[method];
  console.log(`bench:own: ${methodName}, mode ${mode}, EntryPoint ${version}, signer ${service.signer}, store ${postgres ? "PostgreSQL" : "SQLite"}, chain clock ${values["dev-clock"] ? "auto (fresh clocks read per request)" : "wall"}, billing ${values.billing ? "on" : "off"}, traces ${receiver ? `on (${values["traces-ratio"] === undefined ? "every request" : `a share ${values["traces-ratio"]} of the requests`} sampled, OTLP/HTTP to a receiver in this process)` : "off"}; service, chain and client in processes of their own`);
  if (distance) console.log(`the service reaches the chain through a forwarder adding ${distance.delayMs} ms to each call's round trip (half each way)`);
  if (wire) console.log(`the service reaches PostgreSQL through a forwarder adding ${wire.delayMs} ms to each round trip (select 1: ${(await wire.selectOneMs()).toFixed(2)} ms)`);
  if (replicas.length > 1) console.log(`${replicas.length} service replicas on one database; requests alternate between them`);
  if (values.caps) console.log("the strategy has caps (global, daily, per sender; never reached)");
  await run(60, 4); // warm-up: JIT, connections, caches
  const sequentialFrom = BigInt(Date.now()) * 1_000_000n;
  report("concurrency 1 (no queueing)", await run(Math.min(400, requests), 1));
  const sequentialTo = BigInt(Date.now()) * 1_000_000n;
  const loaded = report(`concurrency ${concurrency}`, await run(requests, concurrency));
  if (receiver) {
    // The batch processor exports every 5 s: wait for the last requests' spans before counting.
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    const roots = receiver.spans.filter((s) => s.kind === 2).length;
    console.log(`\ntraces: ${receiver.spans.length} spans received for ${roots} calls (${(receiver.spans.length / Math.max(1, roots)).toFixed(1)} spans per call, settlement passes included)`);
    console.log(stepTimes(receiver.spans.filter((s) => s.startNs >= sequentialFrom && s.endNs <= sequentialTo)));
  }
  console.log(`\nissue 13 goals at concurrency ${concurrency}: service own time p50 ${loaded.ownP50.toFixed(3)} ms (goal < 0.5 ms); service CPU per request ${loaded.serviceCpuMs.toFixed(3)} ms (goal < 1.5 ms per sponsorship)`);
} finally {
  for (const r of replicas) r.stop();
  wire?.close();
  chainProcess.stop();
  await distance?.close();
  await receiver?.close();
  // The service closes its connections as it stops; the drop forces out any left.
  await postgres?.drop();
}
