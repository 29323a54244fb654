// Tracing off costs nothing and changes nothing, in a real child service (src/main.ts; its network's RPC is a
// closed loopback port, so it serves "not ready", which is enough to be refused): no module of the OpenTelemetry
// SDK is ever resolved (a --import hook logs every module the process resolves; prom-client alone requires
// @opentelemetry/api, as it always has), nothing reaches the OTLP receiver
// even with an endpoint set once OTEL_TRACES_EXPORTER says none, and error bodies are exactly today's. Beside
// it, the same service with an endpoint: the SDK loads, the client's traceparent is linked (a trace of ours, not
// the client's), the trace id is in the error body and the request's log line, and SIGTERM's drain flushes the
// spans to the receiver.
import { expect } from "chai";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { generatePrivateKey } from "viem/accounts";
import type { DeploymentManifest } from "@paymaster/contracts/manifest";
import { ENTRY_POINT_VERSIONS } from "@paymaster/shared";
import { freeLoopbackPort } from "../src/local/ports.ts";
import { REASONS } from "../src/errors.ts";
import { startTracing, tracingConfigured, tracingOn } from "../src/telemetry/trace.ts";
import { ConfigError } from "../src/config/errors.ts";
import { spawnService, writeLocalConfig, type ServiceProcess } from "./helpers/serviceProcess.ts";
import { startOtlpReceiver, type OtlpReceiver } from "./helpers/otlpReceiver.ts";

const HOOK = new URL("./fixtures/moduleLog.mjs", import.meta.url).pathname;
const CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN = "b7ad6b7169203331";

/** A manifest of made-up addresses: the network never answers, nothing is deployed. */
function fakeManifest(): DeploymentManifest {
  const address = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
  const entryPoints = Object.fromEntries(ENTRY_POINT_VERSIONS.map((v, i) => [v, { entryPoint: address(10 + i), verifyingPaymaster: address(20 + i), erc20Paymaster: address(30 + i) }]));
  return { chainId: 31337, entryPoints } as unknown as DeploymentManifest;
}

