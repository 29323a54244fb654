/** paymaster sponsorship list|show|prune */
import type { Command } from "commander";
import { pruneSponsorships, type PruneQuery } from "../../admin/retention.ts";
import { listSponsorships, showSponsorship, type SponsorshipQuery } from "../../admin/sponsorships.ts";
import { record, table } from "../output.ts";
import type { Run } from "../run.ts";

export function registerSponsorship(program: Command, run: Run): void {
  const sponsorship = program.command("sponsorship").description("Sponsorships the service signed or reserved");
  sponsorship
    .command("list")
    .description("list sponsorships, newest first")
    .option("--project <id>", "of this project")
    .option("--strategy <code>", "of this strategy")
    .option("--network <name>", "on this network")
    .option("--sender <address>", "of this sender")
    .option("--status <status>", "reserved, signed, settled or released")
    .option("--user-op-hash <hash>", "with this userOpHash")
    .option("--since <time>", "created at or after (unix seconds or ISO 8601)")
    .option("--until <time>", "created before (unix seconds or ISO 8601)")
    .option("--limit <n>", "at most this many (default 100, at most 1000)")
    .action((o: SponsorshipQuery) =>
      run(async (ctx, out) =>
        out.print(await listSponsorships(ctx, o), (rows) =>
          table(
            rows.map((r) => ({ ...r, actualGasCostWei: r.settlement?.actualGasCostWei ?? null })),
            ["id", "network", "sender", "nonce", "mode", "status", "maxCostWei", "actualGasCostWei", "createdAt"],
          ),
        ),
      ),
    );
  sponsorship
    .command("show")
    .description("one sponsorship")
    .argument("<idOrUserOpHash>", "its id or userOpHash")
    .action((id: string) => run(async (ctx, out) => out.print(await showSponsorship(ctx, id), record)));
  sponsorship
    .command("prune")
    .description("delete old sponsorships now, as the retention pass does (released ones; settled ones only with a settled retention)")
    .option("--dry-run", "only count what would be deleted")
    .option("--released-days <n>", "released sponsorships older than this many days (default: the configuration's retention.releasedDays, else 7; 0 keeps them)")
    .option("--settled-days <n>", "settled sponsorships settled more than this many days ago (default: retention.settledDays, else 0: kept)")
    .action((o: PruneQuery) => run(async (ctx, out) => out.print(await pruneSponsorships(ctx, o), record)));
}
