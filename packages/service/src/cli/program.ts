/**
 * The operator command `paymaster` (commander): global options, one file per command under commands/, and the
 * exit codes — 0 success, 1 failure (not found, conflict, database or I/O trouble), 2 usage (an unknown command
 * or option, a missing argument, or a value that is wrong: malformed address, unknown network, a strategy file
 * that does not validate, a bad configuration). Errors are one line naming what is wrong, never a stack trace.
 */
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { AdminError, requireSafeText, type AdminContext } from "../admin/context.ts";
import { ConfigError } from "../config/errors.ts";
import { dependencyFailure } from "../dependencies/failure.ts";
import { isStoreError } from "../store/errors.ts";
import { driverDetail } from "../store/unavailable.ts";
import { openAdmin, UsageError, type GlobalOptions } from "./context.ts";
import { escapeForTerminal } from "../text/safeText.ts";
import { printer, type Printer } from "./output.ts";
import { registerActivity } from "./commands/activity.ts";
import { registerApply } from "./commands/apply.ts";
import { registerAudit } from "./commands/audit.ts";
import { registerWebhook } from "./commands/webhook.ts";
import { registerKey } from "./commands/key.ts";
import { registerProject } from "./commands/project.ts";
import { registerSponsorship } from "./commands/sponsorship.ts";
import { registerStrategy } from "./commands/strategy.ts";
import { registerTank } from "./commands/tank.ts";
import { registerBilling } from "./commands/billing.ts";
import { confirmOnTerminal, registerChain, withChainTarget } from "./commands/chain.ts";
import { registerDepositContract } from "./commands/depositContract.ts";
import { registerToken } from "./commands/token.ts";
import { CannotStart, registerStart } from "./commands/start.ts";
import type { Run, RunChain } from "./run.ts";

export interface Io {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
}

const VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

export function buildProgram(io: Io): Command {
  const program = new Command("paymaster")
    .version(VERSION, "-V, --version")
    .description("Run the paymaster service (paymaster start) and operate it: projects, API keys, strategies, gas tanks, billing, sponsorships")
    .option("--config <file>", "the service's configuration file (default: $PAYMASTER_CONFIG; DATABASE_URL from the environment)")
    .option("--database <file>", "without a configuration: the embedded stack's SQLite file")
    .option("--json", "print JSON instead of text")
    .option("--migrate", "bring an existing database's schema up to this version's (else only the service does; docs/operations.md, upgrading)")
    .showHelpAfterError("(paymaster --help lists the commands)")
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, "")), writeErr: (s) => io.err(s.replace(/\n$/, "")) })
    .exitOverride();

  const run: Run = async (body) => {
    const options = program.opts<GlobalOptions>();
    const admin = await openAdmin(options, io.env);
    try {
      await body(admin.ctx, printer(options.json === true, io.out));
    } finally {
      await admin.close();
    }
  };
  const runChain: RunChain = async (commandOptions, body) => {
    const options = program.opts<GlobalOptions>();
    await withChainTarget({ ...commandOptions, ...(options.config === undefined ? {} : { config: options.config }) }, io.env, (target) =>
      body(target, io.env, printer(options.json === true, io.out), io.err, (question) => confirmOnTerminal(question, commandOptions.yes === true, io)),
    );
  };
  // Arguments and options are input like any other: refused when not safe text (argv cannot carry a NUL, but an ESC).
  program.hook("preAction", (_program, action) => {
    const args = Object.fromEntries(action.registeredArguments.map((argument, i) => [argument.name(), action.processedArgs[i]]));
    requireSafeText({ ...args, ...action.opts() });
  });
  registerStart(program, io);
  registerChain(program, runChain);
  registerDepositContract(program, runChain);
  registerToken(program, runChain);
  for (const register of [registerProject, registerKey, registerStrategy, registerTank, registerBilling, registerSponsorship, registerActivity, registerApply, registerAudit, registerWebhook]) {
    register(program, run);
  }
  // Subcommands inherit the error handling and output of the root.
  const inherit = (cmd: Command) => {
    for (const sub of cmd.commands) {
      sub.exitOverride().configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, "")), writeErr: (s) => io.err(s.replace(/\n$/, "")) });
      sub.showHelpAfterError(`(paymaster ${sub.parent === program ? sub.name() : `${cmd.name()} ${sub.name()}`} --help)`);
      inherit(sub);
    }
  };
  inherit(program);
  return program;
}

/** Runs the command line `argv` (without node and the script); answers the exit code. */
export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv], { from: "user" });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are successes; commander has printed its own message for the rest.
      return err.code === "commander.helpDisplayed" || err.code === "commander.help" || err.code === "commander.version" ? 0 : 2;
    }
    if (err instanceof CannotStart) {
      // A configuration error lists one problem a line: keep the lines.
      io.err(`paymaster: cannot start: ${escapeForTerminal(err.message, { keepNewlines: true })}`);
      return err.exitCode;
    }
    if (err instanceof ConfigError) {
      // One problem a line, as at start (it printed a literal "\n" between them).
      io.err(`paymaster: ${escapeForTerminal(err.message, { keepNewlines: true })}`);
      return 2;
    }
    if (err instanceof UsageError) {
      io.err(`paymaster: ${escapeForTerminal(err.message)}`);
      return 2;
    }
    if (isStoreError(err, "SCHEMA_TOO_OLD")) {
      io.err(`paymaster: ${escapeForTerminal(err.message)}. Start this version's service first (its first replica migrates the database), or give --migrate`);
      return 1;
    }
    if (err instanceof AdminError) {
      io.err(`paymaster: ${escapeForTerminal(err.message)}`);
      return err.code === "INVALID_INPUT" ? 2 : 1;
    }
    io.err(`paymaster: ${escapeForTerminal(describe(err))}`);
    return 1;
  }
}

/** A driver or system error in one line (a dependency's failure: its name, cause and the driver's words); never a database URL's password. */
function describe(err: unknown): string {
  const failure = dependencyFailure(err);
  if (failure) return `${failure.message}${failure.detail === undefined ? "" : `: ${failure.detail}`}`;
  return driverDetail(err);
}
