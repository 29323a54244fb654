#!/usr/bin/env node
// The `paymaster` command of the installed package (compiled JS in dist/, built by `pnpm build`):
//   paymaster start [--config <file>] [--no-watch]   the service (with no configuration: the embedded local stack)
//   paymaster <command> …                            the operator CLI (src/cli/program.ts, docs/cli.md)
// In the repository, `pnpm start` and `pnpm paymaster` run the TypeScript sources directly.
// First the Node version (src/runtime/nodeVersion.ts): on too old a Node, say what to install rather than fail on a
// missing node:sqlite. No --disable-warning in the shebang: a Node too old to know that flag would refuse to start
// before this check, and node:sqlite's warning is dropped where it is loaded (src/runtime/sqlite.ts).
import { unsupportedNodeMessage } from "../dist/runtime/nodeVersion.js";

const unsupported = unsupportedNodeMessage(process.versions.node);
if (unsupported) {
  process.stderr.write(`paymaster: ${unsupported}\n`);
  process.exit(1);
}
if (process.argv[2] === "start") {
  process.argv.splice(2, 1);
  await import("../dist/main.js");
} else {
  await import("../dist/cli/main.js");
}
