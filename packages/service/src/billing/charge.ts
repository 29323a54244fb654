/**
 * What a project is billed for one sponsorship (pure; docs/policies.md, "Project billing"). A sponsorship is
 * priced when it is reserved, by the project's plan of that moment and the native coin's USD price the
 * reservation valued it at (as USD caps are): those terms are stored with it, and its hold and its settlement
 * are both computed from them, so what settles can never cost more than what was held (unless the chain charged
 * more than the signed maximum, which the EntryPoint does not).
 *
 *   gas    = the gas cost in wei, in USD micro-units at the reservation's native price, rounded up
 *   markup = gas x markupBps / 10000, rounded up
 *   total  = gas + markup + fee
 *
 * The basis decides which part applies (billingBasis): Sponsor mode bills all of it; User Sponsor mode only the
 * fee (the sender's gas tank paid the gas); ERC-20 mode only the fee (the sender paid the gas in tokens, the
 * token's own markup is the operator's margin), unless the token charge went unpaid (charged in postOp, and the
 * op's own calls left too little): then the operator paid the gas and the project is billed as in Sponsor mode.
 */
import type { SponsorMode } from "../policy/types.ts";
import type { BillingBasis, BillingTerms } from "./terms.ts";

export type { BillingBasis, BillingTerms } from "./terms.ts";
import { weiToUsdMicros } from "../policy/rules.ts";

/** One operation's bill, in USD micro-units (and the gas it is for). */
export interface BillingCharge {
  gasCostWei: bigint;
  gasUsdMicros: bigint;
  markupUsdMicros: bigint;
  feeUsdMicros: bigint;
  totalUsdMicros: bigint;
}

/** Markup is a rate on the gas in basis points: 0 to 100000 (1000 %). */
export const MAX_MARKUP_BPS = 100_000;

export function billingBasis(mode: SponsorMode, postOpCharge: boolean): BillingBasis {
  if (mode === "sponsor") return "gas";
  if (mode === "erc20" && postOpCharge) return "gasIfUnpaid";
  return "fee";
}

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/** The bill for `wei` of gas: the gas part (with its markup) only when `gasBilled`, the fee always. */
export function chargeFor(terms: BillingTerms, wei: bigint, gasBilled: boolean): BillingCharge {
  const gasUsdMicros = gasBilled ? weiToUsdMicros(wei, terms.nativeUsd) : 0n;
  const markupUsdMicros = ceilDiv(gasUsdMicros * BigInt(terms.markupBps), 10_000n);
  return {
    gasCostWei: wei,
    gasUsdMicros,
    markupUsdMicros,
    feeUsdMicros: terms.feeUsdMicros,
    totalUsdMicros: gasUsdMicros + markupUsdMicros + terms.feeUsdMicros,
  };
}

/** What a reservation holds against the balance: the most its settlement can bill (every basis but "fee" may bill gas). */
export function holdFor(terms: BillingTerms, maxCostWei: bigint): bigint {
  return chargeFor(terms, maxCostWei, terms.basis !== "fee").totalUsdMicros;
}

/**
 * What a settlement bills: `actualGasCostWei` as the basis says; `tokenPaid` (ERC-20 mode) is whether the
 * paymaster's token charge was paid (TokenCharged with a non-zero amount).
 */
export function settlementCharge(terms: BillingTerms, actualGasCostWei: bigint, tokenPaid: boolean): BillingCharge {
  const gasBilled = terms.basis === "gas" || (terms.basis === "gasIfUnpaid" && !tokenPaid);
  return chargeFor(terms, actualGasCostWei, gasBilled);
}

// ---- stored form (the sponsorship's billing_terms column)

export function termsToJson(terms: BillingTerms): string {
  return JSON.stringify({
    basis: terms.basis,
    nativeUsd: [terms.nativeUsd.numerator.toString(), terms.nativeUsd.denominator.toString()],
    markupBps: terms.markupBps,
    feeUsdMicros: terms.feeUsdMicros.toString(),
  });
}

export function termsFromJson(json: string): BillingTerms {
  const t = JSON.parse(json) as { basis: BillingBasis; nativeUsd: [string, string]; markupBps: number; feeUsdMicros: string };
  return {
    basis: t.basis,
    nativeUsd: { numerator: BigInt(t.nativeUsd[0]), denominator: BigInt(t.nativeUsd[1]) },
    markupBps: t.markupBps,
    feeUsdMicros: BigInt(t.feeUsdMicros),
  };
}

/** Terms checked before they are stored (a caller's mistake, not the database's). */
export function validTerms(terms: BillingTerms): string | undefined {
  if (!["gas", "fee", "gasIfUnpaid"].includes(terms.basis)) return "billing.basis must be gas, fee or gasIfUnpaid";
  if (terms.nativeUsd.numerator < 0n || terms.nativeUsd.denominator <= 0n) return "billing.nativeUsd must be a non-negative fraction";
  if (!Number.isSafeInteger(terms.markupBps) || terms.markupBps < 0 || terms.markupBps > MAX_MARKUP_BPS) return `billing.markupBps must be an integer from 0 to ${MAX_MARKUP_BPS}`;
  if (terms.feeUsdMicros < 0n) return "billing.feeUsdMicros must not be negative";
  return undefined;
}
