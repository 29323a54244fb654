/**
 * paymaster deploy | status | deposit | withdraw | stake | unstake | signer list|add|remove
 * The paymasters (and, deployed with them, the gas-tank deposit contract) on chain (src/admin/deploy.ts, src/admin/paymasters.ts). Keys come only from the environment
 * or key files (PAYMASTER_DEPLOYER_KEY[_FILE], PAYMASTER_OWNER_KEY[_FILE]); the RPC URL from the configuration
 * or PAYMASTER_NETWORK_<NAME>_RPC_URL. Withdrawing and unstaking ask for confirmation (--yes skips it).
 */
import { createInterface } from "node:readline/promises";
import type { Command } from "commander";
import { parseEther } from "viem/utils";
import { ENTRY_POINT_VERSIONS, isEntryPointVersion, type EntryPointVersion } from "@paymaster/shared";
import { AdminError } from "../../admin/context.ts";
import type { ChainTarget } from "../../admin/chainTarget.ts";
import { DEFAULT_DEPLOYMENTS_DIR } from "../../admin/deployments.ts";
import type { DeployOptions, DeployResult } from "../../admin/deploy.ts";
import type { PaymasterStatus } from "../../admin/paymasters.ts";
import { record, table } from "../output.ts";
import type { RunChain } from "../run.ts";

/**
 * The on-chain admin code (ethers, the contracts' deploy helpers), for every on-chain command here and in token.ts
 * and depositContract.ts: loaded when one of them runs, so that every other command line starts without it (it was
 * a third of `paymaster project list`'s start-up).
 */
export async function onChain() {
  const [target, deploy, paymasters, tokenSigner, tokens, depositContract] = await Promise.all([
    import("../../admin/chainTarget.ts"),
    import("../../admin/deploy.ts"),
    import("../../admin/paymasters.ts"),
    import("../../admin/tokenSigner.ts"),
    import("../../admin/tokens.ts"),
    import("../../admin/depositContract.ts"),
  ]);
  return { ...target, ...deploy, ...paymasters, ...tokenSigner, ...tokens, ...depositContract };
}
type OnChain = Awaited<ReturnType<typeof onChain>>;

/** An amount of native currency: "<n>" wei, or "<decimal>eth". */
export function parseAmount(value: string, option: string): bigint {
  const eth = /^(\d+(?:\.\d{1,18})?)eth$/i.exec(value);
  if (eth) return parseEther(eth[1]!);
  if (/^\d{1,78}$/.test(value)) return BigInt(value);
  throw new AdminError("INVALID_INPUT", `${option}: "${value}" is not an amount (wei, or e.g. 0.5eth)`);
}

function parseVersions(value: string): EntryPointVersion[] {
  const versions = value.split(",").map((v) => v.trim());
  for (const v of versions) if (!isEntryPointVersion(v)) throw new AdminError("INVALID_INPUT", `--versions: "${v}" is not one of ${ENTRY_POINT_VERSIONS.join(", ")}`);
  return versions as EntryPointVersion[];
}

function parseSeconds(value: string, option: string): number {
  if (!/^\d{1,10}$/.test(value)) throw new AdminError("INVALID_INPUT", `${option}: "${value}" is not a number of seconds`);
  return Number(value);
}

interface NetworkOpts {
  network: string;
  deployments?: string;
  paymaster?: string;
  yes?: boolean;
}

export const withNetwork = (cmd: Command) =>
  cmd
    .requiredOption("--network <name>", "the network (its RPC from the configuration or PAYMASTER_NETWORK_<NAME>_RPC_URL)")
    .option("--deployments <dir>", `where deployment manifests are (default ${DEFAULT_DEPLOYMENTS_DIR})`);
const withPaymaster = (cmd: Command) => cmd.option("--paymaster <label|address>", "only this paymaster (default: all of the network)");

