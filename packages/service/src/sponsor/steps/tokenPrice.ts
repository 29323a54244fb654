/**
 * Step: ERC-20 mode's market. Decides the token's exchange rate (from the native and token USD prices, with
 * the token's markup) and reads what the sender holds and allows the paymaster. Other modes: null.
 * Raises only the chain's and price source's errors.
 */
import { requireTokenAllowed } from "../tokenAllowed.ts";
import { ChargeMode } from "@paymaster/shared";
import { chainWait } from "../../timing.ts";
import { tracedChain } from "../../chain/traced.ts";
import { NO_SPAN, type TraceSpan } from "../../telemetry/trace.ts";
import { exchangeRate, type UsdPrice } from "../price.ts";
import { tokenRead } from "../simulation.ts";
import type { Target } from "./target.ts";

export interface TokenPrice {
  /** Token units (with decimals) per wei, scaled as the ERC-20 paymaster reads it (src/sponsor/price.ts). */
  rate: bigint;
  nativeUsd: UsdPrice;
  /** The sender's balance and allowance to the paymaster (0 when not read). */
  balance: bigint;
  allowance: bigint;
  /** The charge mode the estimate runs with: at a 1-wei price any allowance covers a pre-charge. */
  estimateChargeMode: ChargeMode;
}

export interface TokenPriceInput {
  target: Target;
  /** Read the sender's balance and allowance (the stub does not). */
  holdings: boolean;
}

export async function tokenPrice({ target, holdings }: TokenPriceInput, span: TraceSpan = NO_SPAN): Promise<TokenPrice | null> {
  const { mode, chain, call } = target;
  if (mode.mode !== "erc20") return null;
  const reads = tracedChain(chain, span);
  const sender = target.request.userOp.sender;
  const [nativeUsd, tokenUsd, balance, allowance] = await chainWait(call.timing, () =>
    Promise.all([
      chain.prices.usd(call.network.config.nativeUsdPrice),
      chain.prices.usd(mode.token.priceSource),
      holdings ? tokenRead(reads, mode.token.address, "balanceOf", [sender]) : 0n,
      holdings ? tokenRead(reads, mode.token.address, "allowance", [sender, target.paymaster]) : 0n,
      // A configured token the paymaster does not allow would fail on chain (UnsupportedToken): refused first.
      requireTokenAllowed(chain, call.network.config.name, target.paymaster, mode.token, target.market.blockNumber),
    ]),
  );
  return {
    rate: exchangeRate(nativeUsd, tokenUsd, mode.token.decimals, mode.token.markupBps),
    nativeUsd,
    balance,
    allowance,
    estimateChargeMode: allowance === 0n ? ChargeMode.InPostOp : ChargeMode.PreCharge,
  };
}
