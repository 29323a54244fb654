/** paymaster billing list|show|plan|credit|adjust|statement (a hosted operator billing its projects; docs/cli.md). */
import { writeFileSync } from "node:fs";
import type { Command } from "commander";
import { adjustBilling, billingStatement, creditBilling, listBilling, setBillingPlan, showBilling, type PlanInput, type StatementQuery } from "../../admin/billing.ts";
import { invalid } from "../../admin/context.ts";
import { statementCsv, statementFile, type Statement } from "../../billing/statement.ts";
import { record, table } from "../output.ts";
import type { Run } from "../run.ts";

interface PlanOptions {
  enable?: boolean;
  disable?: boolean;
  markupBps?: string;
  feeUsd?: string;
  alertBelowUsd?: string;
}

function planInput(o: PlanOptions): PlanInput {
  if (o.enable && o.disable) invalid("--enable and --disable: give one of them");
  return {
    ...(o.enable ? { enabled: true } : o.disable ? { enabled: false } : {}),
    ...(o.markupBps === undefined ? {} : { markupBps: o.markupBps }),
    ...(o.feeUsd === undefined ? {} : { feeUsd: o.feeUsd }),
    ...(o.alertBelowUsd === undefined ? {} : { alertBelowUsd: o.alertBelowUsd }),
  };
}

/** A statement as text: its figures, then its lines. */
function statementText(s: Statement): string {
  const t = s.totals;
  return [
    `Statement of ${s.project.name} (${s.project.id}), ${s.period.label} (${s.period.since} to ${s.period.until})${s.period.closed ? "" : ", period not ended yet"}`,
    `opening $${s.openingBalanceUsd}, credits $${t.creditsUsd}, debits $${t.debitsUsd}, adjustments $${t.adjustmentsUsd}, closing $${s.closingBalanceUsd}`,
    `${t.operations} operations billed (debit lines); net of reversals: gas ${t.gasCostWei} wei = $${t.gasUsd}, markup $${t.markupUsd}, fees $${t.feeUsd}`,
    table(s.lines, ["seq", "time", "kind", "reference", "network", "txHash", "gasCostWei", "amountUsd", "balanceUsd"]),
  ].join("\n");
}

export function registerBilling(program: Command, run: Run): void {
  const billing = program.command("billing").description("Project billing: prepaid balances, plans (markup, fee), credits and statements (hosted operators)");
  billing
    .command("list")
    .description("projects billed: plan, balance, held and available (USD)")
    .action(() => run(async (ctx, out) => out.print(await listBilling(ctx), (rows) => table(rows, ["projectId", "projectName", "enabled", "markupBps", "feeUsd", "balanceUsd", "heldUsd", "availableUsd", "alertBelowUsd", "low"]))));
  billing
    .command("show")
    .description("a project's plan and balance")
    .argument("<project>", "the project id")
    .action((project: string) => run(async (ctx, out) => out.print(await showBilling(ctx, project), record)));
  billing
    .command("plan")
    .description("set a project's plan: new reservations are priced by it (open ones keep their terms)")
    .argument("<project>", "the project id")
    .option("--enable", "bill the project: its ops hold their maximum bill against its balance")
    .option("--disable", "stop billing it (open sponsorships are still billed when they settle)")
    .option("--markup-bps <n>", "markup on the gas, in basis points (100 = 1 %), 0 to 100000")
    .option("--fee-usd <dollars>", "a fee per settled operation, e.g. 0.01")
    .option("--alert-below-usd <dollars>", "the balance.low webhook and alert fire below this balance ('none': no alert)")
    .action((project: string, o: PlanOptions) => run(async (ctx, out) => out.print(await setBillingPlan(ctx, project, planInput(o)), record)));
  billing
    .command("credit")
    .description("add prepaid credit to a project's balance (the same reference twice credits once)")
    .argument("<project>", "the project id")
    .requiredOption("--usd <dollars>", "a positive amount of dollars, e.g. 100 or 25.50")
    .requiredOption("--reference <id>", "e.g. the invoice or payment id: makes the credit idempotent")
    .action((project: string, o: { usd: string; reference: string }) => run(async (ctx, out) => out.print(await creditBilling(ctx, project, o), record)));
  billing
    .command("adjust")
    .description("correct a project's balance by hand: signed dollars (--usd=-5 takes $5 away), idempotent by reference")
    .argument("<project>", "the project id")
    .requiredOption("--usd <dollars>", "signed dollars, e.g. 5 or -5")
    .requiredOption("--reference <id>", "makes the correction idempotent")
    .action((project: string, o: { usd: string; reference: string }) => run(async (ctx, out) => out.print(await adjustBilling(ctx, project, o), record)));
  billing
    .command("statement")
    .description("a project's statement: every settled op, credit and adjustment of a period, with opening and closing balance")
    .argument("<project>", "the project id")
    .option("--month <YYYY-MM>", "a calendar month, UTC (default: the current one)")
    .option("--since <time>", "or any range: from (unix seconds or ISO 8601)")
    .option("--until <time>", "to, excluded")
    .option("--format <format>", "text (default), csv or json (as --json)")
    .option("--output <file>", "write the statement to this file instead of printing it")
    .action((project: string, o: StatementQuery & { format?: string; output?: string }) =>
      run(async (ctx, out) => {
        const format = o.format ?? "text";
        if (!["text", "csv", "json"].includes(format)) invalid(`--format: text, csv or json, not ${JSON.stringify(format)}`);
        const statement = await billingStatement(ctx, project, { ...(o.month ? { month: o.month } : {}), ...(o.since ? { since: o.since } : {}), ...(o.until ? { until: o.until } : {}) });
        if (o.output !== undefined) {
          writeFileSync(o.output, format === "text" ? `${statementText(statement)}\n` : statementFile(statement, format as "csv" | "json"));
          out.print({ file: o.output, format, lines: statement.lines.length, closingBalanceUsd: statement.closingBalanceUsd }, record);
          return;
        }
        out.print(statement, format === "csv" ? (s) => statementCsv(s, "\n").trimEnd() : format === "json" ? (s) => JSON.stringify(s, null, 2) : statementText);
      }),
    );
}
