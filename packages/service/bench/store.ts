/**
 * The store's step of a sponsorship, alone: reserveSponsorship as the pipeline calls it once the op is signed
 * and simulated (Sponsor mode, a strategy with global, daily and per-sender caps, every op its own nonce), on
 * SQLite and on PostgreSQL.
 *
 *   pnpm --filter @paymaster/service bench:store -- [--reservations 2000] [--concurrency 8] [--postgres URL] [--uncapped] [--billing]
 *
 * --uncapped: a strategy without caps (every reservation still adds to the strategy's running totals, the one
 * global usage row all of them update). --billing: the project is billed (docs/policies.md "Project billing"):
 * every reservation also holds against its balance, the one account row all of them update.
 *
 * Prints per backend: the p50/p99 of one reservation run alone, reservations per second with `concurrency` in
 * flight, and this process's CPU per reservation (the driver's and the store's; SQLite's own work runs in this
 * process too). PostgreSQL: a throwaway database on the server of --postgres (default
 * postgres://postgres@127.0.0.1:5432/test), dropped at the end; skipped when the server does not answer.
 * Bounded: at most 20000 reservations per phase and 120 s in all, then it stops by itself.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Address, Hex } from "@paymaster/shared";
import { capChecks } from "../src/policy/rules.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { DEFAULT_POSTGRES_URL, throwawayDatabase } from "./postgres.ts";
import type { NewSponsorship, Store } from "../src/store/types.ts";
import type { BillingTerms } from "../src/billing/charge.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: {
    reservations: { type: "string", default: "2000" },
    concurrency: { type: "string", default: "8" },
    postgres: { type: "string", default: DEFAULT_POSTGRES_URL },
    uncapped: { type: "boolean", default: false },
    billing: { type: "boolean", default: false },
  },
});
const reservations = Math.max(10, Math.min(20_000, Number(values.reservations)));
const concurrency = Math.max(1, Math.min(64, Number(values.concurrency)));
const deadline = Date.now() + 120_000;

const SENDER = "0x1111111111111111111111111111111111111111" as Address;
const ENTRY_POINT = "0x0000000071727De22E5E9d8BAf0edAc6f37da032" as Address;

async function bench(name: string, store: Store): Promise<void> {
  const project = await store.createProject("bench");
  const { apiKey } = await store.createApiKey(project.id);
  const rules = values.uncapped ? {} : { caps: { global: { maxOps: 1_000_000 }, daily: { maxUsd: "1000000" }, perSender: { maxOps: 1_000_000 } } };
  const strategy = await store.createStrategy({ projectId: project.id, code: `BENCH${randomBytes(3).toString("hex")}`, name: "bench", rules });
  const caps = capChecks(strategy.rules, { now: Math.floor(Date.now() / 1000), sender: SENDER });
  if (values.billing) await store.addBillingEntry({ projectId: project.id, kind: "credit", amountUsdMicros: 10n ** 18n, reference: `bench-${project.id}`, actor: "cli:bench" });
  const billing: BillingTerms = { basis: "gas", nativeUsd: { numerator: 3000n, denominator: 1n }, markupBps: 1500, feeUsdMicros: 5000n };
  let nonce = 0n;
  const op = (): NewSponsorship => ({
    network: "local",
    entryPoint: ENTRY_POINT,
    version: "v0.7",
    sender: SENDER,
    nonce: nonce++,
    mode: "sponsor",
    projectId: project.id,
    apiKeyId: apiKey.id,
    strategyId: strategy.id,
    token: null,
    exchangeRate: null,
    maxTokenCost: null,
    maxCostWei: 10n ** 15n,
    maxCostUsdMicros: 3_000_000n,
    validUntil: 2_000_000_000,
    validAfter: 1_700_000_000,
    userOpHash: `0x${randomBytes(32).toString("hex")}` as Hex,
    paymasterAndData: `0x${randomBytes(117).toString("hex")}` as Hex,
    ...(values.billing ? { billing } : {}),
  });
  const reserve = async (): Promise<number> => {
    const started = performance.now();
    const result = await store.reserveSponsorship(op(), caps);
    if (!result.ok) throw new Error(`refused: ${result.reason}`);
    return performance.now() - started;
  };
  const run = async (count: number, parallel: number) => {
    const times: number[] = [];
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (times.length < count && Date.now() < deadline) times.push(await reserve());
      }),
    );
    const cpu = process.cpuUsage(cpuBefore);
    return { times, seconds: (performance.now() - started) / 1000, cpuMs: (cpu.user + cpu.system) / 1000 / times.length };
  };
  const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

  await run(100, 4); // warm-up: prepared statements, JIT, the usage rows
  const alone = await run(reservations, 1);
  const busy = await run(reservations, concurrency);
  console.log(`\n${name}: reserveSponsorship (signed, ${values.uncapped ? "no caps" : "3 caps"}, billing ${values.billing ? "on" : "off"})`);
  console.log(`  alone          p50 ${percentile(alone.times, 50).toFixed(3)} ms  p99 ${percentile(alone.times, 99).toFixed(3)} ms  CPU ${alone.cpuMs.toFixed(3)} ms/reservation`);
  console.log(`  concurrency ${String(concurrency).padEnd(2)} ${(busy.times.length / busy.seconds).toFixed(0)} reservations/s  CPU ${busy.cpuMs.toFixed(3)} ms/reservation`);
}

const dir = mkdtempSync(path.join(tmpdir(), "paymaster-bench-store-"));
try {
  const sqlite = await openSqliteStore(path.join(dir, "paymaster.sqlite"));
  try {
    await bench("SQLite", sqlite);
  } finally {
    await sqlite.close();
  }

  const database = await throwawayDatabase(values.postgres);
  if (database) {
    try {
      const postgres = await openPostgresStore(database.url);
      try {
        await bench("PostgreSQL", postgres);
      } finally {
        await postgres.close();
      }
    } finally {
      await database.drop();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
