/**
 * paymaster start — the service itself. With a configuration (`--config <file>`, the global option, or
 * PAYMASTER_CONFIG) it serves the configured networks; with none, the embedded default: a local chain in-process,
 * everything deployed, a bundler, a demo project seeded, and ready-to-run lines printed. Serves until SIGINT or
 * SIGTERM, then drains and exits 0. The same command everywhere: the package's bin, `pnpm paymaster start` and
 * `pnpm start` (src/main.ts) all come here.
 */
import type { Command } from "commander";
import { ConfigError } from "../../config/errors.ts";
import type { StartIo } from "../../lifecycle/serve.ts";
import { scrubText } from "../../log.ts";
import type { GlobalOptions } from "../context.ts";

/** The start failed (a configuration problem, a port in use, a pre-flight verdict): one line, and the exit code. */
export class CannotStart extends Error {
  override name = "CannotStart";
  /** A configuration mistake (admin tokens included) is a usage error: 2; anything else 1. */
  readonly exitCode: 1 | 2;
  constructor(message: string, exitCode: 1 | 2) {
    super(message);
    this.exitCode = exitCode;
  }
}

export function registerStart(program: Command, io: StartIo): void {
  program
    .command("start")
    .description("run the service: your networks with --config <file> (or PAYMASTER_CONFIG), else the embedded local stack (chain, bundler, paymaster, demo key)")
    .option("--no-watch", "serve requests only: another replica runs the settlement watchers")
    .addHelpText(
      "after",
      [
        "",
        "Without a configuration the embedded local stack listens on 127.0.0.1: chain 8545, service 3000, metrics 9464,",
        "admin 3001, bundler 4337 (environment variables move them: docs/configuration.md#local-stack-ports).",
        "Serves until Ctrl-C (SIGINT) or SIGTERM, then drains in-flight requests and exits 0.",
      ].join("\n"),
    )
    .action(async (options: { watch: boolean }) => {
      const { config, database } = program.opts<GlobalOptions>();
      if (database !== undefined) throw new CannotStart("--database is for the operator commands: the service takes its database from the configuration (databasePath, or DATABASE_URL)", 2);
      // Loaded here: the operator commands need none of the service's modules.
      const { serve, stopOnSignals } = await import("../../lifecycle/serve.ts");
      let close: () => Promise<void>;
      try {
        close = await serve(config, options.watch, io);
      } catch (error) {
        const text = error instanceof Error ? error.message : String(error);
        throw new CannotStart(scrubText(text), error instanceof ConfigError ? 2 : 1);
      }
      stopOnSignals(close, io);
    });
}
