// The service signing with a key in a PKCS#11 token (SoftHSM2): the key is created in the token, accepted on
// chain by the paymasters' owner (as `paymaster signer add --pkcs11 --create` does), and the service's
// sponsorships land on chain for every EntryPoint version and mode (Sponsor, User Sponsor / gas tank, ERC-20).
// A token that refuses answers 503 SIGNER_UNAVAILABLE with the reason over HTTP, and the service recovers
// without a restart; no log line holds the PIN.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { JsonRpcProvider, Wallet as EthersWallet } from "ethers";
import { recoverMessageAddress } from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import type { Address, EntryPointVersion } from "@paymaster/shared";
import { paymastersOf, type ChainTarget } from "../src/admin/chainTarget.ts";
import { networkStatus } from "../src/admin/networks.ts";
import { setSigner } from "../src/admin/paymasters.ts";
import { localNetworkConfig } from "../src/config/local.ts";
import { approveCallData, embeddedConfig, executeCallData } from "../src/local/embedded.ts";
import { createLogger } from "../src/log.ts";
import { startService, type RunningService } from "../src/server.ts";
import { findKey, generateKey, importKey, pkcs11js, withTokenSession } from "../src/signer/pkcs11Token.ts";
import { openPkcs11Signer } from "../src/signer/pkcs11Signer.ts";
import { runCliInProcess } from "./helpers/cli.ts";
import { spawnService, writeLocalConfig } from "./helpers/serviceProcess.ts";
import { call, fundTank, handleOps, mint, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";
import { dropSessions, newSoftToken, requireSoftHsm, type SoftToken } from "./helpers/softhsm.ts";

const VERSIONS: EntryPointVersion[] = ["v0.6", "v0.7", "v0.8"];

describe("the service signing with a PKCS#11 token key (SoftHSM2), on chain", function () {
  this.timeout(240_000);
  let embedded: Embedded;
  let token: SoftToken;
  let running: RunningService;
  let endpoint: string;
  let projectId: string;
  let tokenSigner: Address;
  const logs: string[] = [];

  before(async function () {
    requireSoftHsm(this);
    embedded = await startTestStack();
    token = newSoftToken();
    tokenSigner = withTokenSession(token.config, (lib, session) => generateKey(lib, session, token.config)).address;
    // The owner accepts the token's key on every paymaster.
    const provider = new JsonRpcProvider(embedded.stack.chain.url, embedded.stack.chain.chainId, { staticNetwork: true, cacheTimeout: -1 });
    const target: ChainTarget = { network: "local", chainId: embedded.stack.chain.chainId, provider, paymasters: paymastersOf(embedded.stack.manifest.entryPoints), serviceSigners: [tokenSigner], close: () => provider.destroy() };
    try {
      expect(await setSigner(target, new EthersWallet(embedded.stack.owner.privateKey, provider), { signer: tokenSigner, accept: true })).to.have.length(6);
    } finally {
      target.close();
    }
    // A service on the same chain whose signer is the token's key: no private key in its configuration.
    const base = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-pkcs11-")), "data");
    const config = embeddedConfig({ ...base, signerKeys: [], pkcs11: token.config }, dataDir, 0, "info");
    running = await startService(config, { pollMs: 100, watch: false, logger: createLogger("info", { write: (line: string) => void logs.push(line) }) });
    await running.initialised;
    const project = await running.service.store.createProject("pkcs11");
    projectId = project.id;
    const { plaintext } = await running.service.store.createApiKey(project.id);
    await running.service.store.createStrategy({ projectId: project.id, code: "HSM", name: "token-signed" });
    endpoint = `${running.url}/api/v1/paymaster/local?apiKey=${plaintext}`;
  });
  after(async () => {
    await running?.close();
    await embedded?.close();
  });

  it("signs as the token's key", () => {
    const chain = running.service.networks.get("local")!.chain!;
    expect(chain.signer.implementation).to.equal("pkcs11");
    expect(chain.signer.address).to.equal(tokenSigner);
  });

  it("the admin network status names the token's key as the service's signer, accepted by every paymaster", async () => {
    const [status] = await networkStatus({ store: running.service.store, networks: ["local"], actor: "test", role: "viewer", service: running.service });
    expect(status!.signer).to.equal(tokenSigner);
    expect(status!.paymasters).to.have.length(6);
    for (const paymaster of status!.paymasters) expect(paymaster.warnings.join("\n")).to.not.match(/signer/i);
  });

  for (const version of VERSIONS) {
    const extra = (context: Record<string, string>) => (version === "v0.6" ? context : { ...context, version });
    for (const mode of ["sponsor", "user", "erc20"] as const) {
      it(`${version} ${mode}: the token-signed sponsorship lands on chain`, async () => {
        const wallet = await newWallet(embedded, version);
        let callData = executeCallData(wallet.owner.address);
        let context: Record<string, string> = { strategy_code: "HSM" };
        if (mode === "user") {
          await fundTank(running.service.store, wallet.sender, 10n ** 17n, projectId);
          context = {};
        } else if (mode === "erc20") {
          await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
          const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
          callData = approveCallData(usdc.address, embedded.stack.manifest.entryPoints[version].erc20Paymaster);
          context = { token: "USDC" };
        }
        const wire = wireOp(wallet, callData);
        const { status, body } = await call(endpoint, "pm_sponsorUserOperation", [wire, extra(context)]);
        expect(status, JSON.stringify(body)).to.equal(200);
        const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
        expect(outcome.reverted, outcome.failedOp).to.equal(false);
        expect(outcome.event!.success).to.equal(true);
        const kind = mode === "erc20" ? "erc20Paymaster" : "verifyingPaymaster";
        expect(outcome.event!.paymaster).to.equal(embedded.stack.manifest.entryPoints[version][kind]);
      });
    }
  }

  it("Server-Timing reports the wait on the token apart from the chain and the service's own work", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const response = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_sponsorUserOperation", params: [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: "HSM", version: "v0.7" }] }),
    });
    expect(response.status).to.equal(200);
    const timing = response.headers.get("server-timing") ?? "";
    expect(timing).to.match(/^chain;dur=[\d.]+;desc="\d+ waits", signer;dur=[\d.]+, own;dur=[\d.]+$/);
    expect(Number(/signer;dur=([\d.]+)/.exec(timing)![1])).to.be.greaterThan(0);
  });

  it("a token that refuses the PIN at run time: 503 SIGNER_UNAVAILABLE (cause pin, no library path or CKR code), /ready says the signer fails; back once the PIN file is fixed, without a restart or a request", async () => {
    const sponsor = async () => {
      const wallet = await newWallet(embedded, "v0.7");
      return call(endpoint, "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: "HSM", version: "v0.7" }]);
    };
    const ready = async () => {
      const response = await fetch(`${running.url}/ready`);
      return { status: response.status, body: (await response.json()) as { checks: Record<string, string> } };
    };
    expect((await ready()).status).to.equal(200);
    const mark = logs.length;
    writeFileSync(token.pinFile, "not-the-pin\n");
    try {
      // The token drops the service's sessions (an HSM restart): the service must log in again.
      dropSessions(token);
      const refused = await sponsor();
      expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
      expect(refused.body.data).to.deep.equal({ reason: "SIGNER_UNAVAILABLE", network: "local", cause: "pin" });
      expect(refused.body.message).to.equal("Network local: the paymaster's signing key is unavailable (pin)");
      // Any API-key holder reads the answer: the library's path and the token's code stay with the operator.
      expect(JSON.stringify(refused.body)).to.not.match(/CKR_|softhsm|\.so/i);

      const down = await ready();
      expect(down.status).to.equal(503);
      expect(down.body.checks["network:local"]).to.equal("failing: the paymaster's signing key is unavailable (pin)");
      const [status] = await networkStatus({ store: running.service.store, networks: ["local"], actor: "test", role: "viewer", service: running.service });
      expect(status!.ready).to.equal(false);
      expect(status!.problem, "the operator's status has the detail").to.match(/signing key is unavailable \(pin\): the token refused (the|this) PIN/);
    } finally {
      writeFileSync(token.pinFile, `${token.pin}\n`); // the right PIN back, whatever happened above
    }
    // No request: the signer tries the token again by itself every second.
    const started = Date.now();
    while ((await ready()).status !== 200 && Date.now() - started < 5_000) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await ready()).status, "ready again without a request").to.equal(200);
    const again = await sponsor();
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    // The operator sees it in the log: once when the key goes (with the CKR code), once when it is back; the
    // network named once per line; never the PIN.
    const raw = logs.slice(mark);
    const events = raw.map((line) => JSON.parse(line) as { msg: string; problem?: string; ckr?: string; cause?: string });
    const lost = events.filter((e) => e.msg.startsWith("the network's signing key is unavailable"));
    expect(lost, "one line for the outage").to.have.length(1);
    expect(lost[0]).to.include({ cause: "pin", ckr: "CKR_PIN_INCORRECT" });
    expect(lost[0]!.problem).to.match(/refused the PIN \(CKR_PIN_INCORRECT\)/);
    expect(events.filter((e) => e.msg === "the network's signing key is available again")).to.have.length(1);
    for (const line of raw.filter((l) => l.includes("signing key"))) expect(line.match(/"network":/g), line).to.have.length(1);
    for (const line of logs) expect(line).to.not.include(token.pin);
  });

  it("the service process's start-up configuration line names the token's address as the network's signer", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "paymaster-pkcs11-process-"));
    const { pin: _pin, ...where } = token.config;
    const configPath = writeLocalConfig(embedded.stack.manifest, embedded.stack.chain.url, { service: { databasePath: path.join(dir, "paymaster.sqlite") }, network: { pkcs11: where } });
    const child = await spawnService(configPath, {
      signerKey: embedded.stack.signer.privateKey,
      // The token's key, not a key in the environment; the token's PIN from its file; this process's SoftHSM2 tokens.
      extra: { PAYMASTER_NETWORK_LOCAL_SIGNER_KEYS: "", PAYMASTER_NETWORK_LOCAL_PKCS11_PIN_FILE: token.pinFile, SOFTHSM2_CONF: process.env.SOFTHSM2_CONF! },
    });
    try {
      const line = await child.waitFor((l) => l.msg === "configuration");
      expect(line.config.networks[0].signerAddresses).to.deep.equal([tokenSigner]);
      expect(JSON.stringify(child.lines)).to.not.include(token.pin);
    } finally {
      await child.kill("SIGTERM");
    }
  });

  /** The operator command in this process, with a configuration whose hsm-local network (this chain) signs with `keyLabel` in the token. */
  function cliWith(keyLabel: string) {
    const dir = mkdtempSync(path.join(tmpdir(), "paymaster-pkcs11-cli-"));
    const configFile = path.join(dir, "paymaster.json");
    const entryPoints = Object.fromEntries(
      VERSIONS.map((v) => {
        const ep = embedded.stack.manifest.entryPoints[v];
        return [v, { entryPoint: ep.entryPoint, verifyingPaymaster: ep.verifyingPaymaster, erc20Paymaster: ep.erc20Paymaster }];
      }),
    );
    writeFileSync(
      configFile,
      JSON.stringify({
        customNetworks: [{ name: "hsm-local", chainId: embedded.stack.chain.chainId, gasKind: "l1" }],
        networks: [
          {
            name: "hsm-local",
            rpcUrl: embedded.stack.chain.url,
            entryPoints,
            nativeUsdPrice: { type: "fixed", usd: "3000" },
            pkcs11: { module: token.config.module, tokenLabel: token.config.tokenLabel, keyLabel },
          },
        ],
      }),
    );
    const env = { PAYMASTER_NETWORK_HSM_LOCAL_PKCS11_PIN_FILE: token.pinFile, PAYMASTER_OWNER_KEY: embedded.stack.owner.privateKey };
    return (args: string[]) => runCliInProcess([...args, "--config", configFile], env);
  }

  it("a token that refuses the PIN at start-up: calls get SIGNER_UNAVAILABLE (pin), not CHAIN_UNAVAILABLE; /ready says why; ready once the PIN file is fixed", async () => {
    const base = localNetworkConfig({ manifest: embedded.stack.manifest, rpcUrl: embedded.stack.chain.url, signerKey: embedded.stack.signer.privateKey });
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-pkcs11-start-")), "data");
    // A token of its own (logged in by no one yet: a login holds for the whole process), holding the stack's
    // signer key, which the paymasters accept already.
    const own = newSoftToken();
    withTokenSession(own.config, (lib, session) => importKey(lib, session, own.config, embedded.stack.signer.privateKey));
    writeFileSync(own.pinFile, "wrong-at-start\n");
    const config = embeddedConfig({ ...base, signerKeys: [], pkcs11: own.config }, dataDir, 0, "silent");
    const late = await startService(config, { pollMs: 100, watch: false });
    try {
      const notReady = await fetch(`${late.url}/ready`);
      expect(notReady.status).to.equal(503);
      const body = JSON.stringify(await notReady.json());
      expect(body).to.match(/signing key is unavailable \(pin\)/);
      expect(body).to.not.match(/CKR_|softhsm/i);
      // The operator is sent after the token, not the chain.
      const project = await late.service.store.createProject("late");
      const { plaintext } = await late.service.store.createApiKey(project.id);
      await late.service.store.createStrategy({ projectId: project.id, code: "LATE", name: "late" });
      const wallet = await newWallet(embedded, "v0.7");
      const refused = await call(`${late.url}/api/v1/paymaster/local?apiKey=${plaintext}`, "pm_sponsorUserOperation", [wireOp(wallet, executeCallData(wallet.owner.address)), { strategy_code: "LATE", version: "v0.7" }]);
      expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
      expect(refused.body.data).to.deep.equal({ reason: "SIGNER_UNAVAILABLE", network: "local", cause: "pin" });
      const [status] = await networkStatus({ store: late.service.store, networks: ["local"], actor: "test", role: "viewer", service: late.service });
      expect(status!.problem).to.match(/\(pin\): the token refused the PIN \(CKR_PIN_INCORRECT\)/);
      writeFileSync(own.pinFile, `${own.pin}\n`);
      await late.initialised; // the pre-flight retries every 2 s
      expect((await fetch(`${late.url}/ready`)).status).to.equal(200);
      expect(late.service.networks.get("local")!.chain!.signer.address).to.equal(embedded.stack.signer.address);
    } finally {
      await late.close();
    }
  });

  it("paymaster signer add --pkcs11 --create: creates the key in the token, prints its address, the paymasters accept it; signer list reads it from the token", async () => {
    const cli = cliWith("cli-created");
    const created = await cli(["signer", "add", "--network", "hsm-local", "--pkcs11", "--create", "--json"]);
    expect(created.code, created.stderr).to.equal(0);
    const address = /created the token key (0x[0-9a-fA-F]{40})/.exec(created.stderr)?.[1];
    expect(address, created.stderr).to.be.a("string");
    expect(created.json).to.have.length(6); // accepted on both paymasters of each version
    const p = pkcs11js();
    const inToken = withTokenSession({ ...token.config, keyLabel: "cli-created" }, (lib, session) => {
      const key = findKey(lib, session, { ...token.config, keyLabel: "cli-created" });
      // For signing only (second review, finding 8): no decrypt, unwrap or derive, never extractable.
      const uses = lib.C_GetAttributeValue(session, key!.privateKey, [p.CKA_SIGN, p.CKA_DECRYPT, p.CKA_UNWRAP, p.CKA_DERIVE, p.CKA_EXTRACTABLE].map((type) => ({ type })));
      expect(uses.map((u) => (u.value as Buffer)[0])).to.deep.equal([1, 0, 0, 0, 0]);
      return key;
    });
    expect(inToken?.address).to.equal(address);

    const list = await cli(["signer", "list", "--network", "hsm-local", "--json"]);
    expect(list.code, list.stderr).to.equal(0);
    expect(list.json.map((row: { signer: string }) => row.signer)).to.deep.equal(Array(6).fill(address));
    expect(list.json.every((row: { accepted: boolean }) => row.accepted)).to.equal(true);

    const registered = await cli(["signer", "add", "--network", "hsm-local", "--pkcs11", "--json"]);
    expect(registered.code, registered.stderr).to.equal(0);
    expect(registered.stderr).to.include(`found the token key ${address}`);
    expect(registered.json).to.deep.equal([]); // accepted already: nothing sent
    const twice = await cli(["signer", "add", "--network", "hsm-local", "--pkcs11", "--create"]);
    expect(twice.code).to.equal(2);
    expect(twice.stderr).to.match(/already holds a key labelled "cli-created"/);
    const current = await cli(["signer", "remove", "--network", "hsm-local", "--address", address!]);
    expect(current.code).to.equal(2);
    expect(current.stderr).to.match(/is the key the service signs with for hsm-local/);
    for (const output of [created, list, registered, twice, current]) expect(output.stdout + output.stderr).to.not.include(token.pin);
  });

  it("paymaster signer add --pkcs11 --import-key-file: the key moves into the token (same address), never echoed", async () => {
    const cli = cliWith("cli-imported");
    const key = generatePrivateKey();
    const keyFile = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-import-")), "key");
    writeFileSync(keyFile, `# the old in-memory signer\n${key}\n`, { mode: 0o600 });
    const imported = await cli(["signer", "add", "--network", "hsm-local", "--pkcs11", "--import-key-file", keyFile, "--json"]);
    expect(imported.code, imported.stderr).to.equal(0);
    expect(imported.stderr).to.include(`imported the token key ${privateKeyToAddress(key)}`);
    expect(imported.json).to.have.length(6);
    const label = { ...token.config, keyLabel: "cli-imported" };
    const p = pkcs11js();
    withTokenSession(label, (lib, session) => {
      const inToken = findKey(lib, session, label)!;
      expect(inToken.address).to.equal(privateKeyToAddress(key));
      expect(() => lib.C_GetAttributeValue(session, inToken.privateKey, [{ type: p.CKA_VALUE }])).to.throw(/CKR_ATTRIBUTE_SENSITIVE/);
      expect((lib.C_GetAttributeValue(session, inToken.privateKey, [{ type: p.CKA_EXTRACTABLE }])[0]!.value as Buffer)[0]).to.equal(0);
    });
    // The token signs as the imported key.
    const signer = await openPkcs11Signer(label, "hsm-local");
    try {
      const hash = `0x${"ab".repeat(32)}` as const;
      expect(await recoverMessageAddress({ message: { raw: hash }, signature: await signer.signHash(hash) })).to.equal(privateKeyToAddress(key));
    } finally {
      signer.close?.();
    }
    const bad = `${key.slice(0, -2)}zz`;
    writeFileSync(keyFile, `${bad}\n`);
    const refused = await cli(["signer", "add", "--network", "hsm-local", "--pkcs11", "--import-key-file", keyFile]);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.match(/--import-key-file: the key in .* must be a 32-byte hex private key/);
    for (const output of [imported, refused]) expect(output.stdout + output.stderr).to.not.include(key.slice(2, 40));
  });
});
