/**
 * The admin HTTP API over real HTTP on 127.0.0.1, on real SQLite and real PostgreSQL: bearer tokens, JSON in
 * and out, the OpenAPI document, the audit log, errors that name what is wrong, and no admin route on the
 * public port.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { listen, type RunningServer } from "../src/app.ts";
import { createAdminApp, matchToken } from "../src/adminApi/app.ts";
import { OPENAPI_PATH } from "../src/adminApi/openapi.ts";
import { adminApiOptionsFromEnv } from "../src/adminApi/options.ts";
import { ADMIN_ROUTES } from "../src/adminApi/routes.ts";
import { ConfigError } from "../src/config/errors.ts";
import { createLogger } from "../src/log.ts";
import { openStore } from "../src/store/index.ts";
import type { Store } from "../src/store/types.ts";
import { createTestDatabase } from "./helpers/cli.ts";
import { startTestService } from "./helpers/rpcService.ts";
import { startTestStack } from "./helpers/stack.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig } from "../src/local/embedded.ts";
import { startService } from "../src/server.ts";

const TOKEN = "t".repeat(40);
const OTHER_TOKEN = "u".repeat(40);
const SENDER = "0x9406Cc6185a346906296840746125a0E44976454";

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`admin HTTP API (${backend})`, function () {
    this.timeout(60_000);
    let dir: string;
    let store: Store;
    let server: RunningServer;
    let drop: (() => Promise<void>) | undefined;

    async function call(method: string, route: string, body?: unknown, token: string | null = TOKEN, raw?: string) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (token !== null) headers.authorization = `Bearer ${token}`;
      const response = await fetch(`${server.url}${route}`, { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
      const text = await response.text();
      return { status: response.status, json: text === "" ? undefined : JSON.parse(text), headers: response.headers };
    }

    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), "pm-admin-api-"));
      let databaseUrl: string | undefined;
      if (backend === "PostgreSQL") {
        const db = await createTestDatabase("paymaster_admin_api");
        drop = db.drop;
        databaseUrl = db.url;
      }
      store = await openStore({ databasePath: path.join(dir, "db.sqlite"), databaseUrl });
      const options = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN},ci=${OTHER_TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })!;
      server = await listen(createAdminApp({ store, networks: ["local", "base-sepolia"], logger: createLogger("silent") }, options), options);
    });

    after(async () => {
      await server?.close();
      await store?.close();
      await drop?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it("needs a bearer token (but not for the OpenAPI document, which lists every route)", async () => {
      const missing = await call("GET", "/admin/v1/projects", undefined, null);
      expect(missing.status).to.equal(401);
      expect(missing.json).to.deep.equal({ error: { code: "UNAUTHORIZED", message: "missing Authorization: Bearer <admin token> (or sign in to the console)" } });
      expect(missing.headers.get("www-authenticate")).to.match(/^Bearer/);
      const wrong = await call("GET", "/admin/v1/projects", undefined, "x".repeat(40));
      expect(wrong.status).to.equal(401);
      expect(wrong.json.error.message).to.equal("invalid admin token");
      expect((await call("GET", "/admin/v1/projects", undefined, OTHER_TOKEN)).status).to.equal(200);

      const doc = await call("GET", OPENAPI_PATH, undefined, null);
      expect(doc.status).to.equal(200);
      expect(doc.json.openapi).to.equal("3.1.0");
      for (const route of ADMIN_ROUTES) {
        const p = `/admin/v1${route.path.replace(/:(\w+)/g, "{$1}")}`;
        expect(doc.json.paths[p]?.[route.method], `${route.method} ${p}`).to.have.property("summary", route.summary);
      }
    });

    it("the CLI's operations over JSON, each mutation in the audit log with the token's name", async () => {
      const project = await call("POST", "/admin/v1/projects", { name: "Api Co" });
      expect(project.status).to.equal(201);
      const key = await call("POST", "/admin/v1/keys", { projectId: project.json.id, label: "web" });
      expect(key.status).to.equal(201);
      expect(key.json.key).to.match(/^pm_/);
      expect((await store.findApiKey(key.json.key))?.id).to.equal(key.json.id);
      const keys = await call("GET", `/admin/v1/keys?project=${project.json.id}`);
      expect(keys.json.map((k: { id: string }) => k.id)).to.deep.equal([key.json.id]);
      expect(JSON.stringify(keys.json)).not.to.contain(key.json.key);

      const strategy = await call("POST", "/admin/v1/strategies", { code: "api-free", project: project.json.id, rules: { caps: { daily: { maxOps: 3 } } } });
      expect(strategy.status, JSON.stringify(strategy.json)).to.equal(201);
      const patched = await call("PATCH", "/admin/v1/strategies/api-free", { name: "Renamed", networks: ["local"] });
      expect(patched.json).to.deep.include({ code: "api-free", name: "Renamed", networks: ["local"], rules: { caps: { daily: { maxOps: 3 } } } });
      expect((await call("POST", "/admin/v1/strategies/api-free/disable")).json.status).to.equal("disabled");
      const usage = await call("GET", "/admin/v1/strategies/api-free/usage");
      expect(usage.json.caps).to.have.length(1);
      expect(usage.json.caps[0]).to.include({ cap: "caps.daily", ops: 0, maxOps: 3, remainingOps: 3 });

      const credit = await call("POST", `/admin/v1/tanks/local/${SENDER}/credit`, { wei: "5000", reference: "api-1" });
      expect(credit.json).to.include({ balanceWei: "5000", reference: "api-1" });
      const over = await call("POST", `/admin/v1/tanks/local/${SENDER}/debit`, { wei: "5001" });
      expect(over.status).to.equal(409);
      expect(over.json.error.message).to.match(/5000 wei available, less than 5001/);
      expect((await call("GET", `/admin/v1/tanks/local/${SENDER}`)).json.availableWei).to.equal("5000");

      expect((await call("POST", `/admin/v1/keys/${key.json.id}/revoke`)).json.status).to.equal("revoked");
      expect((await store.findApiKey(key.json.key))?.status).to.equal("revoked");

      const applied = await call("POST", "/admin/v1/apply", { projects: [{ name: "Api Co", strategies: [{ code: "api-free", name: "Renamed", networks: ["local"], status: "disabled", rules: { caps: { daily: { maxOps: 3 } } } }] }] });
      expect(applied.json.map((c: { action: string }) => c.action)).to.deep.equal(["unchanged", "unchanged"]);
      expect((await call("GET", "/admin/v1/sponsorships?status=settled")).json).to.deep.equal([]);

      const audit = await call("GET", "/admin/v1/audit?limit=50");
      const actions = audit.json.map((e: { action: string }) => e.action);
      expect(actions).to.include.members(["project.create", "key.create", "strategy.create", "strategy.update", "strategy.disable", "tank.credit", "key.revoke"]);
      expect(actions).not.to.include("tank.debit"); // refused: nothing written
      expect(audit.json.every((e: { actor: string }) => e.actor === "api:ops")).to.equal(true);
      const patch = audit.json.find((e: { action: string }) => e.action === "strategy.update");
      expect(patch.before.name).to.equal("api-free");
      expect(patch.after.name).to.equal("Renamed");
      expect(JSON.stringify(audit.json)).not.to.contain(key.json.key);
    });

    it("client mistakes are 4xx with a message naming what is wrong, and write nothing", async () => {
      const before = (await call("GET", "/admin/v1/audit?limit=1000")).json.length;
      const cases: [string, string, unknown, number, RegExp, string?][] = [
        ["POST", "/admin/v1/strategies", { code: "bad", project: "nope", rules: { caps: { daily: { maxUsd: "lots" } } } }, 400, /body: rules\.caps\.daily\.maxUsd/],
        ["POST", "/admin/v1/strategies", { code: "bad", project: "nope" }, 404, /project "nope" not found/],
        ["POST", `/admin/v1/tanks/mars/${SENDER}/credit`, { wei: "1" }, 400, /unknown network "mars"/],
        ["POST", "/admin/v1/tanks/local/0xabc/credit", { wei: "1" }, 400, /sender: not an address/],
        ["POST", "/admin/v1/keys/does-not-exist/revoke", undefined, 404, /API key "does-not-exist" not found/],
        ["POST", "/admin/v1/keys", { label: "x" }, 400, /projectId: required/],
        ["GET", "/admin/v1/sponsorships?sender=nope", undefined, 400, /sender: not an address/],
        ["GET", "/admin/v1/nothing-here", undefined, 404, /no admin route GET \/admin\/v1\/nothing-here/],
        ["POST", "/admin/v1/projects", undefined, 400, /the body is not valid JSON/, "{not json"],
        ["POST", "/admin/v1/projects", undefined, 413, /larger than/, JSON.stringify({ name: "x".repeat(3 * 1024 * 1024) })],
      ];
      for (const [method, route, body, status, message, raw] of cases) {
        const r = await call(method, route, body, TOKEN, raw);
        expect(r.status, `${method} ${route}: ${JSON.stringify(r.json)}`).to.equal(status);
        expect(r.json.error.message, route).to.match(message);
      }
      expect((await call("GET", "/admin/v1/audit?limit=1000")).json.length).to.equal(before);
    });
  });
}

describe("admin API settings and the public port", () => {
  it("is off without tokens; refuses short or malformed tokens without echoing them", () => {
    expect(adminApiOptionsFromEnv({})).to.equal(undefined);
    expect(adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN}` })).to.deep.equal({ host: "127.0.0.1", port: 3001, tokens: [{ name: "ops", token: TOKEN, role: "admin" }] });
    for (const value of ["ops=short-secret-value", "no-equals-sign-here-but-long-enough-to-be-a-token", `a=${TOKEN},a=${OTHER_TOKEN}`]) {
      let error: unknown;
      try {
        adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: value });
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(ConfigError);
      expect((error as Error).message).not.to.contain("short-secret-value").and.not.to.contain(TOKEN);
    }
  });

  it("compares tokens by their hashes against every configured token", () => {
    const tokens = [{ name: "a", token: TOKEN }, { name: "b", token: OTHER_TOKEN }];
    expect(matchToken(tokens, OTHER_TOKEN)).to.equal("b");
    expect(matchToken(tokens, TOKEN.slice(1))).to.equal(undefined);
    expect(matchToken(tokens, "")).to.equal(undefined);
  });

  it("startService runs it on its own listener beside the public one, and close() stops both", async function () {
    this.timeout(60_000);
    const embedded = await startTestStack();
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "pm-admin-svc-")), "data");
    try {
      const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
      const admin = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })!;
      const running = await startService(embeddedConfig(network, dataDir, 0, "silent"), { admin, watch: false });
      expect(running.adminUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/).and.not.equal(running.url);
      const created = await fetch(`${running.adminUrl}/admin/v1/projects`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "via service" }) });
      expect(created.status).to.equal(201);
      const { id } = (await created.json()) as { id: string };
      expect((await running.service.store.getProject(id))?.name).to.equal("via service");
      const onPublic = await fetch(`${running.url}/admin/v1/projects`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(onPublic.status).to.equal(404);
      await onPublic.text();
      await running.close();
      const refused = await fetch(`${running.adminUrl}/admin/v1/projects`).then(() => "answered", () => "refused");
      expect(refused).to.equal("refused");
    } finally {
      await embedded.close();
      rmSync(path.dirname(dataDir), { recursive: true, force: true });
    }
  });

  it("no admin route answers on the public JSON-RPC port, even with a valid admin token", async () => {
    const service = await startTestService();
    try {
      for (const route of ADMIN_ROUTES) {
        const url = `${service.url}/admin/v1${route.path.replace(/:(\w+)/g, "x")}`;
        const response = await fetch(url, { method: route.method.toUpperCase(), headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: route.method === "get" ? undefined : "{}" });
        const body = (await response.json()) as { data?: { reason?: string } };
        expect(response.status, url).to.equal(404);
        expect(body.data?.reason, url).to.equal("ROUTE_NOT_FOUND");
      }
      const doc = await fetch(`${service.url}${OPENAPI_PATH}`);
      expect(doc.status).to.equal(404);
      await doc.text();
    } finally {
      await service.close();
    }
  });
});
