// Second review, finding 5: the bundler passthrough returned the bundler's error message and data verbatim, so a
// bundler's internal upstream URL (with its key) and its stack reached the client. Here a real HTTP bundler stub
// on 127.0.0.1 answers eth_sendUserOperation with such errors, through the embedded stack's standard endpoint:
// the client gets the bundler's code, the EntryPoint's reason and ERC-7769's data fields, and nothing else; the
// rest is in the service's log, its URLs reduced to scheme, host and port.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { expect } from "chai";
import type { Logger } from "pino";
import { clientData, clientMessage } from "../src/bundler/rejection.ts";
import { createLogger } from "../src/log.ts";
import { startTestStack, type Embedded } from "./helpers/stack.ts";

const SECRET = "sk_live_9f8e7d6c5b4a39281706f5e4d3c2b1a0";
const PAYMASTER = "0x9fa47A8D5435A5466cb484BBA6da42D451158B88";
const STACK = [
  `Error: request to https://internal-rpc.corp.example:8545/v3/${SECRET}?apikey=${SECRET} failed: AA21 didn't pay prefund`,
  "    at ClientRequest.<anonymous> (/srv/bundler/node_modules/node-fetch/lib/index.js:1491:11)",
  "    at async Executor.send (/srv/bundler/dist/executor.js:210:17)",
].join("\n");

/** A bundler that answers every call but the probe with `answer`'s error. */
async function startStubBundler(): Promise<{ url: string; answer: { code: number; message: string; data?: unknown }; close(): Promise<void> }> {
  const stub = { answer: { code: -32500, message: "", data: undefined as unknown } };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      const request = JSON.parse(body) as { id: number; method: string };
      const reply = request.method === "eth_chainId" ? { result: "0x7a69" } : { error: stub.answer };
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ jsonrpc: "2.0", id: request.id, ...reply }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(stub, {
    url: `http://127.0.0.1:${port}/rpc/${SECRET}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

describe("bundler errors reach the client sanitized (second review, finding 5)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let stub: Awaited<ReturnType<typeof startStubBundler>>;
  const logLines: string[] = [];

  before(async () => {
    stub = await startStubBundler();
    embedded = await startTestStack({ bundler: { url: stub.url, timeoutMs: 2_000 } });
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (logLines.push(chunk.toString("utf8")), done()) });
    (embedded.running.service as { logger: Logger }).logger = createLogger("info", sink);
  });
  after(async () => {
    await embedded?.close();
    await stub?.close();
  });

  const send = async () => {
    const response = await fetch(embedded.erc7677Endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_sendUserOperation", params: [{ sender: PAYMASTER }, embedded.stack.manifest.entryPoints["v0.7"].entryPoint] }),
    });
    return { status: response.status, text: await response.text() };
  };

  it("the stub's internal URL with its key, its stack and unknown data never reach the client; the code, the AA reason and ERC-7769 data do", async () => {
    stub.answer = {
      code: -32501,
      message: STACK,
      data: { paymaster: PAYMASTER, aggregator: "0x0000000000000000000000000000000000000000", upstream: `http://10.0.0.3:8545/?key=${SECRET}`, stack: STACK, token: SECRET },
    };
    const answer = await send();
    for (const leaked of [SECRET, "internal-rpc", "10.0.0.3", "/srv/bundler", "node-fetch", "executor.js"]) expect(answer.text, leaked).to.not.include(leaked);
    const { error } = JSON.parse(answer.text) as { error: { code: number; message: string; data: Record<string, unknown> } };
    expect(error.code, "the bundler's ERC-7769 code").to.equal(-32501);
    expect(error.message).to.equal("Error: request to [url] failed: AA21 didn't pay prefund");
    expect(error.data).to.deep.include({ reason: "BUNDLER_REJECTED", bundlerCode: -32501, bundlerData: { paymaster: PAYMASTER, aggregator: "0x0000000000000000000000000000000000000000" } });

    // The operator still has the whole story, its URLs redacted.
    const line = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["component"] === "bundler" && l["bundlerCode"] === -32501);
    expect(line, logLines.join("")).to.not.equal(undefined);
    expect(String(line!["bundlerMessage"])).to.include("https://internal-rpc.corp.example:8545/…").and.include("/srv/bundler/dist/executor.js:210:17");
    expect(String(line!["bundlerData"])).to.include("http://10.0.0.3:8545");
    expect(logLines.join("")).to.not.include(SECRET);
  });

  it("short secrets, URLs without a scheme and user:password@host reach neither the client nor the log (issue 46, item 4)", async () => {
    const short = ["k3yShort", "hunter2", "s3cr3t"];
    stub.answer = {
      code: -32500,
      message: `AA21 didn't pay prefund: upstream rpc.corp.example/v3/${short[0]} and admin:${short[1]}@db.corp.example:5432/app, apikey=${short[2]}`,
      data: { paymaster: PAYMASTER, upstream: `10.0.0.3:8545/?key=${short[0]}`, auth: `relay:${short[1]}@relay.corp.example` },
    };
    const mark = logLines.length;
    const answer = await send();
    for (const leaked of [...short, "rpc.corp.example", "db.corp.example", "10.0.0.3"]) expect(answer.text, leaked).to.not.include(leaked);
    expect(JSON.parse(answer.text).error.message).to.equal("AA21 didn't pay prefund: upstream [url] and [redacted]@[url], apikey=[redacted]");
    const logged = logLines.slice(mark).join("");
    expect(logged).to.include("rpc.corp.example/…").and.include("db.corp.example:5432/…").and.include("10.0.0.3:8545/…");
    for (const secret of short) expect(logged, secret).to.not.include(secret);
  });

  it("a plain ERC-7769 answer passes whole: revert data, the time range, a reason with hex", async () => {
    stub.answer = { code: -32503, message: "AA32 paymaster expired or not due", data: { paymaster: PAYMASTER, validUntil: 1_700_000_000, validAfter: "0x0" } };
    const timeRange = JSON.parse((await send()).text) as { error: { code: number; message: string; data: Record<string, unknown> } };
    expect(timeRange.error).to.deep.include({ code: -32503, message: "AA32 paymaster expired or not due" });
    expect(timeRange.error.data["bundlerData"]).to.deep.equal({ paymaster: PAYMASTER, validUntil: 1_700_000_000, validAfter: "0x0" });
    const revert = `0x08c379a0${"00".repeat(31)}20${"00".repeat(31)}05${"6e6f706521".padEnd(64, "0")}`;
    stub.answer = { code: -32521, message: `UserOperation reverted during execution phase: ${revert}`, data: revert };
    const reverted = JSON.parse((await send()).text) as { error: { code: number; message: string; data: Record<string, unknown> } };
    expect(reverted.error.message).to.equal(`UserOperation reverted during execution phase: ${revert}`);
    expect(reverted.error.data["bundlerData"]).to.equal(revert);
  });
});

