// The chain JSON-RPC client (src/chain/rpc.ts) against a scripted node on 127.0.0.1: results, node errors,
// and every transport failure mapped to CHAIN_UNAVAILABLE.
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createChainRpc, NodeError, upstreamLabels, type FailureCause } from "../src/chain/rpc.ts";
import { createLogger } from "../src/log.ts";
import { RpcError } from "../src/rpc/errors.ts";

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

  it("reads a JSON body whatever the HTTP status", async () => {
    handler = json({ jsonrpc: "2.0", id: 1, error: { code: -32005, message: "rate limited" } }, 429);
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

  describe("several upstreams", () => {
    /** A second scripted node that always answers `result`. */
    async function node(answer: Handler): Promise<{ url: string; close(): Promise<void> }> {
      const other = createServer((req, res) => {
        req.resume();
        req.on("end", () => answer("", req, res));
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
        expect(performance.now() - started, "no waiting while every upstream is down").to.be.below(50);
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
});
