/**
 * The v1 dialect over real HTTP on 127.0.0.1: every error with its HTTP status, envelope code and reason;
 * the success envelopes of the informational methods; the generic INTERNAL_ERROR; the error catalogue doc.
 */
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { Writable } from "node:stream";
import { expect } from "chai";
import { z } from "zod";
import { getAddress } from "viem";
import { ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS } from "@paymaster/shared";
import { createApp, isLoopbackHost, listen } from "../src/app.ts";
import { createLogger } from "../src/log.ts";
import { METHODS } from "../src/methods/index.ts";
import { pm_paymasterAccount } from "../src/methods/pm_paymasterAccount.ts";
import { REASONS, RpcError, type Reason } from "../src/errors.ts";
import { stringifyJson } from "../src/rpc/json.ts";
import { defineMethod } from "../src/rpc/method.ts";
import { formatCost } from "../src/rpc/v1.ts";
import { DEFAULT_GAS_CAPS } from "../src/config/types.ts";
import {
  ADDRESSES,
  COST_RE,
  TEST_BODY_LIMIT,
  echoSponsorMethod,
  ECHO_SPONSOR_PARAMS,
  runtimeOf,
  startTestService,
  validUserOpV06,
  validUserOpV07,
  type Answer,
  type TestService,
} from "./helpers/rpcService.ts";

/** Asserts a v1 error envelope: HTTP status = code = the reason's status, exactly four keys. */
function expectError(answer: Answer, reason: Reason): void {
  const status = REASONS[reason].status;
  expect(answer.json, answer.text).to.be.an("object");
  expect(answer.json.data?.reason, answer.text).to.equal(reason);
  expect(answer.status, answer.text).to.equal(status);
  expect(answer.json.code).to.equal(status);
  expect(Object.keys(answer.json)).to.deep.equal(["code", "message", "data", "cost"]);
  expect(answer.json.message).to.be.a("string").and.not.equal("");
  expect(answer.json.cost).to.match(COST_RE);
  expect(answer.headers.get("content-type")).to.match(/^application\/json/);
}

function expectSuccess(answer: Answer): void {
  expect(answer.status, answer.text).to.equal(200);
  expect(Object.keys(answer.json)).to.deep.equal(["code", "message", "data", "cost"]);
  expect(answer.json.code).to.equal(200);
  expect(answer.json.message).to.equal("");
  expect(answer.json.cost).to.match(COST_RE);
  expect(answer.json).to.not.have.property("id");
  expect(answer.json).to.not.have.property("jsonrpc");
}

const envelope = (fields: Record<string, unknown>): string => JSON.stringify(fields);

/** A raw request through node:http (chunked bodies, repeated query values). */
function rawRequest(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; chunks?: Buffer[] },
): Promise<{ status: number; text: string } | { error: string }> {
  return new Promise((resolve) => {
    const request = httpRequest(`${url}${options.path}`, { method: options.method ?? "POST", headers: options.headers }, (response) => {
      const parts: Buffer[] = [];
      response.on("data", (chunk: Buffer) => parts.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(parts).toString("utf8") }));
      response.on("error", (error) => resolve({ error: error.message }));
    });
    request.on("error", (error) => resolve({ error: error.message }));
    const writeAll = async (): Promise<void> => {
      for (const chunk of options.chunks ?? []) {
        if (request.destroyed) return;
        if (!request.write(chunk)) {
          await new Promise<void>((done) => {
            const finish = (): void => {
              request.off("drain", finish).off("close", finish);
              done();
            };
            request.on("drain", finish).on("close", finish);
          });
        }
      }
      request.end();
    };
    void writeAll();
  });
}

describe("formatCost", () => {
  it("renders <h>h<m>m<s>s with up to 9 decimals and no trailing zeros", () => {
    expect(formatCost(0n)).to.equal("0h0m0s");
    expect(formatCost(3_125_000n)).to.equal("0h0m0.003125s");
    expect(formatCost(1n)).to.equal("0h0m0.000000001s");
    expect(formatCost(999_999_999n)).to.equal("0h0m0.999999999s");
    expect(formatCost(1_000_000_000n)).to.equal("0h0m1s");
    expect(formatCost(61_500_000_000n)).to.equal("0h1m1.5s");
    expect(formatCost(3_723_000_456_789n)).to.equal("1h2m3.000456789s");
    expect(formatCost(100n * 3_600_000_000_000n)).to.equal("100h0m0s");
    expect(formatCost(59n * 60_000_000_000n + 59_999_999_999n)).to.equal("0h59m59.999999999s");
  });

  it("clamps negative durations to zero and always matches the cost pattern", () => {
    expect(formatCost(-5n)).to.equal("0h0m0s");
    for (const ns of [0n, 1n, 10n, 123_456_789n, 7_200_000_000_001n, 2n ** 70n]) expect(formatCost(ns)).to.match(COST_RE);
  });
});

