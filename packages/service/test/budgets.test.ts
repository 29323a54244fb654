// Strategy policies over HTTP against the embedded chain: every rule accepts and refuses with its rule,
// limit and value; the dry run explains without reserving; caps hold under 100 concurrent requests on
// SQLite, on PostgreSQL, and with two service replicas sharing one PostgreSQL database.
import { expect } from "chai";
import { encodeFunctionData, type Abi } from "viem";
import { TestTokenArtifact } from "@paymaster/contracts/artifacts";
import type { Address, EntryPointVersion, Hex } from "@paymaster/shared";
import { executeCallData } from "../src/local/embedded.ts";
import type { StrategyRules } from "../src/policy/types.ts";
import type { Store } from "../src/store/types.ts";
import { call, chainRequest, deployAccount, newWallet, sponsorBurst, startPostgresReplicas, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

describe("strategy policies and budgets", function () {
  let embedded: Embedded;
  let store: Store;
  let projectId: string;
  let apiKeyEndpoint: string;
  let counter = 0;

  before(async () => {
    embedded = await startTestStack();
    store = embedded.running.service.store;
    const project = await store.createProject("budgets");
    projectId = project.id;
    const { plaintext } = await store.createApiKey(projectId, "budgets");
    apiKeyEndpoint = `${embedded.running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
  });
  after(async () => {
    await embedded?.close();
  });

  async function strategy(rules: StrategyRules): Promise<string> {
    const code = `B${++counter}`;
    await store.createStrategy({ projectId, code, name: code, rules });
    return code;
  }

  async function sponsor(code: string, version: EntryPointVersion = "v0.7", callData?: (owner: Address) => Hex, extraOp: Record<string, string> = {}) {
    const wallet = await newWallet(embedded, version);
    const wire = wireOp(wallet, (callData ?? executeCallData)(wallet.owner.address), { extra: extraOp });
    const extra = version === "v0.6" ? { strategy_code: code } : { strategy_code: code, version };
    return { wallet, ...(await call(apiKeyEndpoint, "pm_sponsorUserOperation", [wire, extra])) };
  }

  function expectRefused(response: Awaited<ReturnType<typeof sponsor>>, rule: string) {
    expect(response.status, JSON.stringify(response.body)).to.equal(403);
    expect(response.body.data.reason).to.equal("STRATEGY_NOT_ALLOWED");
    expect(response.body.data.rule).to.equal(rule);
    expect(response.body.data).to.have.property("limit");
    expect(response.body.data).to.have.property("value");
  }

  describe("each rule: one accepted, one refused", () => {
    it("senderAllowlist", async () => {
      const allowed = await newWallet(embedded, "v0.7");
      const code = await strategy({ senderAllowlist: [allowed.sender] });
      const ok = await call(apiKeyEndpoint, "pm_sponsorUserOperation", [wireOp(allowed, executeCallData(allowed.owner.address)), { strategy_code: code, version: "v0.7" }]);
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expectRefused(await sponsor(code), "senderAllowlist");
    });

    it("senderDenylist", async () => {
      const denied = await newWallet(embedded, "v0.7");
      const code = await strategy({ senderDenylist: [denied.sender] });
      expect((await sponsor(code)).status).to.equal(200);
      const refused = await call(apiKeyEndpoint, "pm_sponsorUserOperation", [wireOp(denied, executeCallData(denied.owner.address)), { strategy_code: code, version: "v0.7" }]);
      expectRefused({ ...refused, wallet: denied }, "senderDenylist");
    });

    it("targets: every call of the op must go to an allowed target and selector", async () => {
      const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
      const approve = encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "approve", args: [usdc, 1n] });
      const transfer = encodeFunctionData({ abi: TestTokenArtifact.abi as Abi, functionName: "transfer", args: [usdc, 0n] });
      const code = await strategy({ targets: [{ address: usdc, selectors: [approve.slice(0, 10) as Hex] }] });
      expect((await sponsor(code, "v0.7", () => executeCallData(usdc, approve))).status).to.equal(200);
      const refused = await sponsor(code, "v0.7", () => executeCallData(usdc, transfer));
      expectRefused(refused, "targets");
      expectRefused(await sponsor(code, "v0.6", (owner) => executeCallData(owner)), "targets");
    });

    it("caps.perOp.maxWei and caps.perOp.maxUsd", async () => {
      expectRefused(await sponsor(await strategy({ caps: { perOp: { maxWei: 1000n } } })), "caps.perOp.maxWei");
      expect((await sponsor(await strategy({ caps: { perOp: { maxWei: 10n ** 18n } } }))).status).to.equal(200);
      expectRefused(await sponsor(await strategy({ caps: { perOp: { maxUsd: "0.0001" } } })), "caps.perOp.maxUsd");
      expect((await sponsor(await strategy({ caps: { perOp: { maxUsd: "100" } } }))).status).to.equal(200);
    });

    it("gasLimits ceilings and the fee multiplier", async () => {
      expectRefused(await sponsor(await strategy({ gasLimits: { maxCallGasLimit: 1000n } })), "gasLimits.maxCallGasLimit");
      expect((await sponsor(await strategy({ gasLimits: { maxCallGasLimit: 1_000_000n } }))).status).to.equal(200);
      const market = await embedded.running.service.networks.get("local")!.chain!.market.current();
      const high = `0x${(market.maxFeePerGas * 2n).toString(16)}`;
      const code = await strategy({ maxFeeMultiplierBps: 15_000 });
      expectRefused(await sponsor(code, "v0.7", undefined, { maxFeePerGas: high }), "maxFeeMultiplierBps");
      expect((await sponsor(code)).status).to.equal(200);
    });

    it("running caps: global maxOps, daily maxWei, perSender maxOps", async () => {
      const global = await strategy({ caps: { global: { maxOps: 2 } } });
      expect((await sponsor(global)).status).to.equal(200);
      expect((await sponsor(global)).status).to.equal(200);
      const third = await sponsor(global);
      expectRefused(third, "caps.global.maxOps");
      expect(third.body.data.limit).to.equal("2");
      expect(third.body.data.value).to.equal("3");

      const daily = await strategy({ caps: { daily: { maxWei: 10n ** 15n } } });
      let accepted = 0;
      let refusal: Awaited<ReturnType<typeof sponsor>> | undefined;
      for (let i = 0; i < 20 && !refusal; i++) {
        const response = await sponsor(daily);
        if (response.status === 200) accepted++;
        else refusal = response;
      }
      expect(accepted > 0, "some ops fit the daily cap").to.equal(true);
      expectRefused(refusal!, "caps.daily.maxWei");
      expect(BigInt(refusal!.body.data.value) > 10n ** 15n).to.equal(true);

      const perSender = await strategy({ caps: { perSender: { maxOps: 1 } } });
      const wallet = await newWallet(embedded, "v0.7");
      const one = await call(apiKeyEndpoint, "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: perSender, version: "v0.7" }]);
      expect(one.status).to.equal(200);
      const two = await call(apiKeyEndpoint, "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(wallet.owner.address), { nonce: 1n << 64n }), { strategy_code: perSender, version: "v0.7" }]);
      expectRefused({ ...two, wallet }, "caps.perSender.maxOps");
      expect((await sponsor(perSender)).status, "another sender still fits").to.equal(200);
    });
  });

  describe("pm_checkPolicy (the dry run)", () => {
    it("answers every verdict and the refusing rule, and reserves nothing", async () => {
      const code = await strategy({ caps: { global: { maxOps: 5 }, perOp: { maxWei: 1000n } }, gasLimits: { maxCallGasLimit: 1_000_000n } });
      const wallet = await newWallet(embedded, "v0.7");
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const { status, body } = await call(apiKeyEndpoint, "pm_checkPolicy", [wire, { strategy_code: code, version: "v0.7" }]);
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body.data.wouldSponsor).to.equal(false);
      expect(body.data.rejectedBy.rule).to.equal("caps.perOp.maxWei");
      const rules = body.data.verdicts.map((v: { rule: string; pass: boolean }) => `${v.rule}:${v.pass}`);
      expect(rules).to.include.members(["status:true", "gasLimits.maxCallGasLimit:true", "caps.perOp.maxWei:false", "caps.global.maxOps:true"]);
      const strategyRow = await store.getStrategyByCode(code);
      expect((await store.getUsage(strategyRow!.id, "global", "")).ops).to.equal(0);

      const passing = await strategy({ caps: { global: { maxOps: 5 } } });
      const ok = await call(apiKeyEndpoint, "pm_checkPolicy", [wire, { strategy_code: passing, version: "v0.7" }]);
      expect(ok.body.data.wouldSponsor).to.equal(true);
      expect(ok.body.data.rejectedBy).to.equal(null);
    });

    it("counts the reservation the op would replace, as the real request does", async () => {
      const code = await strategy({ caps: { global: { maxOps: 1 } } });
      const wallet = await newWallet(embedded, "v0.7");
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const extra = { strategy_code: code, version: "v0.7" };
      expect((await call(apiKeyEndpoint, "pm_sponsorUserOperation", [wire, extra])).status).to.equal(200);
      const dry = await call(apiKeyEndpoint, "pm_checkPolicy", [wire, extra]);
      expect(dry.body.data.wouldSponsor, JSON.stringify(dry.body)).to.equal(true);
      expect(dry.body.data.verdicts.find((v: { rule: string }) => v.rule === "caps.global.maxOps")).to.include({ pass: true, limit: "1", value: "1" });
      expect((await call(apiKeyEndpoint, "pm_sponsorUserOperation", [wire, extra])).status, "the real request agrees").to.equal(200);
      // Another op (another nonce) replaces nothing: both refuse it.
      const other = wireOp(wallet, executeCallData(wallet.owner.address), { nonce: 1n << 64n });
      const refusedDry = await call(apiKeyEndpoint, "pm_checkPolicy", [other, extra]);
      expect(refusedDry.body.data.rejectedBy).to.include({ rule: "caps.global.maxOps", limit: "1", value: "2" });
      expect((await call(apiKeyEndpoint, "pm_sponsorUserOperation", [other, extra])).status).to.equal(403);
    });

    it("USD caps are reported in dollars, by the refusal and by the dry run", async () => {
      const code = await strategy({ caps: { global: { maxUsd: "0.000001" } } });
      const wallet = await newWallet(embedded, "v0.7");
      const wire = wireOp(wallet, executeCallData(wallet.owner.address));
      const extra = { strategy_code: code, version: "v0.7" };
      const refused = await call(apiKeyEndpoint, "pm_sponsorUserOperation", [wire, extra]);
      expect(refused.status).to.equal(403);
      expect(refused.body.data).to.include({ rule: "caps.global.maxUsd", limit: "0.000001" });
      expect(refused.body.data.value).to.match(/^\d+\.\d{2,6}$/);
      expect(refused.body.message).to.match(/\$\d+\.\d+ against a limit of \$0\.000001/);
      const dry = await call(apiKeyEndpoint, "pm_checkPolicy", [wire, extra]);
      expect(dry.body.data.rejectedBy).to.include({ rule: "caps.global.maxUsd", limit: "0.000001", value: refused.body.data.value });
    });
  });

  describe("caps under concurrency: 100 requests against a cap of k ops -> exactly k signatures", () => {
    const K = 7;

    /** 100 requests at once, one account on 100 nonce keys (helpers/stack.ts sponsorBurst), against the cap. */
    async function burst(endpoints: string[], code: string, sender: Address, keyBase: bigint) {
      const results = await sponsorBurst(embedded, endpoints, { sender, ownerIndex: 6, extra: { strategy_code: code }, keyBase });
      const ok = results.filter((r) => r.status === 200).length;
      const refused = results.filter((r) => r.status === 403 && r.body.data.rule === "caps.global.maxOps").length;
      return { ok, refused, other: results.filter((r) => r.status !== 200 && r.status !== 403).map((r) => r.body) };
    }

    it("on SQLite", async function () {
      this.timeout(120_000);
      const sender = await deployAccount(embedded, 6);
      const code = await strategy({ caps: { global: { maxOps: K } } });
      // One sender on 100 nonce keys is this test's way to make 100 valid ops at once: the per-sender bound on
      // open reservations (4 by default) is lifted so that only the cap decides.
      (embedded.running.service.config as { reservations?: object }).reservations = { maxOutstandingPerSender: 1000 };
      const { ok, refused, other } = await burst([apiKeyEndpoint], code, sender, 1000n);
      delete (embedded.running.service.config as { reservations?: object }).reservations;
      expect(other, JSON.stringify(other[0])).to.deep.equal([]);
      expect(ok).to.equal(K);
      expect(refused).to.equal(100 - K);
      const row = await store.getStrategyByCode(code);
      expect((await store.getUsage(row!.id, "global", "")).ops).to.equal(K);
    });

    for (const replicas of [1, 2]) {
      it(`on PostgreSQL with ${replicas} service replica${replicas > 1 ? "s" : ""}`, async function () {
        this.timeout(120_000);
        const { services, close } = await startPostgresReplicas(embedded, replicas, `paymaster_budget_${replicas}`);
        try {
          const pgStore = services[0]!.service.store;
          const project = await pgStore.createProject("pg");
          const { plaintext } = await pgStore.createApiKey(project.id);
          const code = `PG${replicas}`;
          await pgStore.createStrategy({ projectId: project.id, code, name: code, rules: { caps: { global: { maxOps: K } } } });
          const sender = await deployAccount(embedded, 6);
          const endpoints = services.map((s) => `${s.url}/api/v1/paymaster/local?apiKey=${plaintext}`);
          const { ok, refused, other } = await burst(endpoints, code, sender, 5000n + BigInt(replicas) * 1000n);
          expect(other, JSON.stringify(other[0])).to.deep.equal([]);
          expect(ok).to.equal(K);
          expect(refused).to.equal(100 - K);
          const row = await pgStore.getStrategyByCode(code);
          expect((await pgStore.getUsage(row!.id, "global", "")).ops).to.equal(K);
        } finally {
          await close();
        }
      });
    }
  });
});
