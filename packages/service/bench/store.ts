/**
 * The store's step of a sponsorship, alone: reserveSponsorship as the pipeline calls it once the op is signed
 * and simulated (Sponsor mode, a strategy with global, daily and per-sender caps, every op its own nonce of one
 * sender: the per-sender row is as hot as the global one), on SQLite and on PostgreSQL.
 *
 *   pnpm --filter @paymaster/service bench:store -- [--reservations 2000] [--concurrency 64] [--db-delay-ms 2.5]
 *     [--postgres URL] [--uncapped] [--billing] [--matrix] [--only sqlite|postgres]
 *
 * --uncapped: a strategy without caps (every reservation still adds to the strategy's running totals, the one
 * global usage row all of them update). --billing: the project is billed (docs/policies.md "Project billing"):
 * every reservation also holds against its balance, the one account row all of them update.
 * --db-delay-ms: PostgreSQL that far away (a forwarder adding it to every round trip, bench/dbDistance.ts; 0: the
 * forwarder only, on loopback). --matrix: capped, uncapped and billed, each at --db-delay-ms and on loopback, with
 * the ratios the scale work is judged by (docs/scale.md).
 *
 * Prints per run: reservations per second, the p50/p99 of one reservation run alone and at `concurrency` in flight,
 * the round trips to the database per reservation (PostgreSQL: counted on the wire by the forwarder), and this
 * process's CPU per reservation (the driver's and the store's; SQLite's own work runs in this process too).
 * PostgreSQL: a throwaway database on the server of --postgres (default postgres://postgres@127.0.0.1:5432/test),
 * dropped at the end; skipped when the server does not answer. Bounded: at most 20000 reservations per phase and
 * 600 s in all, then it stops by itself.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Address, Hex } from "@paymaster/shared";
import { usageChecks } from "../src/policy/totals.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { DEFAULT_POSTGRES_URL, throwawayDatabase } from "./postgres.ts";
import { startDbDistance, type DbDistance } from "./dbDistance.ts";
import type { NewSponsorship, Store } from "../src/store/types.ts";
import type { BillingTerms } from "../src/billing/charge.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: {
    reservations: { type: "string", default: "2000" },
    concurrency: { type: "string", default: "64" },
    postgres: { type: "string", default: DEFAULT_POSTGRES_URL },
    "db-delay-ms": { type: "string", default: "0" },
    uncapped: { type: "boolean", default: false },
    billing: { type: "boolean", default: false },
    matrix: { type: "boolean", default: false },
    only: { type: "string" },
  },
});
const reservations = Math.max(10, Math.min(20_000, Number(values.reservations)));
const concurrency = Math.max(1, Math.min(256, Number(values.concurrency)));
const delayMs = Number(values["db-delay-ms"]);
const deadline = Date.now() + 600_000;

const SENDER = "0x1111111111111111111111111111111111111111" as Address;
/** Every reservation a new op of the one sender, across variants and phases (the same op again would be a replacement). */
let nonce = 0n;
const ENTRY_POINT = "0x0000000071727De22E5E9d8BAf0edAc6f37da032" as Address;

