/**
 * node:sqlite, the one place that loads it: after checking the Node version (./nodeVersion.ts), and without the
 * "ExperimentalWarning: SQLite is an experimental feature" Node prints on first load — a library prints nothing of
 * its own in its user's process. Only that one warning is dropped, only while the module loads; every other warning
 * passes. Loaded synchronously (no top-level await, so the packages stay loadable through require(esm)).
 */
import { createRequire } from "node:module";
import type * as Sqlite from "node:sqlite";
import { assertSupportedNode } from "./nodeVersion.ts";

/** Whether a process.emitWarning call is the one node:sqlite makes when it loads. */
export function isSqliteExperimentalWarning(warning: unknown, typeOrOptions: unknown): boolean {
  const message = typeof warning === "string" ? warning : warning instanceof Error ? warning.message : "";
  const type = warning instanceof Error ? warning.name : typeof typeOrOptions === "string" ? typeOrOptions : (typeOrOptions as { type?: unknown } | undefined)?.type;
  return type === "ExperimentalWarning" && message.startsWith("SQLite is an experimental feature");
}

function loadQuietly(): typeof Sqlite {
  assertSupportedNode();
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    if (isSqliteExperimentalWarning(warning, rest[0])) return;
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return createRequire(import.meta.url)("node:sqlite") as typeof Sqlite;
  } finally {
    process.emitWarning = emitWarning;
  }
}

const sqlite = loadQuietly();

export const DatabaseSync = sqlite.DatabaseSync;
export type DatabaseSync = Sqlite.DatabaseSync;
export type { SQLInputValue, StatementSync } from "node:sqlite";
