/**
 * How commands print: readable text by default (a table for lists), JSON with --json. Stored text can come from
 * the public application form, so nothing reaches the terminal raw: every cell, key and header is escaped
 * (text/safeText.ts escapeForTerminal), and so is each whole output (JSON included) on its way out.
 */
import { escapeForTerminal } from "../text/safeText.ts";

type Row = object;

function cell(value: unknown): string {
  if (value === null || value === undefined) return "-";
  return escapeForTerminal(typeof value === "object" ? JSON.stringify(value) : String(value));
}

/** Rows as an aligned table with the given columns (all keys of the first row by default). */
export function table(rows: readonly Row[], columns?: readonly string[]): string {
  if (rows.length === 0) return "(none)";
  const cols = columns ?? Object.keys(rows[0]!);
  const headers = cols.map((c) => escapeForTerminal(c).toUpperCase());
  const cells = rows.map((r) => cols.map((c) => cell((r as Record<string, unknown>)[c])));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(headers), ...cells.map(line)].join("\n");
}

/** One object as "key  value" lines (nested objects as JSON). */
export function record(value: object): string {
  const entries = Object.entries(value).map(([k, v]) => [escapeForTerminal(k), cell(v)] as const);
  const width = Math.max(...entries.map(([k]) => k.length));
  return entries
    .map(([k, v]) => `${k.padEnd(width)}  ${v}`)
    .join("\n");
}

export interface Printer {
  /** Prints `value` as JSON (--json) or as `text(value)`. */
  print<T>(value: T, text: (value: T) => string): void;
}

export function printer(json: boolean, write: (text: string) => void): Printer {
  return {
    print(value, text) {
      // The lines are ours (LF kept); anything else that could steer the terminal is shown escaped.
      write(escapeForTerminal(json ? JSON.stringify(value, null, 2) : text(value), { keepNewlines: true }));
    },
  };
}