describe("stringifyJson", () => {
  it("renders bigints as decimal strings, anywhere", () => {
    expect(stringifyJson({ a: 1n, b: [2n ** 200n], c: { d: -3n } })).to.equal(`{"a":"1","b":["${2n ** 200n}"],"c":{"d":"-3"}}`);
    expect(stringifyJson(undefined)).to.equal("null");
  });
});

describe("listen", () => {
  it("refuses any host that is not a loopback address", async () => {
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "localhost", "example.com", ""]) {
      expect(isLoopbackHost(host), host).to.equal(false);
    }
    for (const host of ["127.0.0.1", "127.1.2.3", "::1"]) expect(isLoopbackHost(host), host).to.equal(true);
    const app = createApp(minimalService(), METHODS);
    let refused: unknown;
    try {
      await listen(app, { host: "0.0.0.0", port: 0 });
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(Error);
    expect((refused as Error).message).to.match(/loopback/);
  });

  it("serves on port 0 with bounded timeouts and closes", async () => {
    const running = await listen(createApp(minimalService(), METHODS), { host: "127.0.0.1", port: 0 });
    try {
      expect(running.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(running.server.requestTimeout).to.be.greaterThan(0).and.at.most(60_000);
      expect(running.server.headersTimeout).to.be.greaterThan(0).and.at.most(running.server.requestTimeout);
      expect(running.server.keepAliveTimeout).to.be.greaterThan(0);
      const health = await fetch(`${running.url}/health`);
      expect(health.status).to.equal(200);
    } finally {
      await running.close();
      await running.close(); // idempotent
    }
    expect(running.server.listening).to.equal(false);
  });
});

/** A ServiceContext good enough for tests that never reach the store. */
function minimalService() {
  return {
    config: {
      host: "127.0.0.1",
      port: 0,
      databasePath: ":memory:",
      bodyLimitBytes: 1024,
      signatureTtlSeconds: 300,
      logLevel: "silent" as const,
      networks: [],
    },
    store: {} as never,
    networks: new Map(),
    logger: createLogger("silent"),
    now: () => 0,
  };
}


