// The local ERC-4337 stack with its bundler: `pnpm start`'s embedded default runs alto on the local chain,
// bound to 127.0.0.1, and the viem script it prints runs as printed (saved to a file, run with node) and lands
// a sponsored op through one URL; the testkit (`@paymaster/service/testkit`) starts two whole stacks in
// parallel, each on its own ports and folder, each landing an op. Runs inside a loopback-only network namespace
// with the other alto tests (scripts/netns-test.sh).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { createPublicClient, defineChain, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createBundlerClient, toSimple7702SmartAccount } from "viem/account-abstraction";
import { startLocalStack, toLocalSimpleAccount, type LocalStack } from "../src/testkit/index.ts";
import { printedViemScript } from "../src/local/banner.ts";
import { tcpListeners } from "../src/local/ports.ts";
import { freeLoopbackPort, onlyLoopback } from "./helpers/alto.ts";
import { embeddedPortsEnv, startProcess } from "./helpers/serviceProcess.ts";

const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));

/** Runs `node file` to its end; its stdout, or throws with its output. */
function runNode(file: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd: PACKAGE_DIR, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`node ${path.basename(file)} exited with ${code}:\n${out}`));
    });
  });
}

/** A fresh EOA, delegated by EIP-7702 in its first op, sends a sponsored op through the stack's one URL. */
async function sendSponsoredOp(stack: LocalStack) {
  const chain = defineChain({ id: stack.chain.chainId, name: "local", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [stack.chain.url] } } });
  const client = createPublicClient({ chain, transport: http(), pollingInterval: 200 });
  const owner = privateKeyToAccount(generatePrivateKey());
  const implementation = stack.manifest.entryPoints["v0.8"].simple7702Account!;
  const account = await toSimple7702SmartAccount({ client, owner, implementation });
  const authorization = await owner.signAuthorization({ address: implementation, chainId: chain.id, nonce: 0 });
  const bundler = createBundlerClient({ account, client, transport: http(stack.rpcUrl), pollingInterval: 200, paymaster: true, paymasterContext: { strategy_code: stack.strategyCode } });
  const hash = await bundler.sendUserOperation({ calls: [{ to: owner.address, value: 0n }], authorization });
  const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 60_000 });
  return { ...receipt, byHash: await bundler.request({ method: "eth_getUserOperationByHash", params: [hash] }) };
}

