#!/usr/bin/env node
// The `paymaster` command of the installed package (compiled JS in dist/, built by `pnpm build`): the same
// command line as `pnpm paymaster` in the repository (src/cli/program.ts, docs/cli.md), `paymaster start` included.
// First the Node version (src/runtime/nodeVersion.ts): on too old a Node, say what to install rather than fail on a
// missing node:sqlite. No --disable-warning in the shebang: a Node too old to know that flag would refuse to start
// before this check, and node:sqlite's warning is dropped where it is loaded (src/runtime/sqlite.ts).
import { unsupportedNodeMessage } from "../dist/runtime/nodeVersion.js";

const unsupported = unsupportedNodeMessage(process.versions.node);
if (unsupported) {
  process.stderr.write(`paymaster: ${unsupported}\n`);
  process.exit(1);
}
await import("../dist/cli/main.js");
