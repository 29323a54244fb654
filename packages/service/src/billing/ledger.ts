/**
 * A project's billing as the store keeps it (docs/policies.md "Project billing"): the operator's plan, the
 * account's balance and holds, and the append-only ledger of entries. Types only: the store (store/sql/billing.ts)
 * writes them, billing/statement.ts reads them.
 */
import type { Hex } from "@paymaster/shared";
import type { SponsorMode } from "../policy/types.ts";

/** The operator's terms for one project; a project without one (or not enabled) is not billed. */
export interface BillingPlan {
  projectId: string;
  enabled: boolean;
  /** On the gas billed, in basis points (100 = 1 %). */
  markupBps: number;
  /** Per settled operation, USD micro-units. */
  feeUsdMicros: bigint;
  /** The balance.low webhook and the metric's alert fire below this (USD micros); null: no alert. */
  alertBelowUsdMicros: bigint | null;
  updatedAt: number;
}

export type BillingPlanChange = Partial<Pick<BillingPlan, "enabled" | "markupBps" | "feeUsdMicros" | "alertBelowUsdMicros">>;

/** A project's prepaid balance (may be negative: a debt) and what its open sponsorships hold of it (USD micros). */
export interface BillingAccount {
  projectId: string;
  balanceUsdMicros: bigint;
  heldUsdMicros: bigint;
  /** When it last changed; null when the project has no account yet. */
  updatedAt: number | null;
}

export type BillingEntryKind = "credit" | "debit" | "adjustment";

/** The operation an entry bills (debits) or un-bills (adjustments of a reorganisation), as the statement shows it. */
export interface BilledOperation {
  sponsorshipId: string;
  network: string;
  mode: SponsorMode;
  userOpHash: Hex | null;
  txHash: Hex | null;
  blockNumber: number | null;
  gasCostWei: bigint;
  gasUsdMicros: bigint;
  markupUsdMicros: bigint;
  feeUsdMicros: bigint;
}

/** One entry of a project's ledger (append-only). */
export interface BillingEntry {
  projectId: string;
  /** 1, 2, … per project: the order of the entries. */
  seq: number;
  at: number;
  kind: BillingEntryKind;
  /** The operator's reference (by hand), or the sponsorship id (operations). */
  reference: string;
  /** Signed: what the entry adds to the balance (debits are negative). */
  amountUsdMicros: bigint;
  /** The balance after it. */
  balanceUsdMicros: bigint;
  /** Who made an entry by hand; null for operations. */
  actor: string | null;
  op: BilledOperation | null;
  /** An adjustment undoing an earlier entry: that entry's seq. */
  reversesSeq: number | null;
}

/** An entry the operator makes by hand: a credit (positive) or a correction (signed adjustment). */
export interface NewBillingEntry {
  projectId: string;
  kind: "credit" | "adjustment";
  amountUsdMicros: bigint;
  reference: string;
  actor: string;
}

/** A project's entries with at in [since, until), and the balance before the first of them. */
export interface BillingLedgerSlice {
  openingUsdMicros: bigint;
  entries: BillingEntry[];
}

