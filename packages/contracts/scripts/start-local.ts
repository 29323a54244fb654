/**
 * `pnpm start`: starts the in-process local chain on 127.0.0.1, deploys the whole stack (account #0 =
 * deployer and owner, #1 = signer, #2 = treasury), writes the manifest and serves until SIGINT/SIGTERM.
 *
 * Environment:
 *   MANIFEST_PATH     manifest file (default deployments/local.json in this package; a relative path is
 *                     resolved against the directory pnpm was started from)
 *   LOCAL_CHAIN_PORT  RPC port (default 8545; 0 = any free port)
 *   LOCAL_CHAIN_HOST  loopback address to bind (default 127.0.0.1)
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeManifest } from "../src/deploy/index.ts";
import { startLocalStack } from "../src/localStack.ts";

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const manifestPath =
  process.env.MANIFEST_PATH !== undefined && process.env.MANIFEST_PATH !== ""
    ? path.resolve(process.env.INIT_CWD ?? process.cwd(), process.env.MANIFEST_PATH)
    : path.join(packageRoot, "deployments/local.json");
const port = process.env.LOCAL_CHAIN_PORT !== undefined ? Number(process.env.LOCAL_CHAIN_PORT) : 8545;
const host = process.env.LOCAL_CHAIN_HOST ?? "127.0.0.1";

const started = performance.now();
const { chain, manifest, signer: signerAccount, deployMs } = await startLocalStack({ port, host });

let stopping = false;
async function stop(signal: NodeJS.Signals): Promise<void> {
  if (stopping) {
    console.error(`\n${signal} again: exiting without waiting`);
    process.exit(1);
  }
  stopping = true;
  console.log(`\n${signal}: stopping the local chain`);
  try {
    await chain.close();
    process.exit(0);
  } catch (err) {
    console.error("error while stopping:", err);
    process.exit(1);
  }
}
process.on("SIGINT", (s) => void stop(s));
process.on("SIGTERM", (s) => void stop(s));

try {
  await writeManifest(manifestPath, manifest);

  const rows: [string, string, string][] = [
    ["EntryPoint", manifest.entryPoints["v0.6"].entryPoint, manifest.entryPoints["v0.7"].entryPoint],
    ["SimpleAccountFactory", manifest.entryPoints["v0.6"].simpleAccountFactory, manifest.entryPoints["v0.7"].simpleAccountFactory],
    ["VerifyingPaymaster", manifest.entryPoints["v0.6"].verifyingPaymaster, manifest.entryPoints["v0.7"].verifyingPaymaster],
    ["ERC20Paymaster", manifest.entryPoints["v0.6"].erc20Paymaster, manifest.entryPoints["v0.7"].erc20Paymaster],
  ];
  const w = Math.max(...rows.map((r) => r[0].length), "Token".length) + 2;
  const line = (a: string, b: string, c = "") => `  ${a.padEnd(w)}${b.padEnd(44)}${c}`.trimEnd();
  const out = [
    "",
    `Local chain   ${chain.url}  (chain id ${chain.chainId}, WebSocket ${chain.wsUrl})`,
    "",
    line("Contract", "EntryPoint v0.6", "EntryPoint v0.7"),
    ...rows.map(([n, a, b]) => line(n, a, b)),
    "",
    line("Token", "Address", "Decimals  Name"),
    ...manifest.tokens.map((t) => line(t.symbol, t.address, `${String(t.decimals).padEnd(10)}${t.name}`)),
    "",
    line("Owner", manifest.owner, "account #0 (deployer)"),
    line("Signer", signerAccount.address, "account #1"),
    line("Treasury", manifest.treasury, "account #2"),
    line("GasTankDeposit", manifest.gasTankDeposit, "depositFor(sender) funds a gas tank (User Sponsor mode)"),
    "",
    `Signer key    ${signerAccount.privateKey}  (well-known Hardhat dev key: local use only)`,
    `Manifest      ${manifestPath}`,
    "",
    `Ready in ${((performance.now() - started) / 1000).toFixed(1)} s (deploy ${deployMs.toFixed(0)} ms). Ctrl-C to stop.`,
  ];
  console.log(out.join("\n"));
} catch (err) {
  console.error("start-local failed:", err);
  await chain.close();
  process.exit(1);
}
