/** paymaster audit — the audit log of administration calls. */
import type { Command } from "commander";
import { InvalidArgumentError } from "commander";
import { listAudit } from "../../admin/auditLog.ts";
import { table } from "../output.ts";
import type { Run } from "../run.ts";

function limit(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1 || n > 1000) throw new InvalidArgumentError("an integer from 1 to 1000");
  return n;
}

export function registerAudit(program: Command, run: Run): void {
  program
    .command("audit")
    .description("the audit log of administration calls, newest first")
    .option("--action <action>", "e.g. key.revoke")
    .option("--target <id>", "an object's id or code")
    .option("--limit <n>", "at most this many (default 100)", limit)
    .action((o: { action?: string; target?: string; limit?: number }) =>
      run(async (ctx, out) => out.print(await listAudit(ctx, o), (rows) => table(rows, ["at", "actor", "role", "action", "target"]))),
    );
}
