// The ERC-20 paymasters' token allowlist after the deployment, on the embedded chain: `paymaster token
// list|disallow|allow` (real child processes, the owner key from the environment), `status` naming a configured
// token the paymasters do not allow, the service refusing that token before reserving or signing, and the admin
// API's routes (the owner key needed in the service's environment; audited).
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import { executeCallData } from "../src/local/embedded.ts";
import { runCli, type CliResult } from "./helpers/cli.ts";
import { writeLocalConfig } from "./helpers/serviceProcess.ts";
import { call, mint, newWallet, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";

const ADMIN_TOKEN = "token-allowlist-admin-0123456789abcdef0123";

function ok(r: CliResult): any {
  expect(r.code, `${r.stderr}\n${r.stdout}`).to.equal(0);
  return r.json ?? r.stdout;
}

describe("ERC-20 token allowlist: paymaster token, status, the service's refusal, the admin API", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  let configFile: string;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(["--config", configFile, ...args], env);
  const admin = async (method: string, route: string) => {
    const response = await fetch(`${embedded.running.adminUrl}/admin/v1${route}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" } });
    return { status: response.status, json: (await response.json()) as any };
  };

  before(async () => {
    embedded = await startTestStack({ admin: { host: "127.0.0.1", port: 0, tokens: [{ name: "ops", token: ADMIN_TOKEN }] } });
    const tokens = embedded.stack.manifest.tokens.map((t) => ({ symbol: t.symbol, address: t.address, decimals: t.decimals, priceSource: { type: "fixed", usd: "1.00" }, markupBps: 500 }));
    configFile = writeLocalConfig(embedded.stack.manifest, embedded.stack.chain.url, { network: { tokens } });
    env = { PAYMASTER_OWNER_KEY: embedded.stack.owner.privateKey };
  });
  after(async () => {
    delete process.env.PAYMASTER_OWNER_KEY;
    await embedded?.close();
    if (configFile) rmSync(path.dirname(configFile), { recursive: true, force: true });
  });

  async function sponsorWithUsdc() {
    const wallet = await newWallet(embedded, "v0.7");
    await mint(embedded, "USDC", wallet.sender, 1_000n * 10n ** 6n);
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    return { wallet, answer: await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, { token: "USDC", version: "v0.7" }]) };
  }

  it("disallowed with the CLI: list and status name it, and the service refuses it before reserving", async () => {
    const listed = ok(await cli("token", "list", "--network", "local", "--json"));
    expect(listed.filter((r: any) => r.symbol === "USDC").map((r: any) => r.allowed)).to.deep.equal([true, true, true]);

    const refusedKey = await runCli(["--config", configFile, "token", "disallow", "USDC", "--network", "local"], {});
    expect(refusedKey.code).to.not.equal(0);
    expect(refusedKey.stderr).to.match(/no owner key: set PAYMASTER_OWNER_KEY/);
    expect((await cli("token", "allow", "NOPE", "--network", "local")).stderr).to.match(/token "NOPE": not a configured token of local \(USDC, DAI\) nor an address/);

    const disallowed = ok(await cli("token", "disallow", "usdc", "--network", "local", "--json"));
    expect(disallowed.sent.map((s: any) => s.action)).to.deep.equal(["disallow USDC", "disallow USDC", "disallow USDC"]);
    expect(disallowed.support.every((r: any) => r.allowed === false)).to.equal(true);
    expect(ok(await cli("token", "disallow", "USDC", "--network", "local"))).to.match(/nothing to send: already disallowed/);
    const text = ok(await cli("token", "list", "--network", "local"));
    expect(text).to.match(/ERC20PaymasterV07\s+USDC\s+0x[0-9a-fA-F]{40}\s+NOT ALLOWED/);
    expect(text).to.match(/ERC20PaymasterV07\s+DAI\s+0x[0-9a-fA-F]{40}\s+allowed/);

    const status = ok(await cli("status", "--network", "local"));
    expect(status).to.match(/WARNING ERC20PaymasterV07: token USDC is configured for the service but not allowed by the paymaster: .*paymaster token allow USDC --network local/);

    const { wallet, answer } = await sponsorWithUsdc();
    expect(answer.status, JSON.stringify(answer.body)).to.equal(400);
    expect(answer.body.data.reason).to.equal("TOKEN_NOT_SUPPORTED");
    expect(answer.body.message).to.match(/Token USDC is configured on local but its ERC-20 paymaster 0x[0-9a-fA-F]{40} does not allow it/);
    const active = await embedded.running.service.store.findActiveSponsorship({ network: "local", entryPoint: embedded.stack.manifest.entryPoints["v0.7"].entryPoint, sender: wallet.sender, nonce: 0n });
    expect(active, "nothing reserved or signed").to.equal(undefined);
  });

  it("the admin API lists it, refuses to allow it without the owner key, then allows it (audited) and the service takes it again (up to the sender's own allowance)", async () => {
    const listed = await admin("GET", "/networks/local/tokens");
    expect(listed.status, JSON.stringify(listed.json)).to.equal(200);
    expect(listed.json.filter((r: any) => r.symbol === "USDC").map((r: any) => r.allowed)).to.deep.equal([false, false, false]);
    expect((await admin("GET", "/networks/mainnet/tokens")).json.error.message).to.match(/unknown network "mainnet"/);

    const noKey = await admin("POST", "/networks/local/tokens/USDC/allow");
    expect(noKey.status).to.equal(503);
    expect(noKey.json.error.message).to.match(/the service holds no owner key \(PAYMASTER_OWNER_KEY\): run `paymaster token allow USDC --network local`/);

    process.env.PAYMASTER_OWNER_KEY = embedded.stack.owner.privateKey;
    try {
      const allowed = await admin("POST", "/networks/local/tokens/USDC/allow");
      expect(allowed.status, JSON.stringify(allowed.json)).to.equal(200);
      expect(allowed.json.sent).to.have.length(3);
      expect(allowed.json.support.every((r: any) => r.allowed)).to.equal(true);
    } finally {
      delete process.env.PAYMASTER_OWNER_KEY;
    }
    const audit = await admin("GET", "/audit?action=token.allow");
    expect(audit.json[0]).to.deep.include({ actor: "api:ops", action: "token.allow", target: "local:USDC" });
    expect(JSON.stringify(audit.json[0])).not.to.contain(embedded.stack.owner.privateKey.slice(2));

    // Past the allowlist: the next check is the sender's own (it has approved nothing). The service reads the
    // allowlist once per block of its fee snapshot, which is polled: bring the snapshot to the allow's block first.
    const market = embedded.running.service.networks.get("local")!.chain!.market;
    market.invalidate();
    await market.current();
    const { answer } = await sponsorWithUsdc();
    expect(answer.body.data.reason, JSON.stringify(answer.body)).to.equal("TOKEN_ALLOWANCE_INSUFFICIENT");
  });
});
