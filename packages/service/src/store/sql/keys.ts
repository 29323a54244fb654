/**
 * The store's part for projects, API keys (stored as hashes) and key applications (the public request for a key,
 * approved or rejected by an operator, claimed once by the applicant), and the configuration version the
 * service's caches key on.
 */
import { randomUUID } from "node:crypto";
import * as apiKeys from "../apiKeys.ts";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import type { Dialect } from "../db/types.ts";
import { StoreError } from "../errors.ts";
import { EXPIRE_PENDING_APPLICATIONS, expiryReason } from "../applicationExpiry.ts";
import type { ApiKey, ApiKeyAccess, KeyApplication, KeyApplicationStatus, NewKeyApplication, Project, ProjectStatus, Store } from "../types.ts";
import { isForeignKey, type SqlShared } from "./shared.ts";

function keyQueries(d: Dialect) {
  const apiKeyColumns = `id, project_id, prefix, label, status, created_at, revoked_at, ${d.json("allowed_origins")}, ${d.json("allowed_ips")}`;
  const applicationColumns = `id, created_at, contact, project_name, ${d.json("networks")}, intended_use, status, decided_at,
    decided_by, reason, project_id, api_key_id, claimed_at`;
  return {
    selectProject: "SELECT id, name, status, created_at FROM projects WHERE id = ?",
    selectProjects: "SELECT id, name, status, created_at FROM projects ORDER BY created_at, id",
    updateProjectStatus: "UPDATE projects SET status = ? WHERE id = ?",

    selectApiKeyByHash: `SELECT k.id, k.project_id, k.prefix, k.label, k.status, k.created_at, k.revoked_at,
        ${d.json("k.allowed_origins", "allowed_origins")}, ${d.json("k.allowed_ips", "allowed_ips")}, p.status AS project_status
      FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.key_hash = ?`,
    updateApiKeyAccess: "UPDATE api_keys SET allowed_origins = ?, allowed_ips = ? WHERE id = ?",
    selectApiKey: `SELECT ${apiKeyColumns} FROM api_keys WHERE id = ?`,
    // The project filter is bound twice: NULL = every project.
    selectApiKeys: `SELECT ${apiKeyColumns} FROM api_keys WHERE (CAST(? AS TEXT) IS NULL OR project_id = ?) ORDER BY created_at, id`,
    selectApiKeyExists: "SELECT 1 AS found FROM api_keys WHERE id = ?",
    revokeApiKey: "UPDATE api_keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'active'",
    selectConfigVersion: "SELECT version FROM config_version WHERE id = 1",

    insertApplication: `INSERT INTO key_applications (id, created_at, contact, project_name, networks, intended_use, status)
      VALUES (?, ?, ?, ?, ?, ?, 'pending')`,
    selectApplication: `SELECT ${applicationColumns} FROM key_applications WHERE id = ?`,
    selectApplications: `SELECT ${applicationColumns} FROM key_applications WHERE (CAST(? AS TEXT) IS NULL OR status = ?)
      ORDER BY created_at, id LIMIT 1000`,
    countApplications: "SELECT COUNT(*) AS n FROM key_applications WHERE status = ?",
    approveApplication: `UPDATE key_applications SET status = 'approved', decided_at = ?, decided_by = ?, project_id = ?,
        claim_token_hash = ? WHERE id = ? AND status = 'pending'`,
    rejectApplication: `UPDATE key_applications SET status = 'rejected', decided_at = ?, decided_by = ?, reason = ?
      WHERE id = ? AND status = 'pending'`,
    claimApplication: `UPDATE key_applications SET status = 'claimed', claimed_at = ?
      WHERE claim_token_hash = ? AND status = 'approved' RETURNING id`,
    setApplicationKey: "UPDATE key_applications SET api_key_id = ? WHERE id = ?",
  };
}

/** What every operation on keys runs on: the store's shared parts and the statements of keys, rendered once. */
interface KeyParts {
  readonly s: SqlShared;
  readonly q: ReturnType<typeof keyQueries>;
}

