/**
 * Operator roles (src/admin/roles.ts: viewer ⊂ operator ⊂ admin), over real HTTP on 127.0.0.1:
 * - PAYMASTER_ADMIN_TOKENS' `name:role=token` entries; `name=token` stays admin;
 * - every route the admin router registers (read from the router itself) declares a role, a viewer's routes
 *   are all reads, and docs/admin-api.md's table of roles is exactly the declared one;
 * - every route, asked by each role's token and by a console session of each role: below the declared role
 *   403 FORBIDDEN naming it and nothing written (every row of the database compared), in its canonical
 *   spelling and in the gate test's variants (case, percent-encoding, '//', '..'); at or above it served;
 *   a route registered without a role needs admin; an operation refuses a context without its role too, and one
 *   that names no principal at all; the public door's principal (an applicant) submits and claims, nothing else;
 * - the audit log records the actor and its role (API, console, CLI), and migration 14 gives earlier rows
 *   admin (SQLite and PostgreSQL);
 * - a viewer reads no secret: no admin token, key plaintext or hash, webhook secret, claim token or hash, signer or
 *   chain account key, in any answer of any route it may call (the embedded stack: every route answers); of a
 *   webhook's URL (its path or query may hold the receiver's token) only its scheme and host, in the list and in
 *   audit rows.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { listen, type RunningServer } from "../src/app.ts";
import { createAdminApp, type AdminApp, type RouteRole } from "../src/adminApi/app.ts";
import { openApiDocument } from "../src/adminApi/openapi.ts";
import { adminApiOptionsFromEnv, type AdminApiOptions } from "../src/adminApi/options.ts";
import { approveApplication, claimApplication, submitApplication } from "../src/admin/applications.ts";
import { AdminError, mutation, requireRole, RoleRefused, type AdminContext } from "../src/admin/context.ts";
import { createProject, listProjects } from "../src/admin/projects.ts";
import { declaresRole, PUBLIC_PRINCIPAL, roleIncludes, ROLES, type Role } from "../src/admin/roles.ts";
import { creditTank } from "../src/admin/tanks.ts";
import { webhookUrlFor } from "../src/admin/webhooks.ts";
import { openAdmin } from "../src/cli/context.ts";
import { ConfigError } from "../src/config/errors.ts";
import { createLogger } from "../src/log.ts";
import { sha256Hex } from "../src/store/apiKeys.ts";
import type { Store } from "../src/store/types.ts";
import { consoleSession, FIXTURE_SENDER, pathVariants, rawRequest, seedAdminFixture, snapshotSqlite, startAdminListener, type AdminFixture, type AdminListener, type Answer } from "./helpers/adminHttp.ts";
import { startTestStack, type Embedded } from "./helpers/stack.ts";
import { storeBackends } from "./helpers/storeBackends.ts";

const TOKENS = { viewer: "v".repeat(40), operator: "o".repeat(20) + ":=" + "o".repeat(20), admin: "a".repeat(40), legacy: "l".repeat(40) } as const;
/** One token of each role, and one written the old way (name=token: admin). */
const TOKENS_ENV = `watch:viewer=${TOKENS.viewer}, policy:operator=${TOKENS.operator},root:admin=${TOKENS.admin},old=${TOKENS.legacy}`;
const NAMES = { viewer: "watch", operator: "policy", admin: "root", legacy: "old" } as const;
const DOCS = new URL("../../../docs/admin-api.md", import.meta.url);

const errorOf = (a: Answer) => (JSON.parse(a.body) as { error?: { code?: string; requiredRole?: string; message?: string } }).error;

/** The table of docs/admin-api.md, as the declarations make it. */
function rolesTable(routes: readonly RouteRole[]): string {
  const rows = [...routes].sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
  return ["| method and path | role |", "|---|---|", ...rows.map((r) => `| \`${r.method} ${r.path}\` | ${r.role} |`)].join("\n");
}

