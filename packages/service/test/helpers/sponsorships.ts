// Read-only view of the embedded stack's sponsorships table, for tests that must show a refusal wrote
// nothing: the Store interface finds a sponsorship only by id or userOpHash, and a refused op has neither.
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { Address } from "@paymaster/shared";
import type { Embedded } from "./stack.ts";

export interface SponsorshipReader {
  /** How many sponsorships (any status) were ever recorded for `sender`. */
  count(sender: Address): number;
  /** Their statuses, oldest first. */
  statuses(sender: Address): string[];
  close(): void;
}

/** A second, read-only connection to the service's SQLite file (WAL: it sees every committed write). */
export function openSponsorshipReader(embedded: Embedded): SponsorshipReader {
  const db = new DatabaseSync(path.join(path.dirname(embedded.manifestPath), "paymaster.sqlite"), { readOnly: true });
  const count = db.prepare("SELECT count(*) AS n FROM sponsorships WHERE sender = ?");
  const statuses = db.prepare("SELECT status FROM sponsorships WHERE sender = ? ORDER BY created_at, rowid");
  return {
    count: (sender) => Number((count.get(sender) as { n: number }).n),
    statuses: (sender) => (statuses.all(sender) as { status: string }[]).map((row) => row.status),
    close: () => db.close(),
  };
}
