/** The store's part for the settlement watcher's bookkeeping: named block cursors, and the leader lease among replicas. */
import * as validation from "../validation.ts";
import type { ProbeStatement } from "../db/types.ts";
import type { Leadership, Store } from "../types.ts";
import type { SqlShared } from "./shared.ts";

const CURSOR_QUERIES = {
  selectCursor: "SELECT value FROM cursors WHERE name = ?",
  upsertCursor: `INSERT INTO cursors (name, value, updated_at) VALUES (?, ?, ?)
    ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
} as const;

/** The store's health probe while writes fail (../health.ts): a cursor of its own, rewritten. */
export const WRITE_PROBE: ProbeStatement = Object.freeze({
  sql: CURSOR_QUERIES.upsertCursor,
  params: () => ["store-write-probe", 0n, validation.nowSeconds()],
});

export function cursorStore(s: SqlShared) {
  const { db } = s;
  const q = CURSOR_QUERIES;
  return {
    async getCursor(name: string): Promise<bigint | undefined> {
      const row = await db.one<{ value: string | bigint }>(q.selectCursor, [validation.cursorName(name)]);
      return row && BigInt(row.value);
    },

    async setCursor(name: string, value: bigint): Promise<void> {
      await db.run(q.upsertCursor, [validation.cursorName(name), validation.amount(value, "cursor value"), validation.nowSeconds()]);
    },

    tryLeadership(name: string): Promise<Leadership | undefined> {
      return db.tryLeadership(name);
    },
  } satisfies Partial<Store>;
}
