/**
 * The store's part for projects, API keys (stored as hashes) and key applications (the public request for a key,
 * approved or rejected by an operator, claimed once by the applicant), and the configuration version the
 * service's caches key on.
 */
import { randomUUID } from "node:crypto";
import * as common from "../common.ts";
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

export function keyStore(s: SqlShared) {
  const { db } = s;
  const q = keyQueries(db.dialect);

  async function getKeyApplication(id: string): Promise<KeyApplication | undefined> {
    const row = await db.one<common.KeyApplicationRow>(q.selectApplication, [id]);
    return row && common.toKeyApplication(row);
  }

  /** The application after a decision that changed `changed` rows: NOT_FOUND, or INVALID_STATE when it was not pending. */
  async function decided(id: string, changed: number): Promise<KeyApplication> {
    const application = await getKeyApplication(id);
    if (!application) throw new StoreError("NOT_FOUND", `application ${id} not found`);
    if (changed === 0) throw new StoreError("INVALID_STATE", `application ${id} is ${application.status}, not pending`);
    return application;
  }

  return {
    // ---- projects and API keys

    async createProject(name: string): Promise<Project> {
      const project: Project = { id: randomUUID(), name: common.projectName(name), status: "active", createdAt: common.nowSeconds() };
      await db.run(s.q.insertProject, [project.id, project.name, project.createdAt]);
      return project;
    },

    async getProject(id: string): Promise<Project | undefined> {
      const row = await db.one<common.ProjectRow>(q.selectProject, [id]);
      return row && common.toProject(row);
    },

    async createApiKey(projectId: string, label?: string): Promise<{ apiKey: ApiKey; plaintext: string }> {
      const { apiKey, plaintext, keyHash } = common.newApiKey(projectId, label);
      try {
        await db.run(s.q.insertApiKey, [apiKey.id, projectId, keyHash, apiKey.prefix, apiKey.label, apiKey.status, apiKey.createdAt]);
      } catch (err) {
        if (isForeignKey(s, err)) throw new StoreError("NOT_FOUND", `project ${projectId} not found`);
        throw err;
      }
      return { apiKey, plaintext };
    },

    async findApiKey(plaintext: string): Promise<ApiKey | undefined> {
      const hash = common.apiKeyLookupHash(plaintext);
      const row = hash === undefined ? undefined : await db.one<common.ApiKeyRow>(q.selectApiKeyByHash, [hash]);
      return row && common.toApiKey(row);
    },

    async revokeApiKey(id: string): Promise<void> {
      const changed = await db.run(q.revokeApiKey, [common.nowSeconds(), id]);
      if (changed === 0 && (await db.one(q.selectApiKeyExists, [id])) === undefined) {
        throw new StoreError("NOT_FOUND", `API key ${id} not found`);
      }
    },

    async listProjects(): Promise<Project[]> {
      return (await db.all<common.ProjectRow>(q.selectProjects)).map(common.toProject);
    },

    async setProjectStatus(id: string, status: ProjectStatus): Promise<void> {
      const changed = await db.run(q.updateProjectStatus, [common.projectStatus(status), id]);
      if (changed === 0) throw new StoreError("NOT_FOUND", `project ${id} not found`);
    },

    async listApiKeys(projectId?: string): Promise<ApiKey[]> {
      const project = projectId ?? null;
      return (await db.all<common.ApiKeyRow>(q.selectApiKeys, [project, project])).map(common.toApiKey);
    },

    async getApiKey(id: string): Promise<ApiKey | undefined> {
      const row = await db.one<common.ApiKeyRow>(q.selectApiKey, [id]);
      return row && common.toApiKey(row);
    },

    async setApiKeyAccess(id: string, access: ApiKeyAccess): Promise<void> {
      const json = (list: string[] | null) => (list === null ? null : JSON.stringify(list));
      const changed = await db.run(q.updateApiKeyAccess, [json(access.allowedOrigins), json(access.allowedIps), id]);
      if (changed === 0) throw new StoreError("NOT_FOUND", `API key ${id} not found`);
    },

    async findApiKeyWithProject(plaintext: string): Promise<{ apiKey: ApiKey; projectStatus: ProjectStatus } | undefined> {
      const hash = common.apiKeyLookupHash(plaintext);
      if (hash === undefined) return undefined;
      const row = await db.one<common.ApiKeyRow & { project_status: ProjectStatus }>(q.selectApiKeyByHash, [hash]);
      return row && { apiKey: common.toApiKey(row), projectStatus: row.project_status };
    },

    async configVersion(): Promise<number> {
      const row = await db.one<{ version: number | string }>(q.selectConfigVersion);
      return Number(row?.version ?? 0);
    },

    // ---- API key applications

    async createKeyApplication(input: NewKeyApplication): Promise<KeyApplication> {
      const id = randomUUID();
      const now = common.nowSeconds();
      await db.run(q.insertApplication, [id, now, input.contact, input.projectName, JSON.stringify(input.networks), input.intendedUse]);
      return (await getKeyApplication(id))!;
    },

    getKeyApplication,

    async listKeyApplications(status?: KeyApplicationStatus): Promise<KeyApplication[]> {
      const st = status ?? null;
      return (await db.all<common.KeyApplicationRow>(q.selectApplications, [st, st])).map(common.toKeyApplication);
    },

    async countKeyApplications(status: KeyApplicationStatus): Promise<number> {
      return Number((await db.one<{ n: number | bigint }>(q.countApplications, [status]))?.n ?? 0);
    },

    async expireKeyApplications(ttlSeconds: number): Promise<number> {
      const now = common.nowSeconds();
      return db.run(EXPIRE_PENDING_APPLICATIONS, [now, expiryReason(ttlSeconds), now - ttlSeconds]);
    },

    async approveKeyApplication(id: string, decision: { decidedBy: string; claimTokenHash: string }): Promise<KeyApplication> {
      const changed = await db.transaction(async (tx) => {
        const row = await tx.one<common.KeyApplicationRow>(`${q.selectApplication}${db.dialect.forUpdate}`, [id]);
        if (!row || row.status !== "pending") return 0;
        const now = common.nowSeconds();
        const projectId = randomUUID();
        await tx.run(s.q.insertProject, [projectId, common.projectName(row.project_name), now]);
        return tx.run(q.approveApplication, [now, decision.decidedBy, projectId, decision.claimTokenHash, id]);
      });
      return decided(id, changed);
    },

    async rejectKeyApplication(id: string, decision: { decidedBy: string; reason: string }): Promise<KeyApplication> {
      const changed = await db.run(q.rejectApplication, [common.nowSeconds(), decision.decidedBy, decision.reason, id]);
      return decided(id, changed);
    },

    async claimKeyApplication(claimTokenHash: string) {
      const claimed = await db.transaction(async (tx) => {
        const row = await tx.one<{ id: string }>(q.claimApplication, [common.nowSeconds(), claimTokenHash]);
        if (!row) return undefined;
        const application = (await tx.one<common.KeyApplicationRow>(q.selectApplication, [row.id]))!;
        const { apiKey, plaintext, keyHash } = common.newApiKey(application.project_id!, `application ${row.id}`);
        await tx.run(s.q.insertApiKey, [apiKey.id, apiKey.projectId, keyHash, apiKey.prefix, apiKey.label, apiKey.status, apiKey.createdAt]);
        await tx.run(q.setApplicationKey, [apiKey.id, row.id]);
        return { id: row.id, apiKey, plaintext };
      });
      if (!claimed) return undefined;
      return { application: (await getKeyApplication(claimed.id))!, apiKey: claimed.apiKey, plaintext: claimed.plaintext };
    },
  } satisfies Partial<Store>;
}
