// The store's PostgreSQL fails under a running service, through a real TCP proxy between them: it refuses
// connections (stopped, restarting), it accepts and answers nothing (a partition, a failover behind a proxy), and a
// COMMIT reaches it whose answer never comes back. Every door answers STORE_UNAVAILABLE (503 / -32002, with its
// cause) within 2 s — both JSON-RPC dialects, pm_supportEntrypoint included, the admin API too — never a 500 or a
// hang; /ready, the metrics and one log line per state change say so, without a stack; the service recovers
// without a restart; and nothing is lost or counted twice: every signature a client got has its sponsorship, a
// sponsorship whose COMMIT went unanswered never gave out its signature and is replaced once by the retry, the
// cap counts each op once, and the settlement watcher settles again.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { DATABASE_DEFAULTS } from "../src/store/settings.ts";
import type { Address, Hex } from "@paymaster/shared";
import { adminApiOptionsFromEnv } from "../src/adminApi/options.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { startService, type RunningService } from "../src/server.ts";
import type { Store } from "../src/store/types.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { startTcpProxy, type TcpProxy } from "./helpers/tcpProxy.ts";
import { clientGasFields, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded, type Wallet } from "./helpers/stack.ts";

const ADMIN_TOKEN = "store-faults-admin-token-0123456789abcdef";
/** What every answer must beat. */
const CLIENT_BOUND_MS = 2_000;

interface Timed {
  status: number;
  body: any;
  ms: number;
}

