/**
 * A price in USD as an exact rational, and its parsing from a decimal string. Pure and at the bottom: the store's
 * types (billing terms frozen on a sponsorship) and the price sources both use it.
 */
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
