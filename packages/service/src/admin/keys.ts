/**
 * API keys: create, list, revoke, rotate. The plaintext is in the answer of create and rotate only (shown once);
 * the store keeps its hash. A revoked key is refused on its next request by every replica: keys are read from
 * the store on every request (rpc/dispatch.ts authenticate), there is no per-process cache.
 */
import { validIpRange, validOrigin } from "../access/keyAccess.ts";
import type { ApiKeyAccess } from "../store/types.ts";
import { audit, guarded, notFound, invalid, type AdminContext, mutation, read } from "./context.ts";
import { keyView } from "./views.ts";

const LABEL_MAX = 100;

function label(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.length > LABEL_MAX) invalid(`label: must be a string of at most ${LABEL_MAX} characters`);
  return value;
}

const LIST_MAX = 100;

/**
 * Allowed origins and IP ranges as given (undefined = unchanged): null = any, [] for origins = server-side
 * only, else the list (each entry checked: exact origins, CIDR ranges).
 */
export interface AccessInput {
  origins?: unknown;
  ips?: unknown;
}

function accessList(value: unknown, field: string, valid: (v: unknown) => string | undefined, example: string): string[] | null {
  if (value === null) return null;
  if (!Array.isArray(value) || value.length > LIST_MAX) invalid(`${field}: must be a list of at most ${LIST_MAX} entries, or null for any`);
  return [
    ...new Set(
      value.map((v, i) => {
        const ok = valid(v);
        if (ok === undefined) invalid(`${field}[${i}]: ${JSON.stringify(v)} is not ${example}`);
        return ok;
      }),
    ),
  ];
}

function access(current: ApiKeyAccess, input: AccessInput): ApiKeyAccess {
  return {
    allowedOrigins: input.origins === undefined ? current.allowedOrigins : accessList(input.origins, "origins", validOrigin, 'an origin like "https://app.example.com"'),
    allowedIps: input.ips === undefined ? current.allowedIps : accessList(input.ips, "ips", validIpRange, 'an address or CIDR range like "203.0.113.0/24"'),
  };
}

export const createKey = mutation("operator", async function createKey(ctx: AdminContext, input: { projectId: string; label?: unknown } & AccessInput) {
  const project = await ctx.store.getProject(input.projectId);
  if (!project) notFound(`project ${JSON.stringify(input.projectId)} not found`);
  const wanted = access({ allowedOrigins: null, allowedIps: null }, input); // checked before anything is written
  const created = await guarded(() => ctx.store.createApiKey(project.id, label(input.label)));
  if (wanted.allowedOrigins !== null || wanted.allowedIps !== null) await guarded(() => ctx.store.setApiKeyAccess(created.apiKey.id, wanted));
  const apiKey = { ...created.apiKey, ...wanted };
  await audit(ctx, "key.create", apiKey.id, null, keyView(apiKey));
  return { ...keyView(apiKey), key: created.plaintext };
});

/** Sets a key's allowed origins and/or IP ranges (what the input leaves out stays). */
export const setKeyAccess = mutation("operator", async function setKeyAccess(ctx: AdminContext, id: string, input: AccessInput) {
  const before = await ctx.store.getApiKey(id);
  if (!before) notFound(`API key ${JSON.stringify(id)} not found`);
  const next = access(before, input);
  await guarded(() => ctx.store.setApiKeyAccess(id, next));
  const after = keyView({ ...before, ...next });
  await audit(ctx, "key.access", id, keyView(before), after);
  return after;
});

export const listKeys = read("viewer", async function listKeys(ctx: AdminContext, input: { projectId?: string }) {
  return (await ctx.store.listApiKeys(input.projectId)).map(keyView);
});

export const revokeKey = mutation("operator", async function revokeKey(ctx: AdminContext, id: string) {
  const before = await ctx.store.getApiKey(id);
  if (!before) notFound(`API key ${JSON.stringify(id)} not found`);
  await guarded(() => ctx.store.revokeApiKey(id));
  const after = keyView((await ctx.store.getApiKey(id))!);
  await audit(ctx, "key.revoke", id, keyView(before), after);
  return after;
});

/**
 * A new key for the same project and label, and the old one revoked at once. (For an overlap, create a second
 * key, move the clients, then revoke the first.)
 */
export const rotateKey = mutation("operator", async function rotateKey(ctx: AdminContext, id: string) {
  const old = await ctx.store.getApiKey(id);
  if (!old) notFound(`API key ${JSON.stringify(id)} not found`);
  if (old.status !== "active") invalid(`API key ${id} is already revoked: create a new key instead`);
  const created = await guarded(() => ctx.store.createApiKey(old.projectId, old.label ?? undefined));
  const keep = { allowedOrigins: old.allowedOrigins, allowedIps: old.allowedIps }; // the new key keeps the old one's access
  if (keep.allowedOrigins !== null || keep.allowedIps !== null) await guarded(() => ctx.store.setApiKeyAccess(created.apiKey.id, keep));
  const apiKey = { ...created.apiKey, ...keep };
  const plaintext = created.plaintext;
  await guarded(() => ctx.store.revokeApiKey(id));
  await audit(ctx, "key.rotate", id, keyView(old), { revoked: id, created: keyView(apiKey) });
  return { ...keyView(apiKey), key: plaintext, revoked: id };
});
