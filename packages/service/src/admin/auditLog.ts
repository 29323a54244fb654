/** The audit log, newest first. */
import type { AdminContext } from "./context.ts";

export async function listAudit(ctx: AdminContext, q: { action?: string; target?: string; limit?: number }) {
  return ctx.store.listAudit(q);
}