describe("bundler error sanitizing (pure)", () => {
  it("drops stack frames, URLs, paths, tokens and control characters; keeps AA reasons, hex and plain text; bounds the length", () => {
    expect(clientMessage(STACK)).to.equal("Error: request to [url] failed: AA21 didn't pay prefund");
    expect(clientMessage("invalid key Bearer abcdefghijklmnopqrstuvwxyz123456 for C:\\bundler\\keys\\prod.json")).to.equal("invalid key Bearer [redacted] for [path]");
    expect(clientMessage("AA23 reverted: 0xdeadbeef (sender 0x9fa47A8D5435A5466cb484BBA6da42D451158B88)")).to.equal("AA23 reverted: 0xdeadbeef (sender 0x9fa47A8D5435A5466cb484BBA6da42D451158B88)");
    expect(clientMessage("bad\u001b[31m fee\u0000 and/or gas")).to.equal("bad [31m fee and/or gas");
    expect(clientMessage("")).to.equal("The bundler refused the call");
    expect(clientMessage("too slow ".repeat(100))).to.have.length(300);
    expect(clientData({ paymaster: PAYMASTER, minimumStake: "1000000000000000000", nested: { a: 1 }, factory: "http://x" })).to.deep.equal({ paymaster: PAYMASTER, minimumStake: "1000000000000000000" });
    expect(clientData("not hex")).to.equal(undefined);
    expect(clientData([PAYMASTER])).to.equal(undefined);
  });
});
