// A dapp page on another origin uses viem's ERC-7677 paymaster client in Chromium against the service's public
// endpoint, with a key whose allowed origins hold that origin: the page gets the stub and the final paymaster
// data, Node has the account sign the operation and submits handleOps, and the operation lands, paid by the
// paymaster. The same page served from a third origin, not allowed, is refused, and the service's message is
// what the page shows.
import { expect } from "chai";
import path from "node:path";
import { build } from "esbuild";
import type { Browser } from "playwright-core";
type Hex = `0x${string}`;
type Address = `0x${string}`;
import { executeCallData } from "../../service/src/local/embedded.ts";
import { call, handleOps, newWallet, signAsOwner, startTestStack, wireOp, type Embedded } from "../../service/test/helpers/stack.ts";
import { launchChromium, partScreenshot } from "./helpers/browser.ts";
import { serveFiles, type StaticServer } from "./helpers/staticServer.ts";

const TOKEN = "dapp-test-admin-token-0123456789abcdef012345";
const HTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Demo dapp</title>
<style>body{font:16px system-ui;margin:2rem}.ok{color:#13663a}.error{color:#a3161a}</style></head>
<body><h1>Demo dapp</h1><p id="status">loading</p><script type="module" src="/dapp.js"></script></body></html>`;

describe("a dapp's page with viem's paymaster client (Chromium, another origin)", function () {
  let embedded: Embedded;
  let browser: Browser;
  let allowed: StaticServer;
  let other: StaticServer;
  let key: string;

  before(async () => {
    const bundle = await build({
      entryPoints: [path.join(path.dirname(new URL(import.meta.url).pathname), "dapp", "page.ts")],
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2020",
      minify: true,
      write: false,
      logLevel: "warning",
    });
    const files = { "/": { type: "text/html", body: HTML }, "/dapp.js": { type: "text/javascript", body: Buffer.from(bundle.outputFiles[0]!.contents) } };
    [embedded, browser, allowed, other] = await Promise.all([
      startTestStack({ admin: { host: "127.0.0.1", port: 0, tokens: [{ name: "ops", token: TOKEN }] } }),
      launchChromium(),
      serveFiles(files),
      serveFiles(files),
    ]);
    // A key for browsers of the allowed origin only, made through the admin API.
    const admin = async (route: string, body: unknown) =>
      (await (await fetch(`${embedded.running.adminUrl}/admin/v1${route}`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json()) as any;
    const project = await admin("/projects", { name: "Dapp" });
    await admin("/strategies", { code: "dapp-free", project: project.id, networks: ["local"] });
    key = (await admin("/keys", { projectId: project.id, label: "browser", origins: [allowed.origin] })).key;
  });
  after(async () => {
    await browser?.close();
    await Promise.all([allowed?.close(), other?.close()]);
    await embedded?.close();
  });

  async function preparedOp() {
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address)) as Record<string, string>;
    // The bundler's part (gas estimation) happens server-side, as it would.
    const estimate = await call(`${embedded.running.url}/api/v1/paymaster/local?apiKey=${key}`, "pm_estimateUserOperationGas", [wire, { strategy_code: "dapp-free", version: "v0.7" }]);
    expect(estimate.status, JSON.stringify(estimate.body)).to.equal(200);
    const e = estimate.body.data.userOpResponse;
    const gas = Object.fromEntries(["callGasLimit", "verificationGasLimit", "preVerificationGas", "maxFeePerGas", "maxPriorityFeePerGas"].map((k) => [k, BigInt(e[k]).toString()]));
    const op = { sender: wire.sender!, nonce: "0", callData: wire.callData!, signature: wire.signature!, factory: wire.factory!, factoryData: wire.factoryData! };
    return { wallet, op, gas };
  }

  const inputFor = (op: Record<string, string>, gas: Record<string, string>) => ({
    endpoint: `${embedded.running.url}/rpc/v1/local?apiKey=${key}`,
    chainId: embedded.stack.chain.chainId,
    entryPointAddress: embedded.stack.manifest.entryPoints["v0.7"].entryPoint,
    context: { strategy_code: "dapp-free" },
    op,
    gas,
  });

  it("from the allowed origin: sponsored, and the operation lands paid by the paymaster", async () => {
    const { wallet, op, gas } = await preparedOp();
    const page = await browser.newPage();
    await page.goto(allowed.origin);
    await page.getByText("ready").waitFor();
    const result: any = await page.evaluate((input) => (window as any).sponsor(input), inputFor(op, gas));
    expect(result.ok, result.error).to.equal(true);
    await page.getByText("Sponsored by").waitFor();
    await partScreenshot(page.locator("body"), "20-dapp-allowed");
    await page.close();

    const final = result.final;
    const userOp = {
      sender: wallet.sender,
      nonce: 0n,
      factory: op.factory as Address,
      factoryData: op.factoryData as Hex,
      callData: op.callData as Hex,
      ...Object.fromEntries(Object.entries(gas).map(([k, v]) => [k, BigInt(v)])),
      paymaster: final.paymaster as Address,
      paymasterVerificationGasLimit: BigInt(final.paymasterVerificationGasLimit),
      paymasterPostOpGasLimit: BigInt(final.paymasterPostOpGasLimit),
      paymasterData: final.paymasterData as Hex,
      signature: "0x" as Hex,
    };
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, { version: "v0.7", userOp } as any));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    expect(outcome.event!.success).to.equal(true);
    expect(outcome.event!.paymaster).to.equal(embedded.stack.manifest.entryPoints["v0.7"].verifyingPaymaster);
    const record = await embedded.running.service.store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
    expect(record?.strategyId).to.not.equal(null);
  });

  it("from an origin the key does not allow: refused, with the service's message on the page", async () => {
    const { op, gas } = await preparedOp();
    const page = await browser.newPage();
    await page.goto(other.origin);
    await page.getByText("ready").waitFor();
    const result: any = await page.evaluate((input) => (window as any).sponsor(input), inputFor(op, gas));
    expect(result.ok).to.equal(false);
    const expected = `This API key is not allowed from origin "${other.origin}"`;
    expect(result.error).to.contain(expected);
    await page.locator("#status.error", { hasText: expected }).waitFor();
    await partScreenshot(page.locator("body"), "21-dapp-refused");
    await page.close();
  });
});