function statusText(rows: PaymasterStatus[]): string {
  const lines = [
    table(
      rows.map((r) => ({
        paymaster: r.label,
        address: r.address,
        deposit: r.depositWei,
        stake: r.stakeWei,
        delay: r.unstakeDelaySec,
        staked: r.staked,
        owner: r.owner,
        signers: r.signerCount,
        service_signer: r.serviceSigners[0] ? (r.serviceSigners[0].accepted ? "accepted" : "NOT ACCEPTED") : "-",
      })),
    ),
  ];
  for (const r of rows) {
    if (r.token) lines.push(`${r.label}: treasury ${r.token.treasury}, postOpGas ${r.token.postOpGas}, minPostOpGasLimit ${r.token.minPostOpGasLimit}` + r.token.tokens.map((t) => `, ${t.symbol} ${t.supported ? "allowed" : "NOT allowed"} (fees ${t.accruedFees})`).join(""));
    if (r.pendingOwner) lines.push(`${r.label}: ownership offered to ${r.pendingOwner}, not yet accepted`);
    for (const w of r.warnings) lines.push(`WARNING ${r.label}: ${w}`);
  }
  return lines.join("\n");
}

const sentText = (rows: object[]) => table(rows);

/** The on-chain commands: deploy, status, deposit, withdraw, stake, unstake, signer list|add|remove. */
export function registerChain(program: Command, runChain: RunChain): void {
  registerDeploy(program, runChain);
  registerStatus(program, runChain);
  registerDeposit(program, runChain);
  registerWithdraw(program, runChain);
  registerStake(program, runChain);
  registerUnstake(program, runChain);
  const signer = program.command("signer").description("the paymasters' accepted signers (rotation: docs/operator-guide.md)");
  registerSignerList(signer, runChain);
  registerSignerAdd(signer, runChain);
  registerSignerRemove(signer, runChain);
}

type DeployOpts = NetworkOpts & { treasury: string; stake: string; deposit: string; owner?: string; signer?: string[]; versions?: string; unstakeDelay: string; dryRun?: boolean };

/** paymaster deploy: the paymasters and the gas-tank deposit contract (or, --dry-run, the plan). */
function registerDeploy(program: Command, runChain: RunChain): void {
  withNetwork(program.command("deploy"))
    .description("deploy the paymasters and the gas-tank deposit contract (same address on every chain; resumable); --dry-run prints the plan")
    .addHelpText(
      "after",
      "\nNew contract code (a release that changes the contracts) means new addresses: deploy the new set beside the old one,\n" +
        "then switch the configuration's entryPoints and drain the old set (docs/operator-guide.md, \"Moving to a new contract set\").",
    )
    .requiredOption("--treasury <address>", "receives the ERC-20 paymasters' fees")
    .requiredOption("--stake <amount>", "stake per paymaster, wei or e.g. 0.1eth (bundlers require a staked paymaster)")
    .option("--deposit <amount>", "EntryPoint deposit each paymaster is topped up to, wei or e.g. 0.5eth", "0")
    .option("--owner <address>", "owner of the paymasters (default: the deploying key; another owner must accept)")
    .option("--signer <address...>", "signers besides the service's signer keys")
    .option("--versions <list>", `EntryPoint versions, comma-separated (default: the configured ones, else ${ENTRY_POINT_VERSIONS.join(",")})`)
    .option("--unstake-delay <seconds>", "unstake delay, at least 86400", "86400")
    .option("--dry-run", "print every transaction with gas and cost; send nothing")
    .action((o: DeployOpts) =>
      runChain(o, async (target, env, out, log) => {
        const chain = await onChain();
        const result = await chain.deployPaymasters(target, chain.deployerWallet(target, env), deployOptions(o, log, chain.addressOption));
        out.print(deploySummary(result, o.dryRun === true), deployText);
      }),
    );
}

/** The deploy flags as deployPaymasters takes them (a bad one is an INVALID_INPUT naming it). */
function deployOptions(o: DeployOpts, log: (line: string) => void, addressOption: OnChain["addressOption"]): DeployOptions {
  return {
    treasury: addressOption(o.treasury, "--treasury"),
    stakeWei: parseAmount(o.stake, "--stake"),
    depositWei: parseAmount(o.deposit, "--deposit"),
    unstakeDelaySec: parseSeconds(o.unstakeDelay, "--unstake-delay"),
    ...(o.owner ? { owner: addressOption(o.owner, "--owner") } : {}),
    ...(o.signer ? { signers: o.signer.map((s) => addressOption(s, "--signer")) } : {}),
    ...(o.versions ? { versions: parseVersions(o.versions) } : {}),
    dryRun: o.dryRun === true,
    outDir: o.deployments ?? DEFAULT_DEPLOYMENTS_DIR,
    log,
  };
}

