/**
 * Prices and exchange rates. A price is an exact rational in USD; the ERC-20 exchange rate the paymaster
 * signs is token base units per 1e18 wei (1 native coin), marked up and rounded up so the paymaster never
 * receives less than the price says.
 */
import { decodeAbiParameters, type Hex } from "viem";
import type { ChainRpc } from "../chain/rpc.ts";
import type { PriceSource } from "../store/types.ts";
import { RpcError } from "../rpc/errors.ts";

export interface UsdPrice {
  numerator: bigint;
  denominator: bigint;
}

/** "3000.125" -> 3000125 / 1000. Decimal strings only (validated by the config loader). */
export function parseUsd(decimal: string): UsdPrice {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(decimal.trim());
  if (!match) throw new Error(`not a decimal price: ${decimal}`);
  const fraction = match[2] ?? "";
  return { numerator: BigInt(match[1]! + fraction), denominator: 10n ** BigInt(fraction.length) };
}

/**
 * ceil(nativeUsd / tokenUsd x 10^decimals x (10000 + markupBps) / 10000): token base units per 1e18 wei.
 */
export function exchangeRate(nativeUsd: UsdPrice, tokenUsd: UsdPrice, decimals: number, markupBps: number): bigint {
  const numerator = nativeUsd.numerator * tokenUsd.denominator * 10n ** BigInt(decimals) * BigInt(10_000 + markupBps);
  const denominator = nativeUsd.denominator * tokenUsd.numerator * 10_000n;
  if (denominator === 0n) throw new RpcError("INTERNAL_ERROR", "A token price is zero");
  return (numerator + denominator - 1n) / denominator;
}

const LATEST_ROUND_DATA = "0xfeaf968c";
const DECIMALS = "0x313ce567";

/** Reads price sources; Chainlink answers are cached for `ttlMs` per feed. */
export function createPriceOracle(rpc: ChainRpc, { ttlMs = 30_000, now = () => Date.now() } = {}) {
  const cache = new Map<string, { price: UsdPrice; at: number }>();

  async function chainlink(feed: Hex, maxAgeSeconds: number | undefined): Promise<UsdPrice> {
    const cached = cache.get(feed);
    if (cached && now() - cached.at < ttlMs) return cached.price;
    const [round, decimalsHex] = await Promise.all([
      rpc.request<Hex>("eth_call", [{ to: feed, data: LATEST_ROUND_DATA }, "latest"]),
      rpc.request<Hex>("eth_call", [{ to: feed, data: DECIMALS }, "latest"]),
    ]);
    const [, answer, , updatedAt] = decodeAbiParameters(
      [{ type: "uint80" }, { type: "int256" }, { type: "uint256" }, { type: "uint256" }, { type: "uint80" }],
      round,
    );
    const [decimals] = decodeAbiParameters([{ type: "uint8" }], decimalsHex);
    if (answer <= 0n) throw new RpcError("CHAIN_UNAVAILABLE", "The price feed has no valid answer");
    if (maxAgeSeconds !== undefined && BigInt(Math.floor(now() / 1000)) - updatedAt > BigInt(maxAgeSeconds)) {
      throw new RpcError("CHAIN_UNAVAILABLE", "The price feed is stale");
    }
    const price = { numerator: answer, denominator: 10n ** BigInt(decimals) };
    cache.set(feed, { price, at: now() });
    return price;
  }

  return {
    async usd(source: PriceSource): Promise<UsdPrice> {
      return source.type === "fixed" ? parseUsd(source.usd) : chainlink(source.feed, source.maxAgeSeconds);
    },
  };
}

export type PriceOracle = ReturnType<typeof createPriceOracle>;
