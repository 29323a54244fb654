// Issue 46, item 4: the admin API's 503 answered the database driver's own words (`detail`: its host and port, and
// with other failures the database's name or the user) to every role, viewers included. Over real HTTP on
// 127.0.0.1, PostgreSQL behind a real TCP proxy that stops accepting connections: every role gets the failure's
// name and cause and nothing of the driver's text; the driver's words are in the service's log, once per outage.
import { expect } from "chai";
import { listen, type RunningServer } from "../src/app.ts";
import { createAdminApp } from "../src/adminApi/app.ts";
import { adminApiOptionsFromEnv } from "../src/adminApi/options.ts";
import { createLogger } from "../src/log.ts";
import { openStore } from "../src/store/index.ts";
import type { Store } from "../src/store/types.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { startTcpProxy, type TcpProxy } from "./helpers/tcpProxy.ts";

const TOKENS = { viewer: "v".repeat(40), operator: "o".repeat(40), admin: "a".repeat(40) } as const;

describe("the admin API's 503 names the failure and its cause, never the driver's words (issue 46, item 4)", function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let proxy: TcpProxy;
  let store: Store;
  let server: RunningServer;
  const logs: Record<string, unknown>[] = [];
  /** The admin app's clock (Unix seconds): moved by the test past the quiet window of a repeated warning. */
  let clock = Math.floor(Date.now() / 1000);

  before(async () => {
    database = await createTestDatabase("paymaster_admin_unavailable");
    const url = new URL(database.url);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
    url.port = String(proxy.port);
    store = await openStore({ databasePath: "", databaseUrl: url.href });
    const options = adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `watch:viewer=${TOKENS.viewer},policy:operator=${TOKENS.operator},root:admin=${TOKENS.admin}`, PAYMASTER_ADMIN_PORT: "0" })!;
    const logger = createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line)) });
    server = await listen(createAdminApp({ store, networks: ["local"], logger, now: () => clock }, options), options);
  });
  after(async () => {
    await server?.close();
    await store?.close();
    await proxy?.close();
    await database?.drop();
  });

  it("a viewer, an operator and an admin each get reason and cause only; the log has the detail", async () => {
    const ask = async (token: string) => {
      const answer = await fetch(`${server.url}/admin/v1/projects`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
      return { status: answer.status, text: await answer.text() };
    };
    expect((await ask(TOKENS.viewer)).status, "served while the database answers").to.equal(200);
    await proxy.setMode("refuse");
    const mark = logs.length;
    for (const [role, token] of Object.entries(TOKENS)) {
      const answer = await ask(token);
      expect(answer.status, `${role}: ${answer.text}`).to.equal(503);
      const { error } = JSON.parse(answer.text) as { error: Record<string, unknown> };
      expect(Object.keys(error).sort(), role).to.deep.equal(["cause", "code", "message", "reason"]);
      expect(error, role).to.deep.include({ code: "UNAVAILABLE", reason: "STORE_UNAVAILABLE" });
      expect(error.cause, role).to.be.oneOf(["refused", "connection"]);
      expect(answer.text, role).to.not.match(new RegExp(`ECONNREFUSED|${proxy.port}|127\\.0\\.0\\.1|${new URL(database.url).pathname.slice(1)}`));
    }
    const lines = () => logs.slice(mark).filter((l) => l["msg"] === "admin API: a dependency is unavailable");
    // One line for the outage, not one per answer (a console polling through it would write a line per request).
    expect(lines(), JSON.stringify(logs.slice(mark))).to.have.length(1);
    expect(lines()[0]).to.deep.include({ level: "warn", reason: "STORE_UNAVAILABLE", path: "/admin/v1/projects", actor: "api:watch" });
    expect(lines()[0], "the first line stands for itself alone").to.not.have.property("repeated");
    expect(String(lines()[0]!["detail"]), "the operator finds the driver's words in the log").to.include(String(proxy.port));
    // Still down a minute later: one more line, saying how many answers it stood for in between.
    clock += 59;
    expect((await ask(TOKENS.viewer)).status).to.equal(503);
    expect(lines()).to.have.length(1);
    clock += 1;
    expect((await ask(TOKENS.admin)).status).to.equal(503);
    expect(lines()).to.have.length(2);
    expect(lines()[1]).to.deep.include({ reason: "STORE_UNAVAILABLE", actor: "api:root", repeated: 3 });
  });
});
