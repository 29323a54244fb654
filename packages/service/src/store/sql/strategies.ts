/**
 * The store's part for strategies (a project's sponsorship rules, by code) and their usage: the running totals
 * each cap counts against (strategy_usage; written by the reservations and transitions, read here).
 */
import type { CapCheck, StrategyRules } from "../../policy/types.ts";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import type { Dialect } from "../db/types.ts";
import { StoreError } from "../errors.ts";
import type { NewStrategy, Store, Strategy, StrategyPatch, StrategyStatus, UsageTotals } from "../types.ts";
import { isForeignKey, isUnique, type SqlShared } from "./shared.ts";

function strategyQueries(d: Dialect, usageColumns: string) {
  const strategyColumns = `id, project_id, code, name, status, valid_from, valid_until, ${d.json("networks")}, ${d.json("rules")}, created_at`;
  return {
    insertStrategy: `INSERT INTO strategies (id, project_id, code, name, status, valid_from, valid_until, networks, rules,
        created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    selectStrategyByCode: `SELECT ${strategyColumns} FROM strategies WHERE code = ?`,
    updateStrategyStatus: "UPDATE strategies SET status = ? WHERE id = ?",
    updateStrategyRules: "UPDATE strategies SET rules = ? WHERE id = ?",
    selectStrategy: `SELECT ${strategyColumns} FROM strategies WHERE id = ?`,
    selectStrategies: `SELECT ${strategyColumns} FROM strategies WHERE (CAST(? AS TEXT) IS NULL OR project_id = ?) ORDER BY code`,
    updateStrategy: `UPDATE strategies SET name = ?, status = ?, valid_from = ?, valid_until = ?, networks = ?, rules = ?
      WHERE id = ?`,
    selectUsage: `SELECT ${usageColumns} FROM strategy_usage WHERE strategy_id = ? AND scope = ? AND key = ?`,
  };
}

export function strategyStore(s: SqlShared) {
  const { db } = s;
  const q = strategyQueries(db.dialect, s.q.usageColumns);

  async function getStrategy(id: string): Promise<Strategy | undefined> {
    const row = await db.one<dbRows.StrategyRow>(q.selectStrategy, [id]);
    return row && dbRows.toStrategy(row);
  }

  return {
    getStrategy,

    async listStrategies(projectId?: string): Promise<Strategy[]> {
      const project = projectId ?? null;
      return (await db.all<dbRows.StrategyRow>(q.selectStrategies, [project, project])).map(dbRows.toStrategy);
    },

    async updateStrategy(id: string, patch: StrategyPatch): Promise<Strategy> {
      const current = await getStrategy(id);
      if (!current) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
      const { strategy, networksJson, rulesJson } = validation.patchedStrategy(current, patch);
      const { name, status, validFrom, validUntil } = strategy;
      await db.run(q.updateStrategy, [name, status, validFrom, validUntil, networksJson, rulesJson, id]);
      return strategy;
    },

    async createStrategy(input: NewStrategy): Promise<Strategy> {
      const { strategy, networksJson, rulesJson } = validation.newStrategy(input);
      try {
        await db.run(q.insertStrategy, [
          strategy.id,
          strategy.projectId,
          strategy.code,
          strategy.name,
          strategy.status,
          strategy.validFrom,
          strategy.validUntil,
          networksJson,
          rulesJson,
          strategy.createdAt,
        ]);
      } catch (err) {
        if (isUnique(s, err)) throw new StoreError("DUPLICATE", `a strategy with code "${input.code}" already exists`);
        if (isForeignKey(s, err)) throw new StoreError("NOT_FOUND", `project ${input.projectId} not found`);
        throw err;
      }
      return strategy;
    },

    async getStrategyByCode(code: string): Promise<Strategy | undefined> {
      const row = await db.one<dbRows.StrategyRow>(q.selectStrategyByCode, [code]);
      return row && dbRows.toStrategy(row);
    },

    async setStrategyStatus(id: string, status: StrategyStatus): Promise<void> {
      const changed = await db.run(q.updateStrategyStatus, [validation.strategyStatus(status), id]);
      if (changed === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
    },

    async setStrategyRules(id: string, rules: StrategyRules): Promise<void> {
      const changed = await db.run(q.updateStrategyRules, [validation.validRules(rules).json, id]);
      if (changed === 0) throw new StoreError("NOT_FOUND", `strategy ${id} not found`);
    },

    async getUsage(strategyId: string, scope: CapCheck["scope"], key: string): Promise<UsageTotals> {
      const row = validation.scopeKey(scope, key);
      return dbRows.toUsage(await db.one<dbRows.UsageRow>(q.selectUsage, [strategyId, row.scope, row.key]));
    },
  } satisfies Partial<Store>;
}
