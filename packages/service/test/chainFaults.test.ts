// Chain faults through a real TCP proxy between the service and the local chain: an RPC that refuses
// connections, one that accepts and never answers, and its return. Sponsor calls fail within 2 s with the
// documented service-unavailable error in both dialects (HTTP 503 CHAIN_UNAVAILABLE; JSON-RPC -32002), /ready
// says what is failing, logs carry one line per state change with the URL redacted, and the service recovers
// without a restart. Also: starting while the RPC is down, and failing over to a fallback URL. And a provider
// that rate-limits: an HTTP front before the chain answering limits in the providers' shapes (429, -32005, …).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { encodeErrorResult } from "viem";
import { gasTankConsentTypedData, STUB_SIGNATURE, type Hex } from "@paymaster/shared";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { networkStatus } from "../src/admin/networks.ts";
import { NodeError } from "../src/chain/rpc.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import type { NetworkConfig } from "../src/config/types.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { startService, type RunningService } from "../src/server.ts";
import { startTcpProxy, type TcpProxy } from "./helpers/tcpProxy.ts";
import { passAll, SHAPES, startRateLimitFront, type LimitPolicy, type RateLimitFront } from "./helpers/rateLimitFront.ts";
import { chainRequest, clientGasFields, newWallet, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

/** The RPC secret in the URL's path and query: it must never reach a log line. */
const SECRET = "sEcReTpRoViDeRkEy";

interface Started {
  running: RunningService;
  logs: Record<string, any>[];
  v1: string;
  standard: string;
  code: string;
}

describe("chain faults through a TCP proxy (refusing, hanging, restored)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let chainPort: number;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    embedded = await startTestStack();
    chainPort = Number(new URL(embedded.stack.chain.url).port);
  });
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
  });
  after(async () => {
    await embedded?.close();
  });

  async function proxy(initial: "pass" | "hang" | "refuse"): Promise<TcpProxy> {
    const p = await startTcpProxy({ host: "127.0.0.1", port: chainPort }, initial);
    cleanups.push(() => p.close());
    return p;
  }

  async function start(network: Partial<NetworkConfig>, watch = false): Promise<Started> {
    const logs: Record<string, any>[] = [];
    const logger = createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line)) });
    // The production defaults (1000 / 1500 ms), not the local chain's lenient timeouts: they are what is tested.
    const { rpcTimeoutMs: _timeout, rpcDeadlineMs: _deadline, ...base } = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-faults-")), "data");
    const config = { ...embeddedConfig({ ...base, ...network }, dataDir, 0, "info" as const), metrics: { host: "127.0.0.1", port: 0 } };
    const running = await startService(config, { logger, pollMs: 100, watch });
    cleanups.push(() => running.close());
    const store = running.service.store;
    const project = await store.createProject("faults");
    const { plaintext } = await store.createApiKey(project.id);
    const code = `F${Math.random().toString(36).slice(2, 8)}`;
    await store.createStrategy({ projectId: project.id, code, name: code });
    return { running, logs, code, v1: `${running.url}/api/v1/paymaster/local?apiKey=${plaintext}`, standard: `${running.url}/rpc/v1/local?apiKey=${plaintext}` };
  }

  async function op(gas: Record<string, string> = {}) {
    const wallet = await newWallet(embedded, "v0.7");
    return { ...wireOp(wallet, executeCallData(wallet.owner.address)), ...gas };
  }

  async function post(url: string, body: unknown) {
    const started = performance.now();
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as any, ms: performance.now() - started, retryAfter: response.headers.get("retry-after") };
  }

  /** Both dialects' signing calls, timed. */
  async function sponsorBoth(s: Started) {
    const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    const [v1, standard] = await Promise.all([
      post(s.v1, { id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [await op(), { strategy_code: s.code, version: "v0.7" }] }),
      post(s.standard, { id: 7, jsonrpc: "2.0", method: "pm_getPaymasterData", params: [await op(await clientGasFields(embedded)), entryPoint, "0x7a69", { strategy_code: s.code }] }),
    ]);
    return { v1, standard };
  }

  function expectUnavailableFast({ v1, standard }: Awaited<ReturnType<typeof sponsorBoth>>) {
    expect(v1.status, JSON.stringify(v1.body)).to.equal(503);
    expect(v1.body.data.reason).to.equal("CHAIN_UNAVAILABLE");
    expect(v1.ms, "v1 answer within 2 s").to.be.below(2_000);
    expect(standard.status).to.equal(200);
    expect(standard.body.error.code, JSON.stringify(standard.body)).to.equal(-32002);
    expect(standard.body.error.data.reason).to.equal("CHAIN_UNAVAILABLE");
    expect(standard.ms, "standard answer within 2 s").to.be.below(2_000);
  }

  function expectServed({ v1, standard }: Awaited<ReturnType<typeof sponsorBoth>>) {
    expect(v1.status, JSON.stringify(v1.body)).to.equal(200);
    expect(v1.body.data.userOpResponse.paymasterAndData).to.match(/^0x[0-9a-f]+$/i);
    expect(standard.body.result?.paymasterData, JSON.stringify(standard.body)).to.match(/^0x[0-9a-f]+$/i);
  }

  async function ready(s: Started): Promise<{ status: number; body: any }> {
    const response = await fetch(`${s.running.url}/ready`);
    return { status: response.status, body: await response.json() };
  }

  async function waitReady(s: Started, timeoutMs = 10_000): Promise<number> {
    const started = performance.now();
    while (performance.now() - started < timeoutMs) {
      if ((await ready(s)).status === 200) return performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`not ready after ${timeoutMs} ms: ${JSON.stringify((await ready(s)).body)}`);
  }

  function expectNoSecret(logs: Record<string, any>[]) {
    expect(JSON.stringify(logs)).to.not.include(SECRET);
  }

  it("starts while the RPC refuses connections: not ready, one log line naming the network and the redacted URL; ready once it answers", async () => {
    const p = await proxy("refuse");
    const s = await start({ rpcUrl: `${p.url}/v2/${SECRET}?key=${SECRET}` });
    const before = await ready(s);
    expect(before.status).to.equal(503);
    expect(before.body.checks["network:local"]).to.match(/^failing: the RPC does not answer \(refused\)/);
    expect(before.body.checks.store).to.equal("ok");
    const line = s.logs.find((l) => l.msg?.startsWith("network not ready"));
    expect(line, "a log line saying the network is not ready").to.not.equal(undefined);
    expect(line!.network).to.equal("local");
    expect(line!.upstreams).to.deep.equal([`http://127.0.0.1:${p.port}/…`]);
    expectUnavailableFast(await sponsorBoth(s));
    // Quotes need the chain too: the same refusal, never an internal error.
    const quotes = await fetch(s.standard, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "pm_getTokenQuotes" }) }).then((r) => r.json() as Promise<any>);
    expect(quotes.error?.data?.reason, JSON.stringify(quotes)).to.equal("CHAIN_UNAVAILABLE");

    await new Promise((resolve) => setTimeout(resolve, 2_500)); // a retry or two while still refused
    expect(s.logs.filter((l) => l.msg?.startsWith("network not ready")), "one line, not one per retry").to.have.length(1);
    await p.setMode("pass");
    await waitReady(s);
    expectServed(await sponsorBoth(s));
    expect(s.logs.some((l) => l.msg?.startsWith("network ready"))).to.equal(true);
    expectNoSecret(s.logs);
    expect(s.logs.some((l) => typeof l.err?.stack === "string"), "no stack traces").to.equal(false);
  });

  for (const fault of ["hang", "refuse"] as const) {
    it(`an RPC that ${fault === "hang" ? "accepts and never answers" : "refuses connections"}: 503 / -32002 within 2 s in both dialects, then recovery without restart`, async () => {
      const p = await proxy("pass");
      // The settlement watcher runs too (this process leads on SQLite), polling every 200 ms.
      const s = await start({ rpcUrl: `${p.url}/${SECRET}`, pollMs: 200, confirmations: 1 }, true);
      await waitReady(s);
      expectServed(await sponsorBoth(s));

      await p.setMode(fault);
      expectUnavailableFast(await sponsorBoth(s));
      expectUnavailableFast(await sponsorBoth(s)); // and again: now it is known to be down
      const down = await ready(s);
      expect(down.status).to.equal(503);
      expect(down.body.checks["network:local"]).to.match(/^failing: no RPC upstream answers/);
      const downLines = s.logs.filter((l) => l.msg?.startsWith("chain RPC upstream down"));
      expect(downLines, "one line per state change").to.have.length(1);
      // Refusing: the proxy also cuts the open keep-alive connections, so the first failure seen may be that cut.
      expect(downLines[0]!.cause).to.be.oneOf(fault === "hang" ? ["timeout"] : ["refused", "connection"]);
      expect(downLines[0]!.upstream).to.equal(`http://127.0.0.1:${p.port}/…`);
      // The watcher sees the outage once its pass in flight fails: a call it began before the fault waits out its own
      // timeout first (eth_getLogs: 10 s), so the outage lasts until then (at most 15 s here).
      const watcherFailed = () => s.logs.some((l) => l.msg === "settlement pass failed: retrying every pollMs");
      for (const since = Date.now(); !watcherFailed() && Date.now() - since < 15_000; ) await new Promise((resolve) => setTimeout(resolve, 50));

      await p.setMode("pass");
      const recoveredMs = await waitReady(s);
      expect(recoveredMs, "recovers within a few probe intervals").to.be.below(5_000);
      expectServed(await sponsorBoth(s));
      expect(s.logs.filter((l) => l.msg === "chain RPC upstream up again")).to.have.length(1);
      expectNoSecret(s.logs);
      // The watcher failed several passes during the outage but said so once, with the cause, without a stack.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const failed = s.logs.filter((l) => l.msg === "settlement pass failed: retrying every pollMs");
      expect(failed.length, "a line per state change, not per pass").to.be.within(1, 2);
      expect(failed[0]!.problem).to.match(/^CHAIN_UNAVAILABLE: No RPC endpoint of network local answered \((timeout|refused|connection)\)/);
      expect(s.logs.some((l) => l.err !== undefined), "no error objects (stacks) in the logs").to.equal(false);
      expect(s.logs.some((l) => l.msg === "settlement watcher recovered")).to.equal(true);

      const metrics = await (await fetch(`${s.running.metricsUrl}/metrics`)).text();
      const cause = fault === "hang" ? "timeout" : "(refused|connection)";
      expect(metrics).to.match(new RegExp(`paymaster_rpc_requests_total\\{network="local",upstream="http://127.0.0.1:${p.port}/…",method="[a-zA-Z_]+",outcome="${cause}"\\} [1-9]`));
      expect(metrics).to.match(/paymaster_requests_total\{dialect="v1",method="pm_sponsorUserOperation",network="local",outcome="CHAIN_UNAVAILABLE"\} [1-9]/);
      expect(metrics).to.include(`paymaster_rpc_upstream_up{network="local",upstream="http://127.0.0.1:${p.port}/…"} 1`);
    });
  }

  /** A ready service whose RPC is a primary and a fallback, each through a proxy of its own. */
  async function startWithFallback() {
    const primary = await proxy("pass");
    const fallback = await proxy("pass");
    const s = await start({ rpcUrl: `${primary.url}/a/${SECRET}`, fallbackRpcUrls: [`${fallback.url}/b/${SECRET}`] });
    await waitReady(s);
    return { primary, fallback, s };
  }

  it("a gas tank consent while the RPC refuses: CHAIN_UNAVAILABLE (-32002), never a wrong-signature refusal", async () => {
    const p = await proxy("pass");
    const s = await start({ rpcUrl: p.url });
    await waitReady(s);
    const owner = privateKeyToAccount(generatePrivateKey());
    const issuedAt = Math.floor(Date.now() / 1000);
    const projectId = (await s.running.service.store.listProjects()).find((x) => x.name === "faults")!.id;
    const signature = await privateKeyToAccount(generatePrivateKey()).signTypedData(
      gasTankConsentTypedData(embedded.stack.chain.chainId, { sender: owner.address, project: projectId, allowed: true, issuedAt: BigInt(issuedAt) }),
    );
    const consent = () =>
      fetch(s.standard, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "pm_setGasTankConsent", params: [{ sender: owner.address, allowed: true, issuedAt, signature }] }) }).then((r) => r.json() as Promise<any>);
    expect((await consent()).error?.data?.reason, "answered: a stranger's signature").to.equal("INVALID_CONSENT");
    await p.setMode("refuse");
    const down = await consent();
    expect(down.error?.code, JSON.stringify(down)).to.equal(-32002);
    expect(down.error.data.reason).to.equal("CHAIN_UNAVAILABLE");
  });

  it("fails over from a hanging primary to a fallback URL, and reports it", async () => {
    const { primary, s } = await startWithFallback();
    await primary.setMode("hang");
    const first = await sponsorBoth(s);
    // The first call after the primary hangs pays one attempt timeout, then moves on.
    expect(first.v1.status === 200 || first.v1.body.data.reason === "CHAIN_UNAVAILABLE", JSON.stringify(first.v1.body)).to.equal(true);
    const answers = await sponsorBoth(s);
    expectServed(answers);
    expect(answers.v1.ms, "served by the fallback without waiting on the primary").to.be.below(2_000);
    expect((await ready(s)).status, "ready while one upstream answers").to.equal(200);
    const metrics = await (await fetch(`${s.running.metricsUrl}/metrics`)).text();
    expect(metrics).to.include(`paymaster_rpc_upstream_up{network="local",upstream="http://127.0.0.1:${primary.port}/…"} 0`);
    expect(metrics).to.match(/paymaster_rpc_failovers_total\{network="local"\} [1-9]/);
    const line = s.logs.find((l) => l.msg === "chain RPC upstream down: failing over");
    expect(line?.upstream).to.equal(`http://127.0.0.1:${primary.port}/…`);
    expectNoSecret(s.logs);
  });

  it("the console's network status reads the chain through the service's client: it fails over with it and is counted", async () => {
    const { primary, fallback, s } = await startWithFallback();
    const status = async () => (await networkStatus({ store: s.running.service.store, networks: ["local"], actor: "test", role: "viewer", service: s.running.service }))[0];
    await primary.setMode("refuse");
    const local = await status();
    expect(local!.error, "read from the fallback, not an error of the primary").to.equal(null);
    expect(local!.paymasters).to.have.length(6);
    for (const p of local!.paymasters) expect(BigInt(p.depositWei) > 0n, p.label).to.equal(true);
    expect(Number(local!.watcher.headBlock)).to.be.greaterThan(0);
    const metrics = await (await fetch(`${s.running.metricsUrl}/metrics`)).text();
    expect(metrics).to.match(new RegExp(`paymaster_rpc_requests_total\\{network="local",upstream="http://127.0.0.1:${fallback.port}/…",method="eth_getCode",outcome="ok"\\} [1-9]`));
    expect(JSON.stringify(local)).to.not.contain(SECRET);

    // No upstream left: the answer names the problem (the redacted URL, no secret), the rest of it still stands.
    await fallback.setMode("refuse");
    const down = await status();
    expect(down!.error).to.match(/could not be read: .*CHAIN_UNAVAILABLE|could not be read: No RPC endpoint of network local answered/);
    expect(down!.error).to.not.contain(SECRET);
    expect(down!.network).to.equal("local");
  });
  describe("a provider that rate-limits (an HTTP front before the chain)", () => {
    /** A rate-limiting front before the local chain, closed after the test. */
    async function front(policy: LimitPolicy): Promise<RateLimitFront> {
      const f = await startRateLimitFront(embedded.stack.chain.url, policy);
      cleanups.push(() => f.close());
      return f;
    }

    const sponsorV1 = async (s: Started, version: "v0.6" | "v0.7" = "v0.7", userOp?: unknown) =>
      post(s.v1, { id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [userOp ?? (await op()), { strategy_code: s.code, version }] });

    /** paymaster_rpc_requests_total of `upstream` with `outcome`, summed over methods. */
    async function rpcAttempts(s: Started, upstream: string, outcome: string): Promise<number> {
      const text = await (await fetch(`${s.running.metricsUrl}/metrics`)).text();
      const line = new RegExp(`^paymaster_rpc_requests_total\\{network="local",upstream="${upstream.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}",method="[^"]+",outcome="${outcome}"\\} (\\d+)$`, "gm");
      return [...text.matchAll(line)].reduce((sum, m) => sum + Number(m[1]), 0);
    }

    /** The RpcError a rate-limited CHAIN_UNAVAILABLE carries, in either dialect. */
    function expectRateLimited(data: any, message: string) {
      expect(data.reason, JSON.stringify(data)).to.equal("CHAIN_UNAVAILABLE");
      expect(data.cause).to.equal("rate_limited");
      expect(data.retryAfterSeconds).to.be.a("number").and.to.be.at.least(1);
      expect(message).to.match(/rate limited/);
    }

    it("a primary that limits every other call (429 with a JSON-RPC body, 200 with -32005, -32016, 429 with Retry-After) and a healthy fallback: 30 of 30 sponsorships succeed; the limits are counted per upstream, one log line, never 'down'", async () => {
      const primary = await front((n) => (n % 2 === 1 ? SHAPES[(n >> 1) % SHAPES.length] : undefined));
      const fallback = await front(passAll);
      const s = await start({ rpcUrl: `${primary.url}/a/${SECRET}`, fallbackRpcUrls: [`${fallback.url}/b/${SECRET}`] });
      await waitReady(s);
      const failures: unknown[] = [];
      for (let i = 0; i < 30; i++) {
        const answer = await sponsorV1(s);
        if (answer.status !== 200 || !/^0x[0-9a-f]+$/i.test(answer.body.data?.userOpResponse?.paymasterAndData ?? "")) failures.push(answer.body);
        // A client's pace (~2.5 s in all): the primary comes back from each cool-down (~200 ms) and meets every shape.
        await new Promise((resolve) => setTimeout(resolve, 60));
      }
      expect(failures, JSON.stringify(failures.slice(0, 2))).to.deep.equal([]);
      expect(primary.limited, "the primary met each shape of limit").to.be.at.least(SHAPES.length);
      expect(fallback.limited).to.equal(0);

      primary.setPolicy(passAll);
      await new Promise((resolve) => setTimeout(resolve, 200)); // answers in flight are counted
      expect(await rpcAttempts(s, `http://127.0.0.1:${primary.port}/…`, "rate_limited"), "every limit counted on the primary").to.equal(primary.limited);
      expect(await rpcAttempts(s, `http://127.0.0.1:${fallback.port}/…`, "rate_limited")).to.equal(0);
      expect(await rpcAttempts(s, `http://127.0.0.1:${fallback.port}/…`, "ok")).to.be.greaterThan(0);
      const lines = s.logs.filter((l) => String(l.msg).startsWith("chain RPC upstream rate-limited"));
      expect(lines, "one line for the episode, not one per limit").to.have.length(1);
      expect(lines[0]).to.include({ upstream: `http://127.0.0.1:${primary.port}/…`, cause: "rate_limited", msg: "chain RPC upstream rate-limited: cooling it down, failing over" });
      expect(lines[0]!.coolDownMs).to.be.a("number");
      expect(s.logs.filter((l) => String(l.msg).startsWith("chain RPC upstream down")), "a limit is not an outage").to.deep.equal([]);
      expect((await ready(s)).status).to.equal(200);
      expectNoSecret(s.logs);
    });

    it("no fallback, and a limit that lifts after 500 ms: the calls wait within their deadline and are served, or answer CHAIN_UNAVAILABLE naming the rate limit, never INTERNAL_ERROR", async () => {
      const f = await front(passAll);
      const s = await start({ rpcUrl: `${f.url}/${SECRET}` });
      await waitReady(s);
      const liftAt = Date.now() + 500;
      f.setPolicy(() => (Date.now() < liftAt ? "200-32005" : undefined));
      const rounds = await Promise.all([0, 1, 2].map(() => sponsorBoth(s)));
      let served = 0;
      for (const { v1, standard } of rounds) {
        expect(v1.ms, "within the deadline and then some").to.be.below(2_500);
        if (v1.status === 200) served++;
        else {
          expect(v1.status, JSON.stringify(v1.body)).to.equal(503);
          expectRateLimited(v1.body.data, v1.body.message);
          expect(Number(v1.retryAfter)).to.be.at.least(1);
        }
        if (standard.body.result !== undefined) served++;
        else {
          expect(standard.body.error.code, JSON.stringify(standard.body)).to.equal(-32002);
          expectRateLimited(standard.body.error.data, standard.body.error.message);
        }
      }
      expect(f.limited, "the limit was met").to.be.greaterThan(0);
      expect(served, "served once the limit lifted, within the calls' deadline").to.be.greaterThan(0);
      expect(s.logs.some((l) => l.err !== undefined), "no error objects (stacks) in the logs").to.equal(false);
    });

    it("a limit whose Retry-After ends past the deadline: CHAIN_UNAVAILABLE at once with the wait (HTTP Retry-After in v1); nothing reaches the provider until then; /ready stays 200; served again afterwards without a restart", async () => {
      const f = await front(passAll);
      const s = await start({ rpcUrl: `${f.url}/${SECRET}` });
      await waitReady(s);
      f.setPolicy(() => "retry-after", 2);
      const limitedAt = performance.now();
      const first = await sponsorV1(s);
      expect(first.status, JSON.stringify(first.body)).to.equal(503);
      expectRateLimited(first.body.data, first.body.message);
      expect(first.body.data.retryAfterSeconds).to.equal(2);
      expect(first.retryAfter).to.equal("2");
      expect(first.ms, "no waiting for a cool-down the deadline cannot cover").to.be.below(1_000);
      const limits = f.limited;
      const during = await sponsorBoth(s);
      expectRateLimited(during.v1.body.data, during.v1.body.message);
      expect(during.standard.body.error?.code, JSON.stringify(during.standard.body)).to.equal(-32002);
      expectRateLimited(during.standard.body.error.data, during.standard.body.error.message);
      expect(during.v1.ms).to.be.below(500);
      expect(f.limited - limits, "no call reaches the provider while it cools down").to.equal(0);
      const degraded = await ready(s);
      expect(degraded.status, "degraded, not dead: ready").to.equal(200);
      expect(degraded.body.checks["network:local"]).to.equal("ok");
      expect(s.running.service.networks.get("local")!.rpc!.upstreams()[0]!.coolingDownMs).to.be.greaterThan(0);

      f.setPolicy(passAll);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2_100 - (performance.now() - limitedAt))));
      expectServed(await sponsorBoth(s));
      const lines = s.logs.filter((l) => String(l.msg).startsWith("chain RPC upstream rate-limited"));
      expect(lines).to.have.length(1);
      expect(lines[0]!.msg).to.equal("chain RPC upstream rate-limited: cooling it down; calls wait for it within their deadline");
      expect(lines[0]!.coolDownMs).to.equal(2_000);
      expectNoSecret(s.logs);
    });

    it("a limit during start-up: the network is ready at once, from the fallback, or (no fallback) from the primary once the limit lifts within the deadline; limited past it, not ready saying so until it lifts", async () => {
      const primary = await front(() => "429-json");
      const fallback = await front(passAll);
      const withFallback = await start({ rpcUrl: `${primary.url}/a/${SECRET}`, fallbackRpcUrls: [`${fallback.url}/b/${SECRET}`] });
      const answer = await ready(withFallback);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(primary.limited, "the primary limited the start-up's calls").to.be.greaterThan(0);
      expect(withFallback.logs.some((l) => String(l.msg).startsWith("network not ready"))).to.equal(false);
      expectServed(await sponsorBoth(withFallback));

      const liftAt = Date.now() + 400;
      const alone = await front(() => (Date.now() < liftAt ? "429-plain" : undefined));
      const single = await start({ rpcUrl: `${alone.url}/${SECRET}` });
      const singleReady = await ready(single);
      expect(singleReady.status, JSON.stringify(singleReady.body)).to.equal(200);
      expect(alone.limited).to.be.greaterThan(0);

      // Alone, and limited past the deadline: not ready, saying why; ready when the limit lifts, without a restart.
      const stubborn = await front(() => "retry-after");
      const late = await start({ rpcUrl: `${stubborn.url}/${SECRET}` });
      const notYet = await ready(late);
      expect(notYet.status).to.equal(503);
      expect(notYet.body.checks["network:local"]).to.equal("failing: the RPC provider rate-limits this service (rate_limited)");
      expect(late.logs.filter((l) => l.msg === "network not ready: its RPC provider rate-limits this service; retrying when the limit lifts")).to.have.length(1);
      stubborn.setPolicy(passAll);
      // A retry made just before the limit lifted meets one more Retry-After (1 s); then the pre-flight's calls.
      // 5 s: a 2-core machine running the suite's other file beside this one took just over 3 s once.
      expect(await waitReady(late, 5_000), "back within the Retry-After (1 s), one more if a retry met the limit, and the pre-flight").to.be.below(5_000);
      expectNoSecret([...withFallback.logs, ...single.logs, ...late.logs]);
    });

    // Issue 46: a provider limiting every other call, no fallback, answered in 3.18 s (HTTP 429) and 1.94 s (-32005)
    // where the bound is 2 s: each of a sponsorship's chain calls waited for a cool-down in turn. The waits of one
    // client's call now share its deadline (src/network/callDeadline.ts).
    /** rpcDeadlineMs' default, which bounds the cool-down waits of one client's call, and the margin for the call's own work. */
    const DEADLINE_MS = 1_500;
    const MARGIN_MS = 500;

    /** Each answer served or CHAIN_UNAVAILABLE rate_limited; none later than the deadline and the margin. */
    function expectWithinDeadline(answers: { status: number; body: any; ms: number }[]) {
      for (const answer of answers) {
        if (answer.status === 503) expectRateLimited(answer.body.data, answer.body.message);
        else if (answer.body.error !== undefined) {
          expect(answer.body.error.code, JSON.stringify(answer.body)).to.equal(-32002);
          expectRateLimited(answer.body.error.data, answer.body.error.message);
        } else expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      }
      const times = answers.map((answer) => Math.round(answer.ms));
      expect(Math.max(...times), `answer times (ms): ${times.join(", ")}`).to.be.below(DEADLINE_MS + MARGIN_MS);
    }

    for (const [label, shape] of [["HTTP 429", "429-json"], ["-32005", "200-32005"]] as const) {
      it(`no fallback, a provider limiting every other call (${label}), 6 rounds of 4 concurrent signing calls: no answer later than the deadline (${DEADLINE_MS} ms) + ${MARGIN_MS} ms`, async () => {
        const f = await front(passAll);
        const s = await start({ rpcUrl: `${f.url}/${SECRET}` });
        await waitReady(s);
        f.setPolicy((n) => (n % 2 === 1 ? shape : undefined));
        const answers: { status: number; body: any; ms: number }[] = [];
        for (let round = 0; round < 6; round++) for (const both of await Promise.all([0, 1].map(() => sponsorBoth(s)))) answers.push(both.v1, both.standard);
        f.setPolicy(passAll);
        expect(f.limited, "the provider limited").to.be.greaterThan(0);
        expectWithinDeadline(answers);
      });
    }

    for (const [label, shape] of [["HTTP 429 with Retry-After: 1", "retry-after"], ["-32005 with backoff_seconds: 1", "200-32005-backoff"]] as const) {
      it(`no fallback, a provider limiting every other eth_call and stating a 1 s wait (${label}): a sponsorship's two simulations wait at most once in all; no answer later than the deadline + ${MARGIN_MS} ms`, async () => {
        const f = await front(passAll);
        const s = await start({ rpcUrl: `${f.url}/${SECRET}` });
        await waitReady(s);
        let ethCalls = 0;
        f.setPolicy((_n, method) => (method === "eth_call" && ethCalls++ % 2 === 1 ? shape : undefined), 1);
        const answers: { status: number; body: any; ms: number }[] = [];
        // Bounded: 6 signing calls one after another (each simulates twice: both simulations meet a limit).
        for (let i = 0; i < 6; i++) answers.push(await sponsorV1(s));
        f.setPolicy(passAll);
        expect(f.limited, "the provider limited").to.be.greaterThan(0);
        expectWithinDeadline(answers);
      });
    }

    it("a revert is the node's verdict whatever its reason says: '429 Too Many Requests: rate limit exceeded' in an op's call is EXECUTION_REVERTED, in its validation SIMULATION_FAILED; no limit counted, nothing retried", async () => {
      const f = await front(passAll);
      const s = await start({ rpcUrl: f.url });
      await waitReady(s);
      const reason = "429 Too Many Requests: rate limit exceeded, please wait 23s";
      const revertData = encodeErrorResult({ abi: [{ type: "error", name: "Error", inputs: [{ type: "string", name: "message" }] }], errorName: "Error", args: [reason] });
      // Code that reverts with Error(reason) whatever it is called with: CODECOPY the data after it, REVERT with it.
      const size = ((revertData.length - 2) / 2).toString(16).padStart(4, "0");
      const code = `0x61${size}600e60003961${size}6000fd${revertData.slice(2)}`;
      const reverter = `0x${"7e".repeat(20)}`;
      const revertingSender = `0x${"7d".repeat(20)}`;
      for (const address of [reverter, revertingSender]) await chainRequest(embedded, "hardhat_setCode", [address, code]);

      const wallet = await newWallet(embedded, "v0.6");
      const executed = await sponsorV1(s, "v0.6", wireOp(wallet, executeCallData(reverter as Hex)));
      expect(executed.status, JSON.stringify(executed.body)).to.equal(422);
      expect(executed.body.data.reason).to.equal("EXECUTION_REVERTED");
      expect(executed.body.data.revertData).to.equal(revertData);

      const validated = await sponsorV1(s, "v0.6", { sender: revertingSender, nonce: "0x0", initCode: "0x", callData: "0x", signature: STUB_SIGNATURE });
      expect(validated.status, JSON.stringify(validated.body)).to.equal(422);
      expect(validated.body.data.reason).to.equal("SIMULATION_FAILED");
      expect(validated.body.data.entryPointReason).to.include(reason);

      // The same revert straight from the node: its message carries the reason ("… reverted with reason string
      // '429 Too Many Requests: …'"), its data the revert; one request, answered as the node's error.
      const rpc = s.running.service.networks.get("local")!.rpc!;
      const before = f.forwardedWith(reverter);
      const direct = await rpc.request("eth_call", [{ to: reverter, data: "0x" }, "latest"]).then(
        () => expect.fail("the call reverts"),
        (error: unknown) => error,
      );
      expect(direct).to.be.instanceOf(NodeError);
      expect((direct as NodeError).message).to.include(reason);
      expect((direct as NodeError).revertData).to.equal(revertData);
      expect(f.forwardedWith(reverter) - before, "not retried").to.equal(1);

      expect(await rpcAttempts(s, `http://127.0.0.1:${f.port}`, "rate_limited")).to.equal(0);
      expect(await rpcAttempts(s, `http://127.0.0.1:${f.port}`, "jsonrpc_error"), "the reverts were answers").to.be.greaterThan(0);
      expect(s.logs.filter((l) => String(l.msg).includes("rate-limited"))).to.deep.equal([]);
      expect(s.running.service.networks.get("local")!.rpc!.upstreams()[0]).to.deep.equal({ label: `http://127.0.0.1:${f.port}`, up: true });
    });
  });
});
