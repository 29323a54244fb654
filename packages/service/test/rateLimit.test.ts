// Per-API-key rate limits: the token bucket, and 429 RATE_LIMITED over HTTP while the service keeps serving
// other keys.
import { expect } from "chai";
import { createRateLimiter } from "../src/rpc/rateLimit.ts";
import { startTestService, type TestService } from "./helpers/rpcService.ts";

describe("rate limiter (token bucket per key)", () => {
  it("allows a burst, then refills at perSecond", () => {
    let now = 0;
    const limiter = createRateLimiter({ perSecond: 2, burst: 3 }, () => now);
    expect([limiter.take("a"), limiter.take("a"), limiter.take("a")]).to.deep.equal([0, 0, 0]);
    expect(limiter.take("a")).to.equal(1);
    expect(limiter.take("b"), "another key has its own bucket").to.equal(0);
    now += 500; // half a second: one token back
    expect(limiter.take("a")).to.equal(0);
    expect(limiter.take("a")).to.be.greaterThan(0);
    now += 10_000; // never more than the burst
    expect([0, 1, 2, 3].map(() => limiter.take("a"))).to.deep.equal([0, 0, 0, 1]);
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
