/** The audit log, newest first. */
import type { AuditEntry } from "../store/types.ts";
import { read, type AdminContext } from "./context.ts";
import type { Principal } from "./roles.ts";
import { seesWebhookUrls, webhookUrlFor } from "./webhooks.ts";

export const listAudit = read("viewer", async function listAudit(ctx: AdminContext, q: { action?: string; target?: string; limit?: number }) {
  const rows = await ctx.store.listAudit(q);
  if (seesWebhookUrls(ctx.role)) return rows; // nothing to redact: no copy of every row
  return rows.map((row) => ({ ...row, before: urlsFor(ctx.role, row.before), after: urlsFor(ctx.role, row.after) }));
});

/**
 * A recorded object (an audit row's before or after) as `principal` may see it: every `url` in it (a webhook
 * endpoint's, at any depth) as webhookUrlFor shows it. Iterative, so no recorded depth exhausts the stack.
 */
function urlsFor(principal: Principal, recorded: AuditEntry["before"]): AuditEntry["before"] {
  const copy = structuredClone(recorded);
  const stack: unknown[] = [copy];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null) continue;
    for (const [key, value] of Object.entries(node)) {
      if (key === "url" && typeof value === "string") (node as Record<string, unknown>)[key] = webhookUrlFor(principal, value);
      else stack.push(value);
    }
  }
  return copy;
}
