// What the tests of the admin listener's gate share (adminGate.test.ts, adminRoles.test.ts): raw HTTP requests
// whose path goes out exactly as written, a snapshot of every row of the SQLite file ("nothing was written"),
// and real rows for every route parameter with a body each write would succeed with.
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { listen, type RunningServer } from "../../src/app.ts";
import { createAdminApp, type AdminApp } from "../../src/adminApi/app.ts";
import { adminApiOptionsFromEnv, type AdminApiOptions } from "../../src/adminApi/options.ts";
import { submitApplication } from "../../src/admin/applications.ts";
import type { AdminContext } from "../../src/admin/context.ts";
import { PUBLIC_PRINCIPAL } from "../../src/admin/roles.ts";
import { createKey } from "../../src/admin/keys.ts";
import { createProject } from "../../src/admin/projects.ts";
import { createStrategy } from "../../src/admin/strategies.ts";
import { creditTank } from "../../src/admin/tanks.ts";
import { createWebhook } from "../../src/admin/webhooks.ts";
import { createLogger } from "../../src/log.ts";
import { openStore } from "../../src/store/index.ts";
import type { Store } from "../../src/store/types.ts";

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A raw HTTP/1.1 request: the path goes out exactly as written (fetch would normalise it), any Host header. */
export function rawRequest(base: string, method: string, rawPath: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path: rawPath, headers: { ...(body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }), ...headers }, setHost: !("host" in headers) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Signs in to the console with `token`: the `pm_console=…` cookie and the session's answer (csrf, role…). */
export async function consoleSession(base: string, token: string): Promise<{ cookie: string; csrf: string; answer: Record<string, unknown> }> {
  const answer = await rawRequest(base, "POST", "/admin/v1/session", { "content-type": "application/json" }, JSON.stringify({ token }));
  if (answer.status !== 200) throw new Error(`sign-in answered ${answer.status}: ${answer.body}`);
  const set = [answer.headers["set-cookie"] ?? []].flat()[0] ?? "";
  const json = JSON.parse(answer.body) as Record<string, unknown>;
  return { cookie: set.split(";")[0]!, csrf: json.csrf as string, answer: json };
}

/** Every row of every table, as text: what "nothing was written" is compared by (SQLite file). */
export function snapshotSqlite(file: string): string {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[];
    return JSON.stringify(tables.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all()]), (_k, v) => (typeof v === "bigint" ? v.toString() : v));
  } finally {
    db.close();
  }
}

/** The path variants an attacker would try for one canonical admin path. */
export function pathVariants(canonical: string): string[] {
  const rest = canonical.slice("/admin/v1".length); // "/projects/…"
  const staticSegment = rest.split("/")[1]!; // "projects"
  const capitalised = `/admin/v1/${staticSegment[0]!.toUpperCase()}${staticSegment.slice(1)}${rest.slice(1 + staticSegment.length)}`;
  const encodedLetter = `/admin/v1/%${staticSegment.charCodeAt(0).toString(16)}${staticSegment.slice(1)}${rest.slice(1 + staticSegment.length)}`;
  return [
    canonical.toUpperCase(),
    `/ADMIN/v1${rest}`,
    `/Admin/v1${rest}`,
    `/admin/V1${rest}`,
    capitalised,
    `/%61dmin/v1${rest}`,
    `/admin/%761${rest}`,
    encodedLetter,
    `/admin%2Fv1${rest}`,
    `//admin/v1${rest}`,
    `/admin//v1${rest}`,
    `/admin/v1/${rest}`,
    `${canonical}/`,
    `${canonical}//`,
    `/admin/v1/x/..${rest}`,
    `/admin/v1/.${rest}`,
    `/admin/v1/%2e%2e/v1${rest}`,
    `/admin/./v1${rest}`,
  ];
}

export const FIXTURE_SENDER = "0x9406Cc6185a346906296840746125a0E44976454";

/** Real rows behind every route parameter (network "local"), so a request that got through would change something. */
export interface AdminFixture {
  ids: { project: string; key: string; keyPlaintext: string; code: string; webhook: string; webhookSecret: string; application: string };
  /** A route's path (":name" parameters) with every parameter a real row's. */
  filled(routePath: string): string;
  /** The JSON body a write to `routePath` would succeed with (if it got through). */
  bodyOf(routePath: string): string;
}

