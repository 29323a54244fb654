#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
// The operator command (see src/cli/program.ts); Node 22 runs the TypeScript sources directly.
import "../src/cli/main.ts";
