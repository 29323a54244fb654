// Rate limits per API key and per project: the token bucket (in memory and in a real Redis, shared by two
// limiters as by two replicas), and 429 RATE_LIMITED over HTTP while the service keeps serving other keys.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { Counter, Gauge, Registry } from "prom-client";
import { createRateLimiter, memoryBuckets, redisBuckets } from "../src/rateLimit.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DEFAULT_BODY_LIMIT_BYTES } from "../src/config/schema.ts";
import { startService, type RunningService } from "../src/server.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { startTcpProxy } from "./helpers/tcpProxy.ts";
import { TEST_NETWORKS, startTestService, type TestService } from "./helpers/rpcService.ts";
import { testRedisUrl } from "./helpers/testServers.ts";

describe("rate limiter (token buckets per key and project)", () => {
  it("allows a burst, then refills at perSecond", async () => {
    let now = 0;
    const limiter = createRateLimiter({ perSecond: 2, burst: 3 }, memoryBuckets(() => now));
    const a = { id: "a", projectId: "p" };
    expect([await limiter.takeRequest(a), await limiter.takeRequest(a), await limiter.takeRequest(a)]).to.deep.equal([0, 0, 0]);
    expect(await limiter.takeRequest(a)).to.equal(1);
    expect(await limiter.takeRequest({ id: "b", projectId: "p" }), "another key has its own bucket").to.equal(0);
    now += 500; // half a second: one token back
    expect(await limiter.takeRequest(a)).to.equal(0);
    expect(await limiter.takeRequest(a)).to.be.greaterThan(0);
    now += 10_000; // never more than the burst
    const four = [];
    for (let i = 0; i < 4; i++) four.push(await limiter.takeRequest(a));
    expect(four).to.deep.equal([0, 0, 0, 1]);
  });

  it("limits a project's keys together, per-key overrides apply, and sponsorships per minute count apart", async () => {
    let now = 0;
    const limiter = createRateLimiter(
      { perSecond: 100, projects: { p: { perSecond: 1, burst: 2 } }, keys: { vip: { sponsorshipsPerMinute: 2 } } },
      memoryBuckets(() => now),
    );
    const answers = [];
    for (const id of ["k1", "k2", "k3"]) answers.push(await limiter.takeRequest({ id, projectId: "p" }));
    expect(answers).to.deep.equal([0, 0, 1]);
    expect(await limiter.takeRequest({ id: "k4", projectId: "q" }), "another project").to.equal(0);
    const vip = { id: "vip", projectId: "q" };
    expect([await limiter.takeSponsorship(vip), await limiter.takeSponsorship(vip), await limiter.takeSponsorship(vip)]).to.deep.equal([0, 0, 30]);
    expect(await limiter.takeSponsorship({ id: "k4", projectId: "q" }), "no sponsorship limit by default").to.equal(0);
  });

  it("shares one bucket through Redis between two limiters (two replicas)", async function () {
    const redisUrl = await testRedisUrl(this);
    const prefix = `paymaster-test:${randomUUID()}:`;
    const one = createRateLimiter({ perSecond: 1, burst: 4 }, redisBuckets(redisUrl, undefined, prefix), "redis");
    const two = createRateLimiter({ perSecond: 1, burst: 4 }, redisBuckets(redisUrl, undefined, prefix), "redis");
    try {
      const key = { id: "shared", projectId: "p" };
      const answers = await Promise.all([one, two, one, two, one, two].map((l) => l.takeRequest(key)));
      expect(answers.filter((w) => w === 0)).to.have.length(4);
      expect(answers.filter((w) => w > 0)).to.have.length(2);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it("limits per process when Redis is not there at all (nothing listens)", async () => {
    const limiter = createRateLimiter({ perSecond: 1, burst: 1 }, redisBuckets("redis://127.0.0.1:1"), "redis");
    try {
      const key = { id: "x", projectId: "p" };
      const answers = [await limiter.takeRequest(key), await limiter.takeRequest(key)];
      expect(answers[0]).to.equal(0);
      expect(answers[1], "the second request is over the limit even without Redis").to.be.greaterThan(0);
    } finally {
      await limiter.close();
    }
  });

  it("falls back to per-process buckets while Redis is refused or hangs (metric set), and shares again once it is back", async function () {
    this.timeout(30_000);
    // A real Redis behind a TCP proxy that then refuses connections, or accepts and never answers.
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: Number(new URL(await testRedisUrl(this)).port || 6379) });
    const registry = new Registry();
    const metrics = {
      rateLimitFallback: new Gauge({ name: "fallback", help: "h", registers: [registry] }),
      rateLimitFallbackTakes: new Counter({ name: "fallback_takes", help: "h", registers: [registry] }),
    };
    const gauge = async () => (await metrics.rateLimitFallback.get()).values[0]?.value;
    const takes = async () => (await metrics.rateLimitFallbackTakes.get()).values[0]?.value ?? 0;
    const prefix = `paymaster-test:${randomUUID()}:`;
    const limiter = createRateLimiter({ perSecond: 0.5, burst: 2 }, redisBuckets(`redis://127.0.0.1:${proxy.port}`, undefined, prefix, metrics), "redis");
    const burst = async (id: string) => {
      const key = { id, projectId: "p" };
      return [await limiter.takeRequest(key), await limiter.takeRequest(key), await limiter.takeRequest(key)];
    };
    try {
      const shared = await burst("a");
      expect(shared.slice(0, 2)).to.deep.equal([0, 0]);
      expect(shared[2], "through Redis").to.be.greaterThan(0);
      expect(await gauge()).to.equal(0);
      expect(await takes()).to.equal(0);

      for (const [mode, id] of [["refuse", "b"], ["hang", "c"]] as const) {
        await proxy.setMode(mode);
        const before = await takes();
        const started = Date.now();
        const local = await burst(id);
        expect(local.slice(0, 2), mode).to.deep.equal([0, 0]);
        expect(local[2], `${mode}: the limit still holds, in this process`).to.be.greaterThan(0);
        expect(await gauge(), mode).to.equal(1);
        expect((await takes()) - before, mode).to.equal(3);
        expect(Date.now() - started, `${mode}: bounded waits`).to.be.below(3_000);
        await proxy.setMode("pass");
        // Back: once a take goes through Redis again the gauge drops (bounded wait for ioredis to reconnect).
        let value = await gauge();
        for (let i = 0; i < 100 && value !== 0; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          await limiter.takeRequest({ id: `probe-${mode}-${i}`, projectId: "p" });
          value = await gauge();
        }
        expect(value, `${mode}: shared again`).to.equal(0);
      }
      const before = await takes();
      expect((await burst("d"))[2]).to.be.greaterThan(0);
      expect(await takes(), "answered by Redis").to.equal(before);
    } finally {
      await limiter.close();
      await proxy.close();
    }
  });
});

describe("rate limits over HTTP", () => {
  let t: TestService;
  before(async () => {
    t = await startTestService({ rateLimiter: createRateLimiter({ perSecond: 1, burst: 3 }) });
  });
  after(async () => {
    await t?.close();
  });

  it("answers 429 RATE_LIMITED past the burst, with a retry hint, and keeps serving other keys", async () => {
    const body = JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" });
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await t.post(body));
    expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 200, 429, 429, 429]);
    const limited = answers[3]!;
    expect(limited.json.code).to.equal(429);
    expect(limited.json.data.reason).to.equal("RATE_LIMITED");
    expect(limited.json.data.retryAfterSeconds).to.equal(1);

    const project = await t.store.createProject("other");
    const other = await t.store.createApiKey(project.id);
    expect((await t.post(body, { apiKey: other.plaintext })).status).to.equal(200);
  });
});

