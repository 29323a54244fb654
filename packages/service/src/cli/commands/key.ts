/** paymaster key create|list|revoke|rotate */
import type { Command } from "commander";
import { approveApplication, listApplications, rejectApplication } from "../../admin/applications.ts";
import { createKey, listKeys, revokeKey, rotateKey, setKeyAccess } from "../../admin/keys.ts";
import { UsageError } from "../context.ts";
import { record, table } from "../output.ts";
import type { Run } from "../run.ts";

const SHOWN_ONCE = "\n\nThe key is shown once: store it now (only its hash is kept).";

interface AccessOpts {
  origin?: string[];
  serverOnly?: boolean;
  anyOrigin?: boolean;
  ip?: string[];
  anyIp?: boolean;
}

/** The access options as the operation takes them; contradictory ones are a usage error. */
function accessInput(o: AccessOpts): { origins?: string[] | null; ips?: string[] | null } {
  if ([o.origin !== undefined, o.serverOnly === true, o.anyOrigin === true].filter(Boolean).length > 1) {
    throw new UsageError("give one of --origin, --server-only, --any-origin");
  }
  if (o.ip !== undefined && o.anyIp === true) throw new UsageError("give one of --ip, --any-ip");
  const input: { origins?: string[] | null; ips?: string[] | null } = {};
  if (o.origin !== undefined) input.origins = o.origin;
  if (o.serverOnly) input.origins = [];
  if (o.anyOrigin) input.origins = null;
  if (o.ip !== undefined) input.ips = o.ip;
  if (o.anyIp) input.ips = null;
  return input;
}

export function registerKey(program: Command, run: Run): void {
  const key = program.command("key").description("API keys (stored hashed; the plaintext is shown once)");
  key
    .command("create")
    .description("create an API key for a project and print it once")
    .requiredOption("--project <id>", "the project's id")
    .option("--label <text>", "a label to recognise the key by")
    .option("--origin <origin...>", "browser origins allowed to use the key (default: any)")
    .option("--server-only", "refuse requests from any browser origin")
    .option("--ip <range...>", "client address ranges (CIDR) allowed to use the key (default: any)")
    .action((opts: AccessOpts & { project: string; label?: string }) =>
      run(async (ctx, out) =>
        out.print(await createKey(ctx, { projectId: opts.project, label: opts.label, ...accessInput(opts) }), (k) => record(k) + SHOWN_ONCE),
      ),
    );
  key
    .command("access")
    .description("set who may use a key: browser origins and client address ranges (what is not given stays)")
    .argument("<id>", "the key's id")
    .option("--origin <origin...>", "only these browser origins")
    .option("--server-only", "no browser origin at all")
    .option("--any-origin", "any origin (the default of a new key)")
    .option("--ip <range...>", "only these client address ranges (CIDR)")
    .option("--any-ip", "any client address (the default)")
    .action((id: string, opts: AccessOpts) => run(async (ctx, out) => out.print(await setKeyAccess(ctx, id, accessInput(opts)), record)));
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
    .command("applications")
    .description("applications for a key (POST /api/v1/applications), oldest first")
    .option("--status <status>", "pending (default), approved, rejected, claimed or all", "pending")
    .action((o: { status: string }) =>
      run(async (ctx, out) =>
        out.print(await listApplications(ctx, { status: o.status === "all" ? undefined : o.status }), (rows) =>
          table(rows, ["id", "status", "projectName", "contact", "networks", "intendedUse", "createdAt"]),
        ),
      ),
    );
  key
    .command("approve")
    .description("approve an application: creates its project and prints a claim token for the applicant (once)")
    .argument("<id>", "the application's id")
    .action((id: string) =>
      run(async (ctx, out) =>
        out.print(await approveApplication(ctx, id), (a) =>
          `${record(a)}\n\nSend the claim token to ${a.contact}: POST /api/v1/applications/claim {"claimToken": "…"} returns the API key, once.`,
        ),
      ),
    );
  key
    .command("reject")
    .description("reject an application")
    .argument("<id>", "the application's id")
    .requiredOption("--reason <text>", "why (recorded)")
    .action((id: string, o: { reason: string }) => run(async (ctx, out) => out.print(await rejectApplication(ctx, id, o.reason), record)));
  key
    .command("rotate")
    .description("create a new key for the same project and label, and revoke the old one")
    .argument("<id>", "the id of the key to replace")
    .action((id: string) => run(async (ctx, out) => out.print(await rotateKey(ctx, id), (k) => record(k) + SHOWN_ONCE)));
}
