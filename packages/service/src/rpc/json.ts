/**
 * JSON output. Handlers return plain JSON values, but a bigint slipping through must never crash a response:
 * it is rendered as a decimal string.
 */

function bigintAsDecimal(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString(10) : value;
}

/** JSON.stringify that renders bigints as decimal strings. Throws on cycles like JSON.stringify. */
export function stringifyJson(value: unknown): string {
  // Plain JSON.stringify first (a replacer takes V8 off its fast serializer on every response); a bigint makes
  // it throw, and only then is the replacer needed. A cycle throws in both, as before.
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return JSON.stringify(value, bigintAsDecimal) ?? "null";
  }
}
