/** paymaster tank credit|debit|show (User Sponsor mode gas tanks; replaces the former `admin credit|tank`). */
import type { Command } from "commander";
import { creditTank, debitTank, showTank } from "../../admin/tanks.ts";
import { record } from "../output.ts";
import type { Run } from "../program.ts";

interface Opts {
  network: string;
  sender: string;
  wei: string;
  reference?: string;
}

export function registerTank(program: Command, run: Run): void {
  const tank = program.command("tank").description("Gas tanks of senders (User Sponsor mode)");
  const common = (cmd: Command) =>
    cmd.requiredOption("--network <name>", "a configured network").requiredOption("--sender <address>", "the smart account");
  common(tank.command("show").description("a sender's tank: balance, reserved, available")).action((o: Opts) =>
    run(async (ctx, out) => out.print(await showTank(ctx, o), record)),
  );
  common(tank.command("credit").description("add wei to a tank by hand"))
    .requiredOption("--wei <amount>", "a positive amount of wei")
    .option("--reference <id>", "makes the credit idempotent (default: a new admin:<uuid>)")
    .action((o: Opts) => run(async (ctx, out) => out.print(await creditTank(ctx, o), record)));
  common(tank.command("debit").description("take wei from a tank by hand (never beyond what is available)"))
    .requiredOption("--wei <amount>", "a positive amount of wei")
    .option("--reference <id>", "makes the debit idempotent (default: a new admin:<uuid>)")
    .action((o: Opts) => run(async (ctx, out) => out.print(await debitTank(ctx, o), record)));
}