describe("the local stack with its bundler", function () {
  this.timeout(180_000);

  before(function () {
    if (!onlyLoopback()) throw new Error("localStack.test.ts runs inside a loopback-only network namespace: use scripts/netns-test.sh");
  });

  it("pnpm start: alto runs on the local chain on 127.0.0.1 only, its URL is printed, and the printed viem script, run as printed, lands a sponsored op", async () => {
    const bundlerPort = await freeLoopbackPort();
    const env = { ...process.env, ...(await embeddedPortsEnv(bundlerPort)) };
    const started = performance.now();
    const { child, output } = await startProcess([path.join(PACKAGE_DIR, "src/main.ts")], env, /Ctrl-C stops everything/);
    const startMs = Math.round(performance.now() - started);
    const script = path.join(PACKAGE_DIR, `.printed-snippet-${randomBytes(4).toString("hex")}.mjs`);
    try {
      const banner = output();
      expect(banner).to.match(new RegExp(`Bundler +http://127\\.0\\.0\\.1:${bundlerPort} `));
      const listeners = tcpListeners(bundlerPort)!;
      expect(listeners, "alto listens").to.not.be.empty;
      expect(listeners.filter((l) => !l.loopback), "alto listens beyond loopback").to.deep.equal([]);
      // Saved exactly as printed: the lines between the script's two marks.
      const printed = printedViemScript(banner);
      expect(printed, "the viem script is printed").to.be.a("string");
      await writeFile(script, printed!);
      const result = JSON.parse((await runNode(script, 90_000)).trim().split("\n").pop()!) as { success: boolean; transactionHash: string };
      expect(result.success).to.equal(true);
      console.log(`      (embedded default with alto up in ${startMs} ms, measured from spawn to the banner)`);
    } finally {
      await rm(script, { force: true });
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
    expect(tcpListeners(bundlerPort), "alto stopped with the service").to.deep.equal([]);
  });

  it("a killed stack leaves no bundler behind: alto exits when the process that started it is killed (SIGKILL)", async () => {
    const bundlerPort = await freeLoopbackPort();
    const env = { ...process.env, ...(await embeddedPortsEnv(bundlerPort)) };
    const { child } = await startProcess([path.join(PACKAGE_DIR, "src/main.ts")], env, /Ctrl-C stops everything/);
    expect(tcpListeners(bundlerPort), "alto listens").to.not.be.empty;
    child.kill("SIGKILL");
    const deadline = Date.now() + 15_000;
    while (tcpListeners(bundlerPort)!.length > 0) {
      if (Date.now() > deadline) throw new Error(`alto still listens on ${bundlerPort} 15 s after its parent was killed`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });

  it("the testkit: two stacks started in parallel get their own ports and folders, each lands a sponsored op with viem's bundler client, and stop() frees their ports", async () => {
    const stacks = await Promise.all([startLocalStack(), startLocalStack()]);
    try {
      const [a, b] = stacks as [LocalStack, LocalStack];
      for (const key of ["rpcUrl", "bundlerUrl", "adminUrl"] as const) expect(a[key], key).to.not.equal(b[key]);
      expect(a.chain.url).to.not.equal(b.chain.url);
      expect(a.accounts.length).to.be.greaterThan(5);
      const receipts = await Promise.all(stacks.map((stack) => sendSponsoredOp(stack)));
      for (const [i, receipt] of receipts.entries()) {
        expect(receipt.success).to.equal(true);
        expect(receipt.paymaster?.toLowerCase()).to.equal(stacks[i]!.manifest.entryPoints["v0.8"].verifyingPaymaster.toLowerCase());
        // alto does not find an EIP-7702 op by hash once it landed, although its receipt is there (docs/testkit.md says so).
        expect(receipt.byHash, "eth_getUserOperationByHash of a landed 7702 op").to.equal(null);
      }
      console.log(`      (two stacks started in parallel: ${stacks.map((s) => `${s.startMs} ms`).join(", ")}, LocalStack.startMs)`);
    } finally {
      await Promise.all(stacks.map((stack) => stack.stop()));
    }
    for (const stack of stacks) {
      const ports = [stack.chain.url, stack.rpcUrl, stack.bundlerUrl!].map((url) => Number(new URL(url).port));
      for (const port of ports) expect(tcpListeners(port), `port ${port} after stop()`).to.deep.equal([]);
    }
  });

  it("the testkit's toLocalSimpleAccount: a fresh owner's SimpleAccount lands a sponsored op through the bundler on EntryPoint v0.6, v0.7 and v0.8, with viem alone", async () => {
    const stack = await startLocalStack();
    try {
      const chain = defineChain({ id: stack.chain.chainId, name: "local", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [stack.chain.url] } } });
      const client = createPublicClient({ chain, transport: http(), pollingInterval: 200 });
      const landed = await Promise.all(
        (["v0.6", "v0.7", "v0.8"] as const).map(async (version) => {
          const owner = privateKeyToAccount(generatePrivateKey());
          const account = await toLocalSimpleAccount({ client, owner, stack, version });
          expect(account.entryPoint.address, version).to.equal(stack.manifest.entryPoints[version].entryPoint);
          const bundler = createBundlerClient({ account, client, transport: http(stack.rpcUrl), pollingInterval: 200, paymaster: true, paymasterContext: { strategy_code: stack.strategyCode } });
          // Two calls: the version's executeBatch, and the account's deployment (initCode) in the same op.
          const hash = await bundler.sendUserOperation({ calls: [{ to: owner.address }, { to: stack.accounts[0]!.address }] });
          const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 60_000 });
          // Unlike an EIP-7702 op, a SimpleAccount's op is found by hash.
          const byHash = await bundler.getUserOperation({ hash });
          expect(byHash.userOperation.sender.toLowerCase(), version).to.equal(account.address.toLowerCase());
          return { version, account, receipt };
        }),
      );
      for (const { version, account, receipt } of landed) {
        expect(receipt.success, version).to.equal(true);
        expect(receipt.sender.toLowerCase(), version).to.equal(account.address.toLowerCase());
        expect(receipt.paymaster?.toLowerCase(), version).to.equal(stack.manifest.entryPoints[version].verifyingPaymaster.toLowerCase());
        expect(await account.isDeployed(), `${version}: deployed by its first op`).to.equal(true);
      }
    } finally {
      await stack.stop();
    }
  });
});