describe("v1 dialect over HTTP", () => {
  let t: TestService;
  const logLines: string[] = [];
  const throwingMethod = defineMethod({
    name: "test_throws",
    params: z.unknown(),
    async handler() {
      throw new Error("database password=hunter2 at /srv/secret/path");
    },
  });
  const bigintMethod = defineMethod({
    name: "test_bigint",
    params: z.unknown(),
    async handler() {
      return { wei: 10n ** 30n, list: [1n, 2n] };
    },
  });

  const cyclicResultMethod = defineMethod({
    name: "test_cyclic_result",
    params: z.unknown(),
    async handler() {
      const value: Record<string, unknown> = {};
      value["self"] = value;
      return value;
    },
  });
  const cyclicDetailsMethod = defineMethod({
    name: "test_cyclic_details",
    params: z.unknown(),
    async handler() {
      const details: Record<string, unknown> = {};
      details["self"] = details;
      throw new RpcError("STRATEGY_NOT_FOUND", "Unknown strategy", details);
    },
  });
  const rpcErrorMethod = defineMethod({
    name: "test_rpc_error",
    params: z.unknown(),
    async handler() {
      throw new RpcError("STRATEGY_NOT_FOUND", "Unknown strategy \"promo\"", { reason: "SPOOFED", strategyCode: "promo" });
    },
  });

  before(async () => {
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString("utf8"));
        done();
      },
    });
    t = await startTestService({
      methods: [...METHODS, echoSponsorMethod, throwingMethod, bigintMethod, cyclicResultMethod, cyclicDetailsMethod, rpcErrorMethod],
      logDestination: { write: (line: string) => destination.write(line) },
    });
  });
  after(async () => {
    await t.close();
  });

  describe("success envelopes", () => {
    it("pm_supportEntrypoint on local: both EntryPoints, checksummed, v0.6 first", async () => {
      const answer = await t.call("pm_supportEntrypoint");
      expectSuccess(answer);
      expect(answer.json.data).to.deep.equal([ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS]);
    });

    it("pm_supportEntrypoint on base-sepolia: only v0.7", async () => {
      const answer = await t.call("pm_supportEntrypoint", undefined, { network: "base-sepolia" });
      expectSuccess(answer);
      expect(answer.json.data).to.deep.equal([ENTRY_POINT_V07_ADDRESS]);
    });

    it("accepts params: [] for a method without params", async () => {
      const answer = await t.call("pm_supportEntrypoint", []);
      expectSuccess(answer);
      expect(answer.json.data).to.have.length(2);
    });

    it("pm_paymasterAccount on local: per version verifying then ERC-20, checksummed", async () => {
      const answer = await t.call("pm_paymasterAccount");
      expectSuccess(answer);
      expect(answer.json.data).to.deep.equal([
        "0x1111111111111111111111111111111111111111",
        "0xABcdEFABcdEFabcdEfAbCdefabcdeFABcDEFabCD",
        "0x2222222222222222222222222222222222222222",
        "0xfeDcbaFEdcBaFEDcbAfedcBAfeDCBAFeDCBafEdc",
      ]);
      for (const address of answer.json.data) expect(address).to.equal(getAddress(address));
      expect(answer.json.data[1]).to.equal(getAddress(ADDRESSES.localV06.erc20Paymaster));
    });

    it("pm_paymasterAccount on base-sepolia", async () => {
      const answer = await t.call("pm_paymasterAccount", undefined, { network: "base-sepolia" });
      expectSuccess(answer);
      expect(answer.json.data).to.deep.equal([
        "0x3333333333333333333333333333333333333333",
        "0x4444444444444444444444444444444444444444",
      ]);
    });

    it("pm_paymasterAccount lists an address once", async () => {
      const shared = "0x5555555555555555555555555555555555555555";
      const runtime = runtimeOf({
        name: "local",
        chainId: 31337,
        rpcUrl: "http://127.0.0.1:1",
        gasKind: "l1",
        entryPoints: {
          "v0.6": { entryPoint: ENTRY_POINT_V06_ADDRESS, verifyingPaymaster: shared, erc20Paymaster: shared },
          "v0.7": { entryPoint: ENTRY_POINT_V07_ADDRESS, verifyingPaymaster: shared, erc20Paymaster: shared },
        },
        signerKeys: [],
        tokens: [],
        nativeUsdPrice: { type: "fixed", usd: "1" },
        caps: DEFAULT_GAS_CAPS,
      });
      const result = await pm_paymasterAccount.handler(undefined, { service: t.service, network: runtime, apiKey: {} as never });
      expect(result).to.deep.equal([shared]);
    });

    it("GET /health lists the configured networks", async () => {
      const response = await fetch(`${t.url}/health`);
      expect(response.status).to.equal(200);
      expect(await response.json()).to.deep.equal({ status: "ok", networks: ["local", "base-sepolia"] });
    });

    it("renders bigints in a result as decimal strings", async () => {
      const answer = await t.call("test_bigint");
      expectSuccess(answer);
      expect(answer.json.data).to.deep.equal({ wei: (10n ** 30n).toString(), list: ["1", "2"] });
    });

    it("sends a request id header", async () => {
      const answer = await t.call("pm_supportEntrypoint");
      expect(answer.headers.get("x-request-id")).to.match(/^[0-9a-f-]{36}$/);
    });
  });

  describe("body", () => {
    it("bad JSON -> PARSE_ERROR 400", async () => {
      expectError(await t.post('{"id":1,'), "PARSE_ERROR");
      expectError(await t.post("not json"), "PARSE_ERROR");
      expectError(await t.post("{'id':1}"), "PARSE_ERROR");
    });

    it("an empty body -> PARSE_ERROR", async () => {
      expectError(await t.post(""), "PARSE_ERROR");
    });

    it("a body that is not UTF-8 -> PARSE_ERROR", async () => {
      const bytes = Buffer.concat([Buffer.from('{"id":1,"jsonrpc":"2.0","method":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
      expectError(await t.post(bytes), "PARSE_ERROR");
    });

    it("a non-object body -> INVALID_REQUEST", async () => {
      for (const body of ["[]", '[{"id":1,"jsonrpc":"2.0","method":"pm_supportEntrypoint"}]', "null", "42", '"text"', "true"]) {
        const answer = await t.post(body);
        expectError(answer, "INVALID_REQUEST");
      }
      const batch = await t.post("[]");
      expect(batch.json.message).to.match(/no batches/);
    });

    it("an oversize body -> BODY_TOO_LARGE 413, and the service keeps serving", async () => {
      const big = envelope({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint", params: ["x".repeat(TEST_BODY_LIMIT)] });
      const answer = await t.post(big);
      expectError(answer, "BODY_TOO_LARGE");
      expect(answer.json.data.limitBytes).to.equal(TEST_BODY_LIMIT);
      expectSuccess(await t.call("pm_supportEntrypoint"));
    });

    it("an oversize chunked body (no Content-Length) is cut at the limit -> 413", async () => {
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      const chunks = Array.from({ length: Math.ceil((2 * TEST_BODY_LIMIT) / chunk.length) }, () => chunk);
      const result = await rawRequest(t.url, {
        path: `/api/v1/paymaster/local?apiKey=${t.keys.active}`,
        headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
        chunks,
      });
      expect(result).to.have.property("status", 413);
      const json = JSON.parse((result as { text: string }).text);
      expect(json.data.reason).to.equal("BODY_TOO_LARGE");
      expectSuccess(await t.call("pm_supportEntrypoint"));
    });

    it("an endless upload is cut off and the service keeps serving", async () => {
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const result = await rawRequest(t.url, {
        path: `/api/v1/paymaster/local?apiKey=${t.keys.active}`,
        headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
        chunks: Array.from({ length: 640 }, () => chunk), // 40 MiB, far past the drain cap (16 MiB)
      });
      // Either the 413 arrived before the connection was cut, or the cut came first.
      if ("status" in result) expect(result.status).to.equal(413);
      expectSuccess(await t.call("pm_supportEntrypoint"));
    });
  });

  describe("envelope", () => {
    const base = { id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" };
    const cases: [string, Record<string, unknown>, string][] = [
      ["id missing", { jsonrpc: "2.0", method: "pm_supportEntrypoint" }, "id"],
      ["id a string", { ...base, id: "1" }, "id"],
      ["id a fraction", { ...base, id: 1.5 }, "id"],
      ["id null", { ...base, id: null }, "id"],
      ["id unsafe", { ...base, id: 2 ** 60 }, "id"],
      ["jsonrpc missing", { id: 1, method: "pm_supportEntrypoint" }, "jsonrpc"],
      ["jsonrpc 1.0", { ...base, jsonrpc: "1.0" }, "jsonrpc"],
      ["jsonrpc a number", { ...base, jsonrpc: 2 }, "jsonrpc"],
      ["method missing", { id: 1, jsonrpc: "2.0" }, "method"],
      ["method a number", { ...base, method: 5 }, "method"],
      ["method empty", { ...base, method: "" }, "method"],
      ["method an array", { ...base, method: ["pm_supportEntrypoint"] }, "method"],
      ["params an object", { ...base, params: {} }, "params"],
      ["params a string", { ...base, params: "[]" }, "params"],
      ["params null", { ...base, params: null }, "params"],
      ["an extra key", { ...base, extra: true }, "extra"],
      ["an id-like extra key", { ...base, ID: 1 }, "ID"],
    ];
    for (const [name, body, field] of cases) {
      it(`${name} -> INVALID_REQUEST naming ${field}`, async () => {
        const answer = await t.post(envelope(body));
        expectError(answer, "INVALID_REQUEST");
        expect(answer.json.data.field).to.equal(field);
        expect(answer.json.message).to.include(field);
      });
    }

    it("negative and zero ids are integers too", async () => {
      expectSuccess(await t.post(envelope({ ...base, id: 0 })));
      expectSuccess(await t.post(envelope({ ...base, id: -7 })));
    });

    it("a __proto__ key is an unknown field, not a prototype", async () => {
      const answer = await t.post('{"id":1,"jsonrpc":"2.0","method":"pm_supportEntrypoint","__proto__":{"params":5}}');
      expectError(answer, "INVALID_REQUEST");
      expect(answer.json.data.field).to.equal("__proto__");
    });

    it("an unknown method -> METHOD_NOT_FOUND 404", async () => {
      const answer = await t.call("pm_doesNotExist");
      expectError(answer, "METHOD_NOT_FOUND");
      expect(answer.json.data.methods).to.include("pm_supportEntrypoint");
      expectError(await t.call("toString"), "METHOD_NOT_FOUND");
      expectError(await t.call("__proto__"), "METHOD_NOT_FOUND");
    });

    it("does not echo a long method name", async () => {
      const answer = await t.call(`pm_${"x".repeat(120)}`);
      expectError(answer, "METHOD_NOT_FOUND");
      expect(answer.json.message.length).to.be.below(100);
      expectError(await t.call("m".repeat(129)), "INVALID_REQUEST");
    });

    // ERC-7677 support landed (test/erc7677.test.ts covers the methods end to end): both dialects serve them.
    it("pm_getPaymasterStubData / pm_getPaymasterData are served (ERC-7677): a wrong chain id -> CHAIN_ID_MISMATCH 400", async () => {
      for (const method of ["pm_getPaymasterStubData", "pm_getPaymasterData"]) {
        const answer = await t.call(method, [validUserOpV07(), ENTRY_POINT_V07_ADDRESS, "0x1", {}]);
        expectError(answer, "CHAIN_ID_MISMATCH");
      }
    });

    it("unknown routes -> ROUTE_NOT_FOUND 404 in the envelope shape", async () => {
      for (const [method, path] of [
        ["GET", "/"],
        ["GET", "/api/v1/paymaster/local"],
        ["POST", "/api/v2/paymaster/local"],
        ["POST", "/api/v1/paymaster"],
        ["POST", "/api/v1/paymaster/local/extra"],
        ["PUT", "/health"],
      ] as const) {
        const response = await fetch(`${t.url}${path}`, { method, body: method === "GET" ? undefined : "{}" });
        const answer: Answer = { status: response.status, text: await response.text(), json: undefined, headers: response.headers };
        answer.json = JSON.parse(answer.text);
        expectError(answer, "ROUTE_NOT_FOUND");
      }
    });
  });

  describe("network", () => {
    it("an unknown network -> NETWORK_NOT_FOUND 404 listing the configured ones", async () => {
      const answer = await t.call("pm_supportEntrypoint", undefined, { network: "mars" });
      expectError(answer, "NETWORK_NOT_FOUND");
      expect(answer.json.data.supported).to.deep.equal(["local", "base-sepolia"]);
      expect(answer.json.message).to.match(/Unknown network/);
    });

    it("a known network name that is not configured -> NETWORK_NOT_FOUND", async () => {
      const answer = await t.call("pm_supportEntrypoint", undefined, { network: "ethereum-mainnet" });
      expectError(answer, "NETWORK_NOT_FOUND");
      expect(answer.json.message).to.match(/not configured/);
      expect(answer.json.data.supported).to.deep.equal(["local", "base-sepolia"]);
    });

    it("prototype names and odd encodings are not networks", async () => {
      for (const network of ["toString", "__proto__", "constructor", "LOCAL", "local%20", "%E2%9C%93"]) {
        expectError(await t.call("pm_supportEntrypoint", undefined, { network }), "NETWORK_NOT_FOUND");
      }
    });

    it("the network is checked before the method", async () => {
      expectError(await t.call("pm_nope", undefined, { network: "mars" }), "NETWORK_NOT_FOUND");
    });
  });

  describe("API key", () => {
    it("missing -> API_KEY_MISSING 401", async () => {
      expectError(await t.call("pm_supportEntrypoint", undefined, { apiKey: null }), "API_KEY_MISSING");
      expectError(await t.post(envelope({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" }), { query: "?apiKey=" }), "API_KEY_MISSING");
    });

    it("unknown -> API_KEY_INVALID 401", async () => {
      expectError(await t.call("pm_supportEntrypoint", undefined, { apiKey: "pm_not_a_key" }), "API_KEY_INVALID");
      expectError(await t.call("pm_supportEntrypoint", undefined, { apiKey: "k".repeat(5000) }), "API_KEY_INVALID");
    });

    it("given twice -> API_KEY_INVALID 401", async () => {
      const body = envelope({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" });
      const answer = await t.post(body, { query: `?apiKey=${t.keys.active}&apiKey=${t.keys.active}` });
      expectError(answer, "API_KEY_INVALID");
    });

    it("revoked -> API_KEY_REVOKED 401", async () => {
      expectError(await t.call("pm_supportEntrypoint", undefined, { apiKey: t.keys.revoked }), "API_KEY_REVOKED");
    });

    it("a key in another query parameter does not count", async () => {
      const body = envelope({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" });
      expectError(await t.post(body, { query: `?apikey=${t.keys.active}` }), "API_KEY_MISSING");
    });

    it("params are checked before the key (a malformed request gets the same answer either way)", async () => {
      expectError(await t.call("pm_supportEntrypoint", [1], { apiKey: null }), "INVALID_PARAMS");
    });
  });

  describe("params", () => {
    const sponsor = (params: unknown, options?: { apiKey?: string | null }) => t.call(ECHO_SPONSOR_PARAMS, params, options);

    it("extra params on a method without params -> INVALID_PARAMS", async () => {
      const answer = await t.call("pm_supportEntrypoint", [1]);
      expectError(answer, "INVALID_PARAMS");
      expect(answer.json.data.issues).to.be.an("array").with.length(1);
      expect(answer.json.data.issues[0]).to.have.keys(["path", "message"]);
    });

    it("a valid v0.6 request reaches the handler with parsed values", async () => {
      const answer = await sponsor([validUserOpV06(), {}]);
      expectSuccess(answer);
      expect(answer.json.data.version).to.equal("v0.6");
      expect(answer.json.data.userOp.nonce).to.equal("0");
      expect(answer.json.data.userOp.callGasLimit).to.equal("21000");
    });

    it("a valid v0.7 request with a 2-D nonce reaches the handler", async () => {
      const op = { ...validUserOpV07(), nonce: `0x${"ab".repeat(24)}${"0".repeat(15)}1` };
      const answer = await sponsor([op, { version: "v0.7", strategy_code: "", token: "USDC" }]);
      expectSuccess(answer);
      expect(answer.json.data).to.include({ version: "v0.7", token: "USDC" });
      expect(answer.json.data).to.not.have.property("strategyCode");
      expect(answer.json.data.userOp.nonce).to.equal(BigInt(op.nonce).toString());
      expect(answer.json.data.userOp.factory).to.equal(getAddress(validUserOpV07()["factory"]!));
    });

    it("params missing -> INVALID_PARAMS", async () => {
      const answer = await sponsor(undefined);
      expectError(answer, "INVALID_PARAMS");
      expect(answer.json.data.issues[0].path).to.deep.equal([]);
    });

    it("wrong param count -> INVALID_PARAMS", async () => {
      expectError(await sponsor([]), "INVALID_PARAMS");
      expectError(await sponsor([validUserOpV06()]), "INVALID_PARAMS");
      expectError(await sponsor([validUserOpV06(), {}, {}]), "INVALID_PARAMS");
    });

    it("wrong types -> INVALID_PARAMS with the path", async () => {
      const cases: [unknown[], (string | number)[]][] = [
        [[{ ...validUserOpV06(), nonce: 5 }, {}], [0, "nonce"]],
        [[{ ...validUserOpV06(), callData: null }, {}], [0, "callData"]],
        [[{ ...validUserOpV06(), sender: ["0x"] }, {}], [0, "sender"]],
        [["0xdeadbeef", {}], [0]],
        [[validUserOpV06(), []], [1]],
        [[validUserOpV06(), null], [1]],
        [[validUserOpV06(), { token: 5 }], [1, "token"]],
        [[validUserOpV06(), { version: 7 }], [1, "version"]],
      ];
      for (const [params, path] of cases) {
        const answer = await sponsor(params);
        expectError(answer, "INVALID_PARAMS");
        expect(answer.json.data.issues.map((issue: { path: unknown }) => issue.path), answer.text).to.deep.include(path);
      }
    });

    it("a missing required field -> INVALID_PARAMS naming it", async () => {
      const { signature: _signature, ...op } = validUserOpV06();
      const answer = await sponsor([op, {}]);
      expectError(answer, "INVALID_PARAMS");
      expect(answer.json.data.issues[0].path).to.deep.equal([0, "signature"]);
      expect(answer.json.data.issues[0].message).to.match(/required/);
    });

    it("bad hex -> INVALID_PARAMS", async () => {
      const cases: [string, string, RegExp][] = [
        ["callData", "0xabc", /odd number/],
        ["callData", "0xzz", /non-hex/],
        ["callData", "abcd", /0x prefix/],
        ["signature", "0X" + "ab".repeat(65), /lowercase 0x/],
        ["nonce", "0x", /no hex digits/],
        ["nonce", "12", /0x prefix/],
        ["nonce", "0xg1", /non-hex/],
        ["callGasLimit", "0x-1", /non-hex/],
        ["sender", "0x1234", /40 hex digits/],
        ["sender", "0x9406cc6185a346906296840746125a0E44976454", /checksum/],
      ];
      for (const [field, value, message] of cases) {
        const answer = await sponsor([{ ...validUserOpV06(), [field]: value }, {}]);
        expectError(answer, "INVALID_PARAMS");
        expect(answer.json.data.issues[0].path).to.deep.equal([0, field]);
        expect(answer.json.data.issues[0].message).to.match(message);
      }
    });

    it("overlong fields and out-of-range quantities -> INVALID_PARAMS, without echoing the input", async () => {
      const cases: [string, string][] = [
        ["callData", `0x${"ab".repeat(48 * 1024 + 1)}`],
        ["initCode", `0x${"ab".repeat(16 * 1024 + 1)}`],
        ["signature", `0x${"ab".repeat(2 * 1024 + 1)}`],
        ["nonce", `0x1${"0".repeat(64)}`],
        ["callGasLimit", `0x1${"0".repeat(16)}`],
        ["maxFeePerGas", `0x1${"0".repeat(32)}`],
      ];
      for (const [field, value] of cases) {
        const answer = await sponsor([{ ...validUserOpV06(), [field]: value }, {}]);
        expectError(answer, "INVALID_PARAMS");
        expect(answer.json.data.issues[0].path).to.deep.equal([0, field]);
        expect(answer.text.length, field).to.be.below(1000);
      }
      // The largest accepted values pass.
      expectSuccess(await sponsor([{ ...validUserOpV06(), callGasLimit: `0x${"f".repeat(16)}`, maxFeePerGas: `0x${"f".repeat(32)}`, nonce: `0x${"f".repeat(64)}` }, {}]));
    });

    it("unknown userOp fields -> INVALID_PARAMS naming them", async () => {
      const answer = await sponsor([{ ...validUserOpV06(), foo: "0x", bar: "0x" }, {}]);
      expectError(answer, "INVALID_PARAMS");
      expect(answer.json.message).to.include('"foo"').and.include('"bar"');
      const hint = await sponsor([{ ...validUserOpV07() }, {}]);
      expectError(hint, "INVALID_PARAMS");
      expect(hint.json.message).to.include("factory").and.include("v0.7");
    });

    it("a huge unknown key is not echoed in full", async () => {
      const answer = await sponsor([{ ...validUserOpV06(), ["k".repeat(50_000)]: "0x" }, {}]);
      expectError(answer, "INVALID_PARAMS");
      expect(answer.text.length).to.be.below(2000);
    });

    it("unknown extra fields -> INVALID_PARAMS", async () => {
      const answer = await sponsor([validUserOpV06(), { strategyCode: "x" }]);
      expectError(answer, "INVALID_PARAMS");
      expect(answer.json.data.issues[0].path).to.deep.equal([1]);
      expect(answer.json.message).to.include("strategyCode");
    });

    it("strategy_code and token together -> MODE_CONFLICT 400", async () => {
      const answer = await sponsor([validUserOpV06(), { strategy_code: "promo", token: "USDC" }]);
      expectError(answer, "MODE_CONFLICT");
      expect(answer.json.message).to.match(/strategy_code and token/);
      // Empty strings count as absent.
      expectSuccess(await sponsor([validUserOpV06(), { strategy_code: "promo", token: "" }]));
    });

    it("an unsupported version -> UNSUPPORTED_ENTRYPOINT_VERSION 400", async () => {
      for (const version of ["v0.9", "0.7", "V0.7", "", "v0.6 "]) {
        const answer = await sponsor([validUserOpV06(), { version }]);
        expectError(answer, "UNSUPPORTED_ENTRYPOINT_VERSION");
        expect(answer.json.data.supported).to.deep.equal(["v0.6", "v0.7", "v0.8"]);
      }
    });

    it("the version picks the userOp schema", async () => {
      const asV07 = await sponsor([validUserOpV06(), { version: "v0.7" }]);
      expectSuccess(asV07);
      expect(asV07.json.data.version).to.equal("v0.7");
      expect(asV07.json.data.userOp).to.not.have.property("factory");
      expectError(await sponsor([{ ...validUserOpV06(), paymasterPostOpGasLimit: "0x1" }, {}]), "INVALID_PARAMS");
      expectSuccess(await sponsor([{ ...validUserOpV06(), paymasterPostOpGasLimit: "0x1" }, { version: "v0.7" }]));
    });

    it("initCode together with factory (v0.7) -> INVALID_PARAMS", async () => {
      const answer = await sponsor([{ ...validUserOpV07(), initCode: "0x" }, { version: "v0.7" }]);
      expectError(answer, "INVALID_PARAMS");
      expect(answer.json.data.issues[0].path).to.deep.equal([0, "initCode"]);
    });
  });

  describe("internal errors", () => {
    it("a handler's own error shows only a generic message; the real one is logged with the request id", async () => {
      const answer = await t.call("test_throws");
      expectError(answer, "INTERNAL_ERROR");
      expect(answer.json.message).to.not.include("hunter2");
      expect(answer.text).to.not.include("hunter2").and.not.include("/srv/").and.not.match(/\bat \S+:\d+/);
      const requestId = answer.headers.get("x-request-id");
      expect(answer.json.data).to.deep.equal({ reason: "INTERNAL_ERROR", requestId });
      const logged = logLines.map((line) => JSON.parse(line)).find((line) => line.msg === "internal error" && line.requestId === requestId);
      expect(logged, "the error is logged with its request id").to.not.equal(undefined);
      expect(logged.err.message).to.include("hunter2");
    });

    it("a handler's RpcError is shown as is, with its details after the real reason", async () => {
      const answer = await t.call("test_rpc_error");
      expectError(answer, "STRATEGY_NOT_FOUND");
      expect(answer.json.message).to.equal('Unknown strategy "promo"');
      expect(answer.json.data).to.deep.equal({ reason: "STRATEGY_NOT_FOUND", strategyCode: "promo" });
    });

    it("a result or error details that cannot be serialized -> generic INTERNAL_ERROR", async () => {
      for (const method of ["test_cyclic_result", "test_cyclic_details"]) {
        const answer = await t.call(method);
        expectError(answer, "INTERNAL_ERROR");
        expect(answer.text).to.not.match(/circular|cyclic/i);
      }
      expectSuccess(await t.call("pm_supportEntrypoint"));
    });

    it("access logs never carry the apiKey", async () => {
      await t.call("pm_supportEntrypoint");
      expect(logLines.length).to.be.greaterThan(0);
      for (const line of logLines) expect(line).to.not.include(t.keys.active);
    });
  });
});

describe("docs/errors.md", () => {
  it("lists every reason of REASONS with its HTTP status and JSON-RPC code, and nothing else", () => {
    const doc = readFileSync(new URL("../docs/errors.md", import.meta.url), "utf8");
    const rows = new Map<string, { status: number; code: number }>();
    for (const line of doc.split("\n")) {
      const match = /^\|\s*([A-Z][A-Z0-9_]+)\s*\|\s*(\d{3})\s*\|\s*(-?\d+)\s*\|\s*(.+?)\s*\|\s*$/.exec(line);
      if (match) rows.set(match[1]!, { status: Number(match[2]), code: Number(match[3]) });
    }
    for (const [reason, spec] of Object.entries(REASONS)) {
      expect(rows.get(reason), `${reason} is in the table`).to.deep.equal({ status: spec.status, code: spec.jsonRpcCode });
    }
    expect([...rows.keys()].sort()).to.deep.equal(Object.keys(REASONS).sort());
  });

  it("RpcError carries the catalogue's status", () => {
    expect(new RpcError("MODE_CONFLICT").status).to.equal(400);
  });
});
