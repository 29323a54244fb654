// Project billing through the running service on the embedded chain: a project without a plan sees nothing new;
// a billed one is refused PROJECT_BALANCE_EXHAUSTED (both dialects) until the operator credits it through the admin
// API (idempotent by reference, audited), then each op holds its maximum bill — exactly, under 100 requests at
// once on SQLite, on PostgreSQL and with two service replicas on one PostgreSQL; statements download as CSV and
// JSON from the admin API and the CLI; the metrics show the balance.
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { adminApiOptionsFromEnv } from "../src/adminApi/options.ts";
import { holdFor } from "../src/billing/charge.ts";
import { executeCallData } from "../src/local/embedded.ts";
import { ServiceMetrics } from "../src/metrics/metrics.ts";
import { parseUsd } from "../src/sponsor/price.ts";
import type { Store } from "../src/store/types.ts";
import { runCliInProcess } from "./helpers/cli.ts";
import { call, deployAccount, newWallet, sponsorBurst, startPostgresReplicas, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const TOKEN = "b".repeat(40);
/** The embedded network's fixed native price (src/config/local.ts). */
const NATIVE_USD = parseUsd("3000.00");

describe("project billing through the service (embedded chain; admin API, CLI)", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let store: Store;
  let projectId: string;
  let endpoint: string;
  let standard: string;
  let strategyCode: string;

  before(async () => {
    embedded = await startTestStack({ admin: adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })! });
    store = embedded.running.service.store;
    const project = await store.createProject("hosted dapp");
    projectId = project.id;
    const { plaintext } = await store.createApiKey(projectId, "dapp");
    endpoint = `${embedded.running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
    standard = `${embedded.running.url}/rpc/v1/local?apiKey=${plaintext}`;
    strategyCode = "HOSTED";
    await store.createStrategy({ projectId, code: strategyCode, name: "hosted" });
  });
  after(async () => {
    await embedded?.close();
  });

  async function admin(method: string, route: string, body?: unknown) {
    const response = await fetch(`${embedded.running.adminUrl}/admin/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, json: response.headers.get("content-type")?.startsWith("application/json") && text ? JSON.parse(text) : undefined };
  }

  async function sponsor(code = strategyCode) {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    return { wallet, wire, ...(await call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: code, version: "v0.7" }])) };
  }

  it("billing off (no plan, the default): sponsored as before, no balance, nothing held", async () => {
    const { status, body } = await sponsor();
    expect(status, JSON.stringify(body)).to.equal(200);
    expect(await store.getBillingAccount(projectId)).to.deep.equal({ projectId, balanceUsdMicros: 0n, heldUsdMicros: 0n, updatedAt: null });
    expect((await admin("GET", "/billing")).json).to.deep.equal([]);
  });

  it("a billed project without credit is refused PROJECT_BALANCE_EXHAUSTED (402 / -32501), and nothing is reserved", async () => {
    const plan = await admin("POST", `/projects/${projectId}/billing`, { enabled: true, markupBps: 1500, feeUsd: "0.002", alertBelowUsd: "5" });
    expect(plan.status, plan.text).to.equal(200);
    expect(plan.json).to.include({ enabled: true, markupBps: 1500, feeUsd: "0.002", alertBelowUsd: "5.00", balanceUsd: "0.00", heldUsd: "0.00" });
    const [audited] = await store.listAudit({ action: "billing.plan" });
    expect(audited).to.deep.include({ actor: "api:ops", target: projectId, before: null });
    expect(audited!.after).to.include({ enabled: true, markupBps: 1500 });
    const bad = await admin("POST", `/projects/${projectId}/billing`, { markupBps: 100_001 });
    expect([bad.status, bad.json.error.message]).to.deep.equal([400, "markupBps: must be an integer number of basis points from 0 to 100000 (100 = 1 %), not 100001"]);
    expect((await admin("POST", "/projects/no-such-project/billing", { enabled: true })).status).to.equal(404);
    const refused = await sponsor();
    expect(refused.status, JSON.stringify(refused.body)).to.equal(402);
    expect(refused.body.data.reason).to.equal("PROJECT_BALANCE_EXHAUSTED");
    expect(refused.body.message).to.match(/project's prepaid balance .* cannot cover this user operation .*add credit/);
    expect(refused.body.data.requiredUsd).to.match(/^\d+\.\d{2,6}$/);
    expect(refused.body.data, "the project's balance is not shown to its users").to.not.have.property("availableUsd");
    const response = await fetch(standard, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "pm_sponsorUserOperation", params: [refused.wire, { strategy_code: strategyCode, version: "v0.7" }] }),
    });
    const rpc = (await response.json()) as { error: { code: number; data: { reason: string } } };
    expect(rpc.error.code).to.equal(-32501);
    expect(rpc.error.data.reason).to.equal("PROJECT_BALANCE_EXHAUSTED");
    expect((await store.getBillingAccount(projectId)).heldUsdMicros).to.equal(0n);
    expect(await store.findActiveSponsorship({ network: "local", entryPoint: embedded.stack.manifest.entryPoints["v0.7"].entryPoint, sender: refused.wallet.sender, nonce: 0n })).to.equal(undefined);
  });

  it("credits through the admin API: audited, the same reference twice credits once, another amount is 409; then ops hold their maximum bill", async () => {
    const credit = await admin("POST", `/projects/${projectId}/billing/credit`, { usd: "20", reference: "invoice-2026-11" });
    expect(credit.status, credit.text).to.equal(200);
    expect(credit.json).to.include({ balanceUsd: "20.00", creditedUsd: "20.00", duplicate: false });
    expect((await admin("POST", `/projects/${projectId}/billing/credit`, { usd: "20", reference: "invoice-2026-11" })).json).to.include({ balanceUsd: "20.00", duplicate: true });
    const conflict = await admin("POST", `/projects/${projectId}/billing/credit`, { usd: "25", reference: "invoice-2026-11" });
    expect(conflict.status).to.equal(409);
    expect(conflict.json.error.message).to.match(/invoice-2026-11/);
    const missing = await admin("POST", `/projects/${projectId}/billing/credit`, { usd: "1" });
    expect([missing.status, missing.json.error.code]).to.deep.equal([400, "INVALID_INPUT"]);
    expect(missing.json.error.message).to.match(/^reference: required/);
    expect((await admin("POST", `/projects/${projectId}/billing/credit`, { usd: "1.0000001", reference: "x" })).json.error.message).to.match(/^usd: .*at most 6 decimals/);
    const audits = await store.listAudit({ action: "billing.credit" });
    expect(audits).to.have.length(1);
    expect(audits[0]).to.deep.include({ actor: "api:ops", target: projectId });

    const { status, body, wallet } = await sponsor();
    expect(status, JSON.stringify(body)).to.equal(200);
    const active = await store.findActiveSponsorship({ network: "local", entryPoint: embedded.stack.manifest.entryPoints["v0.7"].entryPoint, sender: wallet.sender, nonce: 0n });
    const hold = holdFor({ basis: "gas", nativeUsd: NATIVE_USD, markupBps: 1500, feeUsdMicros: 2000n }, active!.record.maxCostWei);
    expect(hold).to.equal(active!.record.maxCostUsdMicros + (active!.record.maxCostUsdMicros * 1500n + 9999n) / 10000n + 2000n);
    expect(await store.getBillingAccount(projectId)).to.deep.include({ balanceUsdMicros: 20_000_000n, heldUsdMicros: hold });
    const shown = await admin("GET", `/projects/${projectId}/billing`);
    expect(shown.json).to.include({ projectName: "hosted dapp", balanceUsd: "20.00", low: false });
    await store.releaseSponsorship(active!.record.id);
    expect((await store.getBillingAccount(projectId)).heldUsdMicros).to.equal(0n);
  });

  it("statements: JSON by default, CSV and JSON files to download from the admin API and the CLI", async () => {
    const month = new Date().toISOString().slice(0, 7);
    const json = await admin("GET", `/projects/${projectId}/billing/statement`);
    expect(json.status, json.text).to.equal(200);
    expect(json.json).to.deep.include({ currency: "USD", openingBalanceUsd: "0.00", closingBalanceUsd: "20.00" });
    expect(json.json.period).to.include({ label: month, closed: false });
    expect(json.json.lines.map((l: { kind: string; reference: string }) => `${l.kind} ${l.reference}`)).to.deep.equal(["credit invoice-2026-11"]);
    const csv = await admin("GET", `/projects/${projectId}/billing/statement?format=csv&month=${month}`);
    expect(csv.headers.get("content-type")).to.equal("text/csv; charset=utf-8");
    expect(csv.headers.get("content-disposition")).to.equal(`attachment; filename="statement-${projectId}-${month}.csv"`);
    const rows = csv.text.split("\r\n");
    expect(rows[0]).to.equal("seq,time,kind,reference,network,mode,userOpHash,txHash,blockNumber,gasCostWei,gasUsd,markupUsd,feeUsd,amountUsd,balanceUsd,reverses,actor");
    expect(rows[1]).to.match(/^,[^,]+,opening,(,){11}0\.00,,$/);
    expect(rows[2]).to.match(/^1,[^,]+,credit,invoice-2026-11,,,,,,,,,,20\.00,20\.00,,api:ops$/);
    expect(rows[3]).to.match(/^,[^,]+,closing,(,){11}20\.00,,$/);
    const file = await admin("GET", `/projects/${projectId}/billing/statement?format=json&month=${month}`);
    expect(file.headers.get("content-disposition")).to.match(/\.json"$/);
    expect(JSON.parse(file.text)).to.deep.equal(json.json);
    const bad = await admin("GET", `/projects/${projectId}/billing/statement?month=2026-13`);
    expect([bad.status, bad.json.error.message]).to.deep.equal([400, 'month: must be YYYY-MM (a calendar month, UTC), not "2026-13"']);
    expect((await admin("GET", `/projects/${projectId}/billing/statement?format=pdf`)).status).to.equal(400);

    const databasePath = path.join(path.dirname(embedded.manifestPath), "paymaster.sqlite");
    const text = await runCliInProcess(["--database", databasePath, "billing", "statement", projectId, "--format", "csv"]);
    expect(text.code, text.stderr).to.equal(0);
    expect(text.stdout.trim().split("\n")).to.deep.equal(rows.filter((r) => r !== ""));
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pm-statement-")), "s.csv");
    const written = await runCliInProcess(["--database", databasePath, "billing", "statement", projectId, "--month", month, "--format", "csv", "--output", out]);
    expect(written.code, written.stderr).to.equal(0);
    expect(await readFile(out, "utf8")).to.equal(csv.text);
    const credited = await runCliInProcess(["--database", databasePath, "billing", "credit", projectId, "--usd", "0.5", "--reference", "cli-1"]);
    expect(credited.code, credited.stderr).to.equal(0);
    expect(credited.stdout).to.match(/^balanceUsd\s+20\.50$/m);
    const adjusted = await runCliInProcess(["--database", databasePath, "billing", "adjust", projectId, "--usd", "-0.5", "--reference", "cli-fix-1"]);
    expect(adjusted.code, adjusted.stderr).to.equal(0);
    expect(adjusted.stdout).to.match(/^balanceUsd\s+20\.00$/m);
    const usage = await runCliInProcess(["--database", databasePath, "billing", "credit", projectId, "--usd", "-1", "--reference", "neg"]);
    expect([usage.code, usage.stderr.trim()]).to.deep.equal([2, 'paymaster: usd: must be an amount of dollars with at most 6 decimals (e.g. "25.50"), not "-1"']);
  });

  it("the metrics show a billed project's balance, what it holds and its alert threshold", async () => {
    const metrics = new ServiceMetrics({ store, defaultMetrics: false });
    const body = (await metrics.exposition()).body;
    expect(body).to.include(`paymaster_project_balance_usd{project="${projectId}"} 20`);
    expect(body).to.include(`paymaster_project_balance_held_usd{project="${projectId}"} 0`);
    expect(body).to.include(`paymaster_project_balance_alert_usd{project="${projectId}"} 5`);
  });

  it("a browser key's unsigned ops from one client hold at most its share of the balance (10 %): then 429, and the project's server key is not bounded (third review, finding 2)", async () => {
    const project = await store.createProject("browser dapp");
    const browser = await store.createApiKey(project.id, "public");
    await store.setApiKeyAccess(browser.apiKey.id, { allowedOrigins: ["https://dapp.example"], allowedIps: null });
    const server = await store.createApiKey(project.id, "backend");
    await store.createStrategy({ projectId: project.id, code: "BROWSER", name: "browser" });
    await store.setBillingPlan(project.id, { enabled: true, markupBps: 0, feeUsdMicros: 0n });
    await store.addBillingEntry({ projectId: project.id, kind: "credit", amountUsdMicros: 10n ** 12n, reference: "browser-credit", actor: "cli:test" });
    const op = async (key: string, origin?: string) => {
      const wallet = await newWallet(embedded, "v0.7");
      const response = await fetch(`${embedded.running.url}/api/v1/paymaster/local?apiKey=${key}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(origin ? { origin } : {}) },
        body: JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: "BROWSER", version: "v0.7" }] }),
      });
      return { status: response.status, body: (await response.json()) as { data: Record<string, unknown> } };
    };
    const first = await op(browser.plaintext, "https://dapp.example");
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    const hold = (await store.getBillingAccount(project.id)).heldUsdMicros;
    // The balance made 25 holds: this client's share (10 %) is 2.5 of them.
    const balance = (await store.getBillingAccount(project.id)).balanceUsdMicros;
    await store.addBillingEntry({ projectId: project.id, kind: "adjustment", amountUsdMicros: 25n * hold - balance, reference: "browser-trim", actor: "cli:test" });
    expect((await op(browser.plaintext, "https://dapp.example")).status).to.equal(200);
    // Two holds now (each op's own gas and price: not exactly twice the first).
    const heldByTwo = (await store.getBillingAccount(project.id)).heldUsdMicros;
    expect(Number(heldByTwo - 2n * hold)).to.be.within(-Number(hold) / 10, Number(hold) / 10);
    const refused = await op(browser.plaintext, "https://dapp.example");
    expect(refused.status, JSON.stringify(refused.body)).to.equal(429);
    expect(refused.body.data).to.include({ reason: "TOO_MANY_OUTSTANDING", scope: "clientIp", shareOfBalance: "10%" });
    expect((await store.getBillingAccount(project.id)).heldUsdMicros, "the refused op holds nothing").to.equal(heldByTwo);
    expect((await op(server.plaintext)).status, "the server-side key is not bounded by the share").to.equal(200);
  });

  describe("100 requests at once against a balance that covers K holds -> exactly the ops whose holds fit", () => {
    /**
     * Every accepted op's hold fits in the balance together, and every refused one asked for more than what was
     * left at the end (nothing was released during the burst, so what was left when it was refused was no less).
     */
    async function expectExact(s: Store, project: string, results: Awaited<ReturnType<typeof sponsorBurst>>, sender: `0x${string}`, keyBase: bigint, balance: bigint, markupBps: number) {
      const other = results.filter((r) => r.status !== 200 && r.status !== 402).map((r) => r.body);
      expect(other, JSON.stringify(other[0])).to.deep.equal([]);
      const ep = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
      let held = 0n;
      for (const [i, r] of results.entries()) {
        if (r.status !== 200) continue;
        const active = await s.findActiveSponsorship({ network: "local", entryPoint: ep, sender, nonce: (keyBase + BigInt(i)) << 64n });
        held += holdFor({ basis: "gas", nativeUsd: NATIVE_USD, markupBps, feeUsdMicros: 0n }, active!.record.maxCostWei);
      }
      const accepted = results.filter((r) => r.status === 200).length;
      const refusals = results.filter((r) => r.status === 402);
      expect(accepted, "some fit").to.be.greaterThan(2);
      expect(refusals.length, "some do not").to.be.greaterThan(50);
      expect(refusals.every((r) => r.body.data.reason === "PROJECT_BALANCE_EXHAUSTED")).to.equal(true);
      const account = await s.getBillingAccount(project);
      expect(account.heldUsdMicros, "held is exactly the accepted ops' holds").to.equal(held);
      expect(held <= balance, "never over the balance").to.equal(true);
      for (const r of refusals) expect(BigInt(Math.round(Number(r.body.data.requiredUsd) * 1e6)) > balance - held).to.equal(true);
    }

    /** A project with a strategy BURST, billed at `markupBps` (no fee), credited `balance` USD micros; its key. */
    async function billedProject(s: Store, markupBps: number, balance: bigint) {
      const project = await s.createProject("burst");
      const { plaintext } = await s.createApiKey(project.id);
      await s.createStrategy({ projectId: project.id, code: "BURST", name: "burst" });
      await s.setBillingPlan(project.id, { enabled: true, markupBps });
      await s.addBillingEntry({ projectId: project.id, kind: "credit", amountUsdMicros: balance, reference: `burst-${project.id}`, actor: "cli:test" });
      return { project, plaintext };
    }

    it("on SQLite", async () => {
      const { project, plaintext } = await billedProject(store, 1000, 5_000_000n);
      const sender = await deployAccount(embedded, 14);
      (embedded.running.service.config as { reservations?: object }).reservations = { maxOutstandingPerSender: 1000 };
      try {
        const results = await sponsorBurst(embedded, [endpoint.replace(/apiKey=.*/, `apiKey=${plaintext}`)], { sender, ownerIndex: 14, extra: { strategy_code: "BURST" }, keyBase: 1000n });
        await expectExact(store, project.id, results, sender, 1000n, 5_000_000n, 1000);
      } finally {
        delete (embedded.running.service.config as { reservations?: object }).reservations;
      }
    });

    for (const replicas of [1, 2]) {
      it(`on PostgreSQL with ${replicas} service replica${replicas > 1 ? "s" : ""}`, async () => {
        const { services, close } = await startPostgresReplicas(embedded, replicas, `paymaster_billing_${replicas}`);
        try {
          const pg = services[0]!.service.store;
          const { project, plaintext } = await billedProject(pg, 2500, 4_000_000n);
          const sender = await deployAccount(embedded, 15);
          const keyBase = 5000n + BigInt(replicas) * 1000n;
          const endpoints = services.map((s) => `${s.url}/api/v1/paymaster/local?apiKey=${plaintext}`);
          const results = await sponsorBurst(embedded, endpoints, { sender, ownerIndex: 15, extra: { strategy_code: "BURST" }, keyBase });
          await expectExact(pg, project.id, results, sender, keyBase, 4_000_000n, 2500);
        } finally {
          await close();
        }
      });
    }
  });
});
