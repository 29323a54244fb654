/**
 * Where every strategy stands against its global and daily caps (today's UTC day), one line per limit: what
 * the metrics export and what the cap alerts judge. Per-sender caps are left out: a label per sender would be
 * unbounded, and a single sender reaching its cap is policy working, not an operator's problem.
 */
import { capChecks } from "../policy/rules.ts";
import type { Store } from "../store/types.ts";

export interface CapLine {
  /** The strategy's code. */
  strategy: string;
  cap: "global" | "daily";
  unit: "wei" | "usd" | "ops";
  limit: number;
  reserved: number;
  spent: number;
}

const SENDER_UNUSED = "0x0000000000000000000000000000000000000000";

export async function capLines(store: Store, now: number): Promise<CapLine[]> {
  const lines: CapLine[] = [];
  for (const strategy of await store.listStrategies()) {
    if (strategy.status !== "enabled") continue;
    for (const check of capChecks(strategy.rules, { now, sender: SENDER_UNUSED })) {
      if (check.scope === "perSender") continue;
      const usage = await store.getUsage(strategy.id, check.scope, check.key);
      const base = { strategy: strategy.code, cap: check.scope };
      if (check.maxWei !== undefined) lines.push({ ...base, unit: "wei", limit: Number(check.maxWei), reserved: Number(usage.reservedWei), spent: Number(usage.spentWei) });
      if (check.maxUsdMicros !== undefined) {
        lines.push({ ...base, unit: "usd", limit: Number(check.maxUsdMicros) / 1e6, reserved: Number(usage.reservedUsdMicros) / 1e6, spent: Number(usage.spentUsdMicros) / 1e6 });
      }
      // Operations: reserved, signed and settled ones all count against maxOps (the store's ops total).
      if (check.maxOps !== undefined) lines.push({ ...base, unit: "ops", limit: check.maxOps, reserved: 0, spent: usage.ops });
    }
  }
  return lines;
}

/** How full a line is: (reserved + spent) / limit. */
export function capFill(line: CapLine): number {
  return line.limit <= 0 ? 1 : (line.reserved + line.spent) / line.limit;
}
