/** The operator command as a real child process, and a PostgreSQL database of its own for a test file. */
import { execFile } from "node:child_process";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (undefined when it is not). */
  json: any;
}

/** Runs `paymaster <args>` in a child process with `env` added to a clean environment (PATH only), in `cwd`. */
export function runCli(args: readonly string[], env: Record<string, string> = {}, { cwd }: { cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--disable-warning=ExperimentalWarning", MAIN, ...args],
      { env: { PATH: process.env.PATH ?? "", ...env }, timeout: 30_000, ...(cwd === undefined ? {} : { cwd }) },
      (error, stdout, stderr) => {
        let json: unknown;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr, json });
      },
    );
  });
}

/**
 * The same command run in this process (src/cli/program.ts runCli, what main.ts calls): for the long scenarios,
 * where the process boundary adds nothing but start-up time (~0.5 s of CPU per child on this machine).
 */
export async function runCliInProcess(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  const { runCli: run } = await import("../../src/cli/program.ts");
  let stdout = "";
  let stderr = "";
  const code = await run(args, { env, out: (t) => (stdout += `${t}\n`), err: (t) => (stderr += `${t}\n`) });
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json };
}

// The throwaway PostgreSQL databases of the CLI tests are helpers/postgres.ts's.
export { createTestDatabase } from "./postgres.ts";
