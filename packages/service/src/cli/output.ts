/** How commands print: readable text by default (a table for lists), JSON with --json. */

type Row = object;

function cell(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** Rows as an aligned table with the given columns (all keys of the first row by default). */
export function table(rows: readonly Row[], columns?: readonly string[]): string {
  if (rows.length === 0) return "(none)";
  const cols = columns ?? Object.keys(rows[0]!);
  const cells = rows.map((r) => cols.map((c) => cell((r as Record<string, unknown>)[c])));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(cols.map((c) => c.toUpperCase())), ...cells.map(line)].join("\n");
}

/** One object as "key  value" lines (nested objects as JSON). */
export function record(value: object): string {
  const width = Math.max(...Object.keys(value).map((k) => k.length));
  return Object.entries(value)
    .map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`)
    .join("\n");
}

export interface Printer {
  /** Prints `value` as JSON (--json) or as `text(value)`. */
  print<T>(value: T, text: (value: T) => string): void;
}

export function printer(json: boolean, write: (text: string) => void): Printer {
  return {
    print(value, text) {
      write(json ? JSON.stringify(value, null, 2) : text(value));
    },
  };
}
