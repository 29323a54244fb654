/**
 * Step: ERC-20 mode's charge. Decides how the token is charged: pre-charge when the sender's allowance covers
 * the maximum token cost, otherwise in postOp (which the final simulation must then show succeeding: the op's
 * own calls may approve the paymaster). Raises TOKEN_BALANCE_INSUFFICIENT (the balance is below the maximum
 * token cost) and TOKEN_CHARGE_UNPAID (postOp charging for a sender whose postOp charge went unpaid before).
 */
import { ChargeMode, type Hex } from "@paymaster/shared";
import { RpcError } from "../../errors.ts";
import type { GasValues } from "../op.ts";
import type { Target } from "./target.ts";
import type { TokenPrice } from "./tokenPrice.ts";
import type { SenderHoldings } from "../simulation.ts";
import { quoteToken, type TokenQuote } from "./tokenQuote.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { serviceStore } from "../../store/traced.ts";

export interface TokenChargeInput {
  target: Target;
  /** The final gas values. */
  gas: GasValues;
  price: TokenPrice;
  /** The sender's balance and allowance to the paymaster (read by the price step or the estimate's probe). */
  holdings: SenderHoldings;
  /** Stub paymaster data of the final length. */
  paymasterData: Hex;
}

export async function chargeToken({ target, gas, price, holdings, paymasterData }: TokenChargeInput, span: TraceSpan = NO_SPAN): Promise<TokenQuote> {
  if (target.mode.mode !== "erc20") throw new TypeError("chargeToken outside ERC-20 mode");
  const token = target.mode.token;
  const quote = quoteToken({ target, gas, price, chargeMode: ChargeMode.PreCharge, paymasterData });
  if (holdings.balance < quote.maxTokenCost) {
    throw new RpcError("TOKEN_BALANCE_INSUFFICIENT", undefined, {
      token: token.symbol,
      required: quote.maxTokenCost.toString(),
      balance: holdings.balance.toString(),
    });
  }
  const { maxTokenCost } = quote;
  const chargeMode = holdings.allowance >= maxTokenCost ? ChargeMode.PreCharge : ChargeMode.InPostOp;
  // Charging in postOp trusts the op's own calls to leave the allowance in place, which a sender can defeat
  // for free (THREAT_MODEL.md, item 3): one whose postOp charge went unpaid gets pre-charge only. A signing
  // request's reservation checks it in its own batch (requires.noUnpaidCharge): no round trip here.
  const { call, request } = target;
  if (chargeMode === ChargeMode.InPostOp && target.signs !== true && (await serviceStore(call.service, span).hasUnpaidTokenCharge(call.network.config.name, request.userOp.sender))) {
    throw unpaidCharge(target, maxTokenCost);
  }
  return { ...quote, chargeMode };
}

/** TOKEN_CHARGE_UNPAID, whether the read above or the reservation's batch (its noUnpaidCharge check) found the unpaid charge. */
export function unpaidCharge(target: Target, maxTokenCost: bigint): RpcError {
  const token = target.mode.mode === "erc20" ? target.mode.token.symbol : "";
  return new RpcError("TOKEN_CHARGE_UNPAID", undefined, { token, paymaster: target.paymaster, required: maxTokenCost.toString() });
}
