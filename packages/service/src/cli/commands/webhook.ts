/** paymaster webhook create|list|delete|deliveries|replay (docs/webhooks.md) */
import type { Command } from "commander";
import { createWebhook, listProjectWebhooks, removeWebhook, replayWebhook, webhookDeliveries } from "../../admin/webhooks.ts";
import { record, table } from "../output.ts";
import type { Run } from "../run.ts";

const SHOWN_ONCE = "\n\nThe secret is shown once: give it to the receiver now (it verifies X-Paymaster-Signature with it).";

export function registerWebhook(program: Command, run: Run): void {
  const webhook = program.command("webhook").description("a project's webhooks: event endpoints, the approval endpoint, deliveries, dead letters, replay");
  webhook
    .command("create")
    .description("add an endpoint; its signing secret is printed once")
    .requiredOption("--project <id>", "the project's id")
    .requiredOption("--url <url>", "an http(s) URL")
    .option("--approval", "the project's approval endpoint (asked before each signature) instead of an events endpoint")
    .option("--event <type...>", "events to send (default: all)")
    .option("--timeout-ms <ms>", "approval: how long to wait for an answer", (v) => Number(v))
    .option("--default <decision>", "approval: allow or deny when no answer comes in time (default deny)")
    .action((o: { project: string; url: string; approval?: boolean; event?: string[]; timeoutMs?: number; default?: "allow" | "deny" }) =>
      run(async (ctx, out) => {
        const created = await createWebhook(ctx, {
          projectId: o.project,
          url: o.url,
          kind: o.approval ? "approval" : "events",
          ...(o.event ? { events: o.event } : {}),
          ...(o.timeoutMs === undefined ? {} : { timeoutMs: o.timeoutMs }),
          ...(o.default ? { defaultDecision: o.default } : {}),
        });
        out.print(created, (c) => record({ ...c.endpoint, secret: c.secret }) + SHOWN_ONCE);
      }),
    );
  webhook
    .command("list")
    .description("a project's endpoints (never their secrets)")
    .requiredOption("--project <id>", "the project's id")
    .action((o: { project: string }) => run(async (ctx, out) => out.print(await listProjectWebhooks(ctx, o.project), (rows) => table(rows))));
  webhook
    .command("delete")
    .description("remove an endpoint (its pending events are no longer sent)")
    .argument("<id>", "the endpoint's id")
    .action((id: string) => run(async (ctx, out) => out.print(await removeWebhook(ctx, id), record)));
  webhook
    .command("deliveries")
    .description("events and their delivery, newest first; --status dead is the dead-letter list")
    .option("--project <id>", "only this project's")
    .option("--status <status>", "pending, delivered or dead")
    .option("--limit <n>", "at most this many", (v) => Number(v))
    .action((o: { project?: string; status?: string; limit?: number }) =>
      run(async (ctx, out) =>
        out.print(
          await webhookDeliveries(ctx, { ...(o.project ? { projectId: o.project } : {}), ...(o.status ? { status: o.status } : {}), ...(o.limit ? { limit: o.limit } : {}) }),
          (rows) => table(rows, ["id", "type", "status", "attempts", "sponsorshipId", "lastError"]),
        ),
      ),
    );
  webhook
    .command("replay")
    .description("send a delivered or dead event again (same id: receivers de-duplicate)")
    .argument("<eventId>", "the event's id")
    .action((id: string) => run(async (ctx, out) => out.print(await replayWebhook(ctx, id), record)));
}
