// OpenTelemetry traces end to end: the service on the embedded local chain (real EVM, real SQLite, real HTTP)
// exporting over OTLP/HTTP to a real receiver on 127.0.0.1 in this process. Sponsorships in each mode (Sponsor,
// ERC-20, User Sponsor), a refusal and a batch; then the spans' tree (call → pipeline steps → chain calls and
// store transactions), names, attributes, the client's traceparent as a link (never the parent, nor its
// tracestate: issue 46, item 1), the trace id in the refusal's body, settlement and retention passes and webhook
// deliveries as traces of their own, and no secret in any attribute. Then, at a low sampling ratio: calls a client
// flags sampled are sampled at our ratio; from a trusted proxy (traceContext "trusted-proxies") or with
// traceContext "parent" the client's context is the parent and decides.
import { expect } from "chai";
import { approveCallData, executeCallData } from "../src/local/embedded.ts";
import { fundTank, mint, newWallet, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./helpers/otlpReceiver.ts";
import { startRetention } from "../src/retention.ts";
import { createLogger } from "../src/log.ts";
import { createEventWebhook } from "../src/webhooks/admin.ts";
import { destinationPolicy } from "../src/webhooks/destination.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./helpers/webhookReceiver.ts";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { createChainRpc } from "../src/chain/rpc.ts";
import { rootSpan } from "../src/telemetry/trace.ts";

/** A client's own trace and span ids (what a wallet or bundler sends in traceparent). */
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
/** A client's tracestate of the review's size (400 characters): never exported. */
const CLIENT_STATE = `wallet=${"x".repeat(393)}`;

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

describe("OpenTelemetry traces (OTLP/HTTP to a receiver on 127.0.0.1)", function () {
  let receiver: OtlpReceiver;
  let embedded: Embedded;
  let hook: WebhookReceiver;
  let hookSecret: string;
  /** A receiver's path often carries its own token (a chat hook's): never an attribute. */
  const HOOK_PATH_TOKEN = "T0k3nInThePath";
  /** The answers' paymasterAndData: their signatures must never be an attribute. */
  const signedData: string[] = [];

  before(async () => {
    receiver = await startOtlpReceiver();
    embedded = await startTestStack({
      tracingEnv: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: "paymaster-under-test",
        OTEL_TRACES_SAMPLER: "always_on",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      },
      webhookDestinations: ["127.0.0.1/32"],
    });
    // Every sponsorship of the demo project is a webhook event: its deliveries are traces of their own.
    hook = await startWebhookReceiver("ok", `/hooks/${HOOK_PATH_TOKEN}`);
    const created = await createEventWebhook(embedded.running.service.store, { projectId: embedded.projectId, url: `${hook.url}`, events: ["sponsorship.signed"] }, destinationPolicy({ allowed: ["127.0.0.1/32"] }));
    hookSecret = created.secret;
  });
  after(async () => {
    await embedded?.close();
    await hook?.close();
    await receiver?.close();
  });

  const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
  const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) => spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);
  /** The root span of the call whose trace is `traceId` (its server span). */
  const callSpan = (traceId: string) => receiver.spans.find((s) => s.traceId === traceId && s.kind === 2);

  it("a sponsorship (Sponsor mode, v1 dialect) is a trace of ours linked to the client's: call → steps → chain calls and store transactions", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const { status, body } = await post(
      embedded.endpoint,
      { id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wire, { strategy_code: embedded.strategyCode, version: "v0.7" }] },
      { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: CLIENT_STATE },
    );
    expect(status, JSON.stringify(body)).to.equal(200);
    signedData.push(body.data.userOpResponse.paymasterAndData);

    const linked = (s: ReceivedSpan) => s.kind === 2 && s.links.some((l) => l.traceId === CLIENT_TRACE);
    await receiver.waitFor((spans) => spans.some(linked) && spans.some((s) => s.traceId === spans.find(linked)!.traceId && s.name === "store reserveSponsorship"));
    const root = receiver.spans.find(linked)!;
    expect(root.name).to.equal("pm_sponsorUserOperation");
    expect(root.traceId, "a trace of ours: the client does not pick the trace id").to.not.equal(CLIENT_TRACE);
    expect(root.parentSpanId, "a root: the client's span is no parent").to.equal("");
    expect(root.links, "the client's span context as a link").to.deep.equal([{ traceId: CLIENT_TRACE, spanId: CLIENT_SPAN, traceState: "" }]);
    expect(receiver.spans.filter((s) => s.traceId === CLIENT_TRACE), "nothing in the client's trace").to.deep.equal([]);
    expect(receiver.spans.filter((s) => s.traceState !== ""), "the client's tracestate is never exported").to.deep.equal([]);
    expect(root.resource["service.name"]).to.equal("paymaster-under-test");
    expect(root.attributes).to.include({
      "rpc.system": "jsonrpc",
      "rpc.method": "pm_sponsorUserOperation",
      "paymaster.network": "local",
      "paymaster.entry_point_version": "v0.7",
      "paymaster.mode": "sponsor",
      "paymaster.outcome": "ok",
    });
    expect(root.attributes).not.to.have.property("paymaster.refusal_reason");

    const trace = receiver.spans.filter((s) => s.traceId === root.traceId);
    const steps = childrenOf(trace, root).map((s) => s.name);
    for (const step of ["step.resolveTarget", "step.detectDelegate", "step.tokenPrice", "step.estimateGas", "step.maxCost", "step.requireApproval", "step.signLanding", "step.commitSponsorship"]) {
      expect(steps, step).to.include(step);
    }
    // The pure-CPU steps (policy rules, caps, the client's gas) get no span: they cost less than one.
    expect(steps).not.to.include("step.cheapPolicy");
    // The estimate's simulation is a chain call under its step, with its upstream (redacted) and attempts.
    const estimate = byName(trace, "step.estimateGas")[0]!;
    const estimateCalls = childrenOf(trace, estimate);
    expect(estimateCalls.map((s) => s.name)).to.include("chain eth_call");
    const simulation = estimateCalls.find((s) => s.name === "chain eth_call")!;
    expect(simulation.kind).to.equal(3);
    expect(simulation.attributes).to.include({ "rpc.method": "eth_call", "paymaster.network": "local", "paymaster.rpc.attempts": 1, "paymaster.rpc.outcome": "ok" });
    expect(simulation.attributes["paymaster.upstream"]).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    // Commit: the estimate's one simulation decided (docs/pipeline.md, "One round trip"), so the reservation
    // alone, the store's transaction under it; no final simulation.
    expect(estimateCalls.filter((s) => s.name === "chain eth_call")).to.have.length(1);
    const commit = byName(trace, "step.commitSponsorship")[0]!;
    expect(childrenOf(trace, commit).map((s) => s.name)).to.deep.equal(["step.reserve"]);
    const reserve = byName(trace, "step.reserve")[0]!;
    const reservation = childrenOf(trace, reserve).find((s) => s.name === "store reserveSponsorship")!;
    expect(reservation.attributes).to.include({ "db.system.name": "sqlite", "db.operation.name": "reserveSponsorship" });
    // A call to the database is a client span (OpenTelemetry's database conventions), as operations.md says.
    for (const store of trace.filter((s) => s.name.startsWith("store "))) expect(store.kind, store.name).to.equal(3);
    // One chain call: the signed op is not simulated again (docs/pipeline.md, "One round trip").
    expect(byName(trace, "step.checkLanding")).to.have.length(0);
  });

  it("ERC-20 and User Sponsor modes: the root span names the mode; the token reads are in the estimate's one chain call", async () => {
    const erc20Wallet = await newWallet(embedded, "v0.7");
    await mint(embedded, "USDC", erc20Wallet.sender, 1_000n * 10n ** 6n);
    const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
    const paymaster = embedded.stack.manifest.entryPoints["v0.7"].erc20Paymaster;
    const erc20 = await post(embedded.erc7677Endpoint, {
      id: 1,
      jsonrpc: "2.0",
      method: "pm_sponsorUserOperation",
      params: [wireOp(erc20Wallet, approveCallData(usdc.address, paymaster)), { token: "USDC", version: "v0.7" }],
    });
    expect(erc20.body.result, JSON.stringify(erc20.body)).to.be.an("object");
    signedData.push(erc20.body.result.userOpResponse.paymasterAndData);

    const tankWallet = await newWallet(embedded, "v0.7");
    await fundTank(embedded.running.service.store, tankWallet.sender, 10n ** 17n, embedded.projectId);
    const user = await post(embedded.erc7677Endpoint, { id: 2, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wireOp(tankWallet, executeCallData(tankWallet.owner.address)), { version: "v0.7" }] });
    expect(user.body.result, JSON.stringify(user.body)).to.be.an("object");
    signedData.push(user.body.result.userOpResponse.paymasterAndData);

    const modeRoot = (mode: string) => receiver.spans.find((s) => s.kind === 2 && s.attributes["paymaster.mode"] === mode && s.attributes["paymaster.outcome"] === "ok");
    await receiver.waitFor((spans) => modeRoot("erc20") !== undefined && modeRoot("user") !== undefined && spans.filter((s) => s.name === "store reserveSponsorship").length >= 3);
    const erc20Root = modeRoot("erc20")!;
    expect(erc20Root.parentSpanId, "no traceparent: a trace of its own").to.equal("");
    const trace = receiver.spans.filter((s) => s.traceId === erc20Root.traceId);
    const tokenPrice = trace.find((s) => s.name === "step.tokenPrice")!;
    expect(childrenOf(trace, tokenPrice).filter((s) => s.name === "chain eth_call"), "no read of its own: the probe reads balance and allowance").to.have.length(0);
    const estimate = trace.find((s) => s.name === "step.estimateGas")!;
    expect(childrenOf(trace, estimate).filter((s) => s.name === "chain eth_call")).to.have.length(1);
    expect(trace.map((s) => s.name)).to.include("step.chargeToken");
    const userRoot = modeRoot("user")!;
    expect(receiver.spans.filter((s) => s.traceId === userRoot.traceId).map((s) => s.name)).to.include("store reserveSponsorship");
  });

  it("a refusal: its trace id is in the error body beside the reason, and its span says why; a batch is one trace per call", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const refused = await post(embedded.erc7677Endpoint, { id: 7, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wire, { strategy_code: "NO_SUCH_CODE", version: "v0.7" }] });
    const data = refused.body.error.data;
    expect(data.reason).to.be.a("string");
    expect(data.traceId).to.match(/^[0-9a-f]{32}$/);

    // The v1 dialect too: the refusal's envelope carries it.
    const v1 = await post(embedded.endpoint, { id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wire, { strategy_code: "NO_SUCH_CODE", version: "v0.7" }] }, { traceparent: `00-${"ab".repeat(16)}-${"cd".repeat(8)}-01` });
    expect(v1.body.data.reason).to.equal(data.reason);
    expect(v1.body.data.traceId, "our trace, not the client's").to.match(/^[0-9a-f]{32}$/).and.not.equal("ab".repeat(16));

    const batch = await post(embedded.erc7677Endpoint, [
      { id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint", params: [] },
      { id: 2, jsonrpc: "2.0", method: "no_suchMethod" },
    ]);
    expect(batch.body).to.have.length(2);
    const unknownTrace = batch.body[1].error.data.traceId as string;

    await receiver.waitFor(() => callSpan(data.traceId) !== undefined && callSpan(unknownTrace) !== undefined && receiver.spans.some((s) => s.name === "pm_supportEntrypoint"));
    const root = callSpan(data.traceId)!;
    expect(root.status).to.equal(2);
    expect(root.attributes).to.include({ "paymaster.outcome": "refused", "paymaster.refusal_reason": data.reason, "error.type": data.reason });
    const unknown = callSpan(unknownTrace)!;
    expect(unknown.name, "a client's method name never names a span").to.equal("unknown");
    expect(unknown.attributes["paymaster.refusal_reason"]).to.equal("METHOD_NOT_FOUND");
    const supported = receiver.spans.find((s) => s.name === "pm_supportEntrypoint")!;
    expect(supported.traceId, "one trace per call of a batch").not.to.equal(unknownTrace);
  });

  it("settlement passes are traces of their own, with their chain calls and store transactions as children", async () => {
    await receiver.waitFor((spans) => spans.some((s) => s.name === "settlement.pass" && childrenOf(spans, s).some((c) => c.name.startsWith("store "))));
    const pass = receiver.spans.find((s) => s.name === "settlement.pass" && childrenOf(receiver.spans, s).some((c) => c.name.startsWith("store ")))!;
    expect(pass.parentSpanId).to.equal("");
    expect(pass.attributes["paymaster.network"]).to.equal("local");
    const children = childrenOf(receiver.spans, pass).map((s) => s.name);
    expect(children).to.include("chain eth_getBlockByNumber");
    expect(children).to.include("store getCursor");
  });

  it("a retention pass is a trace of its own, its store transactions as children", async () => {
    const retention = startRetention({ store: embedded.running.service.store, logger: createLogger("silent"), autoStart: false, settings: { releasedDays: 30, settledDays: 30 } });
    await retention.runOnce();
    await retention.stop();
    await receiver.waitFor((spans) => spans.some((s) => s.name === "retention.pass"));
    const pass = receiver.spans.find((s) => s.name === "retention.pass")!;
    expect(pass.parentSpanId).to.equal("");
    expect(pass.attributes["paymaster.retention.leader"]).to.equal(true);
    expect(pass.attributes["paymaster.retention.batches"]).to.be.a("number");
    expect(childrenOf(receiver.spans, pass).map((s) => s.name)).to.include("store tryLeadership");
    expect(childrenOf(receiver.spans, pass).find((s) => s.name === "store tryLeadership")!.kind, "a client span").to.equal(3);
  });

  it("webhook deliveries are traces of their own, naming the receiver by scheme, host and port only", async () => {
    await receiver.waitFor((spans) => spans.some((s) => s.name === "webhook.delivery"));
    const delivery = receiver.spans.find((s) => s.name === "webhook.delivery")!;
    expect(delivery.parentSpanId).to.equal("");
    expect(delivery.kind).to.equal(3);
    expect(delivery.attributes).to.include({ "paymaster.webhook.event_type": "sponsorship.signed", "paymaster.webhook.outcome": "delivered", "paymaster.webhook.attempt": 1 });
    expect(delivery.attributes["paymaster.webhook.destination"]).to.equal(`http://127.0.0.1:${hook.port}/…`);
    expect(childrenOf(receiver.spans, delivery).map((s) => s.name)).to.include("store completeWebhookDelivery");
  });

  it("a traced call sends its own span as traceparent, so the bundler (or a node that traces) continues the trace; an untraced call sends none", async () => {
    // A JSON-RPC server on 127.0.0.1 that records each request's headers (what alto or a tracing node receives).
    const seen: IncomingHttpHeaders[] = [];
    const upstream = createServer((request, response) => {
      seen.push(request.headers);
      request.resume();
      request.on("end", () => {
        response.setHeader("content-type", "application/json");
        response.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: "0x1" }));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const bundler = createChainRpc(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, { kind: "bundler", network: "local" });
    try {
      const parent = rootSpan("test call", "server");
      await bundler.request("eth_supportedEntryPoints", [], { trace: parent });
      parent.end();
      await bundler.request("eth_supportedEntryPoints", []);
      await receiver.waitFor((spans) => spans.some((s) => s.traceId === parent.traceId && s.name === "bundler eth_supportedEntryPoints"));
      const client = receiver.spans.find((s) => s.traceId === parent.traceId && s.name === "bundler eth_supportedEntryPoints")!;
      expect(client.kind, "a client span").to.equal(3);
      expect(seen[0]!.traceparent, "the client span's own context").to.equal(`00-${parent.traceId}-${client.spanId}-01`);
      expect(seen[1]!.traceparent, "an untraced call").to.equal(undefined);
    } finally {
      bundler.close();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });

  it("no attribute holds a secret: the API key, the signer's key, the signed paymasterAndData, a webhook's secret and path", () => {
    expect(receiver.spans.length).to.be.greaterThan(50);
    expect(receiver.contentTypes).to.deep.equal(new Set(["application/json"]));
    const signerKey = embedded.stack.signer.privateKey.toLowerCase();
    const secrets = [embedded.apiKey, signerKey, signerKey.slice(2), HOOK_PATH_TOKEN, hookSecret, ...signedData.map((d) => d.toLowerCase()), ...signedData.map((d) => d.slice(-130).toLowerCase())];
    expect(signedData).to.have.length(3);
    for (const span of receiver.spans) {
      for (const [key, value] of Object.entries({ ...span.attributes, ...span.resource })) {
        const text = String(value).toLowerCase();
        for (const secret of secrets) expect(text.includes(secret.toLowerCase()), `${span.name} ${key}`).to.equal(false);
      }
    }
  });
});