describe("operator roles: PAYMASTER_ADMIN_TOKENS", () => {
  it("reads name:role=token; a name=token entry stays admin; a token holding ':' or '=' is read whole", () => {
    const options = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: TOKENS_ENV })!;
    expect(options.tokens).to.deep.equal([
      { name: "watch", token: TOKENS.viewer, role: "viewer" },
      { name: "policy", token: TOKENS.operator, role: "operator" },
      { name: "root", token: TOKENS.admin, role: "admin" },
      { name: "old", token: TOKENS.legacy, role: "admin" },
    ]);
    // An old entry whose token looks like a role and a token: the name decides (names never hold ':').
    const tricky = `viewer:${"x".repeat(40)}`;
    expect(adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${tricky}` })!.tokens).to.deep.equal([{ name: "ops", token: tricky, role: "admin" }]);
  });

  it("refuses an unknown role or one token with two roles, naming the entry and never the token", () => {
    for (const [value, expected] of [
      [`ops:root=${TOKENS.admin}`, /entry 1 \(ops\): the role must be one of viewer, operator, admin/],
      [`ops:=${TOKENS.admin}`, /entry 1 \(ops\): the role must be one of/],
      [`a:viewer=${TOKENS.admin},b:admin=${TOKENS.admin}`, /entry 2 \(b\): the same token as another entry with another role/],
      [`:viewer=${TOKENS.admin}`, /entry 1: expected name:role=token \(or name=token for admin\)/],
    ] as const) {
      let error: unknown;
      try {
        adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: value });
      } catch (e) {
        error = e;
      }
      expect(error, value).to.be.instanceOf(ConfigError);
      expect(String((error as Error).message)).to.match(expected).and.not.contain(TOKENS.admin);
    }
  });
});

describe("operator roles: every route of the admin router", function () {
  this.timeout(120_000);
  let listener: AdminListener;
  let file: string;
  let store: Store;
  let options: AdminApiOptions;
  let app: AdminApp;
  let server: RunningServer;
  let fixture: AdminFixture;

  before(async () => {
    listener = await startAdminListener("admin-roles", TOKENS_ENV);
    ({ file, store, options, app, server, fixture } = listener);
  });

  after(async () => {
    await listener?.close();
  });

  it("every route declares its role; a viewer's are reads; what moves money (tanks, tokens, billing) is admin's; docs/admin-api.md lists them", () => {
    const routes = app.routeRoles;
    expect(routes.length, "the admin router's routes").to.be.greaterThan(45);
    const undeclared = routes.filter((r) => !r.declared).map((r) => `${r.method} ${r.path}`);
    expect(undeclared, "routes whose operation declares no role (they need admin)").to.deep.equal([]);
    for (const r of routes) {
      const route = `${r.method} ${r.path}`;
      if (r.method === "GET") expect(r.role, route).to.equal("viewer");
      else if (r.path.startsWith("/admin/v1/tanks/") || r.path.startsWith("/admin/v1/networks/") || r.path.includes("/billing")) expect(r.role, route).to.equal("admin");
      else if (r.path === "/admin/v1/session/end") expect(r.role, route).to.equal("viewer");
      else expect(r.role, route).to.equal("operator");
    }
    // The OpenAPI document says the same, operation by operation.
    const openApi = openApiDocument() as { paths: Record<string, Record<string, { "x-required-role"?: string }>> };
    for (const r of routes) {
      expect(openApi.paths[r.path.replace(/:(\w+)/g, "{$1}")]?.[r.method.toLowerCase()]?.["x-required-role"], `OpenAPI ${r.method} ${r.path}`).to.equal(r.role);
    }
    const docs = readFileSync(DOCS, "utf8");
    const table = rolesTable(routes);
    const between = /<!-- roles table: begin[^>]*-->\n([\s\S]*?)\n<!-- roles table: end -->/.exec(docs)?.[1];
    expect(between, `docs/admin-api.md must hold the table of roles between its markers; it is:\n${table}\n`).to.equal(table);
  });

  it("each role's token and console session: below the route's role 403 naming it, nothing written; at or above it, served", async () => {
    type Principal = { what: string; role: Role; headers: (write: boolean) => Record<string, string> };
    const principals: Principal[] = [];
    for (const role of ROLES) {
      const token = TOKENS[role];
      principals.push({ what: `the ${role} token`, role, headers: () => ({ authorization: `Bearer ${token}` }) });
      const session = await consoleSession(server.url, token);
      expect(session.answer.role).to.equal(role);
      const host = new URL(server.url).host;
      principals.push({
        what: `a ${role} console session`,
        role,
        headers: (write): Record<string, string> =>
          write ? { cookie: session.cookie, "x-paymaster-csrf": session.csrf, origin: `http://${host}`, "sec-fetch-site": "same-origin" } : { cookie: session.cookie },
      });
    }
    principals.push({ what: "the name=token token", role: "admin", headers: () => ({ authorization: `Bearer ${TOKENS.legacy}` }) });

    let refused = 0;
    let served = 0;
    // Sign-out last: it ends the sessions the other routes are asked with.
    const routes = [...app.routeRoles].sort((a, b) => Number(a.path.endsWith("/session/end")) - Number(b.path.endsWith("/session/end")));
    for (const route of routes) {
      const write = route.method !== "GET";
      const p = fixture.filled(route.path);
      const body = write ? fixture.bodyOf(route.path) : undefined;
      const json: Record<string, string> = write ? { "content-type": "application/json" } : {};
      const before = snapshotSqlite(file);
      const below = principals.filter((who) => !roleIncludes(who.role, route.role));
      await Promise.all(
        below.flatMap((who) => [
          rawRequest(server.url, route.method, p, { ...json, ...who.headers(write) }, body).then((answer) => {
            expect(answer.status, `${route.method} ${p} by ${who.what}: ${answer.body}`).to.equal(403);
            expect(errorOf(answer), `${route.method} ${p} by ${who.what}`).to.deep.include({ code: "FORBIDDEN", requiredRole: route.role });
            expect(errorOf(answer)!.message).to.equal(`${route.method} ${p} needs the ${route.role} role; this principal has the ${who.role} role`);
            refused++;
          }),
          // No other spelling of the path reaches the route past its role either (the gate test's variants).
          ...pathVariants(p).map((variant) =>
            rawRequest(server.url, route.method, variant, { ...json, ...who.headers(write) }, body).then((answer) => {
              expect(answer.status, `${route.method} ${variant} by ${who.what}: ${answer.status} ${answer.body}`).to.be.oneOf([400, 403, 404, 405]);
            }),
          ),
        ]),
      );
      expect(snapshotSqlite(file), `nothing written by the refusals of ${route.method} ${route.path}`).to.equal(before);
      // One at a time: these may change things (a revoked key, a deleted webhook: later ones answer 4xx for input).
      for (const who of principals.filter((w) => roleIncludes(w.role, route.role))) {
        const answer = await rawRequest(server.url, route.method, p, { ...json, ...who.headers(write) }, body);
        const code = errorOf(answer)?.code;
        // Served: done, or refused for its input (400/404/409), or 503 for what needs the running service (not here).
        expect(answer.status, `${route.method} ${p} by ${who.what}: ${answer.status} ${answer.body}`).to.be.oneOf([200, 201, 400, 404, 409, 503]);
        if (answer.status === 503) expect(code).to.equal("UNAVAILABLE");
        served++;
      }
    }
    expect(refused, "refusals").to.be.greaterThan(50);
    expect(served).to.be.greaterThan(150);
  });

  it("a route registered without a role needs admin (deny by default)", async () => {
    const extra = createAdminApp({ store, networks: ["local"], logger: createLogger("silent") }, options);
    extra.routers.protected.get("/admin/v1/undeclared", (ctx) => {
      ctx.body = { reached: true };
    });
    const running = await listen(extra, options);
    try {
      for (const role of ["viewer", "operator"] as const) {
        const answer = await rawRequest(running.url, "GET", "/admin/v1/undeclared", { authorization: `Bearer ${TOKENS[role]}` });
        expect(answer.status, role).to.equal(403);
        expect(errorOf(answer)).to.deep.include({ code: "FORBIDDEN", requiredRole: "admin" });
      }
      expect(JSON.parse((await rawRequest(running.url, "GET", "/admin/v1/undeclared", { authorization: `Bearer ${TOKENS.admin}` })).body)).to.deep.equal({ reached: true });
    } finally {
      await running.close();
    }
  });

  it("an operation refuses a context that names no principal, or whose role falls short, before it runs; one that declares none needs admin", async () => {
    const count = (await listProjects({ store, networks: ["local"], actor: "cli:test", role: "admin" })).length;
    // A door that says nothing of who acts (issue 46, item 5: it acted as admin) is refused reads and changes alike.
    const nobody = { store, networks: ["local"], actor: "api:future" } as unknown as AdminContext;
    for (const [what, call] of [
      ["a read", () => listProjects(nobody)],
      ["a change", () => createProject(nobody, { name: "By nobody" })],
      ["an admin's change", () => creditTank(nobody, { network: "local", sender: FIXTURE_SENDER, wei: "1" })],
      ["a check inside an operation", async () => requireRole(nobody, "viewer", "this")],
    ] as const) {
      const refused = await call().catch((e: unknown) => e);
      expect(refused, what).to.be.instanceOf(AdminError).and.deep.include({ code: "UNAUTHORIZED" });
    }
    let error: unknown;
    await createProject({ store, networks: ["local"], actor: "api:watch", role: "viewer" }, { name: "By a viewer" }).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(RoleRefused);
    expect((error as RoleRefused).requiredRole).to.equal("operator");
    expect((await listProjects({ store, networks: ["local"], actor: "cli:test", role: "admin" })).length).to.equal(count);
    const helper = mutation(async function undeclaredHelper(_ctx: AdminContext) {
      return "ran";
    });
    expect(declaresRole(helper)).to.equal(false);
    const refused = await helper({ store, networks: ["local"], actor: "api:policy", role: "operator" }).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(AdminError).and.deep.include({ code: "FORBIDDEN", requiredRole: "admin" });
    expect(await helper({ store, networks: ["local"], actor: "api:root", role: "admin" })).to.equal("ran");
  });

  it("the public door's principal submits and claims an application and nothing else; no operator's principal does either in its place", async () => {
    const applicant: AdminContext = { store, networks: ["local"], actor: "public:203.0.113.7", role: PUBLIC_PRINCIPAL };
    const admin: AdminContext = { store, networks: ["local"], actor: "cli:test", role: "admin" };
    const before = snapshotSqlite(file);
    for (const [what, call] of [
      ["a viewer's read", () => listProjects(applicant)],
      ["an operator's change", () => createProject(applicant, { name: "By an applicant" })],
      ["an operator's decision", () => approveApplication(applicant, fixture.ids.application)],
    ] as const) {
      const refused = await call().catch((e: unknown) => e);
      expect(refused, what).to.be.instanceOf(RoleRefused).and.deep.include({ code: "FORBIDDEN" });
    }
    const form = { contact: "team@example.org", project: "Applied", networks: ["local"], use: "a dapp" };
    const byAdmin = await submitApplication(admin, form).catch((e: unknown) => e);
    expect(byAdmin, "an operator's principal does not apply in an applicant's place").to.be.instanceOf(AdminError).and.deep.include({ code: "FORBIDDEN" });
    expect(snapshotSqlite(file), "nothing written").to.equal(before);

    const { id } = await submitApplication(applicant, form);
    const { claimToken } = await approveApplication(admin, id);
    expect(await claimApplication(admin, { claimToken }).catch((e: unknown) => e)).to.be.instanceOf(AdminError).and.deep.include({ code: "FORBIDDEN" });
    expect((await claimApplication(applicant, { claimToken })).apiKey).to.match(/^pm_/);
    const [claimed] = await store.listAudit({ action: "application.claim", target: id });
    expect(claimed, "the applicant's row: its address, no role").to.deep.include({ actor: "public:203.0.113.7", role: null });
  });

  it("a viewer sees a webhook's scheme and host only, in the webhook list and in audit rows; an operator sees the URL", async () => {
    const url = "https://hooks.receiver.invalid:8443/services/T0KEN-IN-PATH/hook?token=T0KEN-IN-QUERY";
    const created = JSON.parse((await rawRequest(server.url, "POST", `/admin/v1/projects/${fixture.ids.project}/webhooks`, { "content-type": "application/json", authorization: `Bearer ${TOKENS.operator}` }, JSON.stringify({ url }))).body);
    const get = async (role: Role, p: string) => JSON.parse((await rawRequest(server.url, "GET", p, { authorization: `Bearer ${TOKENS[role]}` })).body);
    const listed = (role: Role) => get(role, `/admin/v1/projects/${fixture.ids.project}/webhooks`);
    const audited = async (role: Role) => (await get(role, `/admin/v1/audit?action=webhook.create&target=${created.endpoint.id}`))[0].after.url;
    expect((await listed("viewer")).find((w: { id: string }) => w.id === created.endpoint.id).url).to.equal("https://hooks.receiver.invalid:8443/…");
    expect(await audited("viewer")).to.equal("https://hooks.receiver.invalid:8443/…");
    const session = await consoleSession(server.url, TOKENS.viewer);
    for (const p of [`/admin/v1/projects/${fixture.ids.project}/webhooks`, "/admin/v1/audit?limit=1000"]) {
      for (const headers of [{ authorization: `Bearer ${TOKENS.viewer}` }, { cookie: session.cookie }] as Record<string, string>[]) {
        const body = (await rawRequest(server.url, "GET", p, headers)).body;
        expect(body, p).to.not.match(/T0KEN-IN-|\/hook\b/);
      }
    }
    // A query alone is cut too (and said to be).
    expect(webhookUrlFor("viewer", "https://hooks.receiver.invalid/?token=T0KEN")).to.equal("https://hooks.receiver.invalid/…");
    for (const role of ["operator", "admin"] as const) {
      expect((await listed(role)).find((w: { id: string }) => w.id === created.endpoint.id).url, role).to.equal(url);
      expect(await audited(role), role).to.equal(url);
    }
  });

  it("an apply document with tokens is an admin's: an operator is refused before anything is written", async () => {
    const tokens = [{ network: "local", symbol: "USDC", address: "0x9406Cc6185a346906296840746125a0E44976454", decimals: 6, priceSource: { type: "fixed", usd: "1000" } }];
    const doc = JSON.stringify({ projects: [{ name: "Applied with a price" }], tokens });
    const headers = (role: Role) => ({ "content-type": "application/json", authorization: `Bearer ${TOKENS[role]}` });
    const before = snapshotSqlite(file);
    const answer = await rawRequest(server.url, "POST", "/admin/v1/apply", headers("operator"), doc);
    expect(answer.status, answer.body).to.equal(403);
    expect(errorOf(answer)).to.deep.include({ code: "FORBIDDEN", requiredRole: "admin" });
    expect(errorOf(answer)!.message).to.match(/^body: tokens \(token prices\) needs the admin role/);
    expect(snapshotSqlite(file)).to.equal(before);
    expect((await rawRequest(server.url, "POST", "/admin/v1/apply", headers("operator"), JSON.stringify({ projects: [{ name: "Applied by an operator" }] }))).status).to.equal(200);
    expect((await rawRequest(server.url, "POST", "/admin/v1/apply", headers("admin"), doc)).status).to.equal(200);
  });

  it("GET /session tells each principal its role and every route it may call", async () => {
    const all = app.routeRoles.map((r) => `${r.method} ${r.path}`);
    for (const role of ROLES) {
      const me = JSON.parse((await rawRequest(server.url, "GET", "/admin/v1/session", { authorization: `Bearer ${TOKENS[role]}` })).body);
      expect(me).to.deep.include({ name: NAMES[role], role, expiresAt: null, csrf: null });
      expect(me.permitted).to.have.members(app.routeRoles.filter((r) => roleIncludes(role, r.role)).map((r) => `${r.method} ${r.path}`));
    }
    const viewer = JSON.parse((await rawRequest(server.url, "GET", "/admin/v1/session", { authorization: `Bearer ${TOKENS.viewer}` })).body);
    expect(viewer.permitted.filter((p: string) => !p.startsWith("GET ")), "a viewer writes nothing").to.deep.equal(["POST /admin/v1/session/end"]);
    const admin = JSON.parse((await rawRequest(server.url, "GET", "/admin/v1/session", { authorization: `Bearer ${TOKENS.admin}` })).body);
    expect(admin.permitted).to.have.members(all);
  });

  it("a console session has its token's role, and ends when the token is given another role", async () => {
    const session = await consoleSession(server.url, TOKENS.operator);
    expect(session.answer).to.deep.include({ name: "policy", role: "operator" });
    const demoted = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `policy:viewer=${TOKENS.operator}`, PAYMASTER_ADMIN_PORT: "0" })!;
    const restarted = await listen(createAdminApp({ store, networks: ["local"], logger: createLogger("silent") }, demoted), demoted);
    try {
      const answer = await rawRequest(restarted.url, "GET", "/admin/v1/projects", { cookie: session.cookie });
      expect(answer.status, answer.body).to.equal(401);
      expect(errorOf(answer)!.message).to.match(/sign in again/);
    } finally {
      await restarted.close();
    }
  });

  it("the audit log records the actor and its role (API, console, CLI)", async () => {
    const post = (headers: Record<string, string>, name: string) =>
      rawRequest(server.url, "POST", "/admin/v1/projects", { "content-type": "application/json", ...headers }, JSON.stringify({ name }));
    expect((await post({ authorization: `Bearer ${TOKENS.operator}` }, "Audited operator")).status).to.equal(201);
    expect((await post({ authorization: `Bearer ${TOKENS.legacy}` }, "Audited old token")).status).to.equal(201);
    const session = await consoleSession(server.url, TOKENS.admin);
    const host = new URL(server.url).host;
    expect((await post({ cookie: session.cookie, "x-paymaster-csrf": session.csrf, origin: `http://${host}` }, "Audited console")).status).to.equal(201);
    // The operator command: all-powerful, recorded as admin.
    const cli = await openAdmin({ database: file }, {});
    try {
      await createProject(cli.ctx, { name: "Audited CLI" });
    } finally {
      await cli.close();
    }
    const rows = await store.listAudit({ action: "project.create", limit: 1000 });
    const byName = new Map(rows.map((r) => [(r.after as { name: string }).name, [r.actor.replace(/^cli:.*/, "cli:<os user>"), r.role]]));
    expect(byName.get("Audited operator")).to.deep.equal(["api:policy", "operator"]);
    expect(byName.get("Audited old token")).to.deep.equal(["api:old", "admin"]);
    expect(byName.get("Audited console")).to.deep.equal(["console:root", "admin"]);
    expect(byName.get("Audited CLI")).to.deep.equal(["cli:<os user>", "admin"]);
    const start = (await store.listAudit({ action: "session.start", limit: 1000 })).find((r) => r.actor === "console:watch");
    expect(start?.role).to.equal("viewer");
    // The admin API answers both.
    const listed = JSON.parse((await rawRequest(server.url, "GET", "/admin/v1/audit?action=project.create&limit=1000", { authorization: `Bearer ${TOKENS.viewer}` })).body);
    expect(listed.find((r: { after: { name: string } }) => r.after.name === "Audited operator")).to.deep.include({ actor: "api:policy", role: "operator" });
  });
});