export function keyStore(s: SqlShared) {
  const k: KeyParts = { s, q: keyQueries(s.db.dialect) };
  return {
    // ---- projects and API keys
    createProject: (name: string) => createProject(k, name),
    getProject: (id: string) => getProject(k, id),
    createApiKey: (projectId: string, label?: string) => createApiKey(k, projectId, label),
    findApiKey: (plaintext: string) => findApiKey(k, plaintext),
    revokeApiKey: (id: string) => revokeApiKey(k, id),
    listProjects: () => listProjects(k),
    setProjectStatus: (id: string, status: ProjectStatus) => setProjectStatus(k, id, status),
    listApiKeys: (projectId?: string) => listApiKeys(k, projectId),
    getApiKey: (id: string) => getApiKey(k, id),
    setApiKeyAccess: (id: string, access: ApiKeyAccess) => setApiKeyAccess(k, id, access),
    findApiKeyWithProject: (plaintext: string) => findApiKeyWithProject(k, plaintext),
    configVersion: () => configVersion(k),
    // ---- API key applications
    createKeyApplication: (input: NewKeyApplication) => createKeyApplication(k, input),
    getKeyApplication: (id: string) => getKeyApplication(k, id),
    listKeyApplications: (status?: KeyApplicationStatus) => listKeyApplications(k, status),
    countKeyApplications: (status: KeyApplicationStatus) => countKeyApplications(k, status),
    expireKeyApplications: (ttlSeconds: number) => expireKeyApplications(k, ttlSeconds),
    approveKeyApplication: (id: string, decision: { decidedBy: string; claimTokenHash: string }) => approveKeyApplication(k, id, decision),
    rejectKeyApplication: (id: string, decision: { decidedBy: string; reason: string }) => rejectKeyApplication(k, id, decision),
    claimKeyApplication: (claimTokenHash: string) => claimKeyApplication(k, claimTokenHash),
  } satisfies Partial<Store>;
}

// ---- projects and API keys

async function createProject(k: KeyParts, name: string): Promise<Project> {
  const project: Project = { id: randomUUID(), name: validation.projectName(name), status: "active", createdAt: validation.nowSeconds() };
  await k.s.db.run(k.s.q.insertProject, [project.id, project.name, project.createdAt]);
  return project;
}

async function getProject(k: KeyParts, id: string): Promise<Project | undefined> {
  const row = await k.s.db.one<dbRows.ProjectRow>(k.q.selectProject, [id]);
  return row && dbRows.toProject(row);
}

async function createApiKey(k: KeyParts, projectId: string, label?: string): Promise<{ apiKey: ApiKey; plaintext: string }> {
  const { apiKey, plaintext, keyHash } = apiKeys.newApiKey(projectId, label);
  try {
    await k.s.db.run(k.s.q.insertApiKey, [apiKey.id, projectId, keyHash, apiKey.prefix, apiKey.label, apiKey.status, apiKey.createdAt]);
  } catch (err) {
    if (isForeignKey(k.s, err)) throw new StoreError("NOT_FOUND", `project ${projectId} not found`);
    throw err;
  }
  return { apiKey, plaintext };
}

async function findApiKey(k: KeyParts, plaintext: string): Promise<ApiKey | undefined> {
  const hash = apiKeys.apiKeyLookupHash(plaintext);
  const row = hash === undefined ? undefined : await k.s.db.one<dbRows.ApiKeyRow>(k.q.selectApiKeyByHash, [hash]);
  return row && dbRows.toApiKey(row);
}

async function revokeApiKey(k: KeyParts, id: string): Promise<void> {
  const changed = await k.s.db.run(k.q.revokeApiKey, [validation.nowSeconds(), id]);
  if (changed === 0 && (await k.s.db.one(k.q.selectApiKeyExists, [id])) === undefined) {
    throw new StoreError("NOT_FOUND", `API key ${id} not found`);
  }
}

async function listProjects(k: KeyParts): Promise<Project[]> {
  return (await k.s.db.all<dbRows.ProjectRow>(k.q.selectProjects)).map(dbRows.toProject);
}

async function setProjectStatus(k: KeyParts, id: string, status: ProjectStatus): Promise<void> {
  const changed = await k.s.db.run(k.q.updateProjectStatus, [validation.projectStatus(status), id]);
  if (changed === 0) throw new StoreError("NOT_FOUND", `project ${id} not found`);
}

async function listApiKeys(k: KeyParts, projectId?: string): Promise<ApiKey[]> {
  const project = projectId ?? null;
  return (await k.s.db.all<dbRows.ApiKeyRow>(k.q.selectApiKeys, [project, project])).map(dbRows.toApiKey);
}

async function getApiKey(k: KeyParts, id: string): Promise<ApiKey | undefined> {
  const row = await k.s.db.one<dbRows.ApiKeyRow>(k.q.selectApiKey, [id]);
  return row && dbRows.toApiKey(row);
}

async function setApiKeyAccess(k: KeyParts, id: string, access: ApiKeyAccess): Promise<void> {
  const json = (list: string[] | null) => (list === null ? null : JSON.stringify(list));
  const changed = await k.s.db.run(k.q.updateApiKeyAccess, [json(access.allowedOrigins), json(access.allowedIps), id]);
  if (changed === 0) throw new StoreError("NOT_FOUND", `API key ${id} not found`);
}

