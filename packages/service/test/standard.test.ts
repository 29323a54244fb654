// The standard JSON-RPC 2.0 dialect (POST /rpc/v1/<network>?apiKey=KEY) over real HTTP: the envelope, ids,
// batches, notifications, error codes from the catalogue with HTTP 200, and that the v1 dialect is unchanged.
import { expect } from "chai";
import { REASONS } from "../src/errors.ts";
import { SPONSOR_VERSIONS } from "../src/wire/schemas.ts";
import { STANDARD_BATCH_MAX } from "../src/rpc/standard.ts";
import { call, startTestStack, type Embedded } from "./helpers/stack.ts";

async function post(url: string, body: unknown, raw = false): Promise<{ status: number; text: string; json: any }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: raw ? (body as string) : JSON.stringify(body) });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json };
}

const req = (id: unknown, method: string, params?: unknown[]) => ({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });

describe("standard JSON-RPC 2.0 dialect", function () {
  let embedded: Embedded;
  let url: string;
  let base: string;
  before(async () => {
    embedded = await startTestStack();
    url = embedded.endpoint.replace("/api/v1/paymaster/", "/rpc/v1/");
    base = embedded.running.url;
  });
  after(async () => {
    await embedded?.close();
  });

  it("answers {jsonrpc, id, result} and nothing else, echoing string, number and null ids", async () => {
    const entryPoints = SPONSOR_VERSIONS.map((v) => embedded.stack.manifest.entryPoints[v].entryPoint);
    for (const id of ["abc", 42, 0, null, 1.5]) {
      const answer = await post(url, req(id, "pm_supportEntrypoint"));
      expect(answer.status).to.equal(200);
      expect(Object.keys(answer.json).sort()).to.deep.equal(["id", "jsonrpc", "result"]);
      expect(answer.json.jsonrpc).to.equal("2.0");
      expect(answer.json.id).to.equal(id);
      expect(answer.json.result).to.deep.equal(entryPoints);
    }
  });

  it("errors are {jsonrpc, id, error: {code, message, data: {reason, ...}}} with the catalogue's code and HTTP 200", async () => {
    const cases: [string, unknown, string][] = [
      [url, req(1, "pm_nope"), "METHOD_NOT_FOUND"],
      [url, req(2, "pm_sponsorUserOperation", [{}, {}]), "INVALID_PARAMS"],
      [url, req(3, "pm_sponsorUserOperation", [{}, { version: "v9" }]), "UNSUPPORTED_ENTRYPOINT_VERSION"],
      [url.replace("apiKey=", "apiKey=x"), req(4, "pm_supportEntrypoint"), "API_KEY_INVALID"],
      [url.replace(/\?.*$/, ""), req(5, "pm_supportEntrypoint"), "API_KEY_MISSING"],
      [url.replace("/rpc/v1/local", "/rpc/v1/base-mainnet"), req(6, "pm_supportEntrypoint"), "NETWORK_NOT_FOUND"],
      [url, req(7, "pm_sponsorUserOperation", [{}, { strategy_code: "A", token: "B" }]), "MODE_CONFLICT"],
    ];
    for (const [target, body, reason] of cases) {
      const answer = await post(target, body);
      expect(answer.status, reason).to.equal(200);
      expect(Object.keys(answer.json).sort(), reason).to.deep.equal(["error", "id", "jsonrpc"]);
      expect(answer.json.id).to.equal((body as { id: unknown }).id);
      expect(answer.json.error.code, reason).to.equal(REASONS[reason as keyof typeof REASONS].jsonRpcCode);
      expect(answer.json.error.data.reason).to.equal(reason);
      expect(answer.json.error.message).to.be.a("string").and.not.equal("");
    }
    const invalid = await post(url, req(9, "pm_sponsorUserOperation", [{}, {}]));
    expect(invalid.json.error.code).to.equal(-32602);
    expect(invalid.json.error.data.issues).to.be.an("array").that.is.not.empty;
  });

  it("a policy refusal maps to ERC-7769's -32501 with HTTP 200", async () => {
    const op = { sender: "0x1111111111111111111111111111111111111111", nonce: "0x0", callData: "0x", signature: "0x01" };
    const answer = await post(url, req("s", "pm_sponsorUserOperation", [op, { strategy_code: "NO_SUCH_STRATEGY" }]));
    expect(answer.status).to.equal(200);
    expect(answer.json.error.code).to.equal(-32501);
    expect(answer.json.error.data.reason).to.equal("STRATEGY_NOT_FOUND");
  });

  it("a body that is not JSON -> {id: null, error -32700} with HTTP 200; an oversized body -> 413", async () => {
    for (const body of ["{", "", "not json"]) {
      const answer = await post(url, body, true);
      expect(answer.status).to.equal(200);
      expect(answer.json).to.deep.include({ jsonrpc: "2.0", id: null });
      expect(answer.json.error.code).to.equal(-32700);
      expect(answer.json.error.data.reason).to.equal("PARSE_ERROR");
    }
    const limit = embedded.running.service.config.bodyLimitBytes;
    const big = await post(url, JSON.stringify(req(1, "pm_supportEntrypoint", ["x".repeat(limit + 10)])), true);
    expect(big.status).to.equal(413);
    expect(big.json.error.data.reason).to.equal("BODY_TOO_LARGE");
    expect(big.json.jsonrpc).to.equal("2.0");
  });

  it("invalid requests -> -32600, with the id when it could be read", async () => {
    const cases: [unknown, unknown][] = [
      [{ jsonrpc: "1.0", id: 3, method: "pm_supportEntrypoint" }, 3],
      [{ jsonrpc: "2.0", id: "m", method: 5 }, "m"],
      [{ jsonrpc: "2.0", id: 4, method: "pm_supportEntrypoint", params: {} }, 4],
      [{ jsonrpc: "2.0", id: 4, method: "pm_supportEntrypoint", extra: 1 }, 4],
      [{ jsonrpc: "2.0", id: { a: 1 }, method: "pm_supportEntrypoint" }, null],
      ["string", null],
    ];
    for (const [body, id] of cases) {
      const answer = await post(url, body);
      expect(answer.status).to.equal(200);
      expect(answer.json.id, JSON.stringify(body)).to.deep.equal(id);
      expect(answer.json.error.code, JSON.stringify(body)).to.equal(-32600);
    }
  });

  it("batches: answered in order, notifications get no entry, invalid entries answered in place", async () => {
    const answer = await post(url, [
      req(1, "pm_supportEntrypoint"),
      req("two", "pm_nope"),
      { jsonrpc: "2.0", method: "pm_supportEntrypoint" },
      7,
      req(null, "pm_paymasterAccount"),
    ]);
    expect(answer.status).to.equal(200);
    expect(answer.json).to.be.an("array").with.length(4);
    expect(answer.json.map((a: any) => a.id)).to.deep.equal([1, "two", null, null]);
    expect(answer.json[0].result).to.be.an("array");
    expect(answer.json[1].error.code).to.equal(-32601);
    expect(answer.json[2].error.code).to.equal(-32600);
    expect(answer.json[3].result).to.be.an("array").that.is.not.empty;
  });

  it("an empty batch or one over the limit -> -32600; a batch of only notifications, or one notification -> 204 without a body", async () => {
    const empty = await post(url, []);
    expect(empty.status).to.equal(200);
    expect(empty.json.error.code).to.equal(-32600);
    const tooMany = await post(url, Array.from({ length: STANDARD_BATCH_MAX + 1 }, (_, i) => req(i, "pm_supportEntrypoint")));
    expect(tooMany.json.error.code).to.equal(-32600);
    const full = await post(url, Array.from({ length: STANDARD_BATCH_MAX }, (_, i) => req(i, "pm_supportEntrypoint")));
    expect(full.json).to.have.length(STANDARD_BATCH_MAX);
    expect(full.json[STANDARD_BATCH_MAX - 1].id).to.equal(STANDARD_BATCH_MAX - 1);
    const notifications = await post(url, [{ jsonrpc: "2.0", method: "pm_supportEntrypoint" }]);
    expect(notifications.status).to.equal(204);
    expect(notifications.text).to.equal("");
    const one = await post(url, { jsonrpc: "2.0", method: "pm_nope" });
    expect(one.status).to.equal(204);
  });

  it("bundler methods without a bundler: METHOD_NOT_AVAILABLE naming bundlerUrl; params checked first; eth_chainId answered here; v1 does not serve them", async () => {
    const hash = `0x${"ab".repeat(32)}`;
    for (const [method, params] of [["eth_supportedEntryPoints", []], ["eth_getUserOperationReceipt", [hash]], ["eth_sendUserOperation", [{}, embedded.stack.manifest.entryPoints["v0.7"].entryPoint]]] as const) {
      const answer = await post(url, req(1, method, [...params]));
      expect(answer.json.error.data.reason, method).to.equal("METHOD_NOT_AVAILABLE");
      expect(answer.json.error.message, method).to.include("bundlerUrl");
    }
    const badHash = await post(url, req(2, "eth_getUserOperationByHash", ["0x1234"]));
    expect(badHash.json.error.data.reason).to.equal("INVALID_PARAMS");
    expect(badHash.json.error.message).to.include("params[0]");
    const missing = await post(url, req(3, "eth_sendUserOperation", [{}]));
    expect(missing.json.error.message).to.include("expected params [userOp, entryPoint]");
    const chainId = await post(url, req(4, "eth_chainId"));
    expect(chainId.json.result).to.equal(`0x${embedded.stack.chain.chainId.toString(16)}`);
    const v1 = await call(embedded.endpoint, "eth_supportedEntryPoints");
    expect(v1.body.data.reason).to.equal("METHOD_NOT_FOUND");
  });

  it("leaves the v1 dialect as it was, and unknown routes still answer the v1 shape", async () => {
    const v1 = await call(embedded.endpoint, "pm_nope");
    expect(v1.status).to.equal(404);
    expect(Object.keys(v1.body).sort()).to.deep.equal(["code", "cost", "data", "message"]);
    const route = await post(`${base}/rpc/v2/local`, req(1, "pm_supportEntrypoint"));
    expect(route.status).to.equal(404);
    expect(route.json.data.reason).to.equal("ROUTE_NOT_FOUND");
  });
});
