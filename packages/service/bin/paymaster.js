#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
// The `paymaster` command of the installed package (compiled JS in dist/, built by `pnpm build`):
//   paymaster start [--config <file>] [--no-watch]   the service (with no configuration: the embedded local stack)
//   paymaster <command> …                            the operator CLI (src/cli/program.ts, docs/cli.md)
// In the repository, `pnpm start` and `pnpm paymaster` run the TypeScript sources directly.
if (process.argv[2] === "start") {
  process.argv.splice(2, 1);
  await import("../dist/main.js");
} else {
  await import("../dist/cli/main.js");
}
