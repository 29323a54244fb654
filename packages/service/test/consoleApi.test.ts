/**
 * What the operator console stands on, over real HTTP on 127.0.0.1: console sessions (a stateless cookie bound
 * to its admin token, the CSRF check on every change made with it, sign-out, expiry, a removed token, another
 * replica), the console's and the application page's files (each on its own listener only, with their
 * Content-Security-Policy, nothing outside their folders), and the routes added for it against the real
 * embedded chain — network status, activity from the per-minute request counts, usage history, the policy dry
 * run through pm_checkPolicy, gas tank listings and ledgers, a sponsorship's timeline, field-named errors — and
 * the CLI commands reading the same data.
 */
import { expect } from "chai";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { listen, type RunningServer } from "../src/app.ts";
import { createAdminApp } from "../src/adminApi/app.ts";
import type { AdminApiOptions } from "../src/adminApi/options.ts";
import { issueSession, verifySession } from "../src/adminApi/session.ts";
import { siteDir } from "../src/console/static.ts";
import { executeCallData } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { openStore } from "../src/store/index.ts";
import type { Store } from "../src/store/types.ts";
import { runCliInProcess } from "./helpers/cli.ts";
import { call, chainRequest, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const TOKEN = "s".repeat(40);
const OTHER = "o".repeat(40);
const OPTIONS: AdminApiOptions = { host: "127.0.0.1", port: 0, tokens: [{ name: "ops", token: TOKEN }, { name: "ci", token: OTHER }] };

interface Answer {
  status: number;
  json: any;
  headers: Headers;
}

async function http(base: string, method: string, route: string, options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const response = await fetch(`${base}${route}`, {
    method,
    redirect: "manual",
    headers: { "content-type": "application/json", ...options.headers },
    ...(options.raw !== undefined ? { body: options.raw } : options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, json, headers: response.headers };
}

/** A raw GET (fetch would normalise "..": the server must not be the one relying on that). */
function rawGet(base: string, rawPath: string): Promise<{ status: number; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: rawPath, method: "GET" }, (res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString("utf8")));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

const cookieOf = (a: Answer) => /pm_console=([^;]*)/.exec(a.headers.get("set-cookie") ?? "")?.[1];

describe("console sessions and files (admin listener)", function () {
  this.timeout(60_000);
  let dir: string;
  let store: Store;
  let server: RunningServer;
  let clock = 1_900_000_000;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "pm-console-api-"));
    store = await openStore({ databasePath: path.join(dir, "db.sqlite") });
    server = await listen(createAdminApp({ store, networks: ["local"], logger: createLogger("silent"), now: () => clock }, OPTIONS), OPTIONS);
  });
  after(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function signIn(token = TOKEN, headers: Record<string, string> = {}) {
    return http(server.url, "POST", "/admin/v1/session", { body: { token }, headers });
  }

  it("signs in with a token: an HttpOnly, SameSite=Strict cookie scoped to the API, Secure behind HTTPS; a wrong token is refused", async () => {
    const wrong = await signIn("x".repeat(40));
    expect(wrong.status).to.equal(401);
    expect(wrong.json.error.message).to.equal("invalid admin token");
    expect(wrong.headers.get("set-cookie")).to.equal(null);
    expect((await http(server.url, "POST", "/admin/v1/session", { body: {} })).json.error.message).to.match(/^token: required/);
    expect((await http(server.url, "POST", "/admin/v1/session", { raw: "{nope" })).status).to.equal(400);

    const ok = await signIn();
    expect(ok.status).to.equal(200);
    expect(ok.json).to.include({ name: "ops", role: "admin", expiresAt: clock + 8 * 3600 });
    expect(ok.json.csrf).to.match(/^[A-Za-z0-9_-]{43}$/);
    const header = ok.headers.get("set-cookie")!;
    expect(header).to.match(/^pm_console=\d+:ops:[A-Za-z0-9_-]{43}; Path=\/admin\/v1; HttpOnly; SameSite=Strict; Max-Age=28800$/);
    expect(header).to.not.contain(TOKEN);
    const proxied = await signIn(TOKEN, { "x-forwarded-proto": "https" });
    expect(proxied.headers.get("set-cookie")).to.match(/; Secure$/);
    // The session answers who is signed in and its CSRF value; a bearer caller is told its name.
    const cookie = cookieOf(ok)!;
    const me = await http(server.url, "GET", "/admin/v1/session", { headers: { cookie: `other=1; pm_console=${cookie}` } });
    expect(me.json).to.deep.equal(ok.json);
    expect((await http(server.url, "GET", "/admin/v1/session", { headers: { authorization: `Bearer ${OTHER}` } })).json).to.deep.include({ name: "ci", role: "admin", expiresAt: null, csrf: null });
    expect((await http(server.url, "GET", "/admin/v1/session")).status).to.equal(401);
  });

  it("changes made with the cookie need the session's CSRF value and a same-origin request; reads do not", async () => {
    const session = await signIn();
    const cookie = `pm_console=${cookieOf(session)}`;
    const host = new URL(server.url).host;
    const before = (await store.listProjects()).length;
    const attempt = (headers: Record<string, string>) => http(server.url, "POST", "/admin/v1/projects", { body: { name: "by console" }, headers: { cookie, ...headers } });
    const refusals: [Record<string, string>, RegExp][] = [
      [{}, /missing or wrong x-paymaster-csrf/],
      [{ "x-paymaster-csrf": "x".repeat(43) }, /missing or wrong x-paymaster-csrf/],
      [{ "x-paymaster-csrf": session.json.csrf, origin: "http://evil.example" }, /requests from http:\/\/evil\.example are refused/],
      [{ "x-paymaster-csrf": session.json.csrf, "sec-fetch-site": "cross-site" }, /a cross-site request is refused/],
      [{ "x-paymaster-csrf": session.json.csrf, "sec-fetch-site": "same-site" }, /a same-site request is refused/],
    ];
    for (const [headers, message] of refusals) {
      const r = await attempt(headers);
      expect(r.status, JSON.stringify(headers)).to.equal(403);
      expect(r.json.error.message).to.match(message);
    }
    expect((await store.listProjects()).length, "nothing written").to.equal(before);
    expect((await http(server.url, "GET", "/admin/v1/projects", { headers: { cookie } })).status).to.equal(200);
    const made = await attempt({ "x-paymaster-csrf": session.json.csrf, origin: `http://${host}`, "sec-fetch-site": "same-origin" });
    expect(made.status, JSON.stringify(made.json)).to.equal(201);
    const audit = await store.listAudit({ action: "project.create" });
    expect(audit[0]!.actor).to.equal("console:ops");
    // The bearer token needs no CSRF value (no browser sends it by itself).
    expect((await http(server.url, "POST", "/admin/v1/projects", { body: { name: "by api" }, headers: { authorization: `Bearer ${TOKEN}` } })).status).to.equal(201);
  });

  it("a forged, expired or orphaned cookie is refused (and cleared); another replica with the same tokens accepts it", async () => {
    const session = await signIn();
    const value = cookieOf(session)!;
    const [exp, , mac] = value.split(":");
    const forged = [`${Number(exp) + 3600}:ops:${mac}`, `${exp}:ci:${mac}`, `${exp}:ops:${"A".repeat(43)}`, "garbage", `${exp}:nobody:${mac}`];
    for (const cookie of forged) {
      const r = await http(server.url, "GET", "/admin/v1/projects", { headers: { cookie: `pm_console=${cookie}` } });
      expect(r.status, cookie).to.equal(401);
      expect(r.json.error.message).to.match(/sign in again/);
      expect(r.headers.get("set-cookie")).to.match(/^pm_console=; Path=\/admin\/v1; HttpOnly; SameSite=Strict; Max-Age=0/);
    }
    // Stateless: any process with the same tokens accepts it; without the token (removed or changed), none does.
    expect(verifySession(OPTIONS.tokens, value, clock)?.name).to.equal("ops");
    expect(verifySession([{ name: "ops", token: "t".repeat(40) }], value, clock)).to.equal(undefined);
    expect(verifySession([{ name: "ci", token: OTHER }], value, clock)).to.equal(undefined);
    const replica = await listen(createAdminApp({ store, networks: ["local"], logger: createLogger("silent"), now: () => clock }, OPTIONS), OPTIONS);
    try {
      expect((await http(replica.url, "GET", "/admin/v1/projects", { headers: { cookie: `pm_console=${value}` } })).status).to.equal(200);
    } finally {
      await replica.close();
    }
    // At its expiry it ends.
    clock += 8 * 3600;
    expect((await http(server.url, "GET", "/admin/v1/projects", { headers: { cookie: `pm_console=${value}` } })).status).to.equal(401);
    expect(issueSession(OPTIONS.tokens[0]!, clock).cookie).to.not.equal(value);
  });

  it("sign-out clears the cookie; sign-in and sign-out are in the audit log", async () => {
    const session = await signIn();
    const cookie = `pm_console=${cookieOf(session)}`;
    const noCsrf = await http(server.url, "POST", "/admin/v1/session/end", { headers: { cookie } });
    expect(noCsrf.status).to.equal(403);
    const out = await http(server.url, "POST", "/admin/v1/session/end", { headers: { cookie, "x-paymaster-csrf": session.json.csrf } });
    expect(out.status).to.equal(200);
    expect(out.headers.get("set-cookie")).to.match(/^pm_console=; Path=\/admin\/v1; HttpOnly; SameSite=Strict; Max-Age=0$/);
    const actions = (await store.listAudit({ limit: 1000 })).filter((e) => e.action.startsWith("session.")).map((e) => `${e.actor} ${e.action}`);
    expect(actions).to.include("console:ops session.end").and.include("console:ops session.start");
  });

  it("too many sign-in attempts from one address are slowed down (429 with Retry-After)", async () => {
    let last: Answer | undefined;
    for (let i = 0; i < 12; i++) last = await http(server.url, "POST", "/admin/v1/session", { body: { token: "y".repeat(40) } });
    expect(last!.status).to.equal(429);
    expect(Number(last!.headers.get("retry-after"))).to.be.greaterThan(0);
  });

  it("serves the console's built files with a strict CSP; nothing outside its folder", async () => {
    expect((await http(server.url, "GET", "/")).headers.get("location")).to.equal("/console/");
    expect((await http(server.url, "GET", "/console")).headers.get("location")).to.equal("/console/");
    const page = await fetch(`${server.url}/console/`);
    expect(page.status).to.equal(200);
    expect(page.headers.get("content-type")).to.match(/^text\/html/);
    expect(page.headers.get("content-security-policy")).to.contain("default-src 'none'").and.contain("script-src 'self'").and.contain("frame-ancestors 'none'");
    expect(page.headers.get("cache-control")).to.equal("no-cache");
    const html = await page.text();
    const script = /src="assets\/(console-[A-Z0-9]{8}\.js)"/.exec(html)?.[1];
    expect(script, html).to.be.a("string");
    expect(readdirSync(path.join(siteDir("console"), "assets"))).to.include(script);
    const asset = await fetch(`${server.url}/console/assets/${script}`);
    expect(asset.headers.get("cache-control")).to.match(/immutable/);
    expect(asset.headers.get("content-type")).to.match(/^text\/javascript/);
    // Paths out of their canonical form are refused before any route (gate.ts), the rest find no file.
    const refused = { "/console/../package.json": 400, "/console/%2e%2e/%2e%2e/package.json": 400, "/console/.env": 404, "/console/assets/..%2f..%2findex.html": 400, "/console/x.sh": 404, "/console/nope.js": 404 };
    for (const [p, status] of Object.entries(refused)) {
      const r = await rawGet(server.url, p);
      expect(r.status, p).to.equal(status);
      expect(r.body, p).to.not.contain("@paymaster");
    }
  });
});

