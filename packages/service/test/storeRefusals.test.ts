// PostgreSQL refuses the running service's sessions, for real: its database closed to connections for maintenance
// (ALLOW_CONNECTIONS false: SQLSTATE 55000), the service's role without CONNECT on it (42501 at connect), the
// database renamed away (3D000), and the TLS handshake failing in front of it (the server says no to TLS, presents a
// certificate the service does not trust, or something that is not PostgreSQL answers). Each is the database's
// failure, not a bug: every door answers 503 / -32002 STORE_UNAVAILABLE with its cause, never a 500; the store's
// health goes down (/ready, the metrics, one log line); /ready never carries the driver's words (the database's
// name); no stack reaches the log; and the service comes back by itself when the fault is cleared.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { DATABASE_DEFAULTS } from "../src/store/settings.ts";
import pg from "pg";
import { adminApiOptionsFromEnv } from "../src/adminApi/options.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { startService, type RunningService } from "../src/server.ts";
import { createTestDatabase, testPostgresUrl, type TestDatabase } from "./helpers/postgres.ts";
import { startPostgresFront, type PostgresFront } from "./helpers/postgresFront.ts";
import { newWallet, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const ADMIN_TOKEN = "store-refusals-admin-token-0123456789abcdef";
const CLIENT_BOUND_MS = 2_000;

/** An HTTP answer with its time. */
async function send(url: string, init: RequestInit = {}): Promise<{ status: number; body: any; ms: number }> {
  const started = performance.now();
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: response.status, body: await response.json(), ms: performance.now() - started };
}
type Timed = Awaited<ReturnType<typeof send>>;

