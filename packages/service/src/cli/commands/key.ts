/** paymaster key create|list|revoke|rotate */
import type { Command } from "commander";
import { createKey, listKeys, revokeKey, rotateKey } from "../../admin/keys.ts";
import { record, table } from "../output.ts";
import type { Run } from "../program.ts";

const SHOWN_ONCE = "\n\nThe key is shown once: store it now (only its hash is kept).";

export function registerKey(program: Command, run: Run): void {
  const key = program.command("key").description("API keys (stored hashed; the plaintext is shown once)");
  key
    .command("create")
    .description("create an API key for a project and print it once")
    .requiredOption("--project <id>", "the project's id")
    .option("--label <text>", "a label to recognise the key by")
    .action((opts: { project: string; label?: string }) =>
      run(async (ctx, out) => out.print(await createKey(ctx, { projectId: opts.project, label: opts.label }), (k) => record(k) + SHOWN_ONCE)),
    );
  key
    .command("list")
    .description("list API keys (never their plaintext)")
    .option("--project <id>", "only this project's keys")
    .action((opts: { project?: string }) =>
      run(async (ctx, out) =>
        out.print(await listKeys(ctx, { projectId: opts.project }), (rows) => table(rows, ["id", "projectId", "prefix", "label", "status", "createdAt", "revokedAt"])),
      ),
    );
  key
    .command("revoke")
    .description("revoke an API key: refused on its next request by every replica")
    .argument("<id>", "the key's id")
    .action((id: string) => run(async (ctx, out) => out.print(await revokeKey(ctx, id), record)));
  key
    .command("rotate")
    .description("create a new key for the same project and label, and revoke the old one")
    .argument("<id>", "the id of the key to replace")
    .action((id: string) => run(async (ctx, out) => out.print(await rotateKey(ctx, id), (k) => record(k) + SHOWN_ONCE)));
}
