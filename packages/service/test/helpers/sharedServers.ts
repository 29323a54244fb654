// Mocha global fixtures for the whole suite's parallel run (package.json's test script loads this file with
// --require): PostgreSQL and Redis start once in mocha's main process, before its workers, which inherit their URLs
// from the environment (helpers/testServers.ts); they stop when the run ends. A single file run without it starts
// them lazily, in its one process, as before.
import { exportTestServers, stopTestServers } from "./testServers.ts";

export async function mochaGlobalSetup(): Promise<void> {
  await exportTestServers();
}

export async function mochaGlobalTeardown(): Promise<void> {
  await stopTestServers();
}