/** What deploy prints (--json as is): the plan, its transactions with their cost, what was sent and written. */
function deploySummary({ plan, sent, written }: DeployResult, dryRun: boolean) {
  return {
    network: plan.network,
    chainId: plan.chainId,
    deployer: plan.deployer,
    dryRun,
    paymasters: plan.paymasters.map((p) => ({ label: p.label, address: p.address, state: p.state })),
    gasTankDeposit: { label: plan.gasTankDeposit.label, address: plan.gasTankDeposit.address, state: plan.gasTankDeposit.state },
    transactions: plan.txs.map((tx) => ({ step: tx.step, label: tx.label, to: tx.to, valueWei: tx.value.toString(), gas: tx.gas.toString(), gasIsEstimate: tx.gasIsEstimate, costWei: (tx.gas * plan.feePerGas).toString() })),
    feePerGas: plan.feePerGas.toString(),
    totalCostWei: plan.totalCostWei.toString(),
    sent: sent.map((tx) => ({ label: tx.label, hash: tx.hash, blockNumber: tx.blockNumber, gasUsed: tx.gasUsed.toString() })),
    written,
    notes: plan.notes,
  };
}

/** The deploy summary as text. */
function deployText(s: ReturnType<typeof deploySummary>): string {
  return [
    `${s.dryRun ? "Plan (dry run: nothing sent)" : "Deployment"} on ${s.network} (chain ${s.chainId}) by ${s.deployer}`,
    table([...s.paymasters, s.gasTankDeposit]),
    s.transactions.length === 0 ? "Nothing to send: everything is deployed and at its targets." : table(s.transactions, ["step", "label", "to", "valueWei", "gas", "costWei"]),
    `Total: ${s.totalCostWei} wei at ${s.feePerGas} wei/gas (gas marked approximate where a step waits for an earlier one)`,
    ...(s.sent.length ? [table(s.sent)] : []),
    ...s.written.map((f) => `wrote ${f}`),
    ...s.notes.map((n) => `NOTE ${n}`),
  ].join("\n");
}

/** paymaster status: each paymaster's deposit, stake, owner, signers and token settings, with warnings. */
function registerStatus(program: Command, runChain: RunChain): void {
  withPaymaster(withNetwork(program.command("status")))
    .description("each paymaster's EntryPoint deposit, stake, owner, signers and token settings, with warnings")
    .addHelpText(
      "after",
      "\nThe paymasters come from the configuration's entryPoints, else the deployment manifest. While moving to a new\n" +
        "contract set, --config <a copy of the old configuration> shows the old one (docs/operator-guide.md).",
    )
    .option("--min-deposit <amount>", "warn below this deposit (default: the network's depositAlertWei)")
    .action((o: NetworkOpts & { minDeposit?: string }) =>
      runChain(o, async (target, _env, out) => {
        const { paymasterStatus } = await onChain();
        const rows = await paymasterStatus(target, { ...(o.paymaster ? { paymaster: o.paymaster } : {}), ...(o.minDeposit ? { minDepositWei: parseAmount(o.minDeposit, "--min-deposit") } : {}) });
        out.print(rows, statusText);
      }),
    );
}

/** paymaster deposit: top the EntryPoint deposits up (deploying key). */
function registerDeposit(program: Command, runChain: RunChain): void {
  withPaymaster(withNetwork(program.command("deposit")))
    .description("top each paymaster's EntryPoint deposit up to an amount (sent with the deploying key)")
    .requiredOption("--to <amount>", "the deposit to reach, wei or e.g. 1eth")
    .action((o: NetworkOpts & { to: string }) =>
      runChain(o, async (target, env, out) => {
        const { topUpDeposits, deployerWallet } = await onChain();
        const sent = await topUpDeposits(target, deployerWallet(target, env), { ...(o.paymaster ? { paymaster: o.paymaster } : {}), targetWei: parseAmount(o.to, "--to") });
        out.print(sent, sentText);
      }),
    );
}

