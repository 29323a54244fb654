// Read-only view of the embedded stack's sponsorships table, for tests that must show a refusal wrote
// nothing: the Store interface finds a sponsorship only by id or userOpHash, and a refused op has neither.
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { Address } from "@paymaster/shared";
import type { NewSponsorship } from "../../src/store/types.ts";
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

/**
 * A signed sponsorship to reserve in store tests: a v0.7 Sponsor-mode op of `ids`' project and key, 100 wei
 * at most, valid until 2033, with `over` on top.
 */
export function sponsorshipInput(ids: { projectId: string; apiKeyId: string }, over: Partial<NewSponsorship> = {}): NewSponsorship {
  return {
    network: "local",
    entryPoint: "0x0000000071727De22E5E9d8BAf0edAc6f37da032",
    version: "v0.7",
    sender: "0x1111111111111111111111111111111111111111",
    nonce: 0n,
    mode: "sponsor",
    projectId: ids.projectId,
    apiKeyId: ids.apiKeyId,
    strategyId: null,
    token: null,
    exchangeRate: null,
    maxTokenCost: null,
    maxCostWei: 100n,
    maxCostUsdMicros: 0n,
    validUntil: 2_000_000_000,
    validAfter: 1_700_000_000,
    userOpHash: `0x${"ab".repeat(32)}`,
    paymasterAndData: "0x1234",
    ...over,
  };
}
