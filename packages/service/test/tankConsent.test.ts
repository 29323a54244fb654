// Issue 20, finding 2: a gas tank belongs to a sender, not to a project, so User Sponsor mode draws only for
// projects the tank's owner allowed. Over real HTTP on the embedded chain: the owner's signed consent (an EOA's
// key, before and after the EOA is delegated to Simple7702Account), refusals of a
// stranger's signature, another project's message, an old message replayed and a stale one; an allow dated
// ahead and held back against the owner's withdrawal and the operator's disallow; the operator's
// allow/disallow through the admin API, audited.
import { expect } from "chai";
import { gasTankConsentTypedData, type Address } from "@paymaster/shared";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { executeCallData } from "../src/local/embedded.ts";
import { call, chainRequest, handleOps, new7702Wallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const ADMIN_TOKEN = "t".repeat(40);

describe("gas tank consent: User Sponsor mode draws only for projects the tank allowed (issue 20)", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let adminUrl: string;
  before(async () => {
    embedded = await startTestStack({ admin: { host: "127.0.0.1", port: 0, tokens: [{ name: "ops", token: ADMIN_TOKEN }] } as never });
    adminUrl = embedded.running.adminUrl!;
  });
  after(async () => embedded?.close());

  const store = () => embedded.running.service.store;
  const standard = (key = embedded.apiKey) => `${embedded.running.url}/rpc/v1/local?apiKey=${key}`;
  const now = () => Math.floor(Date.now() / 1000);

  /** JSON-RPC on the standard endpoint: the result, or the error object. */
  async function rpc(method: string, params: unknown[], key?: string): Promise<{ result?: any; error?: any; status: number }> {
    const response = await fetch(standard(key), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
    return { status: response.status, ...((await response.json()) as object) };
  }

  async function signConsent(signer: PrivateKeyAccount, sender: Address, project: string, allowed: boolean, issuedAt: number) {
    return signer.signTypedData(gasTankConsentTypedData(embedded.stack.chain.chainId, { sender, project, allowed, issuedAt: BigInt(issuedAt) }));
  }

  const sponsorUser = (wire: unknown) => call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { version: "v0.8" }]);

  it("the owner's signed consent (EOA, then ERC-1271 once delegated) opens and closes the tank; forged, foreign, replayed and stale ones change nothing", async () => {
    const wallet = await new7702Wallet(embedded);
    await store().creditGasTank("local", wallet.sender, 10n ** 17n, `test:${wallet.sender}`);
    const first = wireOp(wallet, executeCallData(wallet.sender));

    // Deny by default: the tank has allowed nobody, so even the demo project's key is refused and nothing is held.
    const refused = await sponsorUser(first);
    expect(refused.status, JSON.stringify(refused.body)).to.equal(403);
    expect(refused.body.data).to.include({ reason: "GAS_TANK_NOT_ALLOWED", sender: wallet.sender, projectId: embedded.projectId });
    expect((await store().getGasTank("local", wallet.sender)).reservedWei).to.equal(0n);

    // The typed data the service asks to sign names the key's project and the chain.
    const asked = await rpc("pm_gasTankConsentRequest", [{ sender: wallet.sender }]);
    expect(asked.result.typedData.message).to.include({ sender: wallet.sender, project: embedded.projectId, allowed: true });
    expect(asked.result.typedData.domain.chainId).to.equal(embedded.stack.chain.chainId);
    const allowAt = asked.result.typedData.message.issuedAt as number;
    expect(Math.abs(allowAt - now())).to.be.lessThan(30);

    // A stranger's signature, and the owner's signature of another project's consent, are refused.
    const stranger = privateKeyToAccount(generatePrivateKey());
    const forged = await rpc("pm_setGasTankConsent", [{ sender: wallet.sender, allowed: true, issuedAt: allowAt, signature: await signConsent(stranger, wallet.sender, embedded.projectId, true, allowAt) }]);
    expect(forged.error?.data?.reason, JSON.stringify(forged)).to.equal("INVALID_CONSENT");
    const foreign = await rpc("pm_setGasTankConsent", [{ sender: wallet.sender, allowed: true, issuedAt: allowAt, signature: await signConsent(wallet.owner, wallet.sender, "another-project", true, allowAt) }]);
    expect(foreign.error?.data?.reason, JSON.stringify(foreign)).to.equal("INVALID_CONSENT");
    // Signed long ago (or far ahead): refused, whoever signed.
    const stale = now() - 3600;
    const old = await rpc("pm_setGasTankConsent", [{ sender: wallet.sender, allowed: true, issuedAt: stale, signature: await signConsent(wallet.owner, wallet.sender, embedded.projectId, true, stale) }]);
    expect(old.error?.data?.reason, JSON.stringify(old)).to.equal("INVALID_CONSENT");
    expect(await store().gasTankAllows("local", wallet.sender, embedded.projectId)).to.equal(false);

    // The owner's own signature (a plain EOA yet: recovered) allows the demo project.
    const allowSignature = await signConsent(wallet.owner, wallet.sender, embedded.projectId, true, allowAt);
    const allowed = await rpc("pm_setGasTankConsent", [{ sender: wallet.sender, allowed: true, issuedAt: allowAt, signature: allowSignature }]);
    expect(allowed.result, JSON.stringify(allowed)).to.deep.equal({ sender: wallet.sender, projectId: embedded.projectId, allowed: true, issuedAt: allowAt });

    // Now the op is sponsored from the tank and lands; the EOA is delegated to Simple7702Account by it.
    const answer = await sponsorUser(first);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, first, answer.body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    expect(await chainRequest(embedded, "eth_getCode", [wallet.sender, "latest"])).to.not.equal("0x");

    // Delegated, the sender has code: viem checks the signature with ERC-1271 through its validator (Simple7702Account
    // accepts its EOA key), ECDSA recovery as the fallback; the same key withdraws the consent.
    const disallowAt = (await rpc("pm_gasTankConsentRequest", [{ sender: wallet.sender, allowed: false }])).result.typedData.message.issuedAt as number;
    const disallowed = await rpc("pm_setGasTankConsent", [{ sender: wallet.sender, allowed: false, issuedAt: disallowAt, signature: await signConsent(wallet.owner, wallet.sender, embedded.projectId, false, disallowAt) }]);
    expect(disallowed.result, JSON.stringify(disallowed)).to.include({ allowed: false, issuedAt: disallowAt });
    const next = wireOp(wallet, executeCallData(wallet.sender), { deploy: false, nonce: 1n });
    expect((await sponsorUser(next)).body.data?.reason).to.equal("GAS_TANK_NOT_ALLOWED");

    // Replaying the earlier allow (older than the recorded consent) does not reopen the tank.
    const replay = await rpc("pm_setGasTankConsent", [{ sender: wallet.sender, allowed: true, issuedAt: allowAt, signature: allowSignature }]);
    expect(replay.error?.data?.reason, JSON.stringify(replay)).to.equal("INVALID_CONSENT");
    expect(await store().gasTankAllows("local", wallet.sender, embedded.projectId)).to.equal(false);
  });

  it("an attacker's allow dated ahead and held back cannot undo the owner's withdrawal nor the operator's disallow (second review, finding 1)", async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const sender = owner.address;
    const set = (allowed: boolean, issuedAt: number, signature: string) => rpc("pm_setGasTankConsent", [{ sender, allowed, issuedAt, signature }]);
    const signed = (allowed: boolean, issuedAt: number) => signConsent(owner, sender, embedded.projectId, allowed, issuedAt);
    const fresh = async (allowed: boolean) => (await rpc("pm_gasTankConsentRequest", [{ sender, allowed }])).result.typedData.message.issuedAt as number;

    // The dapp builds the messages the owner signs: it gets an allow dated 9 minutes ahead signed. Refused at once.
    const farAhead = now() + 540;
    const early = await set(true, farAhead, await signed(true, farAhead));
    expect(early.error?.data?.reason, JSON.stringify(early)).to.equal("INVALID_CONSENT");
    expect(early.error.message).to.match(/ahead of the service's clock .* by more than 60 s/);

    // Within the skew: the owner allows (used), the dapp keeps a second allow dated 55 s ahead.
    const allowAt = await fresh(true);
    expect((await set(true, allowAt, await signed(true, allowAt))).result).to.include({ allowed: true });
    const heldAt = now() + 55;
    const held = await signed(true, heldAt);
    // The owner withdraws at once (a withdrawal right after an allow is accepted), with the service's own date.
    const withdrawAt = await fresh(false);
    const withdrawn = await set(false, withdrawAt, await signed(false, withdrawAt));
    expect(withdrawn.result, JSON.stringify(withdrawn)).to.include({ allowed: false, issuedAt: withdrawAt });
    // The held-back allow is dated after the withdrawal's issuedAt, but was signed before it was recorded: refused.
    const replayed = await set(true, heldAt, held);
    expect(replayed.error?.data?.reason, JSON.stringify(replayed)).to.equal("INVALID_CONSENT");
    expect(replayed.error.message).to.match(/is a withdrawal, which beats every consent signed before it/);
    expect(await store().gasTankAllows("local", sender, embedded.projectId)).to.equal(false);
    // So is a fresh allow signed within the skew of the withdrawal (it cannot be told from a held-back one).
    const soon = await fresh(true);
    expect((await set(true, soon, await signed(true, soon))).error?.data?.reason).to.equal("INVALID_CONSENT");

    // The same against the operator's disallow: another allow held back, the operator disallows by hand, replay refused.
    const operatorSender = privateKeyToAccount(generatePrivateKey());
    const signedBy = (allowed: boolean, issuedAt: number) => signConsent(operatorSender, operatorSender.address, embedded.projectId, allowed, issuedAt);
    const setFor = (allowed: boolean, issuedAt: number, signature: string) => rpc("pm_setGasTankConsent", [{ sender: operatorSender.address, allowed, issuedAt, signature }]);
    const opAllowAt = now();
    expect((await setFor(true, opAllowAt, await signedBy(true, opAllowAt))).result).to.include({ allowed: true });
    const opHeldAt = now() + 55;
    const opHeld = await signedBy(true, opHeldAt);
    const disallow = await fetch(`${adminUrl}/admin/v1/tanks/local/${operatorSender.address}/disallow`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ project: embedded.projectId }),
    });
    expect(disallow.status).to.equal(200);
    const byHand = (await disallow.json()) as { issuedAt: number; updatedAt: number };
    expect(byHand.issuedAt, "dated when recorded").to.equal(byHand.updatedAt);
    const opReplayed = await setFor(true, opHeldAt, opHeld);
    expect(opReplayed.error?.data?.reason, JSON.stringify(opReplayed)).to.equal("INVALID_CONSENT");
    expect(opReplayed.error.message).to.match(/by the operator\) is a withdrawal/);
    expect(await store().gasTankAllows("local", operatorSender.address, embedded.projectId)).to.equal(false);
  });

  it("the consent methods are on the standard endpoint only, and refuse malformed params by name", async () => {
    const v1 = await call(embedded.endpoint, "pm_gasTankConsentRequest", [{ sender: embedded.demoAccounts[0]!.sender }]);
    expect(v1.status).to.equal(404);
    const bad = await rpc("pm_setGasTankConsent", [{ sender: "0x12", allowed: "yes", issuedAt: -1, signature: "nope" }]);
    expect(bad.error?.code, JSON.stringify(bad)).to.equal(-32602);
    for (const field of ["sender", "allowed", "issuedAt", "signature"]) expect(JSON.stringify(bad.error)).to.include(field);
  });

  it("the operator allows and disallows a project for a tank through the admin API; each change is audited and dated after any signed consent", async () => {
    const sender = privateKeyToAccount(generatePrivateKey()).address;
    await store().creditGasTank("local", sender, 10n ** 17n, `test:${sender}`);
    const admin = (method: string, route: string, body?: unknown) =>
      fetch(`${adminUrl}/admin/v1${route}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

    const unknown = await admin("POST", `/tanks/local/${sender}/allow`, { project: "no-such-project" });
    expect(unknown.status, JSON.stringify(unknown.body)).to.equal(404);
    const allowed = await admin("POST", `/tanks/local/${sender}/allow`, { project: embedded.projectId });
    expect(allowed.status, JSON.stringify(allowed.body)).to.equal(200);
    expect(allowed.body).to.include({ projectId: embedded.projectId, allowed: true, changedBy: "api:ops" });
    expect(await store().gasTankAllows("local", sender, embedded.projectId)).to.equal(true);
    const shown = await admin("GET", `/tanks/local/${sender}`);
    expect(shown.body.projects).to.have.length(1);
    expect(shown.body.projects[0]).to.include({ projectId: embedded.projectId, allowed: true });

    const disallowed = await admin("POST", `/tanks/local/${sender}/disallow`, { project: embedded.projectId });
    expect(disallowed.body).to.include({ allowed: false });
    // Dated when recorded (not after any signed consent): the ordering is by recording time (tankConsentClock.ts).
    expect(disallowed.body.issuedAt).to.equal(disallowed.body.updatedAt);
    expect(disallowed.body.issuedAt).to.be.at.least(allowed.body.issuedAt);
    expect(await store().gasTankAllows("local", sender, embedded.projectId)).to.equal(false);
    const audit = await store().listAudit({ target: `local:${sender}` });
    expect(audit.map((a) => a.action)).to.include.members(["tank.allow", "tank.disallow"]);
  });
});
