// The signer rotation runbook (docs/operator-guide.md), step by step against the running embedded stack:
// 1. accept the new signer on chain (signer add), 2. restart the service signing with the new key, 3. ops
// signed with the old key before the switch still land (no downtime), 4. after the old signatures' lifetime,
// remove the old signer (signer remove): from then on an old-key signature fails (AA34), new ones land.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { JsonRpcProvider, Wallet } from "ethers";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import type { Address } from "@paymaster/shared";
import { paymastersOf, type ChainTarget } from "../src/admin/chainTarget.ts";
import { setSigner } from "../src/admin/paymasters.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { startService, type RunningService } from "../src/server.ts";
import { call, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

describe("signer rotation without downtime (the runbook, against the running stack)", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let target: ChainTarget;
  let owner: Wallet;
  const services: RunningService[] = [];

  before(async () => {
    embedded = await startTestStack();
    const provider = new JsonRpcProvider(embedded.stack.chain.url, embedded.stack.chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    const paymasters = paymastersOf(embedded.stack.manifest.entryPoints);
    target = { network: "local", chainId: embedded.stack.chain.chainId, provider, paymasters, serviceSigners: [embedded.stack.signer.address as Address], close: () => provider.destroy() };
    owner = new Wallet(embedded.stack.owner.privateKey, provider); // the local stack's owner (dev account #0)
  });
  after(async () => {
    for (const s of services) await s.close();
    target?.close();
    await embedded?.close();
  });

  /** A service on the same chain signing with `signerKey`, with its own database and strategy. */
  async function serviceWith(signerKey: `0x${string}`): Promise<{ endpoint: string; code: string }> {
    const base = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-rotation-")), "data");
    const running = await startService(embeddedConfig({ ...base, signerKeys: [signerKey] }, dataDir, 0, "silent"), { pollMs: 100, watch: false });
    services.push(running);
    const project = await running.service.store.createProject("rotation");
    const { plaintext } = await running.service.store.createApiKey(project.id);
    await running.service.store.createStrategy({ projectId: project.id, code: "ROTATE", name: "rotation" });
    return { endpoint: `${running.url}/api/v1/paymaster/local?apiKey=${plaintext}`, code: "ROTATE" };
  }

  /** A sponsored, owner-signed v0.7 op from `endpoint`, not yet submitted. */
  async function sponsoredOp(endpoint: string, code: string) {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const { status, body } = await call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: code, version: "v0.7" }]);
    expect(status, JSON.stringify(body)).to.equal(200);
    return signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data));
  }

  it("old signatures keep landing while the new key takes over; after removal only the new key's do", async () => {
    const newKey = generatePrivateKey();
    const newSigner = privateKeyToAddress(newKey);

    // Before: the running service signs with the old key.
    const signedByOld = await sponsoredOp(embedded.endpoint, embedded.strategyCode);

    // 1. Accept the new signer on every paymaster first (a service signing with an unaccepted key would fail
    //    its own pre-flight on any of them; so the order matters).
    const added = await setSigner(target, owner, { signer: newSigner, accept: true });
    expect(added).to.have.length(6); // two paymasters per EntryPoint version

    // 2. The service now signs with the new key.
    const rotated = await serviceWith(newKey);
    const signedByNew = await sponsoredOp(rotated.endpoint, rotated.code);

    // 3. No downtime: both land, the one signed before the switch included.
    for (const op of [signedByOld, signedByNew]) {
      const outcome = await handleOps(embedded, op);
      expect(outcome.reverted, outcome.failedOp).to.equal(false);
      expect(outcome.event?.success).to.equal(true);
    }

    // 4. Once the old signatures' lifetime has passed, the old signer is removed: an op signed with it now
    //    fails the paymaster's check (AA34); the new key's ops still land.
    const lateOld = await sponsoredOp(embedded.endpoint, embedded.strategyCode);
    const removed = await setSigner(target, owner, { signer: embedded.stack.signer.address as Address, accept: false });
    expect(removed).to.have.length(6);
    const refused = await handleOps(embedded, lateOld);
    expect(refused.reverted).to.equal(true);
    expect(refused.failedOp).to.match(/AA34/);
    const stillNew = await handleOps(embedded, await sponsoredOp(rotated.endpoint, rotated.code));
    expect(stillNew.event?.success).to.equal(true);
  });
});
