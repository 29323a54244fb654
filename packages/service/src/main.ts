/**
 * Entry point. With a configuration (`--config <file>` or PAYMASTER_CONFIG) it serves the configured networks;
 * with none, the embedded default: a local chain in-process, everything deployed, a demo project seeded, and
 * ready-to-run curl lines printed. Stops cleanly on SIGINT/SIGTERM.
 */
import { randomBytes } from "node:crypto";
import { adminApiOptionsFromEnv, DEFAULT_ADMIN_PORT, type AdminApiOptions } from "./adminApi/options.ts";
import { ConfigError, loadConfig, redactConfig } from "./config/load.ts";
import { scrubText } from "./log.ts";
import { startService } from "./server.ts";
import { approveCallData, demoUserOp, executeCallData, startEmbedded, type Embedded } from "./local/embedded.ts";

function curl(endpoint: string, method: string, params?: unknown[]): string {
  const body = JSON.stringify({ id: 1, jsonrpc: "2.0", method, ...(params ? { params } : {}) });
  return `curl -s -X POST '${endpoint}' -H 'content-type: application/json' -d '${body}'`;
}

/**
 * A runnable viem script (an ES module: save it as send.mjs in a project with viem, run `node send.mjs`): a fresh
 * EOA as a Simple7702 account (EntryPoint v0.8) sends a sponsored op through `url`, the ERC-7677 endpoint that
 * also forwards the bundler methods (one URL for bundler and paymaster), and waits for it to land.
 */
function viemSnippet(options: { url: string; chainUrl: string; chainId: number; simple7702Account: string; strategyCode: string }): string[] {
  return [
    'import { createPublicClient, defineChain, http } from "viem";',
    'import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";',
    'import { createBundlerClient, toSimple7702SmartAccount } from "viem/account-abstraction";',
    `const chain = defineChain({ id: ${options.chainId}, name: "local", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: ["${options.chainUrl}"] } } });`,
    "const client = createPublicClient({ chain, transport: http() });",
    "const owner = privateKeyToAccount(generatePrivateKey()); // a fresh EOA: it holds no ether, the paymaster pays",
    `const account = await toSimple7702SmartAccount({ client, owner, implementation: "${options.simple7702Account}" });`,
    "// Its first op carries its EIP-7702 delegation to the Simple7702Account (a fresh EOA's nonce is 0).",
    `const authorization = await owner.signAuthorization({ address: "${options.simple7702Account}", chainId: chain.id, nonce: 0 });`,
    "const bundlerClient = createBundlerClient({",
    `  account, client, transport: http("${options.url}"), pollingInterval: 500,`,
    `  paymaster: true, paymasterContext: { strategy_code: "${options.strategyCode}" },`,
    "});",
    "const hash = await bundlerClient.sendUserOperation({ calls: [{ to: account.address, value: 0n }], authorization });",
    "const { success, receipt } = await bundlerClient.waitForUserOperationReceipt({ hash });",
    "console.log(JSON.stringify({ userOpHash: hash, success, transactionHash: receipt.transactionHash }));",
  ];
}

/**
 * The embedded default's console: the tokens of PAYMASTER_ADMIN_TOKENS, else one made up for this run (printed
 * once: the local stack is for development, like its demo key).
 */
function embeddedAdmin(env: NodeJS.ProcessEnv): { options: AdminApiOptions; generated?: string } {
  const configured = adminApiOptionsFromEnv(env);
  if (configured) return { options: configured };
  const token = randomBytes(24).toString("hex");
  const port = Number(env.PAYMASTER_ADMIN_PORT ?? DEFAULT_ADMIN_PORT);
  return { options: { host: "127.0.0.1", port, tokens: [{ name: "local", token }] }, generated: token };
}

