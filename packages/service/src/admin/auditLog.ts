/** The audit log, newest first. */
import { read, type AdminContext } from "./context.ts";

export const listAudit = read("viewer", async function listAudit(ctx: AdminContext, q: { action?: string; target?: string; limit?: number }) {
  return ctx.store.listAudit(q);
});
