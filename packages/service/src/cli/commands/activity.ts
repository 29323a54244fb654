/** paymaster activity — requests and sponsorships over time (what the console's overview charts). */
import type { Command } from "commander";
import { activity } from "../../admin/activity.ts";
import { table } from "../output.ts";
import type { Run } from "../run.ts";

export function registerActivity(program: Command, run: Run): void {
  program
    .command("activity")
    .description("requests (ok and refused, by reason) and sponsorships (by status, with costs) per time bucket")
    .option("--since <time>", "unix seconds or ISO 8601 (default: 24 hours ago)")
    .option("--until <time>", "unix seconds or ISO 8601 (default: now)")
    .option("--network <name>", "one network only")
    .option("--bucket <seconds>", "bucket width: 60, 300, 900, 3600, 10800, 21600 or 86400 (default: picked from the window)")
    .action((o: { since?: string; until?: string; network?: string; bucket?: string }) =>
      run(async (ctx, out) =>
        out.print(await activity(ctx, o), (a) => {
          const rows = a.requests.perBucket.map((r, i) => {
            const s = a.sponsorships.perBucket[i]!;
            return { bucket: new Date(r.bucket * 1000).toISOString(), ok: r.ok, errors: r.errors, open: s.open, settled: s.settled, released: s.released, spentWei: s.spentWei };
          });
          const reasons = a.requests.byReason.map((r) => `${r.reason} ${r.count}`).join(", ") || "none";
          return [
            `${a.requests.ok} ok, ${a.requests.errors} refused (${reasons}); ${a.sponsorships.count} sponsorships, ${a.sponsorships.settled} settled, ${a.sponsorships.spentWei} wei spent ($${a.sponsorships.spentUsd})`,
            table(rows.filter((r) => r.ok + r.errors + r.open + r.settled + r.released > 0)),
          ].join("\n");
        }),
      ),
    );
}
