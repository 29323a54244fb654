// The chain JSON-RPC client (src/chain/rpc.ts) against a scripted node on 127.0.0.1: results, node errors,
// and every transport failure mapped to CHAIN_UNAVAILABLE.
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createChainRpc, NodeError } from "../src/chain/rpc.ts";
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
});