describe("store refusals: PostgreSQL refuses the session (55000, 42501, 3D000) or its TLS handshake fails", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let database: TestDatabase;
  let admin: pg.Client;
  let front: PostgresFront;
  let running: RunningService;
  let name = "";
  let role = "";
  let v1 = "";
  let standard = "";
  const code = "REFUSALS";
  const logs: Record<string, any>[] = [];

  const sql = (text: string) => admin.query(text);
  /** Ends the service's sessions on its database (a maintenance step does): its next connection meets the fault. */
  const endSessions = (db: string) => sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${db}' AND pid <> pg_backend_pid()`);

  before(async () => {
    embedded = await startTestStack();
    database = await createTestDatabase("paymaster_refusals");
    name = new URL(database.url).pathname.slice(1);
    role = `${name}_role`;
    admin = new pg.Client({ connectionString: await testPostgresUrl() });
    await admin.connect();
    // The service's own role (not a superuser: privileges apply to it), owner of its database.
    await sql(`CREATE ROLE ${role} LOGIN`);
    await sql(`ALTER DATABASE ${name} OWNER TO ${role}`);
    const server = new URL(database.url);
    front = await startPostgresFront({ host: server.hostname, port: Number(server.port) });
    const url = `postgres://${role}@127.0.0.1:${front.port}/${name}?sslmode=verify-full&sslrootcert=${encodeURIComponent(front.caFile)}`;

    const logger = createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line)) });
    const { rpcTimeoutMs: _timeout, rpcDeadlineMs: _deadline, ...network } = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-store-refusals-")), "data");
    const config = { ...embeddedConfig({ ...network, pollMs: 200, confirmations: 0 }, dataDir, 0, "info" as const), databaseUrl: url, metrics: { host: "127.0.0.1", port: 0 } };
    running = await startService(config, { logger, pollMs: 100, watch: false, admin: adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${ADMIN_TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })! });
    await running.initialised;
    const store = running.service.store;
    const project = await store.createProject("store refusals");
    const { plaintext } = await store.createApiKey(project.id);
    await store.createStrategy({ projectId: project.id, code, name: code, rules: { caps: { global: { maxOps: 1000 } } } });
    v1 = `${running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
    standard = `${running.url}/rpc/v1/local?apiKey=${plaintext}`;
  });
  after(async () => {
    await running?.close();
    await front?.close();
    await database?.drop();
    await sql(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    await admin?.end();
    await embedded?.close();
  });

  const post = (url: string, body: unknown) => send(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const ready = () => send(`${running.url}/ready`);
  const adminProjects = () => send(`${running.adminUrl}/admin/v1/projects`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const metrics = async () => (await fetch(`${running.metricsUrl}/metrics`)).text();

  /** A signing call and pm_supportEntrypoint in each dialect. */
  async function everyDoor(): Promise<{ v1: Timed[]; standard: Timed[] }> {
    const wallet = await newWallet(embedded, "v0.7");
    const [sponsor, supportV1, supportStandard] = await Promise.all([
      post(v1, { id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: code, version: "v0.7" }] }),
      post(v1, { id: 2, jsonrpc: "2.0", method: "pm_supportEntrypoint" }),
      post(standard, { jsonrpc: "2.0", id: 3, method: "pm_supportEntrypoint" }),
    ]);
    return { v1: [sponsor, supportV1], standard: [supportStandard] };
  }

  async function waitReady(timeoutMs = 10_000): Promise<void> {
    const started = performance.now();
    while (performance.now() - started < timeoutMs) {
      if ((await ready()).status === 200) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`not ready after ${timeoutMs} ms: ${JSON.stringify((await ready()).body)}`);
  }

  function expectUnavailable(doors: { v1: Timed[]; standard: Timed[] }, causes: string[]) {
    for (const answer of doors.v1) {
      expect(answer.status, JSON.stringify(answer.body)).to.equal(503);
      expect(answer.body.data.reason).to.equal("STORE_UNAVAILABLE");
      expect(answer.body.data.cause).to.be.oneOf(causes);
      expect(answer.ms).to.be.below(CLIENT_BOUND_MS);
    }
    for (const answer of doors.standard) {
      expect(answer.body.error?.code, JSON.stringify(answer.body)).to.equal(-32002);
      expect(answer.body.error.data.reason).to.equal("STORE_UNAVAILABLE");
      expect(answer.body.error.data.cause).to.be.oneOf(causes);
    }
    expect(JSON.stringify(doors), "a client never reads the database's name").to.not.include(name);
  }

  /** /ready once the store's health has the fault's cause (its probe on a new connection decides; bounded). */
  async function storeDown(cause: string): Promise<Timed["body"]> {
    const deadline = performance.now() + 3_000;
    let answer = await ready();
    while (!String(answer.body.checks?.store).includes(`unavailable (${cause})`) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      answer = await ready();
    }
    expect(answer.status).to.equal(503);
    expect(answer.body.checks.store).to.match(new RegExp(`^failing: the database: unavailable \\(${cause}\\) since `));
    return answer.body;
  }

  const faults: { what: string; cause: string; apply(): Promise<unknown>; clear(): Promise<unknown> }[] = [
    {
      what: "its database closed to connections for maintenance (ALLOW_CONNECTIONS false: 55000)",
      cause: "refused",
      apply: async () => {
        await sql(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await endSessions(name);
      },
      clear: () => sql(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`),
    },
    {
      what: "its role without CONNECT on the database (42501 at connect)",
      cause: "auth",
      apply: async () => {
        await sql(`REVOKE CONNECT ON DATABASE ${name} FROM PUBLIC, ${role}`);
        await endSessions(name);
      },
      clear: () => sql(`GRANT CONNECT ON DATABASE ${name} TO ${role}`),
    },
    {
      what: "its database renamed away (3D000)",
      cause: "missing",
      apply: async () => {
        await sql(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await endSessions(name);
        await sql(`ALTER DATABASE ${name} RENAME TO ${name}_moved`);
        await sql(`ALTER DATABASE ${name}_moved ALLOW_CONNECTIONS true`);
      },
      clear: async () => {
        await sql(`ALTER DATABASE ${name}_moved ALLOW_CONNECTIONS false`);
        await endSessions(`${name}_moved`);
        await sql(`ALTER DATABASE ${name}_moved RENAME TO ${name}`);
        await sql(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      },
    },
    { what: "a server that says no to TLS", cause: "tls", apply: async () => front.setMode("no-tls"), clear: async () => front.setMode("tls") },
    { what: "a certificate the service does not trust", cause: "tls", apply: async () => front.setMode("untrusted"), clear: async () => front.setMode("tls") },
    { what: "something that is not PostgreSQL answering the TLS request", cause: "tls", apply: async () => front.setMode("garbage"), clear: async () => front.setMode("tls") },
  ];

  for (const fault of faults) {
    it(`${fault.what}: 503 STORE_UNAVAILABLE (${fault.cause}) at every door, the store's health down, /ready without the driver's words, no stack, recovery`, async () => {
      await waitReady();
      const mark = logs.length;
      await fault.apply();
      try {
        // Keys and strategies are served from memory for configMaxAgeMs after the last version read (configCache.ts):
        // past it, a door needs the database again.
        await new Promise((resolve) => setTimeout(resolve, DATABASE_DEFAULTS.configMaxAgeMs));
        // The first calls may still meet a connection the fault's own step ended (its cause "connection");
        // from then on each new connection meets the fault itself.
        expectUnavailable(await everyDoor(), [fault.cause, "connection"]);
        expectUnavailable(await everyDoor(), [fault.cause]);
        const adminAnswer = await adminProjects();
        expect(adminAnswer.status, JSON.stringify(adminAnswer.body)).to.equal(503);
        expect(adminAnswer.body.error).to.include({ reason: "STORE_UNAVAILABLE", cause: fault.cause });

        const down = await storeDown(fault.cause);
        // Public: the cause only, never the driver's words (the database's name, its role, the server's text).
        expect(JSON.stringify(down)).to.not.include(name).and.not.include(role).and.not.match(/accepting|permission|does not exist|SSL|certificate/i);
        expect(await metrics()).to.include("paymaster_store_up 0");

        const lines = logs.slice(mark).filter((l) => l.component === "store" && l.msg.startsWith("store unavailable"));
        expect(lines.at(-1), JSON.stringify(logs.slice(mark).filter((l) => l.level !== "info"))).to.include({ level: "warn", cause: fault.cause });
        expect(lines.filter((l) => l.cause === fault.cause), "one line for the outage").to.have.length(1);
      } finally {
        await fault.clear();
      }
      await waitReady();
      const served = await everyDoor();
      expect(served.v1[0]!.status, JSON.stringify(served.v1[0]!.body)).to.equal(200);
      expect(served.standard[0]!.body.result, JSON.stringify(served.standard[0]!.body)).to.have.length(3);
      // A refusal is an outage the health reports, not a bug: no internal error, no stack.
      const outage = logs.slice(mark);
      expect(outage.filter((l) => l.err !== undefined || l.msg === "internal error" || l.level === "error"), JSON.stringify(outage.filter((l) => l.level !== "info"))).to.deep.equal([]);
      expect(JSON.stringify(outage)).to.not.include("    at ");
    });
  }

  it("/ready's read fails with an error the store does not classify (its role lost SELECT on a table): /ready says so without the error's words, the log has them", async () => {
    await waitReady();
    const mark = logs.length;
    // A superuser's session on the service's database (the admin's is on another).
    const inside = new pg.Client({ connectionString: database.url });
    await inside.connect();
    await inside.query(`REVOKE SELECT ON TABLE cursors FROM ${role}`);
    try {
      const answer = await ready();
      expect(answer.status).to.equal(503);
      expect(answer.body.checks.store).to.equal("failing: the database: a read failed (unclassified: see the log)");
      expect(JSON.stringify(answer.body)).to.not.match(/permission|cursors/);
      const logged = logs.slice(mark).filter((l) => l.msg.startsWith("readiness: the store's read failed"));
      expect(logged, "the operator reads the error in the log").to.have.length(1);
      expect(logged[0]!.err.message).to.match(/permission denied for table cursors/);
    } finally {
      await inside.query(`GRANT SELECT ON TABLE cursors TO ${role}`);
      await inside.end();
    }
    await waitReady();
  });
});