function banner(embedded: Embedded, adminToken: string | undefined): string {
  const { stack, endpoint, strategyCode, demoAccounts, manifestPath } = embedded;
  const [v06, v07] = demoAccounts;
  const owner = stack.chain.accounts[3]!.address;
  const usdc = stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
  const noop = executeCallData(owner);
  const lines = [
    "",
    "Paymaster service (embedded local stack)",
    "",
    `  Chain RPC        ${stack.chain.url}  (chain id ${stack.chain.chainId})`,
    `  Endpoint         ${endpoint}  (the spec's v1 dialect)`,
    `  ERC-7677         ${embedded.erc7677Endpoint}  (standard JSON-RPC 2.0: viem, permissionless, wallets${embedded.bundler ? "; also the bundler's methods: one URL for bundler and paymaster" : ""})`,
    `  Bundler          ${embedded.bundler ? `${embedded.bundler.url}  (alto on the local chain: EntryPoint v0.6, v0.7, v0.8, EIP-7702 senders)` : "off"}`,
    `  Metrics          ${embedded.running.metricsUrl ? `${embedded.running.metricsUrl}/metrics  (also /health, /ready)` : "off"}`,
    `  Console          ${embedded.running.adminUrl}/console/  (sign in with ${adminToken ? `the admin token ${adminToken}, made for this run` : "a token of PAYMASTER_ADMIN_TOKENS"}; admin API under /admin/v1)`,
    `  Apply for a key  ${embedded.running.url}/apply/  (the public application page for teams)`,
    `  Demo API key     ${embedded.apiKey}`,
    `  Strategy code    ${strategyCode}`,
    `  Tokens           ${stack.manifest.tokens.map((t) => `${t.symbol} (${t.decimals} decimals, ${t.address})`).join(", ")}`,
    `  Manifest         ${manifestPath}`,
    `  Demo accounts    v0.6 ${v06!.sender}, v0.7 ${v07!.sender} (owner ${owner} = dev account #3; 1 ETH gas tank and 1000 of each token each)`,
    `  Deposit address  ${embedded.running.service.networks.get("local")?.config.depositAddress} (dev account #5): ETH sent here is credited to the sender's gas tank after 1 confirmation`,
    `  Deposit contract ${stack.manifest.gasTankDeposit} (GasTankDeposit): depositFor(sender) with ETH, from an EOA or a smart account's own op, credits sender's gas tank after 1 confirmation`,
    "",
    "Try it:",
    "",
    curl(endpoint, "pm_supportEntrypoint"),
    curl(endpoint, "pm_paymasterAccount"),
    "# Sponsor mode (the demo strategy pays), EntryPoint v0.6:",
    curl(endpoint, "pm_sponsorUserOperation", [demoUserOp(v06!, noop), { strategy_code: strategyCode }]),
    "# ERC-20 mode: the op's own call approves the paymaster, USDC pays, EntryPoint v0.7:",
    curl(endpoint, "pm_sponsorUserOperation", [
      demoUserOp(v07!, approveCallData(usdc.address, stack.manifest.entryPoints["v0.7"].erc20Paymaster)),
      { token: "USDC", version: "v0.7" },
    ]),
    "# User Sponsor mode (the sender's gas tank pays):",
    curl(endpoint, "pm_sponsorUserOperation", [demoUserOp(v07!, noop), { version: "v0.7" }]),
    curl(endpoint, "pm_estimateUserOperationGas", [demoUserOp(v06!, noop), { strategy_code: strategyCode }]),
    curl(endpoint, "pm_getPaymasterStubData", [demoUserOp(v07!, noop), stack.manifest.entryPoints["v0.7"].entryPoint, "0x7a69", { strategy_code: strategyCode }]),
    curl(endpoint, "pm_getPaymasterData", [demoUserOp(v07!, noop), stack.manifest.entryPoints["v0.7"].entryPoint, "0x7a69", { strategy_code: strategyCode }]),
    "",
    ...(embedded.bundler
      ? [
          "# From viem: a sponsored op through the bundler, with one URL for bundler and paymaster (save as send.mjs in a project with viem; node send.mjs):",
          ...viemSnippet({
            url: embedded.erc7677Endpoint,
            chainUrl: stack.chain.url,
            chainId: stack.chain.chainId,
            simple7702Account: stack.manifest.entryPoints["v0.8"].simple7702Account!,
            strategyCode,
          }).map((line) => `#   ${line}`),
          "",
        ]
      : []),
    "Ctrl-C stops everything.",
  ];
  return lines.join("\n");
}

/** A start-up failure in one line (a configuration problem, a port in use, a pre-flight verdict), never a stack. */
function fail(error: unknown): never {
  const text = error instanceof ConfigError ? error.message : `${error instanceof Error ? error.message : String(error)}`;
  console.error(`paymaster: cannot start: ${scrubText(text)}`);
  // A configuration mistake (admin tokens included) is a usage error: exit 2; anything else 1.
  process.exit(error instanceof ConfigError ? 2 : 1);
}

const argv = process.argv.slice(2);
/** `--no-watch`: this replica serves requests only; another runs the settlement watchers. */
const noWatch = argv.includes("--no-watch");
let close: () => Promise<void>;
try {
  const config = await loadConfig({ argv, env: process.env });
  if (config === undefined) {
    const admin = embeddedAdmin(process.env);
    const embedded = await startEmbedded({
      admin: admin.options,
      chainPort: Number(process.env.PAYMASTER_LOCAL_CHAIN_PORT ?? 8545),
      servicePort: Number(process.env.PAYMASTER_PORT ?? 3000),
      metricsPort: Number(process.env.PAYMASTER_METRICS_PORT ?? 9464),
      // The bundler on its conventional port; PAYMASTER_LOCAL_BUNDLER_PORT=off runs none.
      ...(process.env.PAYMASTER_LOCAL_BUNDLER_PORT === "off" ? {} : { bundler: { port: Number(process.env.PAYMASTER_LOCAL_BUNDLER_PORT ?? 4337) } }),
      logLevel: (process.env.PAYMASTER_LOG_LEVEL as "info" | undefined) ?? "warn",
      ...(noWatch ? { watch: false } : {}),
    });
    console.log(banner(embedded, admin.generated));
    close = embedded.close;
  } else {
    const running = await startService(config, { ...(noWatch ? { watch: false } : {}), admin: adminApiOptionsFromEnv(process.env) });
    // A PKCS#11 network's address comes from its token (read at start-up unless the token refused).
    const tokenSigners = new Map([...running.service.networks].flatMap(([name, n]) => (n.config.pkcs11 && n.chain ? [[name, n.chain.signer.address] as const] : [])));
    console.log(JSON.stringify({ msg: "configuration", config: redactConfig(config, tokenSigners), ...(running.adminUrl ? { adminApi: running.adminUrl, console: `${running.adminUrl}/console/` } : {}) }));
    close = running.close;
  }
} catch (error) {
  fail(error);
}

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    console.log(`\n${signal}: shutting down (draining in-flight requests)`);
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error("shutdown failed:", error);
        process.exit(1);
      },
    );
  });
}
