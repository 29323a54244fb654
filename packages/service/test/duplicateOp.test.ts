// The same user operation (same sender and nonce) sent 20 times at once, on SQLite, on PostgreSQL and on two
// replicas sharing PostgreSQL: every answer is a 200 or the documented SPONSORSHIP_CONFLICT (409), never a 500,
// the strategy's caps count the op once, and every signature handed out is on record (reserve and sign are one
// store transaction: each 200 is a signed row, the last one active, the others released as replaced).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import type { Address } from "@paymaster/shared";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { startService, type RunningService } from "../src/server.ts";
import type { Store } from "../src/store/types.ts";
import { createTestDatabase } from "./helpers/postgres.ts";
import { call, deployAccount, startTestStack, type Embedded } from "./helpers/stack.ts";

const COPIES = 20;

describe("the same op 20 times at once: 200 or SPONSORSHIP_CONFLICT, counted once", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let sender: Address;

  before(async () => {
    embedded = await startTestStack();
    // One deployed account (owner: dev account #6); each test uses its own nonce key.
    sender = await deployAccount(embedded, 6);
  });
  after(async () => {
    await embedded?.close();
  });

  async function storm(store: Store, urls: string[], nonceKey: bigint) {
    const project = await store.createProject(`dup-${nonceKey}`);
    const { plaintext } = await store.createApiKey(project.id);
    const code = `DUP${nonceKey}`;
    const strategy = await store.createStrategy({ projectId: project.id, code, name: code, rules: { caps: { global: { maxOps: 100 } } } });
    const op = {
      sender,
      nonce: `0x${(nonceKey << 64n).toString(16)}`,
      callData: executeCallData(embedded.stack.chain.accounts[6]!.address),
      signature: `0x${"aa".repeat(32)}${"55".repeat(32)}1c`,
    };
    const answers = await Promise.all(
      Array.from({ length: COPIES }, (_, i) =>
        call(`${urls[i % urls.length]}/api/v1/paymaster/local?apiKey=${plaintext}`, "pm_sponsorUserOperation", [op, { strategy_code: code, version: "v0.7" }]),
      ),
    );
    const unexpected = answers.filter((a) => a.status !== 200 && !(a.status === 409 && a.body.data.reason === "SPONSORSHIP_CONFLICT"));
    expect(unexpected.map((a) => a.body), "only 200 or SPONSORSHIP_CONFLICT").to.deep.equal([]);
    const signed = answers.filter((a) => a.status === 200);
    expect(signed.length, "at least one signature").to.be.greaterThan(0);
    const rows = await store.listSponsorships({ network: "local", sender, limit: 1000 });
    const ofOp = rows.filter((r) => r.nonce === BigInt(op.nonce) && r.userOpHash !== null);
    const recorded = new Set(ofOp.map((r) => r.paymasterAndData));
    for (const a of signed) expect(recorded.has(a.body.data.userOpResponse.paymasterAndData), "the signature handed out is on record").to.equal(true);
    expect(ofOp.filter((r) => r.status === "signed").length, "one signed row active").to.equal(1);
    expect(ofOp.every((r) => r.status === "signed" || r.status === "released"), "no row left reserved without its signature").to.equal(true);
    const usage = await store.getUsage(strategy.id, "global", "");
    expect(usage.ops, "the cap counts the op once").to.equal(1);
    const active = (await store.sponsorshipCounts()).filter((c) => c.network === "local" && (c.status === "reserved" || c.status === "signed") && c.mode === "sponsor");
    return { usage, active: active.reduce((n, c) => n + c.count, 0) };
  }

  it("on SQLite", async () => {
    const store = embedded.running.service.store;
    const before = (await store.sponsorshipCounts()).filter((c) => c.status === "reserved" || c.status === "signed").reduce((n, c) => n + c.count, 0);
    const { active } = await storm(store, [embedded.running.url], 501n);
    expect(active - before, "one active reservation for the op").to.equal(1);
  });

  for (const replicas of [1, 2]) {
    it(`on PostgreSQL with ${replicas} replica${replicas > 1 ? "s" : ""}`, async () => {
      const database = await createTestDatabase();
      const services: RunningService[] = [];
      try {
        const network = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
        const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-dup-")), "data");
        for (let i = 0; i < replicas; i++) {
          services.push(await startService({ ...embeddedConfig(network, dataDir, 0, "silent"), databaseUrl: database.url }, { pollMs: 100, watch: false }));
        }
        const { active } = await storm(services[0]!.service.store, services.map((s) => s.url), 600n + BigInt(replicas));
        expect(active, "one active reservation for the op").to.equal(1);
      } finally {
        for (const s of services) await s.close();
        await database.drop();
      }
    });
  }
});
