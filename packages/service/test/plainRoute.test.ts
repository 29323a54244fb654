// The two JSON-RPC routes in their plain form skip Koa (src/app.ts plainRpcRoute, src/rpc/exchange.ts); any
// other form of the same paths (here: a trailing slash) goes through Koa's router to the same handlers. Both
// doors must answer alike: status, body, headers, and one log line per request with the same fields.
import { expect } from "chai";
import { startTestService, TEST_BODY_LIMIT, type TestService } from "./helpers/rpcService.ts";

interface Reply {
  status: number;
  headers: Headers;
  text: string;
}

const SAME_HEADERS = ["content-type", "cache-control", "x-content-type-options", "access-control-allow-origin"] as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("the JSON-RPC routes' plain door answers as the Koa door does", function () {
  this.timeout(30_000);
  let service: TestService;
  const logs: Record<string, unknown>[] = [];

  before(async () => {
    service = await startTestService({ logDestination: { write: (line: string) => void logs.push(JSON.parse(line)) } });
  });
  after(async () => {
    await service?.close();
  });

  async function send(path: string, search: string, body: string, headers: Record<string, string> = {}): Promise<Reply> {
    const response = await fetch(`${service.url}${path}${search}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  /** The same request through both doors; the answers must agree (the v1 envelope's `cost` is a duration). */
  async function both(prefix: string, search: string, body: string, headers: Record<string, string> = {}, network = "local"): Promise<Reply> {
    const before = logs.length;
    const plain = await send(`${prefix}/${network}`, search, body, headers);
    const koa = await send(`${prefix}/${network}/`, search, body, headers);
    const comparable = (r: Reply) => (r.text === "" ? "" : JSON.stringify({ ...JSON.parse(r.text), cost: undefined }));
    expect(plain.status, plain.text).to.equal(koa.status);
    expect(comparable(plain)).to.equal(comparable(koa));
    for (const name of SAME_HEADERS) expect(plain.headers.get(name), name).to.equal(koa.headers.get(name));
    for (const reply of [plain, koa]) {
      // (The v1 envelope's cost has a varying number of digits, so lengths are checked each against its body.)
      expect(reply.headers.get("content-length")).to.equal(reply.text === "" ? null : String(Buffer.byteLength(reply.text)));
      expect(reply.headers.get("x-request-id")).to.match(UUID);
      expect(reply.headers.get("server-timing")).to.match(/^chain;dur=[\d.]+;desc="\d+ waits", own;dur=[\d.]+$/);
    }
    // One log line each, with the same fields (the path as received, never the query string).
    const [plainLine, koaLine] = logs.slice(before).filter((line) => line["msg"] === "request");
    expect(plainLine, "a log line for the plain door").to.not.equal(undefined);
    expect(Object.keys(plainLine!).sort()).to.deep.equal(Object.keys(koaLine!).sort());
    expect([plainLine!["httpMethod"], plainLine!["path"], plainLine!["status"], plainLine!["rpcMethod"], plainLine!["reason"]]).to.deep.equal([
      koaLine!["httpMethod"],
      `${prefix}/${network}`,
      koaLine!["status"],
      koaLine!["rpcMethod"],
      koaLine!["reason"],
    ]);
    expect(JSON.stringify(plainLine)).to.not.contain("apiKey=");
    return plain;
  }

  const key = () => `?apiKey=${encodeURIComponent(service.keys.active)}`;
  const call = (id: unknown, method: string, params?: unknown[]) => JSON.stringify({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });

  it("standard dialect: a result, a refusal, a parse error, a batch, a notification, a body over the limit", async () => {
    const ok = await both("/rpc/v1", key(), call(1, "pm_supportEntrypoint"));
    expect(ok.status).to.equal(200);
    expect(JSON.parse(ok.text)).to.include({ jsonrpc: "2.0", id: 1 });
    expect(ok.headers.get("content-type")).to.equal("application/json; charset=utf-8");

    const revoked = await both("/rpc/v1", `?apiKey=${encodeURIComponent(service.keys.revoked)}`, call("a", "pm_supportEntrypoint"));
    expect(JSON.parse(revoked.text).error.data.reason).to.equal("API_KEY_REVOKED");

    const twice = await both("/rpc/v1", `${key()}&apiKey=other`, call(2, "pm_supportEntrypoint"));
    expect(JSON.parse(twice.text).error.message).to.match(/once/);

    expect(JSON.parse((await both("/rpc/v1", key(), "{not json")).text).error.code).to.equal(-32700);

    const batch = await both("/rpc/v1", key(), `[${call(3, "pm_supportEntrypoint")},${JSON.stringify({ jsonrpc: "2.0", method: "pm_supportEntrypoint" })}]`);
    expect(JSON.parse(batch.text)).to.have.length(1);

    const notification = await both("/rpc/v1", key(), JSON.stringify({ jsonrpc: "2.0", method: "pm_supportEntrypoint" }));
    expect([notification.status, notification.text, notification.headers.get("content-type")]).to.deep.equal([204, "", null]);

    const big = await both("/rpc/v1", key(), call(4, "pm_supportEntrypoint", ["x".repeat(TEST_BODY_LIMIT + 10)]));
    expect(big.status).to.equal(413);
  });

  it("v1 dialect: a result, a refusal with its status, an unknown network, a body over the limit, the Origin checked", async () => {
    const ok = await both("/api/v1/paymaster", key(), JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" }));
    expect(JSON.parse(ok.text)).to.include({ code: 200, message: "" });

    const missing = await both("/api/v1/paymaster", "", JSON.stringify({ id: 2, jsonrpc: "2.0", method: "pm_supportEntrypoint" }));
    expect([missing.status, JSON.parse(missing.text).data.reason]).to.deep.equal([401, "API_KEY_MISSING"]);

    const unknown = await both("/api/v1/paymaster", key(), JSON.stringify({ id: 5, jsonrpc: "2.0", method: "pm_supportEntrypoint" }), {}, "base-mainnet");
    expect([unknown.status, JSON.parse(unknown.text).data.reason]).to.deep.equal([404, "NETWORK_NOT_FOUND"]);

    const envelope = await both("/api/v1/paymaster", key(), JSON.stringify({ id: "x", jsonrpc: "2.0", method: "pm_supportEntrypoint" }));
    expect([envelope.status, JSON.parse(envelope.text).data.field]).to.deep.equal([400, "id"]);

    const big = await both("/api/v1/paymaster", key(), JSON.stringify({ id: 3, jsonrpc: "2.0", method: "pm_supportEntrypoint", params: ["x".repeat(TEST_BODY_LIMIT)] }));
    expect(big.status).to.equal(413);

    // A key limited to one origin: the Origin header reaches the access check through either door.
    const project = await service.store.createProject("origins");
    const limited = await service.store.createApiKey(project.id, "limited");
    await service.store.setApiKeyAccess(limited.apiKey.id, { allowedOrigins: ["https://dapp.example"], allowedIps: null });
    const search = `?apiKey=${encodeURIComponent(limited.plaintext)}`;
    const body = JSON.stringify({ id: 4, jsonrpc: "2.0", method: "pm_supportEntrypoint" });
    expect((await both("/api/v1/paymaster", search, body, { origin: "https://dapp.example" })).status).to.equal(200);
    expect((await both("/api/v1/paymaster", search, body, { origin: "https://other.example" })).status).to.equal(403);
  });

  it("a plain-form request of another method, and any other path, is still Koa's", async () => {
    const get = await fetch(`${service.url}/rpc/v1/local${key()}`);
    expect(get.status).to.equal(404);
    const preflight = await fetch(`${service.url}/rpc/v1/local`, { method: "OPTIONS" });
    expect([preflight.status, preflight.headers.get("access-control-allow-methods")]).to.deep.equal([204, "POST, OPTIONS"]);
    expect((await fetch(`${service.url}/health`)).status).to.equal(200);
  });
});
