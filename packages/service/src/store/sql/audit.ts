/** The store's part for the audit log: every operator change, who made it, and the record before and after (with the change, atomically). */
import { randomUUID } from "node:crypto";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import type { Dialect } from "../db/types.ts";
import type { AuditEntry, Store } from "../types.ts";
import type { SqlShared } from "./shared.ts";

/** Newest first: by time (whole seconds), then by insertion (SQLite's rowid, PostgreSQL's seq: migration 16). */
function auditQueries(d: Dialect) {
  return {
    insertAudit: `INSERT INTO audit_log (id, at, actor, role, action, target, before, after) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    selectAudit: `SELECT id, at, actor, role, action, target, ${d.json("before")}, ${d.json("after")} FROM audit_log
      WHERE (CAST(? AS TEXT) IS NULL OR action = ?) AND (CAST(? AS TEXT) IS NULL OR target = ?)
      ORDER BY at DESC, ${d.insertionOrder} DESC LIMIT ?`,
  };
}

export function auditStore(s: SqlShared) {
  const { db } = s;
  const q = auditQueries(db.dialect);
  return {
    /** An operation of the store's own methods as one transaction (the admin mutations: a change with its audit row). */
    atomically<T>(operation: () => Promise<T>): Promise<T> {
      return db.atomic(operation);
    },

    async appendAudit(entry: Omit<AuditEntry, "id" | "at" | "role"> & { role?: string | null }): Promise<AuditEntry> {
      const row: AuditEntry = { id: randomUUID(), at: validation.nowSeconds(), ...entry, role: entry.role ?? null, target: entry.target ?? null };
      const json = (v: unknown) => (v === undefined || v === null ? null : dbRows.toJsonText(v));
      await db.run(q.insertAudit, [row.id, row.at, row.actor, row.role, row.action, row.target, json(row.before), json(row.after)]);
      return row;
    },

    async listAudit(filter: { action?: string; target?: string; limit?: number } = {}): Promise<AuditEntry[]> {
      const action = filter.action ?? null;
      const target = filter.target ?? null;
      const limit = validation.listLimit(filter.limit);
      const rows = await db.all<{ id: string; at: number; actor: string; role: string | null; action: string; target: string | null; before: string | null; after: string | null }>(
        q.selectAudit,
        [action, action, target, target, limit],
      );
      return rows.map((r) => ({ ...r, before: r.before === null ? null : JSON.parse(r.before), after: r.after === null ? null : JSON.parse(r.after) }));
    },
  } satisfies Partial<Store>;
}
