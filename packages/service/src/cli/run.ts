/**
 * How a command's body is run (cli/program.ts makes both wrappers; the commands under commands/ take them):
 * kept apart from program.ts so that the commands do not import the program that imports them.
 */
import type { AdminContext } from "../admin/context.ts";
import type { ChainTarget } from "../admin/chainTarget.ts";
import type { Printer } from "./output.ts";

/** Wraps a command's body: opens the store, runs, prints, closes. */
export type Run = (body: (ctx: AdminContext, out: Printer) => Promise<void>) => Promise<void>;

/**
 * Wraps an on-chain command's body: opens the network (no store), runs with the environment (keys), a printer,
 * a progress line writer (stderr, so --json output stays clean) and a confirmation step (--yes skips it).
 */
export type RunChain = (
  options: { network: string; deployments?: string; yes?: boolean },
  body: (target: ChainTarget, env: NodeJS.ProcessEnv, out: Printer, log: (line: string) => void, confirm: (question: string) => Promise<void>) => Promise<void>,
) => Promise<void>;
