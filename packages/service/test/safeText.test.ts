/**
 * Safe text (src/text/safeText.ts), on SQLite and PostgreSQL: every door refuses control characters (NUL
 * included) and bidirectional overrides with a 400 that names the field — the public application form, the
 * v1 extra data, the ERC-7677 context, the admin API's body, query and path — and the CLI prints what is
 * already stored with every such character escaped. (Before: raw escape sequences in `key applications`, and
 * a NUL answered 500 INTERNAL_ERROR on PostgreSQL.)
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ENTRY_POINT_V07_ADDRESS } from "@paymaster/shared";
import { adminApiOptionsFromEnv } from "../src/adminApi/options.ts";
import { createAdminApp } from "../src/adminApi/app.ts";
import { listen, type RunningServer } from "../src/app.ts";
import { createLogger } from "../src/log.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { runCliInProcess } from "./helpers/cli.ts";
import { escapeForTerminal, findUnsafeText, unsafeTextProblem } from "../src/text/safeText.ts";
import { startTestService, validUserOpV06, validUserOpV07, type TestService } from "./helpers/rpcService.ts";

const TOKEN = "s".repeat(40);
const APPLICATION = { contact: "dev@team.example", project: "Team dapp", networks: ["local"], use: "Sponsor mints" };
/** Terminal steering: CSI clear screen, OSC 52 clipboard write, OSC 8 link, C1 CSI, a right-to-left override. */
const HOSTILE = ["\u001b[2J", "\u001b]52;c;ZWNobyBoaQ==\u0007", "\u001b]8;;https://evil.example\u001b\\link", "\u009b31m", "\u202egnp.exe"];
/** Any character a terminal could act on, left raw in output. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, text, json: text === "" ? undefined : JSON.parse(text) };
}

describe("safe text: the rule and the escaper", () => {
  it("refuses C0 (TAB and LF only in multi-line text, CR never), DEL, C1 and bidi overrides; accepts other Unicode", () => {
    for (const char of ["\u0000", "\u0007", "\u001b", "\r", "\u007f", "\u0085", "\u009b", "\u202a", "\u202e", "\u2066", "\u2069"]) {
      expect(unsafeTextProblem(`a${char}b`), JSON.stringify(char)).to.match(/^contains .* at position 1\)/);
      expect(unsafeTextProblem(`a${char}b`, { multiline: true }), JSON.stringify(char)).to.be.a("string");
    }
    for (const char of ["\n", "\t"]) {
      expect(unsafeTextProblem(`a${char}b`)).to.be.a("string");
      expect(unsafeTextProblem(`a${char}b`, { multiline: true })).to.equal(undefined);
    }
    expect(unsafeTextProblem("Équipe ✓ 日本 \u200b 🔑")).to.equal(undefined);
    expect(findUnsafeText({ a: [{ b: "ok" }, { use: "x\ny" }, { c: "x\ny" }] })).to.deep.include({ field: "a[2].c" });
    expect(findUnsafeText({ "k\u001b": 1 })?.message).to.match(/^a field name contains a control character/);
    // Deep input is walked without recursion.
    let deep: unknown = "\u0000";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findUnsafeText(deep)?.field).to.match(/^(\[0\]){100000}$/);
  });
  it("escapes every character a terminal could act on, visibly; --json output stays valid JSON", () => {
    expect(escapeForTerminal("a\u001b[2Jb\tc\nd\u009b\u202e")).to.equal("a\\x1b[2Jb\\tc\\nd\\u009b\\u202e");
    expect(escapeForTerminal("l1\nl2\u0007", { keepNewlines: true })).to.equal("l1\nl2\\x07");
    const json = escapeForTerminal(JSON.stringify({ v: "\u0085\u202e\u001b" }), { keepNewlines: true });
    expect(json).to.not.match(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/u);
    expect(JSON.parse(json).v).to.equal("\u0085\u202e\u001b");
  });
});

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`safe text at every door (${backend})`, function () {
    this.timeout(60_000);
    let database: TestDatabase | undefined;
    let t: TestService;
    let admin: RunningServer;
    let dir: string;

    before(async () => {
      if (backend === "PostgreSQL") database = await createTestDatabase("paymaster_safe_text");
      t = await startTestService(database ? { databaseUrl: database.url } : {});
      const options = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })!;
      admin = await listen(createAdminApp({ store: t.store, networks: ["local", "base-sepolia"], logger: createLogger("silent") }, options), options);
      dir = mkdtempSync(path.join(tmpdir(), "pm-safe-text-"));
      const network = { name: "local", rpcUrl: "http://127.0.0.1:1", entryPoints: { "v0.7": { verifyingPaymaster: "0x1111111111111111111111111111111111111111", erc20Paymaster: "0x2222222222222222222222222222222222222222" } }, nativeUsdPrice: { type: "fixed", usd: "3000" } };
      writeFileSync(path.join(dir, "paymaster.json"), JSON.stringify({ databasePath: t.service.config.databasePath, networks: [network] }));
    });
    after(async () => {
      await admin?.close();
      await t?.close();
      await database?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("the public application form refuses controls and bidi overrides naming the field; `use` may hold newlines and tabs", async () => {
      const url = `${t.url}/api/v1/applications`;
      const cases: [string, string, RegExp][] = [
        ["contact", `dev${HOSTILE[0]}@x`, /^contact: contains a control character \(U\+001B at position 3\)/],
        ["project", "Team\u0000dapp", /^project: contains a control character \(U\+0000/],
        ["use", HOSTILE[3]!, /^use: contains a control character \(U\+009B/],
        ["use", HOSTILE[4]!, /^use: contains a bidirectional override \(U\+202E/],
      ];
      // Four refusals and one acceptance: the form's burst of 5 per client address.
      for (const [field, value, message] of cases) {
        const answer = await post(url, { ...APPLICATION, [field]: value });
        expect(answer.status, `${field} ${JSON.stringify(value)}: ${answer.text}`).to.equal(400);
        expect(answer.json.error.code).to.equal("INVALID_INPUT");
        expect(answer.json.error.message).to.match(message);
        expect(answer.text).to.not.match(RAW_CONTROL);
      }
      const multiline = await post(url, { ...APPLICATION, use: "Sponsor mints:\n\t- first\n\t- second" });
      expect(multiline.status, multiline.text).to.equal(202);
      const claim = await post(`${url}/claim`, { claimToken: "pmclaim_\u0000" });
      expect(claim.status, claim.text).to.equal(400);
      expect(claim.json.error.message).to.match(/^claimToken: contains a control character \(U\+0000/);
    });

    it("v1 extra data and the ERC-7677 context: a NUL or ESC in strategy_code / token is INVALID_PARAMS (400), never 500", async () => {
      for (const [extra, field] of [
        [{ strategy_code: "promo\u0000" }, "strategy_code"],
        [{ strategy_code: "\u001b[2J" }, "strategy_code"],
        [{ token: "USDC\u0000" }, "token"],
        [{ strategy_code: "promo\u202e" }, "strategy_code"],
      ] as const) {
        const answer = await t.call("pm_sponsorUserOperation", [validUserOpV06(), extra]);
        expect(answer.status, answer.text).to.equal(400);
        expect(answer.json.data.reason).to.equal("INVALID_PARAMS");
        expect(answer.json.message).to.include(field);
      }
      for (const context of [{ strategy_code: "\u0000" }, { token: "\u0085" }]) {
        const response = await fetch(`${t.url}/rpc/v1/local?apiKey=${encodeURIComponent(t.keys.active)}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "pm_getPaymasterStubData", params: [validUserOpV07(), ENTRY_POINT_V07_ADDRESS, "0x539", context] }),
        });
        const text = await response.text();
        expect(response.status, text).to.not.be.at.least(500);
        const json = JSON.parse(text);
        expect(json.error.code, text).to.equal(-32602);
        expect(json.error.message, text).to.match(/params\[3\]\.(strategy_code|token): contains a control character/);
      }
    });

    it("the admin API refuses them in the body, the query and the path, naming the field (400 INVALID_INPUT)", async () => {
      const call = async (method: string, route: string, body?: unknown) => {
        const response = await fetch(`${admin.url}/admin/v1${route}`, {
          method,
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await response.text();
        return { status: response.status, text, json: JSON.parse(text) };
      };
      const cases: [string, string, unknown, string][] = [
        ["POST", "/projects", { name: "Acme\u0000" }, "name"],
        ["POST", "/projects", { name: `Acme${HOSTILE[1]}` }, "name"],
        ["POST", "/projects", { name: "Acme\nInc" }, "name"],
        ["POST", "/applications/x/reject", { reason: "no\r\nway" }, "reason"],
        ["POST", "/apply", { projects: [{ name: "\u202eAcme" }] }, "projects[0].name"],
        ["POST", "/apply", { projects: [{ "na\u0000me": "Acme" }] }, "projects[0]"],
        ["GET", "/audit?target=%1B%5B2J", undefined, "query.target"],
      ];
      // A control character in the path is percent-encoded, which the admin listener's gate refuses before any
      // route runs (only canonical paths are taken: docs/admin-api.md).
      for (const route of ["/projects/%00", "/strategies/promo%00", "/projects/%1B%5B2J"]) {
        const answer = await call("GET", route, undefined);
        expect(answer.status, `GET ${route}: ${answer.text}`).to.equal(400);
        expect(answer.json.error.code).to.equal("INVALID_PATH");
        expect(answer.text).to.not.match(RAW_CONTROL);
      }
      for (const [method, route, body, field] of cases) {
        const answer = await call(method, route, body);
        expect(answer.status, `${method} ${route}: ${answer.text}`).to.equal(400);
        expect(answer.json.error.code).to.equal("INVALID_INPUT");
        expect(answer.json.error.issues[0].field, answer.text).to.equal(field);
        expect(answer.text).to.not.match(RAW_CONTROL);
      }
      expect((await t.store.listProjects()).map((p) => p.name)).to.not.include("Acme\u0000");
    });

    it("the CLI prints stored text with every control escaped (tables, --json, errors) and refuses it in arguments", async () => {
      // Rows stored before the form refused them (or written by hand): the CLI must still not pass them to the terminal.
      const hostile = await t.store.createKeyApplication({ contact: HOSTILE[1]!, projectName: HOSTILE[0]!, networks: ["local"], intendedUse: HOSTILE.join(" ") });
      const env: Record<string, string> = database ? { DATABASE_URL: database.url } : {};
      const config = ["--config", path.join(dir, "paymaster.json")];
      const text = await runCliInProcess([...config, "key", "applications"], env);
      expect(text.code, text.stderr).to.equal(0);
      expect(text.stdout).to.include(hostile.id);
      expect(text.stdout).to.not.match(RAW_CONTROL);
      expect(text.stdout).to.include("\\x1b[2J").and.include("\\x1b]52;c;").and.include("\\u009b31m").and.include("\\u202egnp.exe");
      const json = await runCliInProcess([...config, "key", "applications", "--json"], env);
      expect(json.stdout).to.not.match(RAW_CONTROL);
      // Still JSON, with the same text in it.
      expect(json.json.find((a: { id: string }) => a.id === hostile.id).intendedUse).to.equal(HOSTILE.join(" "));
      const refused = await runCliInProcess([...config, "project", "create", `Acme${HOSTILE[0]}`], env);
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.match(/name: contains a control character \(U\+001B/);
      expect(refused.stderr).to.not.match(RAW_CONTROL);
      const file = path.join(dir, "apply.yaml");
      writeFileSync(file, 'projects:\n  - name: "Acme\\u009b"\n');
      const applied = await runCliInProcess([...config, "apply", "-f", file], env);
      expect(applied.code).to.equal(2);
      expect(applied.stderr).to.match(/apply\.yaml: projects\[0\]\.name: contains a control character \(U\+009B/);
    });
  });
}
