/** paymaster tank list|show|ledger|credit|debit|allow|disallow (User Sponsor mode gas tanks; replaces the former `admin credit|tank`). */
import type { Command } from "commander";
import { allowTankProject, creditTank, debitTank, disallowTankProject, listTanks, showTank, tankLedger } from "../../admin/tanks.ts";
import { record, table } from "../output.ts";
import type { Run } from "../run.ts";

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
  tank
    .command("list")
    .description("gas tanks, most recently changed first")
    .option("--network <name>", "only this network's tanks")
    .option("--limit <n>", "at most this many (default 100, at most 1000)")
    .action((o: { network?: string; limit?: string }) =>
      run(async (ctx, out) => out.print(await listTanks(ctx, o), (rows) => table(rows, ["network", "sender", "balanceWei", "reservedWei", "availableWei", "updatedAt"]))),
    );
  common(tank.command("ledger").description("a tank's credits, debits and the settled ops it paid for, newest first"))
    .option("--limit <n>", "at most this many (default 100, at most 1000)")
    .action((o: Opts & { limit?: string }) =>
      run(async (ctx, out) =>
        out.print(await tankLedger(ctx, o), (l) =>
          [`balance ${l.balanceWei} wei, reserved ${l.reservedWei} wei, available ${l.availableWei} wei`, table(l.entries, ["at", "kind", "amountWei", "reference", "txHash"])].join("\n"),
        ),
      ),
    );
  common(tank.command("show").description("a sender's tank: balance, reserved, available, and the projects allowed to draw from it")).action((o: Opts) =>
    run(async (ctx, out) =>
      out.print(await showTank(ctx, o), ({ projects, ...t }) =>
        [record(t), projects.length === 0 ? "projects: none allowed" : table(projects, ["projectId", "allowed", "changedBy", "updatedAt"])].join("\n"),
      ),
    ),
  );
  common(tank.command("allow").description("let a project's requests draw from this tank (User Sponsor mode denies every project not allowed)"))
    .requiredOption("--project <id>", "the project id")
    .action((o: Opts & { project: string }) => run(async (ctx, out) => out.print(await allowTankProject(ctx, o), record)));
  common(tank.command("disallow").description("no longer let a project's requests draw from this tank"))
    .requiredOption("--project <id>", "the project id")
    .action((o: Opts & { project: string }) => run(async (ctx, out) => out.print(await disallowTankProject(ctx, o), record)));
  common(tank.command("credit").description("add wei to a tank by hand"))
    .requiredOption("--wei <amount>", "a positive amount of wei")
    .option("--reference <id>", "makes the credit idempotent (default: a new admin:<uuid>)")
    .action((o: Opts) => run(async (ctx, out) => out.print(await creditTank(ctx, o), record)));
  common(tank.command("debit").description("take wei from a tank by hand (never beyond what is available)"))
    .requiredOption("--wei <amount>", "a positive amount of wei")
    .option("--reference <id>", "makes the debit idempotent (default: a new admin:<uuid>)")
    .action((o: Opts) => run(async (ctx, out) => out.print(await debitTank(ctx, o), record)));
}
