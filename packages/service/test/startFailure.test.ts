// A start-up that fails at its last step leaves nothing behind: with the JSON-RPC port already taken, startService
// refuses, and the store it opened is closed (no connection of its pool is left on PostgreSQL), as the networks
// and the rate limiter are.
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { once } from "node:events";
import { expect } from "chai";
import pg from "pg";
import { embeddedConfig } from "../src/local/embedded.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { startService } from "../src/server.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { startTestStack, type Embedded } from "./helpers/stack.ts";

describe("start-up that fails at the JSON-RPC listener", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let database: TestDatabase;
  let taken: Server;

  before(async () => {
    embedded = await startTestStack();
    database = await createTestDatabase("paymaster_start_failure");
    taken = createServer().listen(0, "127.0.0.1");
    await once(taken, "listening");
  });
  after(async () => {
    taken?.close();
    await database?.drop();
    await embedded?.close();
  });

  /** Connections to the test database other than this query's own. */
  async function connections(): Promise<number> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
      return Number(rows[0]!.n);
    } finally {
      await client.end();
    }
  }

  it("the port taken: startService refuses, and the store's connections are closed", async () => {
    const port = (taken.address() as { port: number }).port;
    const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-start-failure-")), "data");
    const config = { ...embeddedConfig(network, dataDir, port, "silent"), databaseUrl: database.url };
    const error = await startService(config, { pollMs: 60_000, watch: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(error), "the listener's failure").to.match(/EADDRINUSE|in use/i);
    expect(await connections(), "connections the failed start left open on the database").to.equal(0);
  });
});
