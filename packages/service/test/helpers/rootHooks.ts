// Mocha root hooks (loaded by .mocharc's `require`): the run's throwaway PostgreSQL and Redis stop when it ends.
import { stopTestServers } from "./testServers.ts";

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(30_000);
    await stopTestServers();
  },
};
