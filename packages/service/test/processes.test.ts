// The service as real child processes on PostgreSQL: graceful shutdown on SIGTERM under load; two replicas
// with watchers on, the leader killed (kill -9) and the other taking over, every landed op settled exactly
// once; kill -9 under concurrent load, then a restart: every signature a client received has its record,
// nothing is counted twice, the cap holds across the crash, and unused reservations are released after expiry.
import { expect } from "chai";
import { getUserOpHash, type Hex } from "@paymaster/shared";
import { executeCallData } from "../src/local/embedded.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import type { Store } from "../src/store/types.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { scrapeValue, spawnService, writeLocalConfig, type ServiceProcess } from "./helpers/serviceProcess.ts";
import { call, chainRequest, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, timeTravel, until, wireOp, type Embedded } from "./helpers/stack.ts";

describe("service processes: SIGTERM, leader election, kill -9 (PostgreSQL)", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let database: TestDatabase;
  let store: Store;
  const children: ServiceProcess[] = [];

  before(async () => {
    embedded = await startTestStack();
  });
  beforeEach(async () => {
    database = await createTestDatabase();
    store = await openPostgresStore(database.url);
  });
  afterEach(async () => {
    for (const child of children.splice(0)) await child.kill("SIGKILL");
    await store.close();
    await database.drop();
  });
  after(async () => {
    await embedded?.close();
  });

  async function seed(rules = {}) {
    const project = await store.createProject("processes");
    const { plaintext } = await store.createApiKey(project.id);
    const code = `P${Math.random().toString(36).slice(2, 8).toUpperCase()}`;
    const strategy = await store.createStrategy({ projectId: project.id, code, name: code, rules });
    return { apiKey: plaintext, code, strategyId: strategy.id };
  }

  async function spawn(extra: Parameters<typeof writeLocalConfig>[2] = {}, args: string[] = []): Promise<ServiceProcess> {
    const config = writeLocalConfig(embedded.stack.manifest, embedded.stack.chain.url, extra);
    const child = await spawnService(config, { signerKey: embedded.stack.signer.privateKey, databaseUrl: database.url }, args);
    children.push(child);
    return child;
  }

  const endpoint = (child: ServiceProcess, apiKey: string) => `${child.url}/api/v1/paymaster/local?apiKey=${apiKey}`;

  /** Sponsors a fresh account's first op through `child`, signs it as the owner and lands it; its userOpHash. */
  async function land(child: ServiceProcess, apiKey: string, code: string): Promise<Hex> {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const { status, body } = await call(endpoint(child, apiKey), "pm_sponsorUserOperation", [wire, { strategy_code: code, version: "v0.7" }]);
    expect(status, JSON.stringify(body)).to.equal(200);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    await chainRequest(embedded, "evm_mine", []);
    return outcome.event!.userOpHash;
  }

  it("a start-up check that gets a wrong answer (a signer the paymasters do not accept) stops the start with one line, no stack", async () => {
    const config = writeLocalConfig(embedded.stack.manifest, embedded.stack.chain.url);
    const stranger = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba" as const;
    const child = spawnService(config, { signerKey: stranger, databaseUrl: database.url });
    const error = (await child.then(() => undefined, (e: Error) => e))!;
    expect(error, "it must not start").to.be.instanceOf(Error);
    expect(error.message).to.match(/paymaster: cannot start: network local v0\.6: signer 0x[0-9a-fA-F]{40} is not accepted by paymaster 0x[0-9a-fA-F]{40}/);
    expect(error.message, "no stack trace lines").to.not.match(/"text":"\s+at /);
  });

  it("SIGTERM: stops accepting, answers every request in flight, closes its pools and exits 0", async () => {
    const { apiKey, code } = await seed();
    const child = await spawn({}, ["--no-watch"]);
    const ops = await Promise.all(Array.from({ length: 12 }, async () => {
      const wallet = await newWallet(embedded, "v0.7");
      return wireOp(wallet, executeCallData(wallet.owner.address));
    }));
    const finished: number[] = [];
    const requests = ops.map((op) =>
      call(endpoint(child, apiKey), "pm_sponsorUserOperation", [op, { strategy_code: code, version: "v0.7" }]).then((answer) => {
        finished.push(Date.now());
        return answer;
      }),
    );
    // Once the first answer is back the others have been received and are being worked on (a connection that
    // has not sent its request yet is idle, and an idle connection is closed at shutdown).
    for (let i = 0; i < 400 && finished.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    const signalledAt = Date.now();
    child.child.kill("SIGTERM");
    const answers = await Promise.all(requests);
    const exit = await child.exited;
    expect(answers.map((a) => a.status), JSON.stringify(answers.find((a) => a.status !== 200)?.body)).to.deep.equal(Array(12).fill(200));
    expect(finished.some((t) => t > signalledAt), "requests were in flight when SIGTERM came").to.equal(true);
    expect(exit).to.deep.equal({ code: 0, signal: null });
    expect(Date.now() - signalledAt, "drained within the bound").to.be.below(12_000);
    expect(child.lines.some((l) => /SIGTERM: shutting down/.test(l.text ?? ""))).to.equal(true);
    expect(child.lines.some((l) => typeof l.err?.stack === "string" || /^\s+at /.test(l.text ?? "")), "no stack traces").to.equal(false);
    const refused = await fetch(`${child.url}/health`).then(() => "answered", (error: Error) => (error.cause as { code?: string })?.code);
    expect(refused).to.equal("ECONNREFUSED");
    // Every signature handed out has its record.
    for (const answer of answers) expect(answer.body.data.userOpResponse.paymasterAndData).to.match(/^0x/);
    const counts = await store.sponsorshipCounts();
    expect(counts.filter((c) => c.status === "signed").reduce((n, c) => n + c.count, 0)).to.equal(12);
  });

  it("two replicas with watchers on: one leads; kill -9 of the leader, the other takes over; every landed op settled exactly once", async () => {
    // A cap, so the strategy's usage (reserved, spent, ops) is kept.
    const { apiKey, code, strategyId } = await seed({ caps: { global: { maxOps: 100 } } });
    const service = { leaderRetryMs: 300 };
    const replicas = [await spawn({ service }), await spawn({ service })];
    const leaderOf = async () => {
      const flags = await Promise.all(replicas.map((r) => scrapeValue(r.metricsUrl, "paymaster_watcher_leader", 'network="local"')));
      return flags;
    };
    const flags = await until("a leader", async () => {
      const f = await leaderOf();
      return f.reduce((a, b) => a + b, 0) === 1 ? f : undefined;
    });
    const leader = replicas[flags.indexOf(1)]!;
    const follower = replicas[flags.indexOf(0)]!;

    const hashes: Hex[] = [];
    for (let i = 0; i < 2; i++) hashes.push(await land(follower, apiKey, code));
    await until("settled by the leader", async () => {
      for (const h of hashes) if ((await store.findSponsorshipByUserOpHash(h))?.status !== "settled") return undefined;
      return true;
    });

    await leader.kill("SIGKILL");
    const killedAt = Date.now();
    for (let i = 0; i < 2; i++) hashes.push(await land(follower, apiKey, code));
    await until("the follower to lead", async () => (await scrapeValue(follower.metricsUrl, "paymaster_watcher_leader", 'network="local"')) === 1);
    const takeoverMs = Date.now() - killedAt;
    expect(takeoverMs, "takeover within a bounded time").to.be.below(10_000);
    await until("every landed op settled", async () => {
      for (const h of hashes) if ((await store.findSponsorshipByUserOpHash(h))?.status !== "settled") return undefined;
      return true;
    });
    expect(follower.lines.some((l) => l.msg === "this replica leads: settlement watcher started")).to.equal(true);

    // Exactly once: the strategy's spending is the sum of the four actual costs, nothing left reserved.
    const records = await Promise.all(hashes.map((h) => store.findSponsorshipByUserOpHash(h)));
    const actual = records.reduce((sum, r) => sum + r!.settlement!.actualGasCostWei, 0n);
    const usage = await store.getUsage(strategyId, "global", "");
    expect(usage.spentWei).to.equal(actual);
    expect(usage.reservedWei).to.equal(0n);
    expect(usage.ops).to.equal(4);
  });

  it("kill -9 under concurrent load, then a restart: signatures have records, nothing counted twice, the cap holds, unused reservations expire", async () => {
    const CAP = 15;
    const { apiKey, code, strategyId } = await seed({ caps: { global: { maxOps: CAP } } });
    // Signatures live 5 minutes (long enough for a slow, loaded run to check them while still signed).
    const extra = { network: { expiryGraceSeconds: 0 }, service: { signatureTtlSeconds: 300 } };
    const first = await spawn(extra);
    const owner = embedded.stack.chain.accounts[6]!.address;
    const wallets = await Promise.all(Array.from({ length: 40 }, () => newWallet(embedded, "v0.7")));
    const wires = wallets.map((w) => wireOp(w, executeCallData(owner)));
    let received = 0;
    const burst = wires.map((wire) =>
      call(endpoint(first, apiKey), "pm_sponsorUserOperation", [wire, { strategy_code: code, version: "v0.7" }]).then(
        (answer) => {
          if (answer.status === 200) received++;
          return answer;
        },
        () => undefined, // the connection died with the process
      ),
    );
    await until("a few signatures", async () => received >= 3);
    await first.kill("SIGKILL");
    const answers = await Promise.all(burst);

    const second = await spawn(extra);
    const more = await Promise.all(
      wires.map((wire, i) => (answers[i]?.status === 200 ? undefined : call(endpoint(second, apiKey), "pm_sponsorUserOperation", [wire, { strategy_code: code, version: "v0.7" }]))),
    );
    const signed = [...answers.map((a, i) => (a?.status === 200 ? { i, body: a.body } : undefined)), ...more.map((a, i) => (a?.status === 200 ? { i, body: a.body } : undefined))].filter((x) => x !== undefined);
    expect(signed.length, "the cap holds across the crash").to.be.at.most(CAP);
    const refusals = more.filter((a) => a && a.status !== 200);
    for (const r of refusals) expect(r!.body.data.rule, JSON.stringify(r!.body)).to.equal("caps.global.maxOps");

    // Every signature a client received has its record, signed.
    const entryPoint = embedded.stack.manifest.entryPoints["v0.7"].entryPoint;
    for (const { i, body } of signed) {
      const op = opFromResponse(wallets[i]!, wires[i]!, body.data);
      const hash = getUserOpHash({ ...op, entryPoint, chainId: embedded.stack.chain.chainId } as Parameters<typeof getUserOpHash>[0]);
      const record = await store.findSponsorshipByUserOpHash(hash);
      expect(record?.status, `record of signature ${i}`).to.equal("signed");
    }
    // Nothing counted twice: the cap's count is the number of live records.
    const live = (await store.sponsorshipCounts()).filter((c) => c.status === "reserved" || c.status === "signed").reduce((n, c) => n + c.count, 0);
    const usage = await store.getUsage(strategyId, "global", "");
    expect(usage.ops).to.equal(live);
    expect(live).to.be.at.least(signed.length).and.at.most(CAP);

    // Nothing lands: after expiry (5-minute signatures, no grace) the watcher releases every reservation.
    await timeTravel(embedded, 600);
    await until("reservations released after expiry", async () => {
      const counts = await store.sponsorshipCounts();
      return counts.every((c) => c.status !== "reserved" && c.status !== "signed") ? true : undefined;
    });
    const after = await store.getUsage(strategyId, "global", "");
    expect(after.ops).to.equal(0);
    expect(after.reservedWei).to.equal(0n);
  });
});