/** paymaster withdraw: from one paymaster's deposit (owner key, confirmed). */
function registerWithdraw(program: Command, runChain: RunChain): void {
  withNetwork(program.command("withdraw"))
    .description("withdraw from one paymaster's EntryPoint deposit (owner key; asks for confirmation)")
    .requiredOption("--paymaster <label|address>", "the paymaster")
    .requiredOption("--amount <amount>", "wei or e.g. 0.5eth")
    .requiredOption("--recipient <address>", "where the ether goes")
    .option("--yes", "do not ask for confirmation")
    .action((o: NetworkOpts & { paymaster: string; amount: string; recipient: string }) =>
      runChain(o, async (target, env, out, _log, confirm) => {
        const { addressOption, ownerWallet, withdrawDeposit } = await onChain();
        const amountWei = parseAmount(o.amount, "--amount");
        const to = addressOption(o.recipient, "--recipient");
        await confirm(`Withdraw ${amountWei} wei of ${o.paymaster}'s deposit on ${target.network} to ${to}?`);
        out.print(await withdrawDeposit(target, ownerWallet(target, env), { paymaster: o.paymaster, to, amountWei }), record);
      }),
    );
}

/** paymaster stake: bring stakes and unstake delays up (owner key). */
function registerStake(program: Command, runChain: RunChain): void {
  withPaymaster(withNetwork(program.command("stake")))
    .description("bring each paymaster's stake and unstake delay up to these (owner key)")
    .requiredOption("--amount <amount>", "the stake to hold, wei or e.g. 0.1eth")
    .option("--unstake-delay <seconds>", "at least 86400", "86400")
    .action((o: NetworkOpts & { amount: string; unstakeDelay: string }) =>
      runChain(o, async (target, env, out) => {
        const { addStake, ownerWallet } = await onChain();
        const unstakeDelaySec = parseSeconds(o.unstakeDelay, "--unstake-delay");
        if (unstakeDelaySec < 86_400) throw new AdminError("INVALID_INPUT", "--unstake-delay: below one day (86400 s), which bundlers require of a staked paymaster");
        const sent = await addStake(target, ownerWallet(target, env), { ...(o.paymaster ? { paymaster: o.paymaster } : {}), amountWei: parseAmount(o.amount, "--amount"), unstakeDelaySec });
        out.print(sent, sentText);
      }),
    );
}

/** paymaster unstake: unlock the stake, or --withdraw-to take it after the delay (owner key, confirmed). */
function registerUnstake(program: Command, runChain: RunChain): void {
  withPaymaster(withNetwork(program.command("unstake")))
    .description("unlock the stake (bundlers then treat the paymaster as unstaked), or with --withdraw-to take it after the delay (owner key; asks for confirmation)")
    .option("--withdraw-to <address>", "withdraw an unlocked stake whose delay has passed")
    .option("--yes", "do not ask for confirmation")
    .action((o: NetworkOpts & { withdrawTo?: string }) =>
      runChain(o, async (target, env, out, _log, confirm) => {
        const { addressOption, ownerWallet, unstake } = await onChain();
        const withdrawTo = o.withdrawTo ? addressOption(o.withdrawTo, "--withdraw-to") : undefined;
        await confirm(
          withdrawTo
            ? `Withdraw the stake of ${o.paymaster ?? "every paymaster"} on ${target.network} to ${withdrawTo}?`
            : `Unlock the stake of ${o.paymaster ?? "every paymaster"} on ${target.network}? Bundlers will refuse its ops from now on.`,
        );
        out.print(await unstake(target, ownerWallet(target, env), { ...(o.paymaster ? { paymaster: o.paymaster } : {}), ...(withdrawTo ? { withdrawTo } : {}) }), sentText);
      }),
    );
}

/** paymaster signer list: whether each paymaster accepts the service's signer keys (or --address). */
function registerSignerList(signer: Command, runChain: RunChain): void {
  withPaymaster(withNetwork(signer.command("list")))
    .description("whether each paymaster accepts the service's signer keys (or --address)")
    .option("--address <address>", "check this address instead")
    .action((o: NetworkOpts & { address?: string }) =>
      runChain(o, async (target, _env, out) => {
        const { addressOption, listSigner } = await onChain();
        const addresses = o.address ? [addressOption(o.address, "--address")] : target.serviceSigners;
        if (addresses.length === 0) throw new AdminError("INVALID_INPUT", "no signer to check: set the network's signer keys (as for the service) or give --address");
        const rows = (await Promise.all(addresses.map((a) => listSigner(target, a, o.paymaster)))).flatMap((r, i) => r.map((row) => ({ signer: addresses[i], ...row })));
        out.print(rows, (r) => table(r));
      }),
    );
}

