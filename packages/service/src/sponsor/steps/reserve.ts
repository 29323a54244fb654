/**
 * Step (signing methods only): reserve the maximum cost and record the signed sponsorship. Decides whether the
 * money is there: the paymaster's deposit covers this op on top of every outstanding one
 * (src/sponsor/deposit.ts), then, in ONE store batch (one round trip to the database: docs/scale.md), the
 * strategy's running caps (Sponsor mode), the sender's gas tank (User Sponsor mode) or its one outstanding postOp
 * charge (ERC-20 mode) hold with this op counted, and so does the project's prepaid balance when the operator
 * bills it (its plan, billing/charge.ts), and the record is written, signed. Decided under the config version the
 * request looked its key and strategy up under: when it changed since, nothing is written and ConfigChanged is
 * thrown (the call runs again on fresh lookups). Returns the store's answer; `reservationRefusal` turns a refusal
 * into the error. Raises the deposit check's PAYMASTER_DEPOSIT_LOW and SPONSORSHIP_CONFLICT (concurrent requests
 * for the same op kept replacing each other).
 */
import { ChargeMode, type Hex } from "@paymaster/shared";
import { RpcError } from "../../errors.ts";
import { formatUsdMicros } from "../../policy/rules.ts";
import { usageChecks } from "../../policy/totals.ts";
import { chainWait } from "../../timing.ts";
import { isStoreError } from "../../store/errors.ts";
import type { ReserveResult } from "../../store/types.ts";
import type { MaxCost } from "./maxCost.ts";
import type { Target } from "./target.ts";
import type { TokenQuote } from "./tokenQuote.ts";
import { postOpChargeRisk } from "../postOpRisk.ts";
import { tankNotAllowed } from "../policy.ts";
import { unpaidCharge } from "./tokenCharge.ts";
import { outstandingBounds } from "../outstanding.ts";
import { billingBasis, type BillingTerms } from "../../billing/charge.ts";
import { ConfigChanged, lookupsOf } from "../../store/configCache.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { serviceStore } from "../../store/traced.ts";

export interface ReserveInput {
  target: Target;
  cost: MaxCost;
  token: TokenQuote | null;
  /** The landing op's fields, as recorded and later answered. */
  userOpHash: Hex;
  paymasterAndData: Hex;
}

/** The store's answer, but for a changed configuration: that one is thrown (ConfigChanged), never answered. */
export type Reservation = Exclude<ReserveResult, { reason: "CONFIG_CHANGED" }>;

export async function reserve({ target, cost, token, userOpHash, paymasterAndData }: ReserveInput, span: TraceSpan = NO_SPAN): Promise<Reservation> {
  const { call, chain, request, mode, entry } = target;
  const u = request.userOp;
  await chainWait(call.timing, () =>
    chain.deposits.check({ entryPoint: entry.entryPoint, paymaster: target.paymaster, kind: mode.mode === "erc20" ? "erc20" : "verifying", block: target.market.blockNumber, maxCostWei: cost.maxCostWei }),
  );
  const caps = mode.mode === "sponsor" ? usageChecks(mode.strategy.rules, { now: target.now, sender: u.sender }) : [];
  const postOpCharge = token?.chargeMode === ChargeMode.InPostOp;
  // Billing off (no plan, the default): one cached lookup, nothing more.
  const lookups = lookupsOf(call);
  const [plan, webhookEndpoints] = await Promise.all([lookups.billingPlan(call.apiKey.projectId), lookups.eventEndpoints(call.apiKey.projectId)]);
  const billing: BillingTerms | undefined = plan?.enabled
    ? { basis: billingBasis(mode.mode, postOpCharge), nativeUsd: cost.nativeUsd, markupBps: plan.markupBps, feeUsdMicros: plan.feeUsdMicros }
    : undefined;
  try {
    const reservation = await serviceStore(call.service, span).reserveSponsorship(
      {
        network: call.network.config.name,
        entryPoint: entry.entryPoint,
        version: request.version,
        sender: u.sender,
        nonce: u.nonce,
        mode: mode.mode,
        projectId: call.apiKey.projectId,
        apiKeyId: call.apiKey.id,
        strategyId: mode.mode === "sponsor" ? mode.strategy.id : null,
        token: token?.address ?? null,
        exchangeRate: token?.exchangeRate ?? null,
        maxTokenCost: token?.maxTokenCost ?? null,
        maxCostWei: cost.maxCostWei,
        maxCostUsdMicros: cost.maxCostUsdMicros,
        validUntil: target.window.validUntil,
        validAfter: target.window.validAfter,
        userOpHash,
        paymasterAndData,
        // At most one outstanding postOp-charge sponsorship per sender, and a bound per project and key on what
        // such sponsorships put at risk (fresh senders each leaving a charge unpaid).
        postOpCharge,
        // Checked in the batch, whether or not read before (Target.signs): exact at the moment it is written.
        requires: { tankConsent: mode.mode === "user", noUnpaidCharge: postOpCharge },
        ...(postOpCharge ? { postOpChargeRisk: postOpChargeRisk(call.service.config, target.now) } : {}),
        // Open reservations per sender and per browser key's client address: no one holds others' money with
        // ops nobody signs.
        ...outstandingBounds(call.service.config, call.apiKey, call.clientIp, target.mode.mode === "sponsor" ? target.mode.strategy.rules : undefined),
        ...(billing ? { billing } : {}),
        // Decided on the configuration as this request looked it up: refused if it changed since (run again).
        ...(lookups.version === undefined ? {} : { configVersion: lookups.version, webhookEndpoints }),
      },
      caps,
    );
    if (!reservation.ok && reservation.reason === "CONFIG_CHANGED") throw new ConfigChanged();
    return reservation;
  } catch (error) {
    // PostgreSQL: concurrent requests for the same op (sender, nonce) kept replacing each other's view of it through
    // every retry. One of them stands; this one's signature is never handed out, and the caps count the op once.
    if (isStoreError(error, "CONFLICT")) throw new RpcError("SPONSORSHIP_CONFLICT", undefined, { sender: u.sender, nonce: `0x${u.nonce.toString(16)}` });
    throw error;
  }
}