for (const backend of storeBackends("audit_roles")) {
  describe(`migration 14: audit rows before roles (${backend.name})`, function () {
    this.timeout(60_000);
    it("says admin for the CLI's and every token's earlier rows, none for the public door's; new rows keep theirs", async () => {
      const opened = await backend.openUpgradedFrom(13, async (sql) => {
        for (const [id, actor] of [["r1", "cli:alice"], ["r2", "api:ops"], ["r3", "console:ops"], ["r4", "public:203.0.113.9"]]) {
          await sql(`INSERT INTO audit_log (id, at, actor, action, target, before, after) VALUES ('${id}', 1, '${actor}', 'project.create', NULL, NULL, NULL)`);
        }
      });
      try {
        const rows = await opened.store.listAudit({ limit: 1000 });
        expect(Object.fromEntries(rows.map((r) => [r.actor, r.role]))).to.deep.equal({ "cli:alice": "admin", "api:ops": "admin", "console:ops": "admin", "public:203.0.113.9": null });
        const ctx: AdminContext = { store: opened.store, networks: ["local"], actor: "api:watch", role: "operator" };
        await createProject(ctx, { name: "after the upgrade" });
        expect((await opened.store.listAudit({ action: "project.create", limit: 1 }))[0]).to.deep.include({ actor: "api:watch", role: "operator" });
      } finally {
        await opened.close();
      }
    });
  });
}