type SignerAddOpts = NetworkOpts & { address?: string; pkcs11?: boolean; create?: boolean; importKeyFile?: string };

/** paymaster signer add: accept --address, or the network's PKCS#11 key (created or imported first), on each paymaster. */
function registerSignerAdd(signer: Command, runChain: RunChain): void {
  withPaymaster(withNetwork(signer.command("add")))
    .description("accept a signer on each paymaster (owner key); add the new key before the service signs with it")
    .option("--address <address>", "the signer's address")
    .option("--pkcs11", "the network's PKCS#11 key (its pkcs11 block; PIN from PAYMASTER_NETWORK_<NAME>_PKCS11_PIN or _PKCS11_PIN_FILE): prints its address")
    .option("--create", "with --pkcs11: create the key in the token first (secp256k1, never extractable)")
    .option("--import-key-file <file>", "with --pkcs11: import the private key in <file> into the token first (keeps its address; never extractable)")
    .action((o: SignerAddOpts) =>
      runChain(o, async (target, env, out, log) => {
        const chain = await onChain();
        const address = signerToAdd(o, target, log, chain);
        const { setSigner, ownerWallet } = chain;
        out.print(await setSigner(target, ownerWallet(target, env), { ...(o.paymaster ? { paymaster: o.paymaster } : {}), signer: address as `0x${string}`, accept: true }), sentText);
      }),
    );
}

/** The address signer add accepts: --address, or the token's key (found, created or imported); contradictory flags are refused. */
function signerToAdd(o: SignerAddOpts, target: ChainTarget, log: (line: string) => void, { addressOption, tokenSignerAddress }: OnChain): string {
  if ((o.address === undefined) === (o.pkcs11 !== true)) throw new AdminError("INVALID_INPUT", "give --address or --pkcs11 (exactly one)");
  if ((o.create || o.importKeyFile !== undefined) && !o.pkcs11) throw new AdminError("INVALID_INPUT", "--create and --import-key-file go with --pkcs11");
  if (o.create && o.importKeyFile !== undefined) throw new AdminError("INVALID_INPUT", "give --create or --import-key-file, not both");
  if (!o.pkcs11) return addressOption(o.address!, "--address");
  const key = tokenSignerAddress(target, { create: o.create === true, ...(o.importKeyFile === undefined ? {} : { importFrom: o.importKeyFile }) });
  log(`${key.created ? (o.importKeyFile === undefined ? "created" : "imported") : "found"} the token key ${key.address}`);
  return key.address;
}

/** paymaster signer remove: stop accepting a signer (owner key); never the key the service signs with. */
function registerSignerRemove(signer: Command, runChain: RunChain): void {
  withPaymaster(withNetwork(signer.command("remove")))
    .description("stop accepting a signer (owner key); only after its last signature expired (the service's signatureTtlSeconds)")
    .requiredOption("--address <address>", "the signer's address")
    .action((o: NetworkOpts & { address: string }) =>
      runChain(o, async (target, env, out) => {
        const { addressOption, ownerWallet, setSigner } = await onChain();
        const address = addressOption(o.address, "--address");
        if (target.serviceSigners[0] === address) {
          throw new AdminError("INVALID_INPUT", `--address ${address} is the key the service signs with for ${target.network}: put the new key first in its signer keys (or label the token's new key), wait signatureTtlSeconds, then remove this one`);
        }
        out.print(await setSigner(target, ownerWallet(target, env), { ...(o.paymaster ? { paymaster: o.paymaster } : {}), signer: address, accept: false }), sentText);
      }),
    );
}

/** Opens the chain target of a command and closes it whatever happens. */
export async function withChainTarget<T>(options: { network: string; config?: string; deployments?: string }, env: NodeJS.ProcessEnv, body: (target: ChainTarget) => Promise<T>): Promise<T> {
  const { chainTarget } = await import("../../admin/chainTarget.ts");
  const target = await chainTarget(options, env);
  try {
    return await body(target);
  } finally {
    target.close();
  }
}

/** Asks `question` on a terminal; refuses without one (give --yes). */
export async function confirmOnTerminal(question: string, yes: boolean, io: { err(text: string): void }): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY) throw new AdminError("INVALID_INPUT", `${question} — not confirmed: no terminal to ask on (give --yes)`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new AdminError("CONFLICT", "not confirmed: nothing sent");
  } finally {
    rl.close();
  }
  void io;
}
