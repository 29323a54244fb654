/** Sponsorships: list with filters, show one by id or userOpHash. Read-only. */
import { guarded, invalid, knownNetwork, notFound, read, validAddress, type AdminContext } from "./context.ts";
import { sponsorshipView } from "./views.ts";
import type { Hex } from "@paymaster/shared";
import type { SponsorshipFilter, SponsorshipStatus } from "../store/types.ts";

const STATUSES = ["reserved", "signed", "settled", "released"];
const HASH_RE = /^0x[0-9a-fA-F]{64}$/;

export interface SponsorshipQuery {
  project?: string;
  strategy?: string;
  network?: string;
  sender?: string;
  status?: string;
  userOpHash?: string;
  /** Unix seconds or an ISO 8601 date/time. */
  since?: string;
  until?: string;
  limit?: string | number;
}

/** Unix seconds or an ISO 8601 date/time as unix seconds (undefined stays undefined). */
export function parseTime(value: string | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) invalid(`${field}: not unix seconds or an ISO 8601 time: ${JSON.stringify(value)}`);
  return Math.floor(ms / 1000);
}

export const listSponsorships = read("viewer", async function listSponsorships(ctx: AdminContext, q: SponsorshipQuery) {
  const filter: SponsorshipFilter = {};
  if (q.project !== undefined) filter.projectId = q.project;
  if (q.strategy !== undefined) {
    const strategy = await ctx.store.getStrategyByCode(q.strategy);
    if (!strategy) notFound(`strategy ${JSON.stringify(q.strategy)} not found`);
    filter.strategyId = strategy.id;
  }
  if (q.network !== undefined) filter.network = knownNetwork(ctx, q.network);
  if (q.sender !== undefined) filter.sender = validAddress(q.sender, "sender");
  if (q.status !== undefined) {
    if (!STATUSES.includes(q.status)) invalid(`status: must be one of ${STATUSES.join(", ")}`);
    filter.status = q.status as SponsorshipStatus;
  }
  if (q.userOpHash !== undefined) {
    if (!HASH_RE.test(q.userOpHash)) invalid("userOpHash: must be 32 bytes of 0x-hex");
    filter.userOpHash = q.userOpHash as Hex;
  }
  const since = parseTime(q.since, "since");
  const until = parseTime(q.until, "until");
  if (since !== undefined) filter.since = since;
  if (until !== undefined) filter.until = until;
  if (q.limit !== undefined) {
    const limit = Number(q.limit);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000) invalid("limit: must be an integer from 1 to 1000");
    filter.limit = limit;
  }
  return (await guarded(() => ctx.store.listSponsorships(filter))).map(sponsorshipView);
});

export const showSponsorship = read("viewer", async function showSponsorship(ctx: AdminContext, idOrHash: string) {
  const record = HASH_RE.test(idOrHash)
    ? await ctx.store.findSponsorshipByUserOpHash(idOrHash as Hex)
    : await ctx.store.getSponsorship(idOrHash);
  if (!record) notFound(`sponsorship ${JSON.stringify(idOrHash)} not found (give its id or userOpHash)`);
  const t = await ctx.store.sponsorshipTimeline(record.id);
  // Reserve and sign are one store transaction: both happen at createdAt.
  const timeline = t && { reservedAt: t.createdAt, signedAt: t.createdAt, releasedAt: t.releasedAt, releaseReason: t.releaseReason, settledAt: t.settledAt };
  return { ...sponsorshipView(record), timeline: timeline ?? null };
});