describe("store faults: PostgreSQL behind a TCP proxy that refuses, black-holes and comes back", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let database: TestDatabase;
  let proxy: TcpProxy;
  let running: RunningService;
  let store: Store;
  let strategyId: string;
  const logs: Record<string, any>[] = [];
  let v1 = "";
  let standard = "";
  const code = "STOREFAULTS";
  /** The v1 signatures a client was given, by sender (to land one on chain). */
  const signed = new Map<Address, { wallet: Wallet; wire: ReturnType<typeof wireOp>; data: any }>();
  /** Every signature a client was given, either dialect: paymasterAndData (v1) or paymasterData (ERC-7677), by sender. */
  const given = new Map<Address, Hex>();

  before(async () => {
    embedded = await startTestStack();
    database = await createTestDatabase("paymaster_store_faults");
    const url = new URL(database.url);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
    url.port = String(proxy.port);
    const logger = createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line)) });
    // The production chain RPC defaults, and the production database defaults (nothing set: src/store/settings.ts).
    const { rpcTimeoutMs: _timeout, rpcDeadlineMs: _deadline, ...network } = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-store-faults-")), "data");
    const config = { ...embeddedConfig({ ...network, pollMs: 200, confirmations: 0 }, dataDir, 0, "info" as const), databaseUrl: url.href, metrics: { host: "127.0.0.1", port: 0 } };
    running = await startService(config, {
      logger,
      pollMs: 100,
      watch: true,
      admin: adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${ADMIN_TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })!,
    });
    await running.initialised;
    store = running.service.store;
    const project = await store.createProject("store faults");
    const { plaintext } = await store.createApiKey(project.id);
    strategyId = (await store.createStrategy({ projectId: project.id, code, name: code, rules: { caps: { global: { maxOps: 1000 } } } })).id;
    v1 = `${running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
    standard = `${running.url}/rpc/v1/local?apiKey=${plaintext}`;
  });
  afterEach(async () => {
    await proxy?.setMode("pass"); // a failed test leaves no fault behind for the next
  });
  after(async () => {
    await running?.close();
    await proxy?.close();
    await database?.drop();
    await embedded?.close();
  });

  async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Timed> {
    const started = performance.now();
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
    return { status: response.status, body: await response.json(), ms: performance.now() - started };
  }

  async function get(url: string, headers: Record<string, string> = {}): Promise<Timed> {
    const started = performance.now();
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
    return { status: response.status, body: await response.json(), ms: performance.now() - started };
  }

  /** pm_sponsorUserOperation (v1) for `wallet`'s first op; a signature is remembered. */
  async function sponsor(wallet: Wallet): Promise<Timed> {
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const answer = await post(v1, { id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wire, { strategy_code: code, version: "v0.7" }] });
    if (answer.status === 200) {
      signed.set(wallet.sender, { wallet, wire, data: answer.body.data });
      given.set(wallet.sender, answer.body.data.userOpResponse.paymasterAndData);
    }
    return answer;
  }

  /** Every door a client has, at once: both dialects' signing calls and pm_supportEntrypoint. */
  async function everyDoor() {
    const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    const [sponsorV1, dataStandard, supportV1, supportStandard] = await Promise.all([
      newWallet(embedded, "v0.7").then(sponsor),
      newWallet(embedded, "v0.7").then(async (wallet) => {
        const op = { ...wireOp(wallet, executeCallData(wallet.owner.address)), ...(await clientGasFields(embedded)) };
        const answer = await post(standard, { jsonrpc: "2.0", id: 7, method: "pm_getPaymasterData", params: [op, entryPoint, "0x7a69", { strategy_code: code }] });
        if (answer.body.result) given.set(wallet.sender, answer.body.result.paymasterData);
        return answer;
      }),
      post(v1, { id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" }),
      post(standard, { jsonrpc: "2.0", id: 2, method: "pm_supportEntrypoint" }),
    ]);
    return { v1: [sponsorV1, supportV1], standard: [dataStandard, supportStandard] };
  }

  function expectUnavailable(doors: Awaited<ReturnType<typeof everyDoor>>, causes: string[]) {
    for (const answer of doors.v1) {
      expect(answer.status, JSON.stringify(answer.body)).to.equal(503);
      expect(answer.body.data.reason).to.equal("STORE_UNAVAILABLE");
      expect(answer.body.data.cause).to.be.oneOf(causes);
      expect(answer.ms, "v1 answer within 2 s").to.be.below(CLIENT_BOUND_MS);
    }
    for (const answer of doors.standard) {
      expect(answer.status).to.equal(200);
      expect(answer.body.error?.code, JSON.stringify(answer.body)).to.equal(-32002);
      expect(answer.body.error.data.reason).to.equal("STORE_UNAVAILABLE");
      expect(answer.body.error.data.cause).to.be.oneOf(causes);
      expect(answer.ms, "standard answer within 2 s").to.be.below(CLIENT_BOUND_MS);
    }
    // The client reads the name and the cause, never the driver's words.
    expect(JSON.stringify(doors)).to.not.match(/ECONNREFUSED|127\.0\.0\.1|terminated|pg-pool/);
  }

  function expectServed(doors: Awaited<ReturnType<typeof everyDoor>>) {
    const [sponsorV1, supportV1] = doors.v1;
    const [dataStandard, supportStandard] = doors.standard;
    expect(sponsorV1!.status, JSON.stringify(sponsorV1!.body)).to.equal(200);
    expect(sponsorV1!.body.data.userOpResponse.paymasterAndData).to.match(/^0x[0-9a-f]+$/i);
    expect(dataStandard!.body.result?.paymasterData, JSON.stringify(dataStandard!.body)).to.match(/^0x[0-9a-f]+$/i);
    expect(supportV1!.status).to.equal(200);
    expect(supportStandard!.body.result).to.have.length(3);
  }

  const ready = () => get(`${running.url}/ready`);
  const admin = () => get(`${running.adminUrl}/admin/v1/projects`, { authorization: `Bearer ${ADMIN_TOKEN}` });
  const metrics = async () => (await fetch(`${running.metricsUrl}/metrics`)).text();

  async function waitReady(timeoutMs = 10_000): Promise<number> {
    const started = performance.now();
    while (performance.now() - started < timeoutMs) {
      if ((await ready()).status === 200) return performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`not ready after ${timeoutMs} ms: ${JSON.stringify((await ready()).body)}`);
  }

  const storeLines = (from: number) => logs.slice(from).filter((l) => l.component === "store");

  for (const fault of ["refuse", "hang"] as const) {
    const causes = fault === "refuse" ? ["refused", "connection"] : ["timeout"];
    it(`${fault === "refuse" ? "refusing connections" : "accepting and answering nothing"}: STORE_UNAVAILABLE (${causes.join(" or ")}) within 2 s at every door, /ready and the metrics say so, one log line, recovery without restart`, async () => {
      expectServed(await everyDoor());
      const mark = logs.length;

      await proxy.setMode(fault);
      // Keys and strategies are served from memory for configMaxAgeMs after the last version read (configCache.ts):
      // past it, a door needs the database again, signing ones at once (their reservation is a write).
      await new Promise((resolve) => setTimeout(resolve, DATABASE_DEFAULTS.configMaxAgeMs));
      expectUnavailable(await everyDoor(), causes);
      expectUnavailable(await everyDoor(), causes); // and again: now it is known to be down

      const adminAnswer = await admin();
      expect(adminAnswer.status, JSON.stringify(adminAnswer.body)).to.equal(503);
      expect(adminAnswer.body.error).to.include({ code: "UNAVAILABLE", reason: "STORE_UNAVAILABLE" });
      expect(adminAnswer.body.error.cause).to.be.oneOf(causes);
      expect(adminAnswer.body.error, "the driver's words go to the log only (adminUnavailable.test.ts)").to.not.have.property("detail");
      expect(adminAnswer.ms).to.be.below(CLIENT_BOUND_MS);

      const down = await ready();
      expect(down.status).to.equal(503);
      expect(down.body.checks.store).to.match(new RegExp(`^failing: the database: unavailable \\((${causes.join("|")})\\) since `));
      expect(down.body.checks["network:local"]).to.equal("ok");
      const downMetrics = await metrics();
      expect(downMetrics).to.include("paymaster_store_up 0");
      expect(downMetrics).to.match(new RegExp(`paymaster_store_errors_total\\{cause="(${causes.join("|")})"\\} [1-9]`));
      expect(downMetrics).to.match(/paymaster_requests_total\{dialect="v1",method="pm_supportEntrypoint",network="local",outcome="STORE_UNAVAILABLE"\} [1-9]/);

      const downLines = storeLines(mark).filter((l) => l.msg.startsWith("store unavailable"));
      expect(downLines, JSON.stringify(storeLines(mark))).to.have.length(1);
      expect(downLines[0]!.level).to.equal("warn");
      expect(downLines[0]!.cause).to.be.oneOf(causes);

      await proxy.setMode("pass");
      const recoveredMs = await waitReady();
      expect(recoveredMs, "recovers within a few probes").to.be.below(2_000);
      expectServed(await everyDoor());
      expect((await admin()).status).to.equal(200);
      expect(storeLines(mark).filter((l) => l.msg === "store available again"), "one line when it is back").to.have.length(1);
      expect(await metrics()).to.include("paymaster_store_up 1");

      // No stack, no internal error, for an outage /ready already reports.
      const outage = logs.slice(mark);
      expect(outage.filter((l) => l.err !== undefined || l.msg === "internal error" || l.level === "error"), JSON.stringify(outage.filter((l) => l.level !== "info"))).to.deep.equal([]);
      expect(JSON.stringify(outage)).to.not.include("    at ");
    });
  }

  {
    it("the reservation's batch reaches the database and its answer never comes: no signature; the retry is reserved once", async () => {
      await waitReady();
      const usageBefore = await store.getUsage(strategyId, "global", "");
      const wallet = await newWallet(embedded, "v0.7");
      // The signing call's one transaction: the reservation, recorded signed at once, one batch (one write to the
      // socket, committed at its Sync): the first bytes that carry the op's sender. The server runs and commits
      // it; its answer never comes back.
      const fired = proxy.hangAfter(wallet.sender, 1);
      let firedAt = 0;
      void fired.then(() => (firedAt = performance.now()));
      const started = performance.now();
      const lost = await sponsor(wallet);
      expect(firedAt, "the fault hit this request").to.be.within(started, performance.now());
      expect(lost.status, JSON.stringify(lost.body)).to.equal(503);
      expect(lost.body.data).to.deep.equal({ reason: "STORE_UNAVAILABLE", cause: "timeout" });
      expect(lost.ms).to.be.below(CLIENT_BOUND_MS);
      expect(given.has(wallet.sender), "no signature left").to.equal(false);

      await proxy.setMode("pass");
      await waitReady();
      const retried = await sponsor(wallet);
      expect(retried.status, JSON.stringify(retried.body)).to.equal(200);
      const rows = await store.listSponsorships({ sender: wallet.sender });
      const active = rows.filter((r) => r.status === "reserved" || r.status === "signed");
      expect(active, "one active sponsorship for the op").to.have.length(1);
      expect(active[0]!.status).to.equal("signed");
      expect(active[0]!.paymasterAndData?.toLowerCase()).to.equal(retried.body.data.userOpResponse.paymasterAndData.toLowerCase());
      // The unanswered COMMIT did commit: that sponsorship exists, and the retry released it.
      expect(rows.filter((r) => r.status === "released"), JSON.stringify(rows.map((r) => r.status))).to.have.length(1);
      expect((await store.getUsage(strategyId, "global", "")).ops, "the cap counts the op once").to.equal(usageBefore.ops + 1);
    });
  }

  it("nothing lost or counted twice across the outages: every signature has its sponsorship, the cap counts each once, the watcher settles again", async () => {
    await waitReady();
    const records = await store.listSponsorships({ strategyId, limit: 1000 });
    const open = records.filter((r) => r.status === "signed" || r.status === "reserved" || r.status === "settled");
    expect(open.map((r) => r.sender).sort(), "a sponsorship for every signature given, and no other").to.deep.equal([...given.keys()].sort());
    for (const [sender, signature] of given) {
      const record = open.find((r) => r.sender === sender)!;
      // v1 answers paymasterAndData whole; ERC-7677 answers paymasterData, its tail.
      expect((record.paymasterAndData ?? "").toLowerCase().endsWith(signature.slice(2).toLowerCase()), sender).to.equal(true);
    }
    expect((await store.getUsage(strategyId, "global", "")).ops).to.equal(given.size);

    // One of them lands on chain: the watcher, which lost its leadership with the database, settles it.
    const [sender, { wallet, wire, data }] = [...signed][0]!;
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    const deadline = Date.now() + 30_000;
    let status = "";
    while (Date.now() < deadline) {
      status = (await store.listSponsorships({ sender }))[0]!.status;
      if (status === "settled") break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status, "settled by the watcher after the outages").to.equal("settled");
    expect(logs.filter((l) => l.msg === "this replica leads: settlement watcher started").length, "it led again after losing the leadership").to.be.at.least(2);
  });
});
