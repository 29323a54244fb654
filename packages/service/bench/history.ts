/**
 * Sponsorship history at scale on PostgreSQL: bulk-inserts `--rows` sponsorships (generate_series; the soak's mix:
 * 87 % released, the rest settled, the newest 500 still open; 30 days of creation times; 5 projects, 20
 * strategies, 50,000 senders) into a throwaway database, then times what runs while history is that large:
 *
 *   - the hot path: reserveSponsorship with 3 caps (what a sponsored op writes), the settlement lookup by
 *     userOpHash, the expiry sweep's scan;
 *   - the console's reads: activity over the last 24 h and 7 days, a strategy's 14-day history, the newest
 *     sponsorships (list, and list of one project), the records-by-status counts (every metrics scrape);
 *   - the retention pass: its dry-run count and one batch of 500.
 *
 * Then it drops migration 11's four indexes and times the reservation and the console's reads again (what the
 * indexes cost and buy). It prints the table's size on disk per row. The database is dropped at the end.
 *
 *   pnpm --filter @paymaster/service bench:history -- --rows 1000000 [--postgres URL] [--runs 20]
 *
 * Not part of the test suite (minutes of inserting and gigabytes of disk at 10 million).
 */
import { createHash, randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import pg from "pg";
import type { Address, Hex } from "@paymaster/shared";
import { capChecks } from "../src/policy/rules.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import type { NewSponsorship, Store } from "../src/store/types.ts";
import { DEFAULT_POSTGRES_URL, throwawayDatabase } from "./postgres.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: {
    rows: { type: "string", default: "1000000" },
    runs: { type: "string", default: "20" },
    postgres: { type: "string", default: DEFAULT_POSTGRES_URL },
  },
});
const rows = Math.max(1000, Math.min(20_000_000, Number(values.rows)));
const runs = Math.max(3, Math.min(1000, Number(values.runs)));
const ENTRY_POINT = "0x0000000071727De22E5E9d8BAf0edAc6f37da032" as Address;
const SENDER = "0x1111111111111111111111111111111111111111" as Address;
const DAY = 86_400;

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function time(label: string, n: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  await fn(-1); // warm-up
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await fn(i);
    times.push(performance.now() - started);
  }
  console.log(`  ${label.padEnd(52)} p50 ${percentile(times, 50).toFixed(2).padStart(9)} ms   max ${Math.max(...times).toFixed(2).padStart(9)} ms`);
}

async function fill(client: pg.Client, projects: string[], keys: string[], strategies: string[], now: number): Promise<void> {
  const chunk = 500_000;
  const span = 30 * DAY;
  for (let from = 1; from <= rows; from += chunk) {
    const to = Math.min(rows, from + chunk - 1);
    const started = performance.now();
    await client.query(
      `INSERT INTO sponsorships (id, network, entry_point, version, sender, nonce, mode, project_id, api_key_id, strategy_id,
         max_cost_wei, max_cost_usd_micros, valid_until, valid_after, user_op_hash, paymaster_and_data, status, release_reason,
         created_at, updated_at, actual_gas_cost_wei, actual_cost_usd_micros, settled_success, settled_tx_hash,
         settled_block_number, settled_block_hash, settled_log_index, settled_at)
       SELECT 'bench-' || i, 'local', $1, 'v0.7', '0x' || lpad(to_hex(i % 50000), 40, '0'), i, 'sponsor',
         ($2::text[])[1 + (i % 20) / 4], ($3::text[])[1 + (i % 20) / 4], ($4::text[])[1 + i % 20],
         1000000000000000 + i, 3000000 + i % 1000, t + 300, t - 10, '0x' || md5(i::text) || md5((i + 1)::text),
         '0x' || repeat(md5(i::text), 7) || substr(md5((i + 2)::text), 1, 10),
         s, CASE WHEN s = 'released' THEN (CASE WHEN i % 3 = 0 THEN 'replaced' ELSE 'expired' END) END,
         t, t + 60,
         CASE WHEN s = 'settled' THEN 400000000000000 + i END, CASE WHEN s = 'settled' THEN 1200000 + i % 1000 END,
         CASE WHEN s = 'settled' THEN true END, CASE WHEN s = 'settled' THEN '0x' || md5(i::text) || md5((i + 3)::text) END,
         CASE WHEN s = 'settled' THEN i END, CASE WHEN s = 'settled' THEN '0x' || md5((i + 4)::text) || md5((i + 5)::text) END,
         CASE WHEN s = 'settled' THEN 0 END, CASE WHEN s = 'settled' THEN t + 30 END
       FROM (SELECT i, ($5::bigint - $6::bigint + (i::bigint * $6::bigint) / $7::bigint) AS t,
               CASE WHEN i > $7::bigint - 500 THEN 'signed' WHEN i % 100 < 87 THEN 'released' ELSE 'settled' END AS s
             FROM generate_series($8::bigint, $9::bigint) AS i) g`,
      [ENTRY_POINT, projects, keys, strategies, now, span, rows, from, to],
    );
    console.log(`  inserted ${to.toLocaleString("en")} rows (${((performance.now() - started) / 1000).toFixed(1)} s for this chunk)`);
  }
  await client.query("VACUUM ANALYZE sponsorships");
}

