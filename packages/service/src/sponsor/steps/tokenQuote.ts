/**
 * Step: ERC-20 mode's maximum token cost. Decides the most the op can be charged (its pre-charge gas cost at
 * the token's rate), under the given charge mode. Pure; raises nothing. The stub answers with it as is; every
 * other method goes on to the charge step (balance, allowance, charge mode).
 */
import { ChargeMode, tokenCost, type Address, type Hex } from "@paymaster/shared";
import { buildOp, preChargeWeiOf, type GasValues } from "../op.ts";
import type { Target } from "./target.ts";
import type { TokenPrice } from "./tokenPrice.ts";

export interface TokenQuote {
  symbol: string;
  address: Address;
  decimals: number;
  exchangeRate: bigint;
  maxTokenCost: bigint;
  chargeMode: ChargeMode;
}

export interface TokenQuoteInput {
  target: Target;
  gas: GasValues;
  price: TokenPrice;
  chargeMode: ChargeMode;
  /** Stub paymaster data of the final length. */
  paymasterData: Hex;
}

export function quoteToken({ target, gas, price, chargeMode, paymasterData }: TokenQuoteInput): TokenQuote {
  if (target.mode.mode !== "erc20") throw new TypeError("quoteToken outside ERC-20 mode");
  const token = target.mode.token;
  const preChargeWei = preChargeWeiOf(buildOp(target.request, gas, target.paymaster, paymasterData), target.postOpGas);
  return {
    symbol: token.symbol,
    address: token.address,
    decimals: token.decimals,
    exchangeRate: price.rate,
    maxTokenCost: tokenCost(preChargeWei, price.rate),
    chargeMode,
  };
}
