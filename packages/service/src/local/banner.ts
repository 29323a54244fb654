/**
 * What the embedded default prints when it is up (`paymaster start` with no configuration): its URLs, the demo key,
 * ready-to-run curl lines, and a viem script that lands a sponsored op through the bundler.
 */
import type { MarketSnapshot } from "../chain/market.ts";
import type { Embedded } from "./embedded.ts";
import { approveCallData, demoUserOp, executeCallData } from "./embedded.ts";

function curl(endpoint: string, method: string, params?: unknown[]): string {
  const body = JSON.stringify({ id: 1, jsonrpc: "2.0", method, ...(params ? { params } : {}) });
  return `curl -s -X POST '${endpoint}' -H 'content-type: application/json' -d '${body}'`;
}

export interface ViemScriptOptions {
  url: string;
  chainUrl: string;
  chainId: number;
  simple7702Account: string;
  strategyCode: string;
}

/**
 * A runnable viem script (an ES module: save it as send.mjs in a project with viem, run `node send.mjs`): a fresh
 * EOA as a Simple7702 account (EntryPoint v0.8) sends a sponsored op through `url`, the ERC-7677 endpoint that
 * also forwards the bundler methods (one URL for bundler and paymaster), and waits for it to land.
 */
export function viemScript(options: ViemScriptOptions): string[] {
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

/** Where the printed script starts and ends: the lines between these two, saved as they are, are the file. */
export const VIEM_SCRIPT_START = "----- send.mjs -----";
export const VIEM_SCRIPT_END = "----- end of send.mjs -----";

/**
 * The banner's viem section: a heading, then the script between two marker lines, printed with nothing before its
 * lines (an earlier banner put `#` before each, so it could not be saved and run as printed).
 */
export function viemScriptSection(options: ViemScriptOptions): string[] {
  return [
    "From viem: a sponsored op through the bundler, one URL for bundler and paymaster. Save the lines between the",
    "two marks as send.mjs in a project with viem (npm i viem), then run node send.mjs:",
    VIEM_SCRIPT_START,
    ...viemScript(options),
    VIEM_SCRIPT_END,
  ];
}

/** The lines between the viem script's marks in printed text (what a reader saves as send.mjs); undefined without them. */
export function printedViemScript(printed: string): string | undefined {
  const lines = printed.split("\n");
  const start = lines.indexOf(VIEM_SCRIPT_START);
  const end = lines.indexOf(VIEM_SCRIPT_END, start + 1);
  return start < 0 || end < 0 ? undefined : `${lines.slice(start + 1, end).join("\n")}\n`;
}

/**
 * ERC-7677's final call signs the op's gas values, so it needs them all (src/methods/finalGas.ts): a wallet gives
 * its bundler's estimate. The banner's line gives limits that cover the demo op (its account's deployment and a
 * call that does nothing) and the fees the service itself would fill in at start-up, so it answers as printed while
 * the local chain's fees stay within the fee cap (maxFeeMultiplierBps, 3x by default) of those.
 */
export function demoFinalGas(market: Pick<MarketSnapshot, "maxFeePerGas" | "maxPriorityFeePerGas">): Record<string, string> {
  return {
    callGasLimit: "0x9c40",
    verificationGasLimit: "0x61a80",
    preVerificationGas: "0xea60",
    maxFeePerGas: `0x${market.maxFeePerGas.toString(16)}`,
    maxPriorityFeePerGas: `0x${market.maxPriorityFeePerGas.toString(16)}`,
  };
}

/** What `paymaster start` prints once the embedded default is up: its URLs, keys, curl lines and the viem script. */
export async function banner(embedded: Embedded, adminToken: string | undefined): Promise<string> {
  const { stack, endpoint, strategyCode, demoAccounts, manifestPath } = embedded;
  const market = await embedded.running.service.networks.get("local")!.chain!.market.current();
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
    "# ERC-7677's final call carries the final gas values (a wallet's come from its bundler's estimate):",
    curl(endpoint, "pm_getPaymasterData", [{ ...demoUserOp(v07!, noop), ...demoFinalGas(market) }, stack.manifest.entryPoints["v0.7"].entryPoint, "0x7a69", { strategy_code: strategyCode }]),
    "",
    ...(embedded.bundler
      ? [
          ...viemScriptSection({
            url: embedded.erc7677Endpoint,
            chainUrl: stack.chain.url,
            chainId: stack.chain.chainId,
            simple7702Account: stack.manifest.entryPoints["v0.8"].simple7702Account!,
            strategyCode,
          }),
          "",
        ]
      : []),
    "Ctrl-C stops everything.",
  ];
  return lines.join("\n");
}

