/**
 * Step: ERC-20 mode's market. Decides the token's exchange rate (from the native and token USD prices, with
 * the token's markup) and, when asked, reads what the sender holds and allows the paymaster (the estimate's
 * probe reads them itself, in its one call: src/sponsor/probe.ts). Other modes: null.
 * Raises only the chain's and price source's errors.
 */
import { requireTokenAllowed } from "../tokenAllowed.ts";
import { chainWait } from "../../timing.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { exchangeRate, type UsdPrice } from "../price.ts";
import { readHoldings, type SenderHoldings } from "../simulation.ts";
import type { Target } from "./target.ts";

export interface TokenPrice {
  /** Token units (with decimals) per wei, scaled as the ERC-20 paymaster reads it (src/sponsor/price.ts). */
  rate: bigint;
  nativeUsd: UsdPrice;
  /** The sender's balance and allowance to the paymaster, when read here. */
  holdings?: SenderHoldings;
}

export interface TokenPriceInput {
  target: Target;
  /** Read the sender's balance and allowance (not in the stub, nor when the estimate's probe reads them). */
  holdings: boolean;
}

export async function tokenPrice({ target, holdings }: TokenPriceInput, span: TraceSpan = NO_SPAN): Promise<TokenPrice | null> {
  const { mode, chain, call } = target;
  if (mode.mode !== "erc20") return null;
  const [nativeUsd, tokenUsd, held] = await chainWait(call.timing, () =>
    Promise.all([
      chain.prices.usd(call.network.config.nativeUsdPrice),
      chain.prices.usd(mode.token.priceSource),
      holdings ? readHoldings(target, span) : undefined,
      // A configured token the paymaster does not allow would fail on chain (UnsupportedToken): refused first.
      requireTokenAllowed(chain, call.network.config.name, target.paymaster, mode.token, target.market.blockNumber),
    ]),
  );
  return {
    rate: exchangeRate(nativeUsd, tokenUsd, mode.token.decimals, mode.token.markupBps),
    nativeUsd,
    ...(held ? { holdings: held } : {}),
  };
}
