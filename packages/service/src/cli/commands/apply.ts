/** paymaster apply -f FILE */
import type { Command } from "commander";
import { apply } from "../../admin/apply.ts";
import { table } from "../output.ts";
import type { Run } from "../run.ts";
import { readDocument } from "./strategy.ts";

export function registerApply(program: Command, run: Run): void {
  program
    .command("apply")
    .description("create or update projects, strategies and tokens to match a file (idempotent; never keys)")
    .requiredOption("-f, --file <file>", "the document (JSON or YAML)")
    .action((o: { file: string }) => run(async (ctx, out) => out.print(await apply(ctx, readDocument(o.file), o.file), (rows) => table(rows))));
}
