/**
 * JSON output. Handlers return plain JSON values, but a bigint slipping through must never crash a response:
 * it is rendered as a decimal string.
 */

function bigintAsDecimal(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString(10) : value;
}

/** JSON.stringify that renders bigints as decimal strings. Throws on cycles like JSON.stringify. */
export function stringifyJson(value: unknown): string {
  return JSON.stringify(value, bigintAsDecimal) ?? "null";
}
