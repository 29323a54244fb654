/**
 * Benchmark of pm_sponsorUserOperation against the embedded local chain (everything on 127.0.0.1).
 *
 *   pnpm --filter @paymaster/service bench:own -- [--concurrency 8] [--requests 400] [--mode sponsor|erc20|user] [--version v0.6|v0.7]
 *
 * The local chain runs in its own process (the contracts package's start-local), so its work never lands in
 * the service's figures; the service and this client share the bench process.
 *
 * Prints throughput, client-side p50/p99 latency, and where the server's time goes per request, from the
 * `Server-Timing` header: time waiting on the chain versus the service's own work. The headline figure is the
 * service's own time per sponsorship at concurrency 1 (no queueing behind other requests). Bounded: at most
 * 5000 requests and 120 s, then it stops by itself.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { encodeFunctionData, maxUint256, type Abi } from "viem";
import { SimpleAccountFactoryV06Artifact, SimpleAccountV06Artifact, TestTokenArtifact } from "@paymaster/contracts/artifacts";
import { readManifest } from "@paymaster/contracts/manifest";
import { STUB_SIGNATURE, type Address, type EntryPointVersion, type Hex } from "@paymaster/shared";
import { createChainRpc } from "../src/chain/rpc.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData, seedDemo } from "../src/local/embedded.ts";
import { startService } from "../src/server.ts";
import { startChainProcess } from "./chainProcess.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: {
    concurrency: { type: "string", default: "8" },
    requests: { type: "string", default: "400" },
    mode: { type: "string", default: "sponsor" },
    version: { type: "string", default: "v0.7" },
  },
});
const concurrency = Math.max(1, Math.min(64, Number(values.concurrency)));
const requests = Math.max(10, Math.min(5000, Number(values.requests)));
const mode = values.mode as "sponsor" | "erc20" | "user";
const version = values.version as EntryPointVersion;
const deadline = Date.now() + 120_000;

const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-bench-")), "data");
const manifestPath = path.join(dataDir, "manifest.json");

const chainProcess = await startChainProcess(manifestPath);
const rpc = createChainRpc(chainProcess.url);
const request = (method: string, params: unknown[]) => rpc.request<unknown>(method, params);
const manifest = await readManifest(manifestPath);
const running = await startService(embeddedConfig(localNetworkConfig({ manifest, rpcUrl: chainProcess.url, signerKey: chainProcess.signerKey }), dataDir, 0, "silent"), { pollMs: 1000 });
const accounts = (await request("eth_accounts", [])) as Address[];
const demo = await seedDemo(running.service.store, request, manifest, accounts[0]!, accounts[3]!);
const endpoint = `${running.url}/api/v1/paymaster/local?apiKey=${demo.apiKey}`;

// One deployed SimpleAccount (owner: dev account #4); every request uses its own 2-D nonce key, so all are valid.
const owner = accounts[4]!;
const factory = manifest.entryPoints[version].simpleAccountFactory;
const factoryAbi = SimpleAccountFactoryV06Artifact.abi as Abi;
await request("eth_sendTransaction", [{ from: owner, to: factory, data: encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [owner, 0n] }) }]);
const senderWord = (await request("eth_call", [{ to: factory, data: encodeFunctionData({ abi: factoryAbi, functionName: "getAddress", args: [owner, 0n] }) }, "latest"])) as Hex;
const sender = `0x${senderWord.slice(-40)}` as Address;
let callData: Hex = executeCallData(owner);
const extra: Record<string, string> = version === "v0.6" ? {} : { version };
if (mode === "sponsor") extra.strategy_code = demo.strategyCode;
if (mode === "user") await running.service.store.creditGasTank("local", sender, 10n ** 21n, "bench");
if (mode === "erc20") {
  const usdc = manifest.tokens.find((t) => t.symbol === "USDC")!;
  extra.token = "USDC";
  await request("eth_sendTransaction", [{ from: owner, to: usdc.address, data: encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "mint", args: [sender, 10n ** 15n] }) }]);
  const approve = encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "approve", args: [manifest.entryPoints[version].erc20Paymaster, maxUint256] });
  await request("eth_sendTransaction", [{ from: owner, to: sender, data: encodeFunctionData({ abi: SimpleAccountV06Artifact.abi as Abi, functionName: "execute", args: [usdc.address, 0n, approve] }) }]);
  callData = executeCallData(owner);
}

let nonceKey = 1n;
function body(): string {
  const nonce = `0x${(nonceKey++ << 64n).toString(16)}`;
  return JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [{ sender, nonce, callData, signature: STUB_SIGNATURE }, extra] });
}

interface Sample {
  latencyMs: number;
  chainMs: number;
  ownMs: number;
}

async function one(): Promise<Sample> {
  const started = performance.now();
  const response = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: body() });
  const text = await response.text();
  const latencyMs = performance.now() - started;
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${text.slice(0, 300)}`);
  const timing = response.headers.get("server-timing") ?? "";
  const chainMs = Number(/chain;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN);
  const ownMs = Number(/own;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN);
  return { latencyMs, chainMs, ownMs };
}

async function run(count: number, parallel: number): Promise<{ samples: Sample[]; seconds: number; cpuMsPerRequest: number }> {
  const samples: Sample[] = [];
  let issued = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (issued < count && Date.now() < deadline) {
        issued++;
        samples.push(await one());
      }
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  return { samples, seconds: (performance.now() - started) / 1000, cpuMsPerRequest: (cpu.user + cpu.system) / 1000 / samples.length };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function report(label: string, result: Awaited<ReturnType<typeof run>>) {
  const { samples, seconds } = result;
  const col = (f: (s: Sample) => number) => samples.map(f);
  const fmt = (ms: number) => `${ms.toFixed(3)} ms`.padStart(11);
  console.log(`\n${label}: ${samples.length} requests in ${seconds.toFixed(2)} s = ${(samples.length / seconds).toFixed(1)} req/s`);
  console.log(`                           p50         p99`);
  console.log(`  client latency   ${fmt(percentile(col((s) => s.latencyMs), 50))} ${fmt(percentile(col((s) => s.latencyMs), 99))}`);
  console.log(`  server: chain    ${fmt(percentile(col((s) => s.chainMs), 50))} ${fmt(percentile(col((s) => s.chainMs), 99))}`);
  console.log(`  server: own      ${fmt(percentile(col((s) => s.ownMs), 50))} ${fmt(percentile(col((s) => s.ownMs), 99))}`);
  console.log(`  process CPU per request (service incl. chain-call encoding + client): ${result.cpuMsPerRequest.toFixed(3)} ms`);
}

try {
  console.log(`pm_sponsorUserOperation bench: mode ${mode}, EntryPoint ${version}, signer ${running.service.networks.get("local")!.chain!.signer.implementation}`);
  await run(30, 4); // warm-up: JIT, connections, caches
  report("concurrency 1 (the service's own time, no queueing)", await run(Math.min(200, requests), 1));
  report(`concurrency ${concurrency}`, await run(requests, concurrency));
} finally {
  await running.close();
  chainProcess.stop();
}