interface Variant {
  capped: boolean;
  billing: boolean;
}
interface Figures {
  perSecond: number;
  p50: number;
  p99: number;
  roundTrips: number;
  cpuMs: number;
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/** A project, key and strategy for one variant, and the reservation the bench repeats. */
async function setUp(store: Store, variant: Variant) {
  const project = await store.createProject("bench");
  const { apiKey } = await store.createApiKey(project.id);
  const rules = variant.capped ? { caps: { global: { maxOps: 1_000_000 }, daily: { maxUsd: "1000000" }, perSender: { maxOps: 1_000_000 } } } : {};
  const strategy = await store.createStrategy({ projectId: project.id, code: `BENCH${randomBytes(3).toString("hex")}`, name: "bench", rules });
  const caps = usageChecks(strategy.rules, { now: Math.floor(Date.now() / 1000), sender: SENDER });
  if (variant.billing) await store.addBillingEntry({ projectId: project.id, kind: "credit", amountUsdMicros: 10n ** 18n, reference: `bench-${project.id}`, actor: "cli:bench" });
  const billing: BillingTerms = { basis: "gas", nativeUsd: { numerator: 3000n, denominator: 1n }, markupBps: 1500, feeUsdMicros: 5000n };
  // As the pipeline's reserve step gives them: the config version its lookups were read under, and the project's
  // events endpoints as looked up (none here).
  const configVersion = await store.configVersion();
  const op = (): NewSponsorship => ({
    configVersion,
    webhookEndpoints: [],
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
    ...(variant.billing ? { billing } : {}),
  });
  return { reserve: () => store.reserveSponsorship(op(), caps) };
}

/** `count` reservations with `parallel` in flight: their figures. */
async function phase(reserve: () => Promise<{ ok: boolean }>, count: number, parallel: number, wire: DbDistance | undefined): Promise<Figures> {
  const times: number[] = [];
  await wire?.roundTrips(true);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (times.length < count && Date.now() < deadline) {
        const t = performance.now();
        const result = await reserve();
        if (!result.ok) throw new Error(`refused: ${JSON.stringify(result, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`);
        times.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const trips = wire ? (await wire.roundTrips()) / times.length : NaN;
  return { perSecond: times.length / seconds, p50: percentile(times, 50), p99: percentile(times, 99), roundTrips: trips, cpuMs: (cpu.user + cpu.system) / 1000 / times.length };
}

const line = (label: string, f: Figures) =>
  `  ${label.padEnd(16)} ${f.perSecond.toFixed(0).padStart(6)} reservations/s  p50 ${f.p50.toFixed(2).padStart(6)} ms  p99 ${f.p99.toFixed(2).padStart(6)} ms  ${Number.isNaN(f.roundTrips) ? "  (in process)" : `${f.roundTrips.toFixed(2)} round trips`}  CPU ${f.cpuMs.toFixed(3)} ms/reservation`;

const describe = (v: Variant) => `${v.capped ? "3 caps" : "no caps"}, billing ${v.billing ? "on" : "off"}`;

/** One variant on one store: alone and busy. */
async function run(name: string, store: Store, variant: Variant, wire: DbDistance | undefined): Promise<{ alone: Figures; busy: Figures }> {
  const { reserve } = await setUp(store, variant);
  await phase(reserve, 1000, 16, undefined); // warm-up: prepared statements, JIT, the rows and their pages
  const alone = await phase(reserve, Math.min(reservations, 1000), 1, wire);
  const busy = await phase(reserve, reservations, concurrency, wire);
  console.log(`\n${name}: reserveSponsorship (signed, ${describe(variant)})`);
  console.log(line("alone", alone));
  console.log(line(`concurrency ${concurrency}`, busy));
  return { alone, busy };
}

async function postgres(variants: readonly Variant[], delays: readonly number[]): Promise<void> {
  const database = await throwawayDatabase(values.postgres);
  if (!database) return;
  const results = new Map<string, Figures>();
  try {
    for (const delay of delays) {
      const wire = await startDbDistance(database.url, delay);
      const store = await openPostgresStore(wire.url);
      try {
        const rtt = await wire.selectOneMs();
        for (const variant of variants) {
          const { busy } = await run(`PostgreSQL ${delay} ms away (select 1: ${rtt.toFixed(2)} ms)`, store, variant, wire);
          results.set(`${delay}:${describe(variant)}`, busy);
        }
      } finally {
        await store.close();
        wire.close();
      }
    }
  } finally {
    await database.drop();
  }
  if (delays.length === 2) ratios(results, delays[0]!, delays[1]!);
}

/** The matrix's ratios: each variant far against on loopback, and capped against uncapped at the same distance. */
function ratios(results: Map<string, Figures>, far: number, near: number): void {
  console.log(`\nRatios at concurrency ${concurrency} (throughput):`);
  for (const v of MATRIX) {
    const at = (d: number, variant: Variant) => results.get(`${d}:${describe(variant)}`)!.perSecond;
    console.log(`  ${describe(v).padEnd(26)} ${far} ms / loopback: ${(at(far, v) / at(near, v)).toFixed(2)}`);
  }
  const uncapped = results.get(`${far}:${describe({ capped: false, billing: false })}`)!.perSecond;
  for (const v of MATRIX.filter((m) => m.capped)) console.log(`  ${describe(v).padEnd(26)} / uncapped at ${far} ms: ${(results.get(`${far}:${describe(v)}`)!.perSecond / uncapped).toFixed(2)}`);
}

const MATRIX: readonly Variant[] = [
  { capped: true, billing: false },
  { capped: false, billing: false },
  { capped: true, billing: true },
];

const variants: readonly Variant[] = values.matrix ? MATRIX : [{ capped: !values.uncapped, billing: values.billing }];
if (values.only !== "postgres") {
  const dir = mkdtempSync(path.join(tmpdir(), "paymaster-bench-store-"));
  try {
    const sqlite = openSqliteStore(path.join(dir, "paymaster.sqlite"));
    try {
      for (const variant of variants) await run("SQLite", sqlite, variant, undefined);
    } finally {
      await sqlite.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (values.only !== "sqlite") await postgres(variants, values.matrix ? [delayMs, 0] : [delayMs]);
