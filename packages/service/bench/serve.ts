/**
 * One system under test in a process of its own, so the benchmark reads its CPU from /proc: our service
 * (the embedded configuration against the bench's chain, a seeded demo key) or Pimlico's mock-paymaster.
 * Started by bench/erc7677.ts; everything from the environment (the chain's signer key is no argv matter):
 *   BENCH_SYSTEM=ours|peer  BENCH_CHAIN_URL  BENCH_MANIFEST  BENCH_SIGNER_KEY (ours)  BENCH_SKIP_FINAL=1 (ours)
 *   BENCH_SYSTEM_CHAIN_URL (optional: the chain URL the system itself uses, e.g. the bench's delaying forwarder,
 *   bench/forwarder.ts; set-up calls go to BENCH_CHAIN_URL)
 *   BENCH_ALTO_URL (peer)  BENCH_DATA_DIR (ours)  BENCH_DATABASE_URL (ours, optional: PostgreSQL)
 *   BENCH_DEMO (ours, optional: {apiKey, strategyCode} of the demo another replica on the same database seeded)
 *   BENCH_CHAIN_CLOCK=auto|wall (ours, default wall: the clock a public chain keeps, so the bench measures what a
 *   hosted network costs; auto reads a development chain's fresh clocks in every signing request, chainClock.ts)
 *   BENCH_SIGNER=pkcs11 (ours, optional: the signer's key created in a throwaway SoftHSM2 token and accepted on
 *   chain by the owner, dev account #0; else the key in memory)
 * Prints one line `READY {json}` (url: the standard dialect, context; ours also v1Url, metricsUrl, signer and
 * forwarderUrl: a bare forwarder to the chain in this process, bench/forwarder.ts) and
 * serves until SIGINT/SIGTERM.
 */
import { encodeFunctionData, numberToHex, type Abi } from "viem";
import { VerifyingPaymasterV06Artifact } from "@paymaster/contracts/artifacts";
import { privateKeyToAccount } from "viem/accounts";
import { entryPoint08Address } from "viem/account-abstraction";
import { readManifest } from "@paymaster/contracts/manifest";
import type { Address, Hex } from "@paymaster/shared";
import { createChainRpc } from "../src/chain/rpc.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import type { NetworkConfig } from "../src/config/types.ts";
import { generateKey, withTokenSession } from "../src/signer/pkcs11Token.ts";
import { newSoftToken } from "../test/helpers/softhsm.ts";
import { embeddedConfig, seedDemo } from "../src/local/embedded.ts";
import { startService } from "../src/server.ts";
import { startForwarder } from "./forwarder.ts";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`bench/serve.ts: ${name} is not set`);
  return value;
};
const chainUrl = env("BENCH_CHAIN_URL");
/** What the system under test reaches the chain through (a hosted RPC's distance, `--rpc-delay-ms`); set-up goes straight. */
const systemChainUrl = process.env.BENCH_SYSTEM_CHAIN_URL || chainUrl;
const chain = createChainRpc(chainUrl, { timeoutMs: 60_000 });
const request = (method: string, params: unknown[]) => chain.request<unknown>(method, params);
const stops: (() => Promise<unknown>)[] = [];

