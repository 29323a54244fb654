// Formatting shared by the pages: wei as ETH (exact, from decimal strings), ETH text to wei, times, short hashes.

const WEI_PER_ETH = 10n ** 18n;

/** "1234500000000000000" -> "1.2345" (at most `decimals` decimals, trailing zeros dropped). */
export function formatEth(wei: string | bigint, decimals = 6): string {
  const value = typeof wei === "bigint" ? wei : BigInt(wei);
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const whole = abs / WEI_PER_ETH;
  const scale = 10n ** BigInt(18 - decimals);
  let fraction = ((abs % WEI_PER_ETH) / scale).toString().padStart(decimals, "0").replace(/0+$/, "");
  if (fraction === "" && abs % WEI_PER_ETH !== 0n && whole === 0n) fraction = `${"0".repeat(decimals - 1)}1`; // tiny: never shown as 0
  const small = fraction !== "" && whole === 0n && abs < scale;
  return `${negative ? "-" : ""}${small ? "<" : ""}${whole.toLocaleString("en-US")}${fraction ? `.${fraction}` : ""}`;
}

/** ETH text ("0.05") as wei, or undefined when it is not a non-negative decimal with at most 18 decimals. */
export function parseEth(text: string): bigint | undefined {
  const m = /^\s*(\d{1,30})(?:\.(\d{1,18}))?\s*$/.exec(text);
  if (!m) return undefined;
  return BigInt(m[1]!) * WEI_PER_ETH + BigInt((m[2] ?? "").padEnd(18, "0"));
}

/** Wei as a float of ETH, for chart scales only. */
export function ethNumber(wei: string | bigint): number {
  return Number(typeof wei === "bigint" ? wei : BigInt(wei)) / 1e18;
}

/** 0x1234…abcd */
export function short(hex: string | null | undefined, keep = 6): string {
  if (!hex) return "–";
  return hex.length <= keep * 2 + 3 ? hex : `${hex.slice(0, keep)}…${hex.slice(-4)}`;
}

/** Unix seconds as "2026-05-01 14:03:09 UTC". */
export function formatTime(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "–";
  return `${new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC`;
}

/** A bucket start as a short label for a chart axis (time of day, or the date for day buckets). */
export function bucketLabel(seconds: number, bucketSeconds: number): string {
  const iso = new Date(seconds * 1000).toISOString();
  return bucketSeconds >= 86_400 ? iso.slice(5, 10) : iso.slice(11, 16);
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}
