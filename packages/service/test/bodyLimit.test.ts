// A body over the limit is answered 413 BODY_TOO_LARGE to every client, including one still writing when the
// answer comes: Node's fetch (undici), run in a process of its own so that it writes while the service answers,
// used to see about one connection in three reset instead of answered when the service cut the upload short.
// The discarding that makes this work is bounded: an upload far past the drain cap is cut.
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { expect } from "chai";
import { defaultDrainLimit } from "../src/rpc/body.ts";
import { startTestService, TEST_BODY_LIMIT, type TestService } from "./helpers/rpcService.ts";

/** Posts `count` bodies of `bytes` bytes with fetch, one after another, from a child process; answers what each got. */
async function fetchLoopInChild(url: string, bytes: number, count: number): Promise<string[]> {
  const script = `
    const body = Buffer.alloc(${bytes}, 0x20);
    const outcomes = [];
    for (let i = 0; i < ${count}; i++) {
      try {
        const response = await fetch(process.argv[1], { method: "POST", headers: { "content-type": "application/json" }, body, signal: AbortSignal.timeout(10000) });
        const text = await response.text();
        outcomes.push(response.status + " " + (text.includes('"BODY_TOO_LARGE"') ? "BODY_TOO_LARGE" : text.slice(0, 80)));
      } catch (error) {
        outcomes.push("error " + (error.cause?.code ?? error.cause?.message ?? error.message));
      }
    }
    process.stdout.write(JSON.stringify(outcomes));
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script, url], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  await new Promise((resolve) => child.on("exit", resolve));
  clearTimeout(killer);
  return JSON.parse(out) as string[];
}

describe("a body over the limit: every client reads the 413", function () {
  this.timeout(90_000);
  let t: TestService;
  before(async () => {
    t = await startTestService();
  });
  after(async () => {
    await t?.close();
  });

  for (const [dialect, path] of [["v1", "api/v1/paymaster"], ["standard", "rpc/v1"]] as const) {
    it(`${dialect}: 30 bodies of 5 MB posted with Node's fetch all get 413 BODY_TOO_LARGE, none a reset`, async () => {
      const outcomes = await fetchLoopInChild(`${t.url}/${path}/local?apiKey=${t.keys.active}`, 5 * 1024 * 1024, 30);
      expect(outcomes).to.have.length(30);
      expect(outcomes.filter((o) => o !== "413 BODY_TOO_LARGE"), outcomes.join(", ")).to.deep.equal([]);
      expect((await t.call("pm_supportEntrypoint")).status, "still serving").to.equal(200);
    });
  }

  it("discarding is bounded: an upload far past the drain cap is answered 413, then cut", async () => {
    const cap = defaultDrainLimit(TEST_BODY_LIMIT);
    const declared = 4 * cap;
    const socket = connect({ host: "127.0.0.1", port: Number(new URL(t.url).port) });
    let answer = "";
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("utf8")));
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.on("error", () => {});
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(`POST /rpc/v1/local?apiKey=${t.keys.active} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let written = 0;
    let open = true;
    void closed.then(() => (open = false));
    const started = performance.now();
    while (open && written < declared && performance.now() - started < 20_000) {
      written += chunk.length;
      if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once("drain", resolve)), closed]);
    }
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 20_000))]);
    expect(open, "the service closed the connection").to.equal(false);
    expect(written, "cut before the whole declared upload").to.be.below(declared);
    expect(answer).to.match(/^HTTP\/1\.1 413 /);
    expect(answer).to.include('"BODY_TOO_LARGE"');
    expect((await t.call("pm_supportEntrypoint")).status, "still serving").to.equal(200);
  });
});