async function measure(store: Store, ctx: { strategy: string; project: string; now: number }, indexed: string, runs: number): Promise<void> {
  console.log(`\nconsole reads (${indexed})`);
  await time("activity, last 24 h, 900 s buckets", runs, () => store.sponsorshipActivity({ since: ctx.now - DAY, until: ctx.now, bucketSeconds: 900 }));
  await time("activity, last 7 days, 3600 s buckets", Math.min(runs, 5), () =>
    store.sponsorshipActivity({ since: ctx.now - 7 * DAY, until: ctx.now, bucketSeconds: 3600 }),
  );
  await time("strategy history, 14 days (one strategy)", Math.min(runs, 5), () =>
    store.sponsorshipActivity({ since: ctx.now - 14 * DAY, until: ctx.now, bucketSeconds: DAY, strategyId: ctx.strategy }),
  );
  await time("list, newest 100", runs, () => store.listSponsorships({ limit: 100 }));
  await time("list, newest 100 of one project", runs, () => store.listSponsorships({ projectId: ctx.project, limit: 100 }));
  await time("records by status (each metrics scrape)", Math.min(runs, 5), () => store.sponsorshipCounts());
}

const database = await throwawayDatabase(values.postgres);
if (!database) process.exit(1);
const client = new pg.Client({ connectionString: database.url });
try {
  const store = await openPostgresStore(database.url);
  await client.connect();
  try {
    const projects: string[] = [];
    const keys: string[] = [];
    const strategies: string[] = [];
    const rules = { caps: { global: { maxOps: 100_000_000 }, daily: { maxUsd: "100000000" }, perSender: { maxOps: 100_000_000 } } };
    for (let p = 0; p < 5; p++) {
      const project = await store.createProject(`bench ${p}`);
      const { apiKey } = await store.createApiKey(project.id);
      projects.push(project.id);
      keys.push(apiKey.id);
      for (let s = 0; s < 4; s++) {
        strategies.push((await store.createStrategy({ projectId: project.id, code: `B${p}S${s}${randomBytes(2).toString("hex")}`, name: "bench", rules })).id);
      }
    }
    // Strategy k belongs to project k / 4, as the generated rows have it.
    const now = Math.floor(Date.now() / 1000);
    console.log(`PostgreSQL: ${rows.toLocaleString("en")} sponsorships over 30 days`);
    const fillStarted = performance.now();
    await fill(client, projects, keys, strategies, now);
    console.log(`  filled and analysed in ${((performance.now() - fillStarted) / 1000).toFixed(0)} s`);

    const size = (await client.query<{ table: string; indexes: string; total: string }>(
      `SELECT pg_table_size('sponsorships') AS table, pg_indexes_size('sponsorships') AS indexes, pg_total_relation_size('sponsorships') AS total`,
    )).rows[0]!;
    const mib = (b: string) => (Number(b) / 1024 / 1024).toFixed(0);
    console.log(
      `  on disk: table ${mib(size.table)} MiB + indexes ${mib(size.indexes)} MiB = ${mib(size.total)} MiB; ${(Number(size.total) / rows).toFixed(0)} bytes per sponsorship`,
    );

    const caps = capChecks({ caps: rules.caps } as never, { now, sender: SENDER });
    let nonce = 10n ** 12n;
    const op = (): NewSponsorship => ({
      network: "local",
      entryPoint: ENTRY_POINT,
      version: "v0.7",
      sender: SENDER,
      nonce: nonce++,
      mode: "sponsor",
      projectId: projects[0]!,
      apiKeyId: keys[0]!,
      strategyId: strategies[0]!,
      token: null,
      exchangeRate: null,
      maxTokenCost: null,
      maxCostWei: 10n ** 15n,
      maxCostUsdMicros: 3_000_000n,
      validUntil: now + 300,
      validAfter: now - 10,
      userOpHash: `0x${randomBytes(32).toString("hex")}` as Hex,
      paymasterAndData: `0x${randomBytes(117).toString("hex")}` as Hex,
    });
    console.log("\nhot path");
    await time("reserveSponsorship (signed, 3 caps)", runs * 10, async () => {
      const r = await store.reserveSponsorship(op(), caps);
      if (!r.ok) throw new Error(`refused: ${r.reason}`);
    });
    const md5 = (n: number) => createHash("md5").update(String(n)).digest("hex");
    await time("settlement lookup by userOpHash", runs * 10, async (i) => {
      const n = 1 + ((Math.abs(i) * 7919) % rows);
      if (!(await store.findSponsorshipByUserOpHash(`0x${md5(n)}${md5(n + 1)}` as Hex))) throw new Error(`no sponsorship ${n}`);
    });
    await time("expiry sweep (nothing due)", runs, () => store.releaseExpired(now - 3600, 0));

    await measure(store, { strategy: strategies[0]!, project: projects[0]!, now }, "with migration 11's indexes", runs);

    console.log("\nretention");
    await time("dry-run count, released > 7 days", 3, () => store.countPrunableSponsorships({ releasedBefore: now - 7 * DAY }));
    await time("one batch of 500 (rolled up, deleted)", runs, () => store.pruneSponsorships({ releasedBefore: now - 7 * DAY }, 500));

    await client.query(
      "DROP INDEX sponsorships_created; DROP INDEX sponsorships_strategy_created; DROP INDEX sponsorships_released; DROP INDEX sponsorships_settled_at",
    );
    await client.query("ANALYZE sponsorships");
    console.log("\nhot path (without migration 11's indexes)");
    await time("reserveSponsorship (signed, 3 caps)", runs * 10, async () => {
      const r = await store.reserveSponsorship(op(), caps);
      if (!r.ok) throw new Error(`refused: ${r.reason}`);
    });
    await measure(store, { strategy: strategies[0]!, project: projects[0]!, now }, "without migration 11's indexes", 3);
  } finally {
    await store.close();
  }
} finally {
  await client.end().catch(() => undefined);
  await database.drop();
}