async function findApiKeyWithProject(k: KeyParts, plaintext: string): Promise<{ apiKey: ApiKey; projectStatus: ProjectStatus } | undefined> {
  const hash = apiKeys.apiKeyLookupHash(plaintext);
  if (hash === undefined) return undefined;
  const row = await k.s.db.one<dbRows.ApiKeyRow & { project_status: ProjectStatus }>(k.q.selectApiKeyByHash, [hash]);
  return row && { apiKey: dbRows.toApiKey(row), projectStatus: row.project_status };
}

async function configVersion(k: KeyParts): Promise<number> {
  const row = await k.s.db.one<{ version: number | string }>(k.q.selectConfigVersion);
  return Number(row?.version ?? 0);
}

// ---- API key applications

async function createKeyApplication(k: KeyParts, input: NewKeyApplication): Promise<KeyApplication> {
  const id = randomUUID();
  const now = validation.nowSeconds();
  await k.s.db.run(k.q.insertApplication, [id, now, input.contact, input.projectName, JSON.stringify(input.networks), input.intendedUse]);
  return (await getKeyApplication(k, id))!;
}

async function getKeyApplication(k: KeyParts, id: string): Promise<KeyApplication | undefined> {
  const row = await k.s.db.one<dbRows.KeyApplicationRow>(k.q.selectApplication, [id]);
  return row && dbRows.toKeyApplication(row);
}

async function listKeyApplications(k: KeyParts, status?: KeyApplicationStatus): Promise<KeyApplication[]> {
  const st = status ?? null;
  return (await k.s.db.all<dbRows.KeyApplicationRow>(k.q.selectApplications, [st, st])).map(dbRows.toKeyApplication);
}

async function countKeyApplications(k: KeyParts, status: KeyApplicationStatus): Promise<number> {
  return Number((await k.s.db.one<{ n: number | bigint }>(k.q.countApplications, [status]))?.n ?? 0);
}

async function expireKeyApplications(k: KeyParts, ttlSeconds: number): Promise<number> {
  const now = validation.nowSeconds();
  return k.s.db.run(EXPIRE_PENDING_APPLICATIONS, [now, expiryReason(ttlSeconds), now - ttlSeconds]);
}

async function approveKeyApplication(k: KeyParts, id: string, decision: { decidedBy: string; claimTokenHash: string }): Promise<KeyApplication> {
  const { db } = k.s;
  const changed = await db.transaction(async (tx) => {
    const row = await tx.one<dbRows.KeyApplicationRow>(`${k.q.selectApplication}${db.dialect.forUpdate}`, [id]);
    if (!row || row.status !== "pending") return 0;
    const now = validation.nowSeconds();
    const projectId = randomUUID();
    await tx.run(k.s.q.insertProject, [projectId, validation.projectName(row.project_name), now]);
    return tx.run(k.q.approveApplication, [now, decision.decidedBy, projectId, decision.claimTokenHash, id]);
  });
  return decided(k, id, changed);
}

async function rejectKeyApplication(k: KeyParts, id: string, decision: { decidedBy: string; reason: string }): Promise<KeyApplication> {
  const changed = await k.s.db.run(k.q.rejectApplication, [validation.nowSeconds(), decision.decidedBy, decision.reason, id]);
  return decided(k, id, changed);
}

/** The application after a decision that changed `changed` rows: NOT_FOUND, or INVALID_STATE when it was not pending. */
async function decided(k: KeyParts, id: string, changed: number): Promise<KeyApplication> {
  const application = await getKeyApplication(k, id);
  if (!application) throw new StoreError("NOT_FOUND", `application ${id} not found`);
  if (changed === 0) throw new StoreError("INVALID_STATE", `application ${id} is ${application.status}, not pending`);
  return application;
}

async function claimKeyApplication(k: KeyParts, claimTokenHash: string) {
  const claimed = await k.s.db.transaction(async (tx) => {
    const row = await tx.one<{ id: string }>(k.q.claimApplication, [validation.nowSeconds(), claimTokenHash]);
    if (!row) return undefined;
    const application = (await tx.one<dbRows.KeyApplicationRow>(k.q.selectApplication, [row.id]))!;
    const { apiKey, plaintext, keyHash } = apiKeys.newApiKey(application.project_id!, `application ${row.id}`);
    await tx.run(k.s.q.insertApiKey, [apiKey.id, apiKey.projectId, keyHash, apiKey.prefix, apiKey.label, apiKey.status, apiKey.createdAt]);
    await tx.run(k.q.setApplicationKey, [apiKey.id, row.id]);
    return { id: row.id, apiKey, plaintext };
  });
  if (!claimed) return undefined;
  return { application: (await getKeyApplication(k, claimed.id))!, apiKey: claimed.apiKey, plaintext: claimed.plaintext };
}
