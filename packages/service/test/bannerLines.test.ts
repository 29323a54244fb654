// Every line the embedded default's banner prints works as printed: on a running embedded stack, each curl line is
// parsed exactly as the shell would read it (a single-quoted URL and a single-quoted JSON body) and sent to
// 127.0.0.1, and each answers a success — a v1 envelope with code 200, or a JSON-RPC result — never an error; each
// printed http URL (the metrics' /metrics, the console, the application page) answers 200 to a GET.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { banner } from "../src/local/banner.ts";
import { startEmbedded, type Embedded } from "../src/local/embedded.ts";

/** The banner's curl shape, nothing looser: what `sh` would send. */
const CURL = /^curl -s -X POST '([^']+)' -H 'content-type: application\/json' -d '([^']+)'$/;

describe("the embedded default's banner: every line works as printed", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let printed = "";

  before(async () => {
    // What `paymaster start` starts (src/lifecycle/serve.ts), on free ports and without the bundler (the curl lines need none).
    embedded = await startEmbedded({
      admin: { host: "127.0.0.1", port: 0, tokens: [{ name: "local", token: "banner-lines-admin-token-0123456789" }] },
      chainPort: 0,
      servicePort: 0,
      metricsPort: 0,
      dataDir: path.join(mkdtempSync(path.join(tmpdir(), "paymaster-banner-")), "data"),
      logLevel: "silent",
    });
    printed = await banner(embedded, "banner-lines-admin-token-0123456789");
  });
  after(async () => {
    await embedded?.close();
  });

  it("each curl line, sent as printed, answers a success", async () => {
    const lines = printed.split("\n").filter((line) => line.startsWith("curl "));
    expect(lines.length, printed).to.be.at.least(8);
    const failures: string[] = [];
    for (const line of lines) {
      const [, url, body] = CURL.exec(line) ?? [];
      expect(url, `a curl line the shell would not send as meant: ${line}`).to.be.a("string");
      expect(new URL(url!).hostname).to.equal("127.0.0.1");
      const response = await fetch(url!, { method: "POST", headers: { "content-type": "application/json" }, body: body!, signal: AbortSignal.timeout(20_000) });
      const answer = (await response.json()) as { code?: number; error?: unknown; result?: unknown; data?: unknown };
      const method = (JSON.parse(body!) as { method: string }).method;
      const ok = response.status === 200 && answer.error === undefined && (answer.code === undefined ? answer.result !== undefined : answer.code === 200);
      if (!ok) failures.push(`${method}: HTTP ${response.status} ${JSON.stringify(answer)}`);
    }
    expect(failures, "every printed line answers a success").to.deep.equal([]);
  });

  it("each printed http URL to GET (metrics, console, the application page) answers 200", async () => {
    const urls = [...printed.matchAll(/^ {2}(?:Metrics|Console|Apply for a key) +(http:\/\/\S+)/gm)].map((m) => m[1]!);
    expect(urls, printed).to.have.length(3);
    for (const url of urls) {
      const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      expect(response.status, url).to.equal(200);
    }
  });
});
