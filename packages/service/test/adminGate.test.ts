/**
 * The admin listener denies by default (src/adminApi/gate.ts), over real HTTP on 127.0.0.1:
 * - every route the admin router registers (read from the router itself, so a new route cannot skip this),
 *   under case variants, percent-encoded letters, '//', a trailing '/', '.' and '..' segments, with no
 *   credentials, a wrong token, or the console's cookie without the CSRF header: all refused, nothing written;
 *   with a valid token, no variant of a path is served either (routing is case-sensitive and strict);
 * - writes need Content-Type: application/json (415), the Host header must name the listener (421);
 * - a change and its audit row are one transaction on SQLite and PostgreSQL: an audit write that fails undoes
 *   the change, and no actor is refused before anything is written.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { listen, type RunningServer } from "../src/app.ts";
import { createAdminApp, type AdminApp } from "../src/adminApi/app.ts";
import { adminApiOptionsFromEnv, type AdminApiOptions } from "../src/adminApi/options.ts";
import { apply } from "../src/admin/apply.ts";
import { AdminError, audit, type AdminContext } from "../src/admin/context.ts";
import { createProject } from "../src/admin/projects.ts";
import { ConfigError } from "../src/config/errors.ts";
import { createLogger } from "../src/log.ts";
import { openStore } from "../src/store/index.ts";
import type { Store } from "../src/store/types.ts";
import { type Answer, type AdminFixture, type AdminListener, consoleSession, FIXTURE_SENDER as SENDER, pathVariants as variants, rawRequest as request, snapshotSqlite, startAdminListener } from "./helpers/adminHttp.ts";
import { createTestDatabase } from "./helpers/cli.ts";

const TOKEN = "g".repeat(40);

describe("admin listener: deny by default", function () {
  this.timeout(120_000);
  let listener: AdminListener;
  let file: string;
  let store: Store;
  let app: AdminApp;
  let server: RunningServer;
  let fixture: AdminFixture;

  before(async () => {
    // Real rows for every parameter, so a request that got through would change something.
    listener = await startAdminListener("admin-gate", `ops=${TOKEN}`);
    ({ file, store, app, server, fixture } = listener);
  });

  after(async () => {
    await listener?.close();
  });

  const filled = (routePath: string) => fixture.filled(routePath);
  const bodyOf = (routePath: string) => fixture.bodyOf(routePath);

  it("lists a short, explicit set of public routes", () => {
    const publicRoutes = app.routers.public.stack.flatMap((layer) => layer.methods.filter((m) => m !== "HEAD").map((m) => `${m} ${String(layer.path)}`)).sort();
    expect(publicRoutes).to.deep.equal(["GET /", "GET /admin/v1/openapi.json", "GET /console", "GET /console/", "GET /console/*file", "POST /admin/v1/session"]);
  });

  it("refuses every registered admin route, in every spelling, without a principal, and writes nothing", async () => {
    const { cookie, csrf } = await consoleSession(server.url, TOKEN);
    const before = snapshotSqlite(file);
    const layers = app.routers.protected.stack;
    expect(layers.length, "the admin router's routes").to.be.greaterThan(40);
    // The session cookie, without the CSRF header: a read with it is the console's own; a write is not.
    expect(csrf).to.be.a("string");
    let requests = 0;
    // Each route's requests go out together (nothing may be written, so their order cannot matter).
    const checks: Promise<void>[] = [];
    const check = (method: string, p: string, headers: Record<string, string>, body: string | undefined, verdict: (a: Answer) => void) =>
      checks.push(request(server.url, method, p, headers, body).then(verdict));
    for (const layer of layers) {
      const routePath = String(layer.path);
      const canonical = filled(routePath);
      for (const method of layer.methods.filter((m) => m !== "HEAD")) {
        const write = method !== "GET";
        const body = write ? bodyOf(routePath) : undefined;
        const json: Record<string, string> = write ? { "content-type": "application/json" } : {};
        const credentials: [string, Record<string, string>][] = [
          ["no credentials", {}],
          ["a wrong token", { authorization: `Bearer ${"x".repeat(40)}` }],
          ["a malformed authorization", { authorization: `Basic ${TOKEN}` }],
        ];
        if (write) credentials.push(["the session cookie without CSRF", { cookie }], ["the session cookie, CSRF, another origin", { cookie, "x-paymaster-csrf": csrf, origin: "http://attacker.example" }]);
        for (const p of [canonical, ...variants(canonical)]) {
          for (const [what, headers] of credentials) {
            check(method, p, { ...json, ...headers }, body, (answer) => {
              const code = (JSON.parse(answer.body) as { error?: { code?: string } }).error?.code;
              expect([401, 403, 400], `${method} ${p} with ${what}: ${answer.status} ${answer.body}`).to.include(answer.status);
              expect(["UNAUTHORIZED", "FORBIDDEN", "INVALID_PATH"], `${method} ${p} with ${what}`).to.include(code);
            });
          }
        }
        // With the right token, only the canonical spelling is served: every variant is not a route.
        for (const p of variants(canonical)) {
          check(method, p, { ...json, authorization: `Bearer ${TOKEN}` }, body, (answer) => {
            expect([400, 404, 405], `${method} ${p} with the token: ${answer.status} ${answer.body}`).to.include(answer.status);
          });
        }
        // A read with the cookie is the console's own; a read's variants are still refused.
        if (!write) {
          for (const p of variants(canonical)) {
            check(method, p, { cookie }, undefined, (answer) => expect([400, 404], `${method} ${p} with the session cookie: ${answer.status}`).to.include(answer.status));
          }
        }
      }
      requests += checks.length;
      await Promise.all(checks.splice(0));
    }
    expect(requests).to.be.greaterThan(2000);
    expect(snapshotSqlite(file), "nothing was written").to.equal(before);

    // The same canonical write with the token goes through: the refusals above were the gate's, not the body's.
    const credited = await request(server.url, "POST", `/admin/v1/tanks/local/${SENDER}/credit`, { "content-type": "application/json", authorization: `Bearer ${TOKEN}` }, JSON.stringify({ wei: "1" }));
    expect(credited.status, credited.body).to.equal(200);
  });

  it("refuses writes that are not JSON (415) before reading them, and writes nothing", async () => {
    const before = snapshotSqlite(file);
    const auth = { authorization: `Bearer ${TOKEN}` };
    const body = JSON.stringify({ name: "Not JSON" });
    for (const type of [undefined as string | undefined, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp", "application/json-patch+json"]) {
      const headers: Record<string, string> = type === undefined ? { ...auth } : { ...auth, "content-type": type };
      const answer = await request(server.url, "POST", "/admin/v1/projects", headers, body);
      expect(answer.status, String(type)).to.equal(415);
      expect(JSON.parse(answer.body).error.code).to.equal("UNSUPPORTED_MEDIA_TYPE");
      expect(JSON.parse(answer.body).error.message).to.contain("Content-Type: application/json");
    }
    // Sign-in too (a cross-site form could otherwise post a guessed token).
    expect((await request(server.url, "POST", "/admin/v1/session", { "content-type": "text/plain" }, JSON.stringify({ token: TOKEN }))).status).to.equal(415);
    expect(snapshotSqlite(file)).to.equal(before);
    const ok = await request(server.url, "POST", "/admin/v1/projects", { ...auth, "content-type": "Application/JSON; charset=utf-8" }, body);
    expect(ok.status, ok.body).to.equal(201);
  });

  it("answers only to its own host names (DNS rebinding): 421 otherwise", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const port = new URL(server.url).port;
    for (const host of ["attacker.example", `attacker.example:${port}`, "localhost.", `127.0.0.1.nip.io:${port}`, "127.0.0.2", "[::2]", "", "a b"]) {
      const answer = await request(server.url, "GET", "/admin/v1/projects", { ...auth, host });
      expect(answer.status, `Host: ${host}`).to.equal(421);
      expect(JSON.parse(answer.body).error.code).to.equal("MISDIRECTED");
      expect(answer.body).not.to.contain("Victim");
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "LOCALHOST", "[::1]:1"]) {
      expect((await request(server.url, "GET", "/admin/v1/projects", { ...auth, host })).status, `Host: ${host}`).to.equal(200);
    }
    // A named proxy in front: its name is allowed by configuration.
    const options = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN}`, PAYMASTER_ADMIN_PORT: "0", PAYMASTER_ADMIN_ALLOWED_HOSTS: "admin.example.com, 10.1.2.3" })!;
    expect(options.allowedHosts).to.deep.equal(["admin.example.com", "10.1.2.3"]);
    const proxied = await listen(createAdminApp({ store, networks: ["local"], logger: createLogger("silent") }, options), options);
    try {
      expect((await request(proxied.url, "GET", "/admin/v1/projects", { ...auth, host: "admin.example.com" })).status).to.equal(200);
      expect((await request(proxied.url, "GET", "/admin/v1/projects", { ...auth, host: "Admin.Example.com:443" })).status).to.equal(200);
      expect((await request(proxied.url, "GET", "/admin/v1/projects", { ...auth, host: "evil.example.com" })).status).to.equal(421);
    } finally {
      await proxied.close();
    }
    expect(() => adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN}`, PAYMASTER_ADMIN_ALLOWED_HOSTS: "https://admin.example.com/" })).to.throw(ConfigError, /PAYMASTER_ADMIN_ALLOWED_HOSTS/);
  });
});

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`admin changes and their audit rows are one transaction (${backend})`, function () {
    this.timeout(60_000);
    let dir: string;
    let store: Store;
    let server: RunningServer;
    let drop: (() => Promise<void>) | undefined;
    let databaseUrl: string | undefined;
    let file: string;
    let options: AdminApiOptions;

    /** Runs DDL on the test database beside the store's own connection. */
    async function sql(statement: string): Promise<void> {
      if (databaseUrl === undefined) {
        const db = new DatabaseSync(file);
        try {
          db.exec(statement);
        } finally {
          db.close();
        }
        return;
      }
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await client.query(statement);
      } finally {
        await client.end();
      }
    }
    const failAudits = () =>
      sql(
        databaseUrl === undefined
          ? "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit refused by the test'); END;"
          : `CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused by the test'; END $$;
             CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit();`,
      );
    const allowAudits = () => sql(databaseUrl === undefined ? "DROP TRIGGER refuse_audit;" : "DROP TRIGGER refuse_audit ON audit_log; DROP FUNCTION refuse_audit();");

    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), "pm-admin-atomic-"));
      file = path.join(dir, "db.sqlite");
      if (backend === "PostgreSQL") {
        const db = await createTestDatabase("paymaster_admin_atomic");
        drop = db.drop;
        databaseUrl = db.url;
      }
      store = await openStore({ databasePath: file, databaseUrl });
      options = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })!;
      server = await listen(createAdminApp({ store, networks: ["local"], logger: createLogger("silent") }, options), options);
    });

    after(async () => {
      await server?.close();
      await store?.close();
      await drop?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it("an audit row that cannot be written undoes its change (admin API and the operations themselves)", async () => {
      const ctx: AdminContext = { store, networks: ["local"], actor: "cli:test", role: "admin" };
      const project = await createProject(ctx, { name: "Before" });
      await failAudits();
      try {
        const answer = await request(server.url, "POST", "/admin/v1/projects", { "content-type": "application/json", authorization: `Bearer ${TOKEN}` }, JSON.stringify({ name: "Unaudited" }));
        expect(answer.status).to.equal(500);
        const credit = await request(server.url, "POST", `/admin/v1/tanks/local/${SENDER}/credit`, { "content-type": "application/json", authorization: `Bearer ${TOKEN}` }, JSON.stringify({ wei: "7" }));
        expect(credit.status).to.equal(500);
        // apply: several changes, each audited; none stays.
        let failed = false;
        await apply(ctx, { projects: [{ name: "Applied A" }, { name: "Applied B" }] }).catch(() => (failed = true));
        expect(failed).to.equal(true);
      } finally {
        await allowAudits();
      }
      expect((await store.listProjects()).map((p) => p.name)).to.deep.equal([project.name]);
      expect((await store.getGasTank("local", SENDER)).balanceWei).to.equal(0n);
      // And with audits back, the same change goes through with its row.
      const answer = await request(server.url, "POST", "/admin/v1/projects", { "content-type": "application/json", authorization: `Bearer ${TOKEN}` }, JSON.stringify({ name: "Audited" }));
      expect(answer.status).to.equal(201);
      const rows = await store.listAudit({ action: "project.create" });
      expect(rows.map((r) => [r.actor, (r.after as { name: string }).name])).to.deep.include.members([["api:ops", "Audited"], ["cli:test", "Before"]]);
    });

    it("refuses a change without an actor before anything is written; audit() only inside a mutation", async () => {
      const count = (await store.listProjects()).length;
      for (const actor of ["", "nobody", "api:", undefined as unknown as string]) {
        let error: unknown;
        await createProject({ store, networks: ["local"], actor, role: "admin" }, { name: "No actor" }).catch((e: unknown) => (error = e));
        expect(error, JSON.stringify(actor)).to.be.instanceOf(AdminError);
        expect((error as AdminError).code).to.equal("UNAUTHORIZED");
      }
      expect((await store.listProjects()).length).to.equal(count);
      let outside: unknown;
      await audit({ store, networks: ["local"], actor: "cli:test", role: "admin" }, "project.create", null, null, null).catch((e: unknown) => (outside = e));
      expect(String(outside)).to.match(/outside a mutation/);
    });
  });
}
