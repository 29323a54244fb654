// The chain JSON-RPC client (src/chain/rpc.ts) against a scripted node on 127.0.0.1: results, node errors,
// every transport failure mapped to CHAIN_UNAVAILABLE, and a provider's rate limits told apart from the node's
// answers (src/chain/providerLimit.ts): cooled down, failed over, waited for within the deadline.
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createChainRpc, NodeError, upstreamLabels, type FailureCause, type JsonRpcErrorBody } from "../src/chain/rpc.ts";
import { providerLimitOf, retryAfterMs } from "../src/chain/providerLimit.ts";
import { createBundlerRpc, forwardToBundler } from "../src/bundler/client.ts";
import { BundlerRejection } from "../src/bundler/rejection.ts";
import type { CallContext } from "../src/context.ts";
import type { NetworkConfig } from "../src/config/types.ts";
import { createLogger } from "../src/log.ts";
import { RpcError } from "../src/errors.ts";

type Handler = (body: string, req: IncomingMessage, res: ServerResponse) => void;

describe("chain RPC client", () => {
  let server: Server;
  let url: string;
  let handler: Handler;
  const received: { body: string; path: string | undefined; headers: IncomingMessage["headers"] }[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        received.push({ body, path: req.url, headers: req.headers });
        handler(body, req, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc?key=1`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    received.length = 0;
  });

  const json = (value: unknown, status = 200): Handler => (_body, _req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(value));
  };

  async function refusal(promise: Promise<unknown>): Promise<unknown> {
    try {
      await promise;
    } catch (error) {
      return error;
    }
    throw new Error("expected a rejection");
  }

  it("posts a JSON-RPC 2.0 request to the URL's path and query and returns the result", async () => {
    handler = json({ jsonrpc: "2.0", id: 1, result: "0x7a69" });
    const rpc = createChainRpc(url);
    expect(await rpc.request("eth_chainId", [])).to.equal("0x7a69");
    expect(await rpc.request("eth_blockNumber", ["latest", { a: 1 }])).to.equal("0x7a69");
    expect(received.map((r) => JSON.parse(r.body))).to.deep.equal([
      { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
      { jsonrpc: "2.0", id: 2, method: "eth_blockNumber", params: ["latest", { a: 1 }] },
    ]);
    expect(received[0]!.path).to.equal("/rpc?key=1");
    expect(received[0]!.headers["content-type"]).to.equal("application/json");
  });

  it("sends pre-serialized JSON (JSON.rawJSON) values as they are", async () => {
    handler = json({ jsonrpc: "2.0", id: 1, result: "0x" });
    const code = `0x${"60".repeat(5000)}`;
    const raw = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(JSON.stringify(code));
    await createChainRpc(url).request("eth_call", [{ to: "0x01" }, "latest", { "0x01": { code: raw } }]);
    expect(JSON.parse(received[0]!.body).params[2]).to.deep.equal({ "0x01": { code } });
  });

  it("reads large responses that arrive in many chunks", async () => {
    const result = `0x${"ab".repeat(300_000)}`;
    handler = json({ jsonrpc: "2.0", id: 1, result });
    expect(await createChainRpc(url).request("eth_call", [])).to.equal(result);
  });

  it("throws a node's JSON-RPC error as NodeError with its code, message and revert data", async () => {
    handler = json({ jsonrpc: "2.0", id: 1, error: { code: 3, message: "execution reverted", data: "0x08c379a0" } }, 200);
    const error = await refusal(createChainRpc(url).request("eth_call", []));
    expect(error).to.be.instanceOf(NodeError);
    expect((error as NodeError).code).to.equal(3);
    expect((error as NodeError).revertData).to.equal("0x08c379a0");
  });

  it("reads a JSON-RPC error whatever the HTTP status", async () => {
    handler = json({ jsonrpc: "2.0", id: 1, error: { code: 3, message: "execution reverted", data: "0x08c379a0" } }, 500);
    expect(await refusal(createChainRpc(url).request("eth_call", []))).to.be.instanceOf(NodeError);
  });

  for (const [what, answer] of [
    ["a body that is not JSON", (_b: string, _q: IncomingMessage, res: ServerResponse) => res.end("<html>bad gateway</html>")],
    ["JSON without result or error", json({ jsonrpc: "2.0", id: 1 })],
    ["a connection closed mid-response", (_b: string, _q: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write('{"jsonrpc":"2.0",');
      setTimeout(() => res.destroy(), 10);
    }],
  ] as [string, Handler][]) {
    it(`maps ${what} to CHAIN_UNAVAILABLE`, async () => {
      handler = answer;
      const error = await refusal(createChainRpc(url).request("eth_call", []));
      expect(error).to.be.instanceOf(RpcError);
      expect((error as RpcError).reason).to.equal("CHAIN_UNAVAILABLE");
    });
  }

  it("gives up after timeoutMs (CHAIN_UNAVAILABLE)", async () => {
    handler = () => {}; // never answers
    const started = Date.now();
    const error = await refusal(createChainRpc(url, { timeoutMs: 150 }).request("eth_call", []));
    expect((error as RpcError).reason).to.equal("CHAIN_UNAVAILABLE");
    expect(Date.now() - started).to.be.within(100, 5000);
  });

  it("maps an unreachable node and a URL it cannot post to to CHAIN_UNAVAILABLE", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    for (const target of [`http://127.0.0.1:${port}`, "ws://127.0.0.1:8546", "not a url"]) {
      const error = await refusal(createChainRpc(target).request("eth_chainId", []));
      expect((error as RpcError).reason, target).to.equal("CHAIN_UNAVAILABLE");
    }
  });

  /** A second scripted node (a fallback), its URL with a secret in the path. */
  async function node(answer: Handler): Promise<{ url: string; close(): Promise<void> }> {
    const other = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => answer(Buffer.concat(chunks).toString("utf8"), req, res));
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    return {
      url: `http://127.0.0.1:${(other.address() as AddressInfo).port}/k/SECRET`,
      close: async () => {
        other.closeAllConnections();
        await new Promise<void>((resolve) => other.close(() => resolve()));
      },
    };
  }

  describe("several upstreams", () => {

    it("fails over on an HTTP error without a JSON-RPC answer, logs one line per state change, probes the upstream back", async () => {
      const fallback = await node(json({ jsonrpc: "2.0", id: 1, result: "0xfb" }));
      const lines: Record<string, any>[] = [];
      const attempts: string[] = [];
      const logger = createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line)) });
      const rpc = createChainRpc([url, fallback.url], {
        network: "local",
        logger,
        probeIntervalMs: 50,
        observer: { attempt: (u, _m, outcome) => attempts.push(`${u} ${outcome}`), upstreamState: () => {}, failover: () => attempts.push("failover") },
      });
      try {
        handler = (_b, _q, res) => {
          res.writeHead(502);
          res.end("bad gateway");
        };
        expect(await rpc.request("eth_chainId", [])).to.equal("0xfb");
        expect(await rpc.request("eth_chainId", [])).to.equal("0xfb");
        expect(received, "the down primary is skipped").to.have.length(1);
        expect(attempts.filter((a) => a.endsWith("http_status"))).to.have.length(1);
        expect(attempts).to.include("failover");
        const down = lines.filter((l) => l.msg === "chain RPC upstream down: failing over");
        expect(down).to.have.length(1);
        expect(down[0]!.cause).to.equal("http_status");
        expect(down[0]!.detail).to.equal("HTTP 502");
        handler = json({ jsonrpc: "2.0", id: 1, result: "0x01" });
        for (let i = 0; i < 50 && !rpc.upstreams()[0]!.up; i++) await new Promise((resolve) => setTimeout(resolve, 20));
        expect(rpc.upstreams()[0]!.up, "probed back up").to.equal(true);
        expect(await rpc.request("eth_chainId", [])).to.equal("0x01");
        expect(lines.filter((l) => l.msg === "chain RPC upstream up again")).to.have.length(1);
        expect(JSON.stringify(lines)).to.not.include("SECRET").and.not.include("key=1");
      } finally {
        rpc.close();
        await fallback.close();
      }
    });

    it("bounds a call by its deadline when every upstream hangs, and then fails at once while they are down", async () => {
      const hanging = await node(() => {});
      handler = () => {};
      const rpc = createChainRpc([url, hanging.url], { timeoutMs: 300, deadlineMs: 450, probeIntervalMs: 10_000 });
      try {
        let started = performance.now();
        const error = (await refusal(rpc.request("eth_call", []))) as RpcError;
        const elapsed = performance.now() - started;
        expect(error.reason).to.equal("CHAIN_UNAVAILABLE");
        expect(error.details.cause).to.equal("timeout" satisfies FailureCause);
        expect(elapsed, "300 ms on the first, the 150 ms left on the second").to.be.within(400, 1_000);
        expect(rpc.healthy()).to.equal(false);
        started = performance.now();
        expect(((await refusal(rpc.request("eth_call", []))) as RpcError).reason).to.equal("CHAIN_UNAVAILABLE");
        expect(performance.now() - started, "no waiting while every upstream is down (a timeout would be 300 ms)").to.be.below(150);
      } finally {
        rpc.close();
        await hanging.close();
      }
    });

    it("waits for a busy node that keeps answering other calls, but gives up on a silent one", async () => {
      handler = (body, _q, res) => {
        const reply = () => json({ jsonrpc: "2.0", id: 1, result: "0x1" })(body, _q, res);
        if (body.includes("slow_call")) setTimeout(reply, 700);
        else reply();
      };
      const rpc = createChainRpc(url, { timeoutMs: 300, deadlineMs: 450, probeIntervalMs: 10_000 });
      try {
        // Busy: other calls are answered meanwhile, so the slow one is not a hang.
        let busy = true;
        const chatter = (async () => {
          while (busy) {
            await rpc.request("eth_blockNumber", []);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        })();
        expect(await rpc.request("slow_call", [])).to.equal("0x1");
        busy = false;
        await chatter;
        expect(rpc.healthy()).to.equal(true);
        // Silent: nothing else is answered, so 300 ms without an answer is a timeout.
        await new Promise((resolve) => setTimeout(resolve, 350));
        const started = performance.now();
        const error = (await refusal(rpc.request("slow_call", []))) as RpcError;
        expect(error.details.cause).to.equal("timeout");
        expect(performance.now() - started).to.be.within(250, 650);
      } finally {
        rpc.close();
      }
    });

    it("retries a call once when a connection breaks on an upstream that is answering, without marking it down", async () => {
      let broken = 0;
      handler = (body, req, res) => {
        if (body.includes("flaky_call") && broken++ === 0) {
          req.socket.destroy(); // the node drops this one connection
          return;
        }
        json({ jsonrpc: "2.0", id: 1, result: "0x2" })(body, req, res);
      };
      const lines: Record<string, any>[] = [];
      const rpc = createChainRpc(url, { logger: createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line)) }) });
      try {
        expect(await rpc.request("eth_blockNumber", [])).to.equal("0x2");
        expect(await rpc.request("flaky_call", [])).to.equal("0x2");
        expect(broken, "the first try broke, the second was answered").to.equal(2);
        expect(rpc.healthy()).to.equal(true);
        expect(lines.filter((l) => String(l.msg).startsWith("chain RPC upstream down"))).to.deep.equal([]);
      } finally {
        rpc.close();
      }
    });

    it("labels upstreams redacted and unique", () => {
      expect(upstreamLabels(["https://a.example/v2/KEY1", "https://a.example/v2/KEY2", "http://b.example:8545"])).to.deep.equal([
        "https://a.example/…#1",
        "https://a.example/…#2",
        "http://b.example:8545",
      ]);
    });
  });
  describe("a provider's rate limit", () => {
    const revert = "0x08c379a00000000000000000000000000000000000000000000000000000000000000020000000000000000000000000000000000000000000000000000000000000000a72617465206c696d697400000000000000000000000000000000000000000000";

    it("is HTTP 429 whatever the body, the providers' codes, or a -32000 that says so; never a revert, never a node's other errors", () => {
      const limited: [number, JsonRpcErrorBody | undefined][] = [
        [429, undefined],
        [429, { code: -32016, message: "over rate limit" }],
        [429, { code: 3, message: "anything at all" }],
        [200, { code: -32005, message: "daily request count exceeded, request rate limited" }],
        [200, { code: -32005, message: "limit exceeded" }],
        [200, { code: -32016, message: "over rate limit" }],
        [200, { code: -32007, message: "100/second request limit reached - reduce calls per second or upgrade your account at quicknode.com" }],
        [200, { code: -32029, message: "rate limit" }],
        [200, { code: 429, message: "Your app has exceeded its compute units per second capacity. If you have retries enabled, you can safely ignore this message." }],
        [200, { code: -32000, message: '429 Too Many Requests: {"code":-32005,"message":"rate limited"}' }],
        [200, { code: -32000, message: "rate limit exceeded" }],
        [200, { code: -32000, message: "request limit reached" }],
        [200, { code: -32000, message: "Too many requests, please slow down" }],
        [200, { code: -32000, message: "you have exceeded the request rate for this endpoint" }],
        [503, { code: -32000, message: "Rate-limited: too many concurrent requests" }],
      ];
      for (const [status, error] of limited) expect(providerLimitOf(status, undefined, error), JSON.stringify([status, error])).to.not.equal(undefined);
      const answers: [number, JsonRpcErrorBody | undefined][] = [
        [200, undefined],
        [502, undefined],
        // Reverts, whatever their reason says: the reason is the caller's own string.
        [200, { code: 3, message: "execution reverted: rate limit exceeded", data: revert }],
        [200, { code: 3, message: "VM Exception while processing transaction: reverted with reason string '429 Too Many Requests'", data: revert }],
        [200, { code: -32000, message: "execution reverted: too many requests" }],
        [200, { code: -32000, message: "rate limit exceeded", data: revert }],
        [200, { code: -32000, message: "rate limit exceeded", data: { data: revert } }],
        [200, { code: -32005, message: "limit exceeded", data: { result: "0x" } }],
        [500, { code: -32000, message: "Reverted: over rate limit" }],
        // A node's other errors.
        [200, { code: -32000, message: "nonce too low" }],
        [200, { code: -32000, message: "gas required exceeds allowance (30000000)" }],
        [200, { code: -32000, message: "header not found" }],
        [200, { code: -32000, message: "max initcode size exceeded" }],
        [200, { code: -32000, message: "query returned more than 10000 results" }],
        [200, { code: -32603, message: "rate limit" }],
        [200, { code: -32602, message: "invalid argument 0: too many requests in the batch" }],
        [200, { code: -32504, message: "paymaster throttled" }],
        [200, { code: -32500, message: "AA23 reverted: rate limit exceeded" }],
      ];
      for (const [status, error] of answers) expect(providerLimitOf(status, undefined, error), JSON.stringify([status, error])).to.equal(undefined);
    });

    it("reads the wait it states: Retry-After in seconds or as an HTTP date, Infura's backoff_seconds, a wait in the message", () => {
      const now = Date.parse("2026-11-28T10:00:00Z");
      expect(retryAfterMs("2", now)).to.equal(2_000);
      expect(retryAfterMs(" 0 ", now)).to.equal(0);
      expect(retryAfterMs("Sat, 28 Nov 2026 10:00:30 GMT", now)).to.equal(30_000);
      expect(retryAfterMs("Sat, 28 Nov 2026 09:00:00 GMT", now), "a date past").to.equal(0);
      expect(retryAfterMs("soon", now)).to.equal(undefined);
      expect(retryAfterMs(undefined, now)).to.equal(undefined);
      const waitOf = (status: number, retryAfter: string | undefined, error?: JsonRpcErrorBody) => providerLimitOf(status, retryAfter, error, now)?.waitMs;
      expect(waitOf(429, "3")).to.equal(3_000);
      expect(waitOf(429, "4", { code: -32000, message: "rate limit, please wait 23s" }), "the header first").to.equal(4_000);
      expect(waitOf(200, undefined, { code: -32000, message: "rate limit reached, please wait 23s and retry" })).to.equal(23_000);
      expect(waitOf(200, undefined, { code: -32005, message: "limit exceeded: try again in 2 seconds" })).to.equal(2_000);
      expect(waitOf(200, undefined, { code: -32005, message: "limit exceeded, retry after 500ms" })).to.equal(500);
      expect(waitOf(200, undefined, { code: -32005, message: "project ID request rate exceeded", data: { see: "https://infura.io/…", backoff_seconds: 30 } })).to.equal(30_000);
      expect(waitOf(200, undefined, { code: -32005, message: "limit exceeded" })).to.equal(undefined);
      expect(providerLimitOf(200, undefined, { code: -32005, message: "limit exceeded, see https://dash.example/v3/KEY123?x=1" }, now)!.detail).to.equal("JSON-RPC -32005: limit exceeded, see https://dash.example/…");
      // A key in the URL's userinfo, or bare in the text, never reaches the log line.
      const detail = providerLimitOf(200, undefined, { code: -32005, message: "over quota: https://acct:s3cretKeyValue@dash.example/x, or key AbCdEfGhIjKlMnOpQrStUvWxYz012345" }, now)!.detail;
      // (The comma after the URL is the sentence's, and stays.)
      expect(detail).to.equal("JSON-RPC -32005: over quota: https://dash.example/…, or key [redacted]");
    });

    describe("the client", () => {
      const limit429 = (retryAfter?: string): Handler => (_b, _q, res) => {
        res.writeHead(429, { "content-type": "application/json", ...(retryAfter ? { "retry-after": retryAfter } : {}) });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: -32016, message: "over rate limit" } }));
      };
      const ok = (result: string) => json({ jsonrpc: "2.0", id: 1, result });
      const logged = () => {
        const lines: Record<string, any>[] = [];
        return { lines, logger: createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line)) }) };
      };

      it("fails over at once, skips the limited upstream while it cools down (no probe), takes it back when the cool-down ends; counted as rate_limited; one line each way", async () => {
        const fallback = await node(ok("0xfb"));
        const { lines, logger } = logged();
        const attempts: string[] = [];
        const rpc = createChainRpc([url, fallback.url], {
          network: "local",
          logger,
          probeIntervalMs: 20,
          limitQuietMs: 0,
          observer: { attempt: (u, _m, outcome) => attempts.push(`${u} ${outcome}`), upstreamState: () => {}, failover: () => attempts.push("failover") },
        });
        try {
          handler = limit429("1");
          const started = performance.now();
          expect(await rpc.request("eth_chainId", [])).to.equal("0xfb");
          expect(performance.now() - started, "at once").to.be.below(200);
          for (let i = 0; i < 5; i++) expect(await rpc.request("eth_chainId", [])).to.equal("0xfb");
          await new Promise((resolve) => setTimeout(resolve, 300)); // probes would have come by now
          expect(received, "skipped while cooling down, and not probed").to.have.length(1);
          expect(attempts.filter((a) => a.endsWith(" rate_limited"))).to.deep.equal([`${upstreamLabels([url])[0]} rate_limited`]);
          expect(attempts).to.include("failover");
          expect(rpc.healthy()).to.equal(true);
          const [primary] = rpc.upstreams();
          expect(primary).to.include({ up: true });
          expect(primary!.coolingDownMs).to.be.within(1, 1_000);

          handler = ok("0x01");
          await new Promise((resolve) => setTimeout(resolve, primary!.coolingDownMs! + 20));
          expect(await rpc.request("eth_chainId", []), "the primary again, without a probe").to.equal("0x01");
          expect(received).to.have.length(2);
          expect(lines.map((l) => l.msg)).to.deep.equal(["chain RPC upstream rate-limited: cooling it down, failing over", "chain RPC upstream answers again after its rate limit"]);
          expect(lines[0]).to.include({ cause: "rate_limited", coolDownMs: 1_000, upstreamsUsable: 1, detail: "HTTP 429, JSON-RPC -32016: over rate limit" });
          expect(lines[1]).to.include({ rateLimits: 1 });
          expect(JSON.stringify(lines)).to.not.include("SECRET").and.not.include("key=1");
        } finally {
          rpc.close();
          await fallback.close();
        }
      });

      it("alone: waits for the cool-down within the deadline and retries (a limit that lifts), backing off without hammering; a burst of limited calls is one limit in a row", async () => {
        const liftAt = performance.now() + 400;
        handler = (body, req, res) => (performance.now() < liftAt ? json({ jsonrpc: "2.0", id: 1, error: { code: -32005, message: "limit exceeded" } })(body, req, res) : ok("0x2")(body, req, res));
        const rpc = createChainRpc(url, { probeIntervalMs: 10_000 });
        try {
          const started = performance.now();
          const results = await Promise.all(Array.from({ length: 8 }, () => rpc.request("eth_blockNumber", [])));
          const elapsed = performance.now() - started;
          expect(results).to.deep.equal(Array(8).fill("0x2"));
          expect(elapsed, "after the limit lifted, within the deadline").to.be.within(400, 1_500);
          // 8 limited at once (one limit), then ~200 ms, ~400 ms of backoff: a few tries, not one per millisecond.
          expect(received.length, "no hammering").to.be.below(8 * 4);
          expect(rpc.healthy()).to.equal(true);
        } finally {
          rpc.close();
        }
      });

      it("alone, a cool-down past the deadline: CHAIN_UNAVAILABLE at once naming the rate limit with retryAfterSeconds; nothing sent until it ends", async () => {
        handler = limit429("3");
        const rpc = createChainRpc(url, { probeIntervalMs: 10_000 });
        try {
          for (let i = 0; i < 3; i++) {
            const started = performance.now();
            const error = (await refusal(rpc.request("eth_call", []))) as RpcError;
            expect(performance.now() - started).to.be.below(200);
            expect(error).to.be.instanceOf(RpcError);
            expect(error.reason).to.equal("CHAIN_UNAVAILABLE");
            expect(error.message).to.match(/^The RPC provider of network \? is rate-limiting this service \(rate limited\): retry in [1-3] s$/);
            expect(error.details).to.deep.include({ cause: "rate_limited" });
            expect(error.details.retryAfterSeconds).to.be.within(1, 3);
          }
          expect(received, "one request: the others waited for nothing").to.have.length(1);
          expect(rpc.healthy(), "degraded, not down").to.equal(true);
        } finally {
          rpc.close();
        }
      });

      it("a probe answered with a rate limit brings a down upstream back up, cooling down", async () => {
        const fallback = await node(ok("0xfb"));
        const rpc = createChainRpc([url, fallback.url], { probeIntervalMs: 20 });
        try {
          handler = (_b, _q, res) => {
            res.writeHead(502);
            res.end("bad gateway");
          };
          expect(await rpc.request("eth_chainId", [])).to.equal("0xfb");
          expect(rpc.upstreams()[0]).to.include({ up: false, cause: "http_status" });
          handler = limit429("2");
          for (let i = 0; i < 50 && !rpc.upstreams()[0]!.up; i++) await new Promise((resolve) => setTimeout(resolve, 20));
          const [primary] = rpc.upstreams();
          expect(primary!.up, "it answered").to.equal(true);
          expect(primary!.coolingDownMs).to.be.within(1, 2_000);
        } finally {
          rpc.close();
          await fallback.close();
        }
      });

      it("a revert is never a rate limit, whatever its message: one request, NodeError with its revert data", async () => {
        for (const error of [
          { code: 3, message: "VM Exception while processing transaction: reverted with reason string 'rate limit'", data: revert },
          { code: -32000, message: "execution reverted: 429 Too Many Requests" },
        ]) {
          received.length = 0;
          handler = json({ jsonrpc: "2.0", id: 1, error });
          const thrown = await refusal(createChainRpc(url).request("eth_call", []));
          expect(thrown, error.message).to.be.instanceOf(NodeError);
          expect(received).to.have.length(1);
        }
      });

      it("a bundler's rate limit (429, -32005) is retried within its timeout; its own rejections (-32504 throttled, -32500) pass through as BUNDLER_REJECTED; past its timeout BUNDLER_UNAVAILABLE names the rate limit", async () => {
        const config = { name: "local", bundlerUrl: url, bundlerTimeoutMs: 2_000 } as NetworkConfig; // room for two backoffs (≤ 250 + 500 ms) and an attempt
        const bundler = createBundlerRpc(config)!;
        const call = { network: { config, bundler }, timing: undefined } as unknown as CallContext;
        try {
          let n = 0;
          handler = (body, req, res) => (n++ < 2 ? (n === 1 ? limit429() : json({ jsonrpc: "2.0", id: 1, error: { code: -32005, message: "limit exceeded" } }))(body, req, res) : ok("0x7a69")(body, req, res));
          expect(await forwardToBundler(call, "eth_chainId", [])).to.equal("0x7a69");
          expect(n).to.equal(3);
          for (const code of [-32504, -32500]) {
            received.length = 0;
            handler = json({ jsonrpc: "2.0", id: 1, error: { code, message: "paymaster throttled: rate limit" } });
            const rejected = await refusal(forwardToBundler(call, "eth_sendUserOperation", [{}]));
            expect(rejected).to.be.instanceOf(BundlerRejection);
            expect((rejected as BundlerRejection).jsonRpcCode).to.equal(code);
            expect(received, "not retried").to.have.length(1);
          }
          handler = limit429("5");
          const unavailable = (await refusal(forwardToBundler(call, "eth_sendUserOperation", [{}]))) as RpcError;
          expect(unavailable.reason).to.equal("BUNDLER_UNAVAILABLE");
          expect(unavailable.message).to.match(/rate limited/);
          expect(unavailable.details).to.deep.include({ cause: "rate_limited", retryAfterSeconds: 5 });
        } finally {
          bundler.close();
        }
      });
    });
  });
});