/**
 * The answer to a reservation the store refused (nothing was written): STRATEGY_NOT_ALLOWED (a running cap
 * would be exceeded), POSTOP_CHARGE_PENDING (ERC-20: the sender has a postOp charge outstanding),
 * POSTOP_CHARGE_AT_RISK (ERC-20: the project's or key's postOp-charge risk budget would be exceeded),
 * GAS_TANK_INSUFFICIENT (User Sponsor mode), PROJECT_BALANCE_EXHAUSTED (the project's prepaid balance, when billed).
 */
export function reservationRefusal(refused: Exclude<Reservation, { ok: true }>, target: Target, token: TokenQuote | null): RpcError {
  const { mode } = target;
  if (refused.reason === "CAP_EXCEEDED") {
    // The store counts USD in micro-units; clients read dollars ("25.50"), as the per-op USD cap reports them.
    const usd = refused.rule.endsWith(".maxUsd");
    const dollars = (micros: string) => formatUsdMicros(BigInt(micros));
    const limit = usd ? dollars(refused.limit) : refused.limit;
    const value = usd ? dollars(refused.value) : refused.value;
    const what = usd ? `$${value} against a limit of $${limit}` : `${value} against a limit of ${limit}`;
    return new RpcError("STRATEGY_NOT_ALLOWED", `Strategy ${mode.mode === "sponsor" ? mode.strategy.code : ""} refuses this request: ${refused.rule} would be exceeded (${what})`, {
      rule: refused.rule,
      limit,
      value,
    });
  }
  if (refused.reason === "TOO_MANY_OUTSTANDING") {
    const whose = refused.scope === "sender" ? `sender ${target.request.userOp.sender}` : "this API key from this client address";
    return new RpcError("TOO_MANY_OUTSTANDING", `${whose} already has ${refused.limit} open sponsorships (signed, not yet included or expired): send those ops, or wait until their signatures expire`, {
      scope: refused.scope,
      limit: refused.limit,
      retryAfterSeconds: target.call.service.config.signatureTtlSeconds,
    });
  }
  if (refused.reason === "POSTOP_CHARGE_AT_RISK") {
    const dollars = (micros: string) => formatUsdMicros(BigInt(micros));
    return new RpcError(
      "POSTOP_CHARGE_AT_RISK",
      `Charging in postOp is paused for this ${refused.scope === "project" ? "project" : "API key"}: $${dollars(refused.value)} would be at risk against a limit of $${dollars(refused.limit)}; approve the paymaster for the maximum token cost (${token!.maxTokenCost} ${token!.symbol} base units) to be charged up front`,
      { scope: refused.scope, limit: dollars(refused.limit), value: dollars(refused.value), token: token!.symbol, paymaster: target.paymaster, required: token!.maxTokenCost.toString() },
    );
  }
  if (refused.reason === "BALANCE_EXHAUSTED") {
    // The dapp learns what this op needs; the project's balance itself is the operator's and its owner's to see.
    const required = formatUsdMicros(refused.requiredUsdMicros);
    return new RpcError(
      "PROJECT_BALANCE_EXHAUSTED",
      `The project's prepaid balance with the paymaster cannot cover this user operation (it holds $${required} until it lands or expires): the project's owner must add credit with the paymaster's operator`,
      { requiredUsd: required },
    );
  }
  if (refused.reason === "HOLD_SHARE_EXCEEDED") {
    const whose = refused.scope === "clientIp" ? "this API key from this client address" : "this API key";
    return new RpcError(
      "TOO_MANY_OUTSTANDING",
      `${whose} already holds $${formatUsdMicros(refused.heldUsdMicros)} of the project's prepaid balance with open sponsorships (signed, not yet included or expired), more than its share (${refused.shareBps / 100} %): send those ops, or wait until their signatures expire`,
      { scope: refused.scope, shareOfBalance: `${refused.shareBps / 100}%`, retryAfterSeconds: target.call.service.config.signatureTtlSeconds },
    );
  }
  if (refused.reason === "GAS_TANK_NOT_ALLOWED") return tankNotAllowed(target.call, target.request.userOp.sender);
  if (refused.reason === "TOKEN_CHARGE_UNPAID") return unpaidCharge(target, token!.maxTokenCost);
  if (refused.reason === "POSTOP_CHARGE_PENDING") {
    return new RpcError("POSTOP_CHARGE_PENDING", undefined, { token: token!.symbol, paymaster: target.paymaster, required: token!.maxTokenCost.toString() });
  }
  return new RpcError("GAS_TANK_INSUFFICIENT", undefined, {
    requiredWei: refused.requiredWei.toString(),
    availableWei: refused.availableWei.toString(),
  });
}
