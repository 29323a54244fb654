#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
// The `paymaster` command of the installed package (compiled JS in dist/, built by `pnpm build`): the same
// command line as `pnpm paymaster` in the repository (src/cli/program.ts, docs/cli.md), `paymaster start` included.
await import("../dist/cli/main.js");