export async function seedAdminFixture(store: Store): Promise<AdminFixture> {
  const ctx: AdminContext = { store, networks: ["local"], actor: "cli:test", role: "admin" };
  const project = (await createProject(ctx, { name: "Victim" })).id;
  const key = await createKey(ctx, { projectId: project, label: "web" });
  const code = (await createStrategy(ctx, { code: "victim-free", project, rules: { caps: { daily: { maxOps: 3 } } } })).code;
  await creditTank(ctx, { network: "local", sender: FIXTURE_SENDER, wei: "200000000000000000" });
  const webhook = await createWebhook(ctx, { projectId: project, url: "https://receiver.invalid/hook" });
  const application = (await submitApplication({ ...ctx, actor: "public:127.0.0.1", role: PUBLIC_PRINCIPAL }, { contact: "a@b.example", project: "Team", networks: ["local"], use: "tests" })).id;
  const ids = { project, key: key.id, keyPlaintext: key.key, code, webhook: webhook.endpoint.id, webhookSecret: webhook.secret, application };
  const bodies: Record<string, unknown> = {
    "/admin/v1/projects": { name: "Attacker" },
    "/admin/v1/keys": { projectId: project },
    "/admin/v1/tanks/:network/:sender/credit": { wei: "7000000000000000000" },
    "/admin/v1/tanks/:network/:sender/debit": { wei: "1" },
    "/admin/v1/tanks/:network/:sender/allow": { project },
    "/admin/v1/tanks/:network/:sender/disallow": { project },
    "/admin/v1/strategies/:code": { name: "Owned" },
    "/admin/v1/strategies": { code: "attacker", project },
    "/admin/v1/projects/:id/webhooks": { url: "https://attacker.invalid/" },
    "/admin/v1/applications/:id/reject": { reason: "no" },
    "/admin/v1/keys/:id/access": { origins: null },
    "/admin/v1/apply": { projects: [{ name: "Applied" }] },
  };
  return {
    ids,
    filled: (routePath) =>
      routePath.replace(/:(\w+)/g, (_m, name: string, offset: number) => {
        const segment = routePath.slice(0, offset).split("/").at(-2);
        const value =
          name === "code" ? code
          : name === "network" ? "local"
          : name === "sender" ? FIXTURE_SENDER
          : name === "token" ? "USDC"
          : name === "id" && segment === "projects" ? project
          : name === "id" && segment === "keys" ? key.id
          : name === "id" && segment === "applications" ? application
          : name === "id" && segment === "webhooks" ? webhook.endpoint.id
          : name === "id" && (segment === "sponsorships" || segment === "webhook-deliveries") ? "00000000-0000-4000-8000-000000000000"
          : undefined;
        if (value === undefined) throw new Error(`helpers/adminHttp.ts: give the parameter :${name} of ${routePath} a real value`);
        return value;
      }),
    bodyOf: (routePath) => JSON.stringify(bodies[routePath] ?? {}),
  };
}

/** An admin listener on 127.0.0.1 over a fresh SQLite file (network "local") holding the fixture's rows. */
export interface AdminListener {
  file: string;
  store: Store;
  options: AdminApiOptions;
  app: AdminApp;
  server: RunningServer;
  fixture: AdminFixture;
  close(): Promise<void>;
}

/** Starts one with PAYMASTER_ADMIN_TOKENS = `tokens`. */
export async function startAdminListener(label: string, tokens: string): Promise<AdminListener> {
  const dir = mkdtempSync(path.join(tmpdir(), `pm-${label}-`));
  const file = path.join(dir, "db.sqlite");
  const store = await openStore({ databasePath: file });
  const options = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: tokens, PAYMASTER_ADMIN_PORT: "0" })!;
  const app = createAdminApp({ store, networks: ["local"], logger: createLogger("silent") }, options);
  const server = await listen(app, options);
  const fixture = await seedAdminFixture(store);
  return {
    file,
    store,
    options,
    app,
    server,
    fixture,
    async close() {
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