describe("console routes on the running service (embedded chain)", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let admin: string;
  let configDir: string;
  const bearer = (method: string, route: string, body?: unknown) => http(admin, method, `/admin/v1${route}`, { ...(body === undefined ? {} : { body }), headers: { authorization: `Bearer ${TOKEN}` } });
  const cli = (...args: string[]) => runCliInProcess(["--config", path.join(configDir, "paymaster.json"), ...args, "--json"]);
  let settledHash: string;

  before(async () => {
    embedded = await startTestStack({ admin: OPTIONS });
    admin = embedded.running.adminUrl!;
    configDir = mkdtempSync(path.join(tmpdir(), "pm-console-cli-"));
    writeFileSync(
      path.join(configDir, "paymaster.json"),
      JSON.stringify({
        databasePath: embedded.running.service.config.databasePath,
        networks: [{ name: "local", rpcUrl: "http://127.0.0.1:1", entryPoints: { "v0.7": { verifyingPaymaster: "0x1111111111111111111111111111111111111111", erc20Paymaster: "0x2222222222222222222222222222222222222222" } }, nativeUsdPrice: { type: "fixed", usd: "3000" } }],
      }),
    );
    // One sponsored op that lands and settles, one refused request.
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, answer.body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    settledHash = outcome.event!.userOpHash;
    expect((await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: "NO-SUCH", version: "v0.7" }])).status).to.equal(404);
    await chainRequest(embedded, "evm_mine", []);
    for (let i = 0; i < 100 && (await embedded.running.service.store.findSponsorshipByUserOpHash(settledHash as `0x${string}`))?.status !== "settled"; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await embedded.running.requestCounts.flush();
  });
  after(async () => {
    await embedded?.close();
    rmSync(configDir, { recursive: true, force: true });
  });

  it("network status: deposits, stake and signers read from the chain; the watcher's cursor against the head", async () => {
    const r = await bearer("GET", "/networks");
    expect(r.status, JSON.stringify(r.json)).to.equal(200);
    const [local] = r.json;
    expect(local).to.include({ network: "local", chainId: embedded.stack.chain.chainId, ready: true, error: null });
    expect(local.signer).to.equal(embedded.stack.signer.address);
    expect(local.paymasters).to.have.length(6);
    for (const p of local.paymasters) {
      expect(BigInt(p.depositWei) > 0n, p.label).to.equal(true);
      expect(p.staked, p.label).to.equal(true);
      expect(p.serviceSigners).to.deep.equal([{ address: embedded.stack.signer.address, accepted: true }]);
    }
    const head = Number(await chainRequest<string>(embedded, "eth_blockNumber"));
    expect(Number(local.watcher.headBlock)).to.be.at.least(head - 1);
    expect(Number(local.watcher.cursorBlock)).to.be.at.most(Number(local.watcher.headBlock));
    expect(Number(local.watcher.lagBlocks)).to.equal(Number(BigInt(local.watcher.headBlock) - BigInt(local.watcher.cursorBlock)));
    expect(JSON.stringify(r.json)).to.not.contain(embedded.stack.chain.url); // RPC URLs may carry keys
    expect((await bearer("GET", "/info")).json).to.deep.equal({ networks: ["local"] });
  });

  it("activity: requests ok and refused by reason (from the per-minute counts), sponsorships by status with their cost", async () => {
    const r = await bearer("GET", "/activity?since=" + (Math.floor(Date.now() / 1000) - 3600));
    expect(r.status, JSON.stringify(r.json)).to.equal(200);
    expect(r.json.bucketSeconds).to.equal(60);
    expect(r.json.requests.perBucket).to.have.length.within(60, 62);
    expect(r.json.requests.ok).to.be.at.least(1);
    expect(r.json.requests.byReason).to.deep.include({ reason: "STRATEGY_NOT_FOUND", count: 1 });
    expect(r.json.requests.byMethod.find((m: any) => m.method === "pm_sponsorUserOperation")).to.include({ ok: 1, errors: 1 });
    expect(r.json.sponsorships).to.include({ count: 1, settled: 1, truncated: false });
    const settled = await embedded.running.service.store.findSponsorshipByUserOpHash(settledHash as `0x${string}`);
    expect(r.json.sponsorships.spentWei).to.equal(settled!.settlement!.actualGasCostWei.toString());
    // A second flush adds only what is new.
    await embedded.running.requestCounts.flush();
    expect((await bearer("GET", "/activity?since=" + (Math.floor(Date.now() / 1000) - 3600))).json.requests.ok).to.equal(r.json.requests.ok + 0);
    for (const [q, message] of [["?bucket=7", /bucket: one of 60/], ["?since=2000-01-01", /at most 35 days/], ["?network=mars", /unknown network "mars"/], ["?since=tomorrow", /since: not unix seconds/]] as const) {
      const bad = await bearer("GET", `/activity${q}`);
      expect(bad.status, q).to.equal(400);
      expect(bad.json.error.message).to.match(message);
    }
    const out = await cli("activity", "--since", String(Math.floor(Date.now() / 1000) - 3600));
    expect(out.code, out.stderr).to.equal(0);
    expect(out.json.sponsorships.count).to.equal(1);
  });

  it("the strategy dry run is pm_checkPolicy's: the same verdicts; a bad operation is named", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const op = wireOp(wallet, executeCallData(wallet.owner.address));
    const r = await bearer("POST", `/strategies/${embedded.strategyCode}/check`, { userOp: op, version: "v0.7" });
    expect(r.status, JSON.stringify(r.json)).to.equal(200);
    const direct = await call(embedded.endpoint, "pm_checkPolicy", [op, { strategy_code: embedded.strategyCode, version: "v0.7" }]);
    expect(r.json).to.deep.equal(direct.body.data);
    expect(r.json.wouldSponsor).to.equal(true);
    const bad = await bearer("POST", `/strategies/${embedded.strategyCode}/check`, { userOp: { ...op, callData: "0xzz" }, version: "v0.7" });
    expect(bad.status).to.equal(400);
    expect(bad.json.error.message).to.match(/^INVALID_PARAMS: .*userOp\.callData/);
    expect((await bearer("POST", `/strategies/${embedded.strategyCode}/check`, { version: "v0.7" })).json.error.message).to.match(/^userOp: required/);
    expect((await bearer("POST", "/strategies/NOPE/check", { userOp: op })).status).to.equal(404);
    expect((await bearer("POST", `/strategies/${embedded.strategyCode}/check`, { userOp: op, network: "mars" })).json.error.message).to.match(/unknown network "mars"/);
    // Without the running service (the CLI's case) it says so.
    const store = embedded.running.service.store;
    const bare = await listen(createAdminApp({ store, networks: ["local"], logger: createLogger("silent") }, OPTIONS), OPTIONS);
    try {
      for (const [method, route, body] of [["GET", "/networks", undefined], ["POST", `/strategies/${embedded.strategyCode}/check`, { userOp: op }]] as const) {
        const r2 = await http(bare.url, method, `/admin/v1${route}`, { ...(body ? { body } : {}), headers: { authorization: `Bearer ${TOKEN}` } });
        expect(r2.status).to.equal(503);
        expect(r2.json.error).to.include({ code: "UNAVAILABLE" });
      }
    } finally {
      await bare.close();
    }
  });

  it("usage history per UTC day, tanks with their ledger, a sponsorship's timeline; the CLI reads the same", async () => {
    const history = await bearer("GET", `/strategies/${embedded.strategyCode}/history?days=3`);
    expect(history.json.days).to.have.length(3);
    const today = history.json.days[2];
    expect(today.day).to.equal(new Date().toISOString().slice(0, 10));
    expect(today).to.include({ ops: 1, reservedWei: "0", released: 0 });
    const record = await embedded.running.service.store.findSponsorshipByUserOpHash(settledHash as `0x${string}`);
    expect(today.spentWei).to.equal(record!.settlement!.actualGasCostWei.toString());
    expect((await bearer("GET", `/strategies/${embedded.strategyCode}/history?days=0`)).json.error.message).to.match(/^days: an integer from 1 to 90/);
    const cliHistory = await cli("strategy", "history", embedded.strategyCode, "--days", "3");
    expect(cliHistory.json).to.deep.equal(history.json);

    const tanks = await bearer("GET", "/tanks?network=local");
    const senders = embedded.demoAccounts.map((a) => a.sender);
    expect(tanks.json.map((t: any) => t.sender).sort()).to.deep.equal([...senders].sort());
    const ledger = await bearer("GET", `/tanks/local/${senders[1]}/ledger`);
    expect(ledger.json).to.include({ balanceWei: (10n ** 18n).toString(), availableWei: (10n ** 18n).toString() });
    expect(ledger.json.entries).to.deep.equal([{ kind: "credit", at: ledger.json.entries[0].at, amountWei: (10n ** 18n).toString(), reference: "demo:v0.7" }]);
    expect((await cli("tank", "ledger", "--network", "local", "--sender", senders[1]!)).json).to.deep.equal(ledger.json);
    expect((await cli("tank", "list")).json.length).to.equal(senders.length);
    expect((await bearer("GET", "/tanks?limit=0")).status).to.equal(400);

    const shown = await bearer("GET", `/sponsorships/${settledHash}`);
    expect(shown.json.status).to.equal("settled");
    const t = shown.json.timeline;
    expect(t.reservedAt).to.equal(shown.json.createdAt);
    expect(t.signedAt).to.equal(shown.json.createdAt);
    expect(t.settledAt).to.be.at.least(t.signedAt);
    expect(t).to.include({ releasedAt: null, releaseReason: null });
  });

  it("a refused strategy names each wrong field (issues), with the CLI's message", async () => {
    const r = await bearer("POST", "/strategies", { code: "bad one", project: "x", rules: { caps: { daily: { maxUsd: "lots", maxOps: 0 } }, targets: [{ address: "0x12" }] } });
    expect(r.status).to.equal(400);
    expect(r.json.error.issues).to.deep.equal([{ field: "code", message: "required, 1-64 letters, digits, '.', '_' or '-'" }]);
    const rules = await bearer("POST", "/strategies", { code: "ok", project: "x", rules: { caps: { daily: { maxUsd: "lots", maxOps: 0 } }, targets: [{ address: "0x12" }] } });
    expect(rules.json.error.issues.map((i: any) => i.field).sort()).to.deep.equal(["rules.caps.daily.maxOps", "rules.caps.daily.maxUsd", "rules.targets[0].address"]);
    for (const issue of rules.json.error.issues) expect(rules.json.error.message).to.contain(`${issue.field}: ${issue.message}`);
    expect(rules.json.error.message).to.match(/^body: /);
    const noProject = await bearer("POST", "/strategies", { code: "ok", project: "nope" });
    expect(noProject.status).to.equal(404);
    expect(noProject.json.error.issues).to.deep.equal([{ field: "project", message: 'project "nope" not found' }]);
  });

  it("the application page is on the public port only; the console and sessions never are", async () => {
    const publicUrl = embedded.running.url;
    expect((await http(publicUrl, "GET", "/apply")).headers.get("location")).to.equal("/apply/");
    const page = await fetch(`${publicUrl}/apply/`);
    expect(page.status).to.equal(200);
    expect(page.headers.get("content-security-policy")).to.contain("connect-src 'self'");
    expect(await page.text()).to.match(/assets\/apply-[A-Z0-9]{8}\.js/);
    for (const route of ["/console/", "/console/index.html", "/admin/v1/session"]) {
      const r = route === "/admin/v1/session" ? await http(publicUrl, "POST", route, { body: { token: TOKEN } }) : await http(publicUrl, "GET", route);
      expect(r.status, route).to.equal(404);
    }
    expect((await rawGet(publicUrl, "/apply/../console/index.html")).status).to.equal(404);
    expect((await http(admin, "GET", "/apply/")).status, "no application page on the admin listener (not a canonical admin path)").to.equal(400);
    expect((await http(admin, "GET", "/apply")).status, "no application page on the admin listener (no principal)").to.equal(401);
  });
});
