/**
 * The terms a sponsorship is billed by (docs/policies.md, "Project billing"), frozen on it when reserved. Types
 * only, so the store's types can name them without importing the billing arithmetic (billing/charge.ts).
 */
import type { UsdPrice } from "./usdPrice.ts";

/** Which part of an operation's cost a project pays (billing/charge.ts's comment says why). */
export type BillingBasis = "gas" | "fee" | "gasIfUnpaid";

/** The plan and price a sponsorship was reserved under (stored with it: its settlement bills by these). */
export interface BillingTerms {
  basis: BillingBasis;
  /** The native coin's USD price when reserved (one coin, 1e18 wei), as an exact fraction. */
  nativeUsd: UsdPrice;
  markupBps: number;
  feeUsdMicros: bigint;
}