describe("a client's trace context does not decide sampling (issue 46, item 1)", function () {
  this.timeout(120_000);
  /** Calls a client flags sampled, each with its own trace id, as in the review. */
  const CALLS = 40;
  let receiver: OtlpReceiver;
  let embedded: Embedded;

  before(async () => {
    receiver = await startOtlpReceiver();
    embedded = await startTestStack({
      tracingEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01", OTEL_BSP_SCHEDULE_DELAY: "100" },
    });
  });
  after(async () => {
    await embedded?.close();
    await receiver?.close();
  });

  /** `CALLS` pm_supportEntrypoint calls flagged sampled, each a fresh client trace id; the ids sent. */
  async function flaggedCalls(prefix: string): Promise<string[]> {
    const ids = Array.from({ length: CALLS }, (_, i) => `${prefix}${i.toString(16).padStart(32 - prefix.length, "0")}`);
    for (const id of ids) {
      const { status } = await post(embedded.erc7677Endpoint, { id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint", params: [] }, { traceparent: `00-${id}-${CLIENT_SPAN}-01`, tracestate: CLIENT_STATE });
      expect(status).to.equal(200);
    }
    return ids;
  }
  /**
   * The call spans exported for `ids` (continued: in the client's trace; linked: pointing to it), once all of them
   * came (`all`) or the exporter had six intervals to send them: a slow export only makes fewer seem sampled.
   */
  async function exported(ids: string[], all = false): Promise<{ continued: ReceivedSpan[]; linked: ReceivedSpan[] }> {
    if (all) await receiver.waitFor((spans) => spans.filter((s) => ids.includes(s.traceId)).length >= ids.length);
    else await new Promise((resolve) => setTimeout(resolve, 600));
    const calls = receiver.spans.filter((s) => s.name === "pm_supportEntrypoint");
    return { continued: calls.filter((s) => ids.includes(s.traceId)), linked: calls.filter((s) => s.links.some((l) => ids.includes(l.traceId))) };
  }

  it("by default, calls flagged sampled are sampled at our ratio (0.01), in traces of ours linked to the client's", async () => {
    const { continued, linked } = await exported(await flaggedCalls("a1"));
    expect(continued, "no call continues the client's trace").to.have.length(0);
    // At 0.01, 40 calls sample none or one or two; all 40 (the review's figure) is what a parent-based sampler did.
    expect(linked.length, `${linked.length} of ${CALLS} flagged calls traced`).to.be.at.most(5);
  });

  it("with traceContext trusted-proxies, a trusted proxy's context is the parent and decides; anyone else's is only linked", async () => {
    const config = embedded.running.service.config as { traceContext?: string; trustedProxies?: readonly string[] };
    try {
      config.traceContext = "trusted-proxies";
      config.trustedProxies = ["127.0.0.1/32"];
      const fromProxy = await exported(await flaggedCalls("b2"), true);
      expect(fromProxy.continued, "every call from the proxy, sampled as it said").to.have.length(CALLS);
      for (const span of fromProxy.continued) {
        expect(span.parentSpanId).to.equal(CLIENT_SPAN);
        expect(span.traceState, "tracestate is dropped even then").to.equal("");
      }
      config.trustedProxies = ["10.9.9.9/32"]; // the test's connections are no longer a proxy's
      const fromClient = await exported(await flaggedCalls("c3"));
      expect(fromClient.continued).to.have.length(0);
      expect(fromClient.linked.length).to.be.at.most(5);
      // traceContext "parent": every caller's context is the parent (a listener only one's own services reach).
      config.traceContext = "parent";
      expect((await exported(await flaggedCalls("d4"), true)).continued).to.have.length(CALLS);
    } finally {
      delete config.traceContext;
      delete config.trustedProxies;
    }
  });
});