async function refusals(service: ServiceProcess): Promise<{ standard: any; v1: any }> {
  const headers = { "content-type": "application/json", traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` };
  const body = JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" });
  const standard = await fetch(`${service.url}/rpc/v1/local?apiKey=nope`, { method: "POST", headers, body });
  const v1 = await fetch(`${service.url}/api/v1/paymaster/local?apiKey=nope`, { method: "POST", headers, body });
  return { standard: await standard.json(), v1: await v1.json() };
}

describe("OpenTelemetry off: no SDK loaded, nothing exported, bodies unchanged (child processes)", function () {
  let receiver: OtlpReceiver;
  let dir: string;
  before(async () => {
    receiver = await startOtlpReceiver();
    dir = mkdtempSync(path.join(tmpdir(), "paymaster-traces-"));
  });
  after(async () => {
    await receiver?.close();
  });

  it("the standard environment decides: an OTLP endpoint or OTEL_TRACES_EXPORTER=otlp turns it on, none or OTEL_SDK_DISABLED off", () => {
    expect(tracingConfigured({})).to.equal(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).to.equal(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).to.equal(true);
    expect(tracingConfigured({ OTEL_TRACES_EXPORTER: "otlp" })).to.equal(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_TRACES_EXPORTER: "none" })).to.equal(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" })).to.equal(false);
  });

  it("a setting OpenTelemetry cannot use is a configuration error naming the variable, never its value", async () => {
    const refusal = async (env: NodeJS.ProcessEnv) => {
      const error = await startTracing(env).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).to.be.instanceOf(ConfigError);
      expect(tracingOn()).to.equal(false);
      return (error as ConfigError).message;
    };
    expect(await refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_TRACES_SAMPLER: "sometimes" })).to.match(/OTEL_TRACES_SAMPLER: "sometimes" is not supported/);
    expect(await refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" })).to.match(/OTEL_TRACES_SAMPLER_ARG: must be a ratio/);
    const badUrl = await refusal({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://user:s3cret@[not-a-host" });
    expect(badUrl).to.match(/OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not a URL/);
    expect(badUrl).not.to.include("s3cret");
    expect(await refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://127.0.0.1" })).to.match(/OTEL_EXPORTER_OTLP_ENDPOINT: OTLP over HTTP wants/);
    expect(await refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_BSP_SCHEDULE_DELAY: "soon" })).to.match(/OTEL_BSP_SCHEDULE_DELAY: must be a positive integer/);
  });

  it("off (endpoint set, OTEL_TRACES_EXPORTER=none) beside on: modules, exports, bodies and log lines", async () => {
    const rpcUrl = `http://127.0.0.1:${await freeLoopbackPort()}`; // nothing listens there
    const start = (name: string, otel: Record<string, string>) => {
      const config = writeLocalConfig(fakeManifest(), rpcUrl, { service: { databasePath: path.join(dir, `${name}.db`) }, network: { rpcTimeoutMs: 200, rpcDeadlineMs: 300 } });
      const log = path.join(dir, `${name}.modules`);
      const service = spawnService(config, { signerKey: generatePrivateKey(), extra: { NODE_OPTIONS: `--import=${HOOK}`, PAYMASTER_TEST_MODULE_LOG: log, ...otel } });
      return { service, log };
    };
    const off = start("off", { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_EXPORTER: "none" });
    const on = start("on", { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "paymaster-child" });
    const [offService, onService] = await Promise.all([off.service, on.service]);
    const traceIds: string[] = [];
    try {
      const offAnswers = await refusals(offService);
      const onAnswers = await refusals(onService);
      const { jsonRpcCode, message, status } = REASONS.API_KEY_INVALID;

      // Off: exactly today's bodies.
      expect(offAnswers.standard).to.deep.equal({ jsonrpc: "2.0", id: 1, error: { code: jsonRpcCode, message, data: { reason: "API_KEY_INVALID" } } });
      expect(offAnswers.v1).to.have.keys(["code", "message", "data", "cost"]);
      expect({ ...offAnswers.v1, cost: undefined }).to.deep.equal({ code: status, message, data: { reason: "API_KEY_INVALID" }, cost: undefined });
      // On: the same, plus the trace id: ours, not the one the client sent.
      traceIds.push(onAnswers.standard.error.data.traceId, onAnswers.v1.data.traceId);
      expect(onAnswers.standard.error.data).to.deep.equal({ reason: "API_KEY_INVALID", traceId: traceIds[0] });
      expect(onAnswers.v1.data).to.deep.equal({ reason: "API_KEY_INVALID", traceId: traceIds[1] });
      for (const id of traceIds) expect(id).to.match(/^[0-9a-f]{32}$/).and.not.equal(CLIENT_TRACE);
      const onLine = await onService.waitFor((l) => l.msg === "request" && l.path === "/rpc/v1/local");
      expect(onLine.traceId).to.equal(traceIds[0]);
      const offLine = await offService.waitFor((l) => l.msg === "request" && l.path === "/rpc/v1/local");
      expect(offLine).not.to.have.property("traceId");

      // SIGTERM: the drain ends with the exporter's flush (its batch delay, 5 s, has not passed yet).
      const [offExit, onExit] = await Promise.all([offService.kill("SIGTERM"), onService.kill("SIGTERM")]);
      expect(offExit.code).to.equal(0);
      expect(onExit.code).to.equal(0);
    } finally {
      await Promise.all([offService.kill(), onService.kill()]);
    }

    // Only the "on" service's spans reached the receiver: its two calls, each a trace of ours linked to the client's span.
    const roots = receiver.spans.filter((s) => s.kind === 2);
    expect(roots.map((s) => s.name)).to.deep.equal(["pm_supportEntrypoint", "pm_supportEntrypoint"]);
    expect(roots.map((s) => s.traceId)).to.have.members(traceIds);
    for (const root of roots) {
      expect(root.parentSpanId).to.equal("");
      expect(root.links).to.deep.equal([{ traceId: CLIENT_TRACE, spanId: CLIENT_SPAN, traceState: "" }]);
      expect(root.resource["service.name"]).to.equal("paymaster-child");
      expect(root.attributes).to.include({ "paymaster.outcome": "refused", "paymaster.refusal_reason": "API_KEY_INVALID" });
    }
    expect(receiver.spans.every((s) => s.resource["service.name"] === "paymaster-child")).to.equal(true);

    // The hook saw both processes load the service; only the "on" one resolved the SDK. (prom-client, for
    // its exemplars, requires @opentelemetry/api whatever we do: the only OpenTelemetry module the "off" one
    // resolves, and only for prom-client.)
    const resolutions = (file: string) =>
      readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => ({ url: line.split("\t")[0]!, parent: line.split("\t")[1] ?? "" }));
    const offModules = resolutions(off.log);
    const onModules = resolutions(on.log);
    expect(offModules.some((r) => r.url.endsWith("/src/server.ts")), "the hook records the service's own modules").to.equal(true);
    expect(offModules.some((r) => r.url.endsWith("/src/telemetry/trace.ts"))).to.equal(true);
    const otelOff = offModules.filter((r) => r.url.includes("opentelemetry") || r.url.includes("/telemetry/otel.ts"));
    expect(otelOff.filter((r) => !r.url.includes("/@opentelemetry/api/")), "no SDK, exporter, resources or core").to.deep.equal([]);
    expect(otelOff.filter((r) => !r.parent.includes("/prom-client/") && !r.parent.includes("/@opentelemetry/api/")), "only prom-client asks for the API").to.deep.equal([]);
    expect(onModules.some((r) => r.url.includes("/@opentelemetry/sdk-trace/"))).to.equal(true);
    expect(onModules.some((r) => r.url.includes("/@opentelemetry/exporter-trace-otlp-http/"))).to.equal(true);
    expect(onModules.some((r) => r.url.endsWith("/src/telemetry/otel.ts"))).to.equal(true);
  });
});
