/** paymaster strategy create|update|enable|disable|list|show|usage|history */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { createStrategy, listStrategies, setStrategyStatus, showStrategy, strategyUsage, strategyUsageHistory, updateStrategy } from "../../admin/strategies.ts";
import { parseDocumentText } from "../../admin/strategyFile.ts";
import { UsageError } from "../context.ts";
import { record, table } from "../output.ts";
import type { Run } from "../run.ts";

/** Most bytes of a strategy or apply file (a sender list of 10 000 addresses fits easily). */
export const DOCUMENT_MAX_BYTES = 2 * 1024 * 1024;

/** A JSON or YAML file as data; errors name the file. */
export function readDocument(file: string): unknown {
  let text: string;
  try {
    const buffer = readFileSync(file);
    if (buffer.length > DOCUMENT_MAX_BYTES) throw new UsageError(`${file}: larger than ${DOCUMENT_MAX_BYTES} bytes`);
    text = buffer.toString("utf8");
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseDocumentText(text, file);
}

const show = (s: Record<string, unknown>) => record(s);

export function registerStrategy(program: Command, run: Run): void {
  const strategy = program.command("strategy").description("Sponsorship strategies (what the service pays for), from JSON or YAML files");
  strategy
    .command("create")
    .description("create a strategy from a file (code, name, project, networks, validFrom, validUntil, rules)")
    .requiredOption("-f, --file <file>", "the strategy file (JSON or YAML)")
    .action((opts: { file: string }) => run(async (ctx, out) => out.print(await createStrategy(ctx, readDocument(opts.file), opts.file), show)));
  strategy
    .command("update")
    .description("update the strategy named by the file's code with the fields the file gives")
    .requiredOption("-f, --file <file>", "the strategy file (JSON or YAML)")
    .action((opts: { file: string }) => run(async (ctx, out) => out.print(await updateStrategy(ctx, readDocument(opts.file), opts.file), show)));
  strategy
    .command("enable")
    .description("enable a strategy")
    .argument("<code>", "the strategy's code")
    .action((code: string) => run(async (ctx, out) => out.print(await setStrategyStatus(ctx, code, "enabled"), show)));
  strategy
    .command("disable")
    .description("disable a strategy: requests naming it are refused")
    .argument("<code>", "the strategy's code")
    .action((code: string) => run(async (ctx, out) => out.print(await setStrategyStatus(ctx, code, "disabled"), show)));
  strategy
    .command("list")
    .description("list strategies")
    .option("--project <id>", "only this project's strategies")
    .action((opts: { project?: string }) =>
      run(async (ctx, out) => out.print(await listStrategies(ctx, { projectId: opts.project }), (rows) => table(rows, ["code", "name", "status", "projectId", "networks"]))),
    );
  strategy
    .command("show")
    .description("a strategy with its rules")
    .argument("<code>", "the strategy's code")
    .action((code: string) => run(async (ctx, out) => out.print(await showStrategy(ctx, code), show)));
  strategy
    .command("usage")
    .description("spent, reserved and remaining against every cap (daily: today, UTC)")
    .argument("<code>", "the strategy's code")
    .option("--sender <address>", "also the perSender cap of this sender")
    .action((code: string, opts: { sender?: string }) =>
      run(async (ctx, out) =>
        out.print(await strategyUsage(ctx, code, { sender: opts.sender }), (u) =>
          [
            `Strategy ${u.code}`,
            `Totals: spent ${u.totals.spentWei} wei ($${u.totals.spentUsd}), reserved ${u.totals.reservedWei} wei ($${u.totals.reservedUsd}), ${u.totals.ops} ops`,
            u.caps.length === 0 ? "(no caps)" : table(u.caps, ["cap", "key", "spentWei", "reservedWei", "spentUsd", "reservedUsd", "ops", "maxWei", "remainingWei", "maxUsd", "remainingUsd", "maxOps", "remainingOps"]),
          ].join("\n"),
        ),
      ),
    );
  strategy
    .command("history")
    .description("spent and reserved per UTC day (by the day each op was reserved, as the daily cap counts), with the daily cap")
    .argument("<code>", "the strategy's code")
    .option("--days <n>", "how many days, today last (default 14, at most 90)")
    .action((code: string, opts: { days?: string }) =>
      run(async (ctx, out) =>
        out.print(await strategyUsageHistory(ctx, code, opts), (h) =>
          [
            `Strategy ${h.code}${h.dailyCap ? `, daily cap ${JSON.stringify(h.dailyCap)}` : ""}${h.truncated ? " (window cut: too many sponsorships)" : ""}`,
            table(h.days, ["day", "spentWei", "reservedWei", "spentUsd", "reservedUsd", "ops", "released"]),
          ].join("\n"),
        ),
      ),
    );
}