if (env("BENCH_SYSTEM") === "ours") {
  const manifest = await readManifest(env("BENCH_MANIFEST"));
  const chainClock = process.env.BENCH_CHAIN_CLOCK === "auto" ? "auto" : "wall";
  const memoryNetwork = { ...localNetworkConfig({ manifest, rpcUrl: systemChainUrl, signerKey: env("BENCH_SIGNER_KEY") as Hex }), chainClock } as const;
  const network = process.env.BENCH_SIGNER === "pkcs11" ? await tokenSignedNetwork(memoryNetwork, manifest) : memoryNetwork;
  const embedded = embeddedConfig(process.env.BENCH_SKIP_FINAL === "1" ? { ...network, skipFinalSimulation: true } : network, env("BENCH_DATA_DIR"), 0, "silent");
  // BENCH_DATABASE_URL: the store on PostgreSQL instead of the SQLite file.
  const stored = process.env.BENCH_DATABASE_URL ? { ...embedded, databaseUrl: process.env.BENCH_DATABASE_URL } : embedded;
  // One account sends every op, each on a fresh 2-D nonce key, signed and never sent: lift the bound on open
  // reservations per sender (src/sponsor/outstanding.ts, default 4), which would refuse the fifth request.
  // ERC-20 mode's fresh accounts are charged in postOp, signed and mostly never sent: lift the postOp-charge risk
  // budget (src/sponsor/postOpRisk.ts, $250 per key by default), which would refuse them after a hundred or so.
  const config = {
    ...stored,
    reservations: { ...stored.reservations, maxOutstandingPerSender: 1_000_000 },
    postOpChargeRisk: { maxUsdPerProject: "1000000000", maxUsdPerKey: "1000000000" },
  };
  // The metrics listener (its own loopback port): the benches read the chain calls per request from it.
  const running = await startService({ ...config, metrics: { host: "127.0.0.1", port: 0 } }, { pollMs: 1000 });
  stops.push(() => running.close());
  await running.initialised;
  const accounts = (await request("eth_accounts", [])) as Address[];
  // BENCH_DEMO: a second replica on the first one's database serves the demo project it seeded.
  const demo = process.env.BENCH_DEMO
    ? (JSON.parse(process.env.BENCH_DEMO) as { apiKey: string; strategyCode: string })
    : await seedDemo(running.service.store, request, manifest, accounts[0]!, accounts[3]!);
  // The floor the bench compares against: the same eth_call through a bare forwarder in this process (to the
  // chain as the service reaches it).
  const forwarder = await startForwarder(systemChainUrl);
  stops.push(() => forwarder.close());
  const ready = {
    url: `${running.url}/rpc/v1/local?apiKey=${demo.apiKey}`,
    forwarderUrl: forwarder.url,
    v1Url: `${running.url}/api/v1/paymaster/local?apiKey=${demo.apiKey}`,
    metricsUrl: `${running.metricsUrl}/metrics`,
    context: { strategy_code: demo.strategyCode },
    signer: running.service.networks.get("local")!.chain!.signer.implementation,
  };
  console.log(`READY ${JSON.stringify(ready)}`);
} else {
  const accounts = (await request("eth_accounts", [])) as Address[];
  // The peer's set-up wallet must hold 1000 ETH, else it calls anvil_setBalance (which Hardhat lacks).
  const utility = privateKeyToAccount(`0x${"aa".repeat(32)}`).address;
  await request("eth_sendTransaction", [{ from: accounts[11]!, to: utility, value: numberToHex(2000n * 10n ** 18n) }]);
  // It also funds a v0.8 paymaster: this chain has no EntryPoint v0.8, so a stand-in there answers every call
  // with a zero word (PUSH1 32, PUSH1 0, RETURN) and keeps the deposit; no v0.8 op is ever sent.
  await request("hardhat_setCode", [entryPoint08Address, "0x60206000f3"]);
  const { paymaster } = (await import("@pimlico/mock-paymaster")) as unknown as {
    paymaster: (options: { anvilRpc: string; altoRpc: string; port: number; host: string }) => { start(): Promise<unknown>; stop(): Promise<unknown> };
  };
  const port = 3010 + Math.floor(Math.random() * 1000);
  // The peer's ERC-7677 methods never reach the bundler; its pm_sponsorUserOperation needs BENCH_ALTO_URL.
  const instance = paymaster({ anvilRpc: systemChainUrl, altoRpc: process.env.BENCH_ALTO_URL ?? "http://127.0.0.1:9", port, host: "127.0.0.1" });
  await instance.start();
  stops.push(() => instance.stop());
  console.log(`READY ${JSON.stringify({ url: `http://127.0.0.1:${port}`, context: null })}`);
}

/** `network` signing with a key created in a throwaway SoftHSM2 token, which every paymaster accepts first. */
async function tokenSignedNetwork(network: NetworkConfig, manifest: Awaited<ReturnType<typeof readManifest>>): Promise<NetworkConfig> {
  const token = newSoftToken();
  const { address } = withTokenSession(token.config, (lib, session) => generateKey(lib, session, token.config));
  const [owner] = (await request("eth_accounts", [])) as Address[];
  for (const entry of Object.values(manifest.entryPoints)) {
    for (const paymaster of [entry.verifyingPaymaster, entry.erc20Paymaster]) {
      const data = encodeFunctionData({ abi: VerifyingPaymasterV06Artifact.abi as Abi, functionName: "addSigner", args: [address] });
      await request("eth_sendTransaction", [{ from: owner, to: paymaster, data }]);
    }
  }
  return { ...network, signerKeys: [], pkcs11: token.config };
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void Promise.allSettled(stops.map((stop) => stop())).then(() => process.exit(0));
  });
}
