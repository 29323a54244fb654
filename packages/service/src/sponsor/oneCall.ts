/**
 * Whether the estimate's one simulation already decided that the signed op lands, so that no simulation of
 * its own is needed: docs/pipeline.md, "One round trip", states the argument and each condition it rests on.
 * In short: the probe ran the op with the paymaster's final gas limits and stub paymaster data of the final
 * length, whose signature recovers (so our paymasters take the same path as with our signature and only set
 * the signature-failure bit); the signed op differs from it in that signature, in the limits the estimate
 * derived from what the probe used (with margins), in its fees and, in ERC-20 mode, in the amounts charged.
 * Each condition below covers one way these differences could change the outcome; when one fails, the signed
 * op is simulated before its signature leaves (the fallback, counted by reason in
 * paymaster_one_call_fallbacks_total). Pure.
 */
import { ChargeMode, ENTRY_POINT_ADDRESSES, UINT256_MAX, type Address, type EntryPointVersion } from "@paymaster/shared";
import { MAX_VALIDITY_WINDOW_SECONDS } from "./validityWindow.ts";
import type { ProbeFindings } from "./probe.ts";
import type { Holdings } from "../chain/probe.ts";

/** Why the signed op is simulated after all: a bounded set (the metric's label). */
export type FallbackReason =
  | "probe_unavailable"
  | "entry_point"
  | "signer"
  | "window"
  | "account"
  | "execution"
  | "charge_mode"
  | "token_state";

export type OneCallVerdict = { oneCall: true } | { oneCall: false; reason: FallbackReason };

export interface OneCallInput {
  version: EntryPointVersion;
  entryPoint: Address;
  window: { validUntil: number; validAfter: number };
  /** The probe's findings; undefined when the estimate could not run through it. */
  findings: ProbeFindings | undefined;
  /** ERC-20 mode: the signed charge mode and cap (the op's maximum token cost). */
  token: { chargeMode: ChargeMode; maxTokenCost: bigint } | null;
}


export function oneCallVerdict({ version, entryPoint, window, findings, token }: OneCallInput): OneCallVerdict {
  const fallback = (reason: FallbackReason): OneCallVerdict => ({ oneCall: false, reason });
  if (findings === undefined) return fallback("probe_unavailable");
  // The argument reads the canonical EntryPoint's code (v0.6 simulates on the EntryPoint itself).
  if (entryPoint.toLowerCase() !== ENTRY_POINT_ADDRESSES[version].toLowerCase()) return fallback("entry_point");
  if (!findings.signerAccepted) return fallback("signer");
  if (window.validUntil === 0 || window.validUntil > window.validAfter + MAX_VALIDITY_WINDOW_SECONDS) return fallback("window");
  if (!findings.accountAgnostic) return fallback("account");
  if (!findings.executionSucceeded) return fallback("execution");
  if (token === null) return { oneCall: true };
  const preCharge = token.chargeMode === ChargeMode.PreCharge;
  if (preCharge !== findings.preCharge) return fallback("charge_mode");
  const holdings = findings.holdings;
  const decided = holdings !== undefined && (preCharge ? untouched(holdings.before, holdings.after) : coversCharge(holdings.before, holdings.after, token.maxTokenCost));
  return decided ? { oneCall: true } : fallback("token_state");
}

/**
 * Pre-charge: the op moved none of the sender's tokens but the probe's charge (2 units pre-charged, 1 refunded:
 * its balance one unit lower, its allowance two lower or unchanged, the paymaster's balance one higher), so its
 * execution ran the same whatever was pre-charged.
 */
function untouched(before: Holdings, after: Holdings | undefined): boolean {
  if (after === undefined) return false;
  const spent = before.allowance - after.allowance;
  return before.balance - after.balance === 1n && (spent === 0n || spent === 2n) && after.paymasterBalance - before.paymasterBalance === 1n;
}

/**
 * PostOp charge: the probe's postOp took its one unit (the paymaster's balance grew), and what the op left the
 * sender before that charge — the balance and allowance read after it plus that unit — covers the most the
 * signed op may charge (the charge is capped at maxTokenCost).
 */
function coversCharge(before: Holdings, after: Holdings | undefined, maxTokenCost: bigint): boolean {
  if (after === undefined || after.paymasterBalance - before.paymasterBalance < 1n) return false;
  const allowance = after.allowance === UINT256_MAX ? UINT256_MAX : after.allowance + 1n;
  return after.balance + 1n >= maxTokenCost && allowance >= maxTokenCost;
}
