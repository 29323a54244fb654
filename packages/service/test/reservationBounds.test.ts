// Issue 20, finding 2: reservations are made before the account signs, one per (sender, nonce), and 2-D nonces
// are free. The attacks, over real HTTP on the embedded chain: a key of an unrelated project reserves a
// victim's gas tank with ops on fresh nonce keys, and a browser key's script reserves with fresh senders. The
// first is refused at once unless the tank allowed that project (GAS_TANK_NOT_ALLOWED); a project it allowed
// stops at maxOutstandingPerSender (the victim's own default-key op still goes through); the second stops at
// maxOutstandingPerClientIp; nothing is recorded for a refused op.
import { expect } from "chai";
import type { Address } from "@paymaster/shared";
import type { ServiceConfig } from "../src/config/types.ts";
import { executeCallData } from "../src/local/embedded.ts";
import { call, fundTank, newWallet, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

/** The helper's call, with extra headers (a browser's Origin). */
async function callWith(endpoint: string, method: string, params: unknown[], headers: Record<string, string>) {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: JSON.stringify({ id: 1, jsonrpc: "2.0", method, params }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe("open reservations: per sender across nonce keys, per browser key's client address (issue 20)", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let attackerKey: string;
  let attackerProjectId: string;

  before(async () => {
    embedded = await startTestStack();
    const store = embedded.running.service.store;
    const attacker = await store.createProject("unrelated");
    attackerKey = (await store.createApiKey(attacker.id, "any key")).plaintext;
    attackerProjectId = attacker.id;
  });
  after(async () => embedded?.close());

  const store = () => embedded.running.service.store;
  const endpointFor = (key: string) => `${embedded.running.url}/api/v1/paymaster/local?apiKey=${key}`;
  const setBounds = (bounds: ServiceConfig["reservations"]) => ((embedded.running.service.config as { reservations?: ServiceConfig["reservations"] }).reservations = bounds);
  const open = async (sender: Address) => (await store().listSponsorships({ sender })).filter((s) => s.status === "signed" || s.status === "reserved");

  it("a key of a project the victim's tank never allowed cannot reserve from it at all (GAS_TANK_NOT_ALLOWED)", async () => {
    setBounds(undefined);
    const victim = await newWallet(embedded, "v0.7");
    await fundTank(store(), victim.sender, 2n * 10n ** 17n, embedded.projectId);
    const userMode = { version: "v0.7" };
    for (let key = 1n; key <= 3n; key++) {
      const answer = await call(endpointFor(attackerKey), "pm_sponsorUserOperation", [wireOp(victim, executeCallData(victim.sender), { nonce: key << 64n }), userMode]);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(403);
      expect(answer.body.data).to.include({ reason: "GAS_TANK_NOT_ALLOWED", sender: victim.sender });
    }
    expect(await open(victim.sender)).to.have.length(0);
    expect((await store().getGasTank("local", victim.sender)).reservedWei).to.equal(0n);
    // The project the tank allowed still draws from it.
    const own = await call(embedded.endpoint, "pm_sponsorUserOperation", [wireOp(victim, executeCallData(victim.sender)), userMode]);
    expect(own.status, JSON.stringify(own.body)).to.equal(200);
  });

  it("even a project the tank allowed cannot hold it with fresh nonce keys beyond the sender bound", async () => {
    setBounds(undefined); // the defaults: 4 per sender
    const victim = await newWallet(embedded, "v0.7");
    // The victim allowed the attacker's project too (a dapp it used, whose public key a script took).
    await fundTank(store(), victim.sender, 10n ** 17n, attackerProjectId);
    await store().setGasTankConsent({ network: "local", sender: victim.sender, projectId: embedded.projectId, allowed: true, changedBy: "test" });
    const userMode = { version: "v0.7" };
    for (let key = 1n; key <= 4n; key++) {
      const op = wireOp(victim, executeCallData(victim.sender), { nonce: key << 64n });
      const answer = await call(endpointFor(attackerKey), "pm_sponsorUserOperation", [op, userMode]);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    }
    const fifth = await call(endpointFor(attackerKey), "pm_sponsorUserOperation", [wireOp(victim, executeCallData(victim.sender), { nonce: 5n << 64n }), userMode]);
    expect(fifth.status, JSON.stringify(fifth.body)).to.equal(429);
    expect(fifth.body.data).to.include({ reason: "TOO_MANY_OUTSTANDING", scope: "sender", limit: 4 });
    expect(await open(victim.sender)).to.have.length(4);
    // Renewing one of them (same nonce) replaces it: still four.
    expect((await call(endpointFor(attackerKey), "pm_sponsorUserOperation", [wireOp(victim, executeCallData(victim.sender), { nonce: 1n << 64n }), userMode])).status).to.equal(200);
    expect(await open(victim.sender)).to.have.length(4);
    // The victim's own op on the default nonce key is never refused by the bound.
    const own = await call(embedded.endpoint, "pm_sponsorUserOperation", [wireOp(victim, executeCallData(victim.sender)), userMode]);
    expect(own.status, JSON.stringify(own.body)).to.equal(200);
    expect(await open(victim.sender)).to.have.length(5);
  });

  it("a browser key's client address holds at most maxOutstandingPerClientIp open sponsorships; a server key is not bounded by it", async () => {
    setBounds({ maxOutstandingPerClientIp: 3 });
    const projectId = (await store().findApiKey(embedded.apiKey))!.projectId;
    const created = await store().createApiKey(projectId, "browser");
    await store().setApiKeyAccess(created.apiKey.id, { allowedOrigins: ["https://app.example"], allowedIps: null });
    const sponsorFrom = (key: string, wallet: Awaited<ReturnType<typeof newWallet>>, origin?: string) =>
      callWith(endpointFor(key), "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: embedded.strategyCode, version: "v0.7" }], origin ? { origin } : {});
    for (let i = 0; i < 3; i++) {
      const answer = await sponsorFrom(created.plaintext, await newWallet(embedded, "v0.7"), "https://app.example");
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    }
    const script = await newWallet(embedded, "v0.7");
    const refused = await sponsorFrom(created.plaintext, script, "https://app.example");
    expect(refused.status, JSON.stringify(refused.body)).to.equal(429);
    expect(refused.body.data).to.include({ reason: "TOO_MANY_OUTSTANDING", scope: "clientIp", limit: 3 });
    expect(await open(script.sender), "nothing recorded for the refused op").to.have.length(0);
    // The server-side demo key (no origin list) from the same address is a backend serving many users.
    for (let i = 0; i < 4; i++) expect((await sponsorFrom(embedded.apiKey, await newWallet(embedded, "v0.7"))).status).to.equal(200);
  });

  it("the review's caps attack: a browser key's script cannot hold a strategy's small op-count cap (caps.daily.maxOps 3)", async () => {
    setBounds(undefined); // the defaults: 8 per client address, lowered under this strategy to half its maxOps cap
    const project = await store().createProject("capped");
    await store().createStrategy({ projectId: project.id, code: "CAPPED3", name: "three a day", rules: { caps: { daily: { maxOps: 3 } } } });
    await store().createStrategy({ projectId: project.id, code: "CAPPED3_OPEN2", name: "three a day, two per client", rules: { caps: { daily: { maxOps: 3 } }, maxOutstandingPerClientIp: 2 } });
    const browser = await store().createApiKey(project.id, "public");
    await store().setApiKeyAccess(browser.apiKey.id, { allowedOrigins: ["https://app.example"], allowedIps: null });
    const server = (await store().createApiKey(project.id, "backend")).plaintext;
    const sponsor = async (key: string, code: string, origin?: string) => {
      const wallet = await newWallet(embedded, "v0.7");
      const params = [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: code, version: "v0.7" }];
      return { wallet, answer: await callWith(endpointFor(key), "pm_sponsorUserOperation", params, origin ? { origin } : {}) };
    };
    // The script: fresh senders, one signed, the next refused; the cap keeps two of its three ops.
    expect((await sponsor(browser.plaintext, "CAPPED3", "https://app.example")).answer.status).to.equal(200);
    const { wallet: script, answer: refused } = await sponsor(browser.plaintext, "CAPPED3", "https://app.example");
    expect(refused.status, JSON.stringify(refused.body)).to.equal(429);
    expect(refused.body.data).to.include({ reason: "TOO_MANY_OUTSTANDING", scope: "clientIp", limit: 1 });
    expect(await open(script.sender)).to.have.length(0);
    // The project's real users (its backend here) still get the rest of the day's cap.
    for (let i = 0; i < 2; i++) {
      const { answer } = await sponsor(server, "CAPPED3");
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    }
    const full = (await sponsor(server, "CAPPED3")).answer;
    expect(full.body.data).to.include({ reason: "STRATEGY_NOT_ALLOWED", rule: "caps.daily.maxOps" });
    // A strategy's own maxOutstandingPerClientIp is the bound under it (counted per key and address).
    const other = await store().createApiKey(project.id, "public 2");
    await store().setApiKeyAccess(other.apiKey.id, { allowedOrigins: ["https://app.example"], allowedIps: null });
    for (let i = 0; i < 2; i++) expect((await sponsor(other.plaintext, "CAPPED3_OPEN2", "https://app.example")).answer.status).to.equal(200);
    expect((await sponsor(other.plaintext, "CAPPED3_OPEN2", "https://app.example")).answer.body.data).to.include({ reason: "TOO_MANY_OUTSTANDING", limit: 2 });
  });

  it("the second review's IPv6 attack: 6 addresses of one /64 behind the trusted proxy are one client, stopped at the bound (maxOps 6)", async () => {
    setBounds(undefined); // 8 per client, lowered under this strategy to 3 (half its maxOps)
    const config = embedded.running.service.config as { trustedProxies?: readonly string[] };
    config.trustedProxies = ["127.0.0.1/32"];
    try {
      const project = await store().createProject("capped six");
      await store().createStrategy({ projectId: project.id, code: "CAPPED6", name: "six a day", rules: { caps: { daily: { maxOps: 6 } } } });
      const browser = await store().createApiKey(project.id, "public");
      await store().setApiKeyAccess(browser.apiKey.id, { allowedOrigins: ["https://app.example"], allowedIps: null });
      const sponsorFrom = async (forwardedFor: string) => {
        const wallet = await newWallet(embedded, "v0.7");
        const params = [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: "CAPPED6", version: "v0.7" }];
        return callWith(endpointFor(browser.plaintext), "pm_sponsorUserOperation", params, { origin: "https://app.example", "x-forwarded-for": forwardedFor });
      };
      // The script walks its /64: each address would be a fresh client if counted one by one.
      const statuses = [];
      let last: Awaited<ReturnType<typeof sponsorFrom>> | undefined;
      for (let i = 1; i <= 6; i++) {
        last = await sponsorFrom(`2001:db8:ab:cd:${i.toString(16)}::${i}`);
        statuses.push(last.status);
      }
      expect(statuses, JSON.stringify(last?.body)).to.deep.equal([200, 200, 200, 429, 429, 429]);
      expect(last!.body.data).to.include({ reason: "TOO_MANY_OUTSTANDING", scope: "clientIp", limit: 3 });
      // A real user elsewhere (another /64, an IPv4 address) still gets the rest of the day's cap.
      expect((await sponsorFrom("2001:db8:ab:ce::1")).status).to.equal(200);
      expect((await sponsorFrom("198.51.100.20")).status).to.equal(200);
      expect((await sponsorFrom("::ffff:198.51.100.21")).status).to.equal(200);
    } finally {
      config.trustedProxies = undefined;
    }
  });
});
