/**
 * Prices and exchange rates. A price is an exact rational in USD; the ERC-20 exchange rate the paymaster
 * signs is token base units per 1e18 wei (1 native coin), marked up and rounded up so the paymaster never
 * receives less than the price says.
 */
import { decodeAbiParameters, type Hex } from "viem";
import type { ChainRpc } from "../chain/rpc.ts";
import type { PriceSource } from "../store/types.ts";
import { RpcError } from "../errors.ts";
import { parseUsd, type UsdPrice } from "../billing/usdPrice.ts";

export { parseUsd, type UsdPrice } from "../billing/usdPrice.ts";

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

/** How long a feed's read answers requests without a new read (the most a price can lag its feed). */
export const PRICE_TTL_MS = 30_000;
/** How often the feeds requests use are read again in the background, so that no request waits for one. */
export const PRICE_REFRESH_MS = 10_000;
/** A feed no request asked for in this long stops being read in the background. */
const PRICE_HOT_MS = 60_000;

interface FeedRead {
  price: UsdPrice;
  /** The round's updatedAt (unix seconds, the feed's clock). */
  updatedAt: bigint;
  /** When it was read (ms, the service's clock). */
  readAt: number;
}

export interface PriceOracleOptions {
  ttlMs?: number;
  refreshMs?: number;
  now?: () => number;
}

/**
 * Reads price sources. A Chainlink feed's answer is kept for `ttlMs` and read again every `refreshMs` in the
 * background while requests use it, so requests read it from memory (issue 38). A kept answer whose round is
 * older than the source's `maxAgeSeconds` is not used: the feed is read again, and a round still that old is
 * refused (CHAIN_UNAVAILABLE, "stale"). A request that finds no usable answer (new feed, or the background
 * reads failed for `ttlMs`: the node does not answer) reads the feed itself, and the node's error is its answer.
 */
export function createPriceOracle(rpc: ChainRpc, { ttlMs = PRICE_TTL_MS, refreshMs = PRICE_REFRESH_MS, now = () => Date.now() }: PriceOracleOptions = {}) {
  const kept = new Map<Hex, FeedRead>();
  const inflight = new Map<Hex, Promise<FeedRead>>();
  /** The feed's decimals never change: read once. */
  const decimalsOf = new Map<Hex, Promise<bigint>>();
  /** Per feed: when a request last asked for it. */
  const used = new Map<Hex, number>();
  let timer: NodeJS.Timeout | undefined;

  const stale = (read: FeedRead, maxAgeSeconds: number | undefined) => maxAgeSeconds !== undefined && BigInt(Math.floor(now() / 1000)) - read.updatedAt > BigInt(maxAgeSeconds);

  function decimals(feed: Hex): Promise<bigint> {
    let value = decimalsOf.get(feed);
    if (value === undefined) {
      value = rpc.request<Hex>("eth_call", [{ to: feed, data: DECIMALS }, "latest"]).then((hex) => BigInt(decodeAbiParameters([{ type: "uint8" }], hex)[0]));
      value.catch(() => decimalsOf.delete(feed));
      decimalsOf.set(feed, value);
    }
    return value;
  }

  /** One read of the feed (concurrent callers share it); kept when valid. */
  function read(feed: Hex, maxAgeSeconds: number | undefined): Promise<FeedRead> {
    let pending = inflight.get(feed);
    if (pending === undefined) {
      pending = Promise.all([rpc.request<Hex>("eth_call", [{ to: feed, data: LATEST_ROUND_DATA }, "latest"]), decimals(feed)])
        .then(([round, places]): FeedRead => {
          const [, answer, , updatedAt] = decodeAbiParameters([{ type: "uint80" }, { type: "int256" }, { type: "uint256" }, { type: "uint256" }, { type: "uint80" }], round);
          if (answer <= 0n) throw new RpcError("CHAIN_UNAVAILABLE", "The price feed has no valid answer");
          const fresh = { price: { numerator: answer, denominator: 10n ** places }, updatedAt, readAt: now() };
          kept.set(feed, fresh);
          return fresh;
        })
        .finally(() => inflight.delete(feed));
      inflight.set(feed, pending);
    }
    return pending.then((fresh) => {
      if (stale(fresh, maxAgeSeconds)) throw new RpcError("CHAIN_UNAVAILABLE", "The price feed is stale");
      return fresh;
    });
  }

  /** Reads again, in the background, the feeds requests used lately; forgets the others. */
  function refreshUsed(): void {
    const cold = now() - PRICE_HOT_MS;
    for (const [feed, at] of used) {
      if (at < cold) {
        used.delete(feed);
        kept.delete(feed);
        continue;
      }
      read(feed, undefined).catch(() => undefined); // a request finding nothing usable reads again
    }
    if (used.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  }

  async function chainlink(feed: Hex, maxAgeSeconds: number | undefined): Promise<UsdPrice> {
    used.set(feed, now());
    if (timer === undefined) {
      timer = setInterval(refreshUsed, refreshMs);
      timer.unref();
    }
    const known = kept.get(feed);
    // Kept and young enough, and its round within the source's age: no read. Else a read now.
    if (known !== undefined && now() - known.readAt < ttlMs && !stale(known, maxAgeSeconds)) return known.price;
    return (await read(feed, maxAgeSeconds)).price;
  }

  return {
    async usd(source: PriceSource): Promise<UsdPrice> {
      return source.type === "fixed" ? parseUsd(source.usd) : chainlink(source.feed, source.maxAgeSeconds);
    },
    /** Stops the background reads. */
    stop(): void {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      used.clear();
    },
  };
}

export type PriceOracle = ReturnType<typeof createPriceOracle>;
