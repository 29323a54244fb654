/**
 * paymaster deposit-contract show | withdraw | fund-paymaster
 * The network's GasTankDeposit (src/admin/depositContract.ts): what users paid into their gas tanks through it,
 * and the owner's withdrawal of it (owner key from PAYMASTER_OWNER_KEY[_FILE]; asks for confirmation).
 */
import type { Command } from "commander";
import { record } from "../output.ts";
import type { RunChain } from "../run.ts";
import { onChain, parseAmount, withNetwork } from "./chain.ts";

export function registerDepositContract(program: Command, runChain: RunChain): void {
  const group = program.command("deposit-contract").description("the gas-tank deposit contract (GasTankDeposit) where smart accounts fund their tanks");
  withNetwork(group.command("show"))
    .description("its address, the ether it holds, its owner, and whether the service credits its deposits")
    .action((o: { network: string; deployments?: string }) =>
      runChain(o, async (target, _env, out) => {
        const { depositContractStatus } = await onChain();
        out.print(await depositContractStatus(target), ({ warnings, ...rest }) => [record(rest), ...warnings.map((w) => `WARNING ${w}`)].join("\n"));
      }),
    );
  withNetwork(group.command("withdraw"))
    .description("send ether it holds to an address, e.g. to top up the paymasters' deposits (owner key; asks for confirmation)")
    .requiredOption("--amount <amount>", "wei or e.g. 0.5eth")
    .requiredOption("--recipient <address>", "where the ether goes")
    .option("--yes", "do not ask for confirmation")
    .action((o: { network: string; deployments?: string; amount: string; recipient: string; yes?: boolean }) =>
      runChain(o, async (target, env, out, _log, confirm) => {
        const { addressOption, ownerWallet, withdrawFromDepositContract } = await onChain();
        const amountWei = parseAmount(o.amount, "--amount");
        const to = addressOption(o.recipient, "--recipient");
        await confirm(`Withdraw ${amountWei} wei from the gas-tank deposit contract on ${target.network} to ${to}?`);
        out.print(await withdrawFromDepositContract(target, ownerWallet(target, env), { to, amountWei }), record);
      }),
    );
  withNetwork(group.command("fund-paymaster"))
    .description("move ether it holds into one paymaster's EntryPoint deposit (depositToPaymaster; owner key; asks for confirmation)")
    .requiredOption("--paymaster <label|address>", "the paymaster whose deposit is topped up")
    .requiredOption("--amount <amount>", "wei or e.g. 0.5eth")
    .option("--yes", "do not ask for confirmation")
    .action((o: { network: string; deployments?: string; paymaster: string; amount: string; yes?: boolean }) =>
      runChain(o, async (target, env, out, _log, confirm) => {
        const { fundPaymasterFromDepositContract, ownerWallet } = await onChain();
        const amountWei = parseAmount(o.amount, "--amount");
        await confirm(`Move ${amountWei} wei from the gas-tank deposit contract on ${target.network} into ${o.paymaster}'s EntryPoint deposit?`);
        out.print(await fundPaymasterFromDepositContract(target, ownerWallet(target, env), { paymaster: o.paymaster, amountWei }), record);
      }),
    );
}
