/**
 * API keys: create, list, revoke, rotate. The plaintext is in the answer of create and rotate only (shown once);
 * the store keeps its hash. A revoked key is refused on its next request by every replica: keys are read from
 * the store on every request (rpc/dispatch.ts authenticate), there is no per-process cache.
 */
import { audit, guarded, notFound, invalid, type AdminContext } from "./context.ts";
import { keyView } from "./views.ts";

const LABEL_MAX = 100;

function label(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.length > LABEL_MAX) invalid(`label: must be a string of at most ${LABEL_MAX} characters`);
  return value;
}

export async function createKey(ctx: AdminContext, input: { projectId: string; label?: unknown }) {
  const project = await ctx.store.getProject(input.projectId);
  if (!project) notFound(`project ${JSON.stringify(input.projectId)} not found`);
  const { apiKey, plaintext } = await guarded(() => ctx.store.createApiKey(project.id, label(input.label)));
  await audit(ctx, "key.create", apiKey.id, null, keyView(apiKey));
  return { ...keyView(apiKey), key: plaintext };
}

export async function listKeys(ctx: AdminContext, input: { projectId?: string }) {
  return (await ctx.store.listApiKeys(input.projectId)).map(keyView);
}

export async function revokeKey(ctx: AdminContext, id: string) {
  const before = await ctx.store.getApiKey(id);
  if (!before) notFound(`API key ${JSON.stringify(id)} not found`);
  await guarded(() => ctx.store.revokeApiKey(id));
  const after = keyView((await ctx.store.getApiKey(id))!);
  await audit(ctx, "key.revoke", id, keyView(before), after);
  return after;
}

/**
 * A new key for the same project and label, and the old one revoked at once. (For an overlap, create a second
 * key, move the clients, then revoke the first.)
 */
export async function rotateKey(ctx: AdminContext, id: string) {
  const old = await ctx.store.getApiKey(id);
  if (!old) notFound(`API key ${JSON.stringify(id)} not found`);
  if (old.status !== "active") invalid(`API key ${id} is already revoked: create a new key instead`);
  const { apiKey, plaintext } = await guarded(() => ctx.store.createApiKey(old.projectId, old.label ?? undefined));
  await guarded(() => ctx.store.revokeApiKey(id));
  await audit(ctx, "key.rotate", id, keyView(old), { revoked: id, created: keyView(apiKey) });
  return { ...keyView(apiKey), key: plaintext, revoked: id };
}