describe("operator roles: a viewer reads no secret (embedded stack)", function () {
  this.timeout(180_000);
  let embedded: Embedded;

  before(async () => {
    embedded = await startTestStack({
      admin: { host: "127.0.0.1", port: 0, tokens: [{ name: "watch", token: TOKENS.viewer, role: "viewer" }, { name: "root", token: TOKENS.admin, role: "admin" }] },
    });
  });
  after(async () => {
    await embedded?.close();
  });

  it("no answer of any route a viewer may call holds a token, a key or its hash, a webhook secret or a claim token", async () => {
    const admin = embedded.running.adminUrl!;
    const fixture = await seedAdminFixture(embedded.running.service.store);
    const bearer = (token: string, method: string, p: string, body?: unknown) =>
      rawRequest(admin, method, p, { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) }, body === undefined ? undefined : JSON.stringify(body));
    // Secrets an admin's calls make (each shown once, to the caller that made it).
    const rotated = JSON.parse((await bearer(TOKENS.admin, "POST", `/admin/v1/keys/${fixture.ids.key}/rotate`, {})).body);
    const approved = JSON.parse((await bearer(TOKENS.admin, "POST", `/admin/v1/applications/${fixture.ids.application}/approve`, {})).body);
    const webhook = JSON.parse((await bearer(TOKENS.admin, "POST", `/admin/v1/projects/${fixture.ids.project}/webhooks`, { url: "https://receiver.invalid/two", kind: "approval" })).body);
    expect(rotated.key).to.match(/^pm_/);
    expect(approved.claimToken).to.match(/^pmclaim_/);
    expect(webhook.secret).to.be.a("string");
    const stack = embedded.stack;
    const secrets: Record<string, string> = {
      "the viewer's token": TOKENS.viewer,
      "the admin token": TOKENS.admin,
      "a key's plaintext": fixture.ids.keyPlaintext,
      "its hash": sha256Hex(fixture.ids.keyPlaintext),
      "the rotated key's plaintext": rotated.key,
      "its hash ": sha256Hex(rotated.key),
      "a webhook secret": fixture.ids.webhookSecret,
      "an approval webhook's secret": webhook.secret,
      "a claim token": approved.claimToken,
      "its hash  ": sha256Hex(approved.claimToken),
      "the signer's key": stack.signer.privateKey.slice(2).toLowerCase(),
      ...Object.fromEntries(stack.chain.accounts.map((a, i) => [`chain account ${i}'s key`, a.privateKey.slice(2).toLowerCase()])),
    };
    const session = await consoleSession(admin, TOKENS.viewer);
    const me = session.answer as { permitted: string[] };
    const reads = me.permitted.filter((p) => p.startsWith("GET "));
    expect(reads.length).to.be.greaterThan(20);
    let checked = 0;
    for (const read of reads) {
      const route = read.slice(4);
      for (const headers of [{ authorization: `Bearer ${TOKENS.viewer}` }, { cookie: session.cookie }] as Record<string, string>[]) {
        const p = fixture.filled(route);
        const answer = await rawRequest(admin, "GET", p, headers);
        // Every read answers here (the running service is there): 404 only for the unknown sponsorship id.
        expect(answer.status, `GET ${p}: ${answer.body.slice(0, 300)}`).to.be.oneOf(route.endsWith("/sponsorships/:id") ? [404] : [200]);
        const text = answer.body.toLowerCase();
        for (const [what, secret] of Object.entries(secrets)) expect(text.includes(secret.toLowerCase()), `GET ${p} holds ${what.trim()}`).to.equal(false);
        checked++;
      }
    }
    expect(checked).to.equal(reads.length * 2);
  });
});