describe("rate limits shared through Redis by two replicas, over HTTP", function () {
  this.timeout(60_000);
  const services: RunningService[] = [];
  after(async () => {
    for (const s of services) await s.close();
  });

  it("two services on one database and one Redis hold one key to one bucket, and log the effective limits", async function () {
    const redisUrl = await testRedisUrl(this);
    const databasePath = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-ratelimit-")), "store.sqlite");
    const seed = await openSqliteStore(databasePath);
    const project = await seed.createProject("shared");
    const { plaintext } = await seed.createApiKey(project.id);
    await seed.close();
    const lines: Record<string, any>[] = [];
    const { createLogger } = await import("../src/log.ts");
    for (let i = 0; i < 2; i++) {
      // No chain: the networks' RPC (127.0.0.1:1) never answers; methods that need no chain are served all the same.
      services.push(
        await startService(
          { host: "127.0.0.1", port: 0, databasePath, bodyLimitBytes: DEFAULT_BODY_LIMIT_BYTES, signatureTtlSeconds: 300, logLevel: "info", networks: TEST_NETWORKS, rateLimit: { perSecond: 1, burst: 4 } },
          { redisUrl, watch: false, logger: createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line)) }) },
        ),
      );
    }
    const body = JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" });
    const statuses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        fetch(`${services[i % 2]!.url}/api/v1/paymaster/local?apiKey=${plaintext}`, { method: "POST", headers: { "content-type": "application/json" }, body }).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 200)).to.have.length(4);
    expect(statuses.filter((s) => s === 429)).to.have.length(4);
    const started = lines.filter((l) => l.msg === "paymaster service listening");
    expect(started).to.have.length(2);
    expect(started[0]!.rateLimits).to.deep.equal({ buckets: "redis", perKey: { perSecond: 1, burst: 4 } });
    expect(started[0]!.networks).to.deep.equal([{ name: "local", ready: false }, { name: "base-sepolia", ready: false }]);
  });
});
