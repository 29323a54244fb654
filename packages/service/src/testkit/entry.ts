/**
 * What `@paymaster/service/testkit` loads (package.json's exports; its types are ./index.ts's): the Node
 * version check first, then the testkit. Module requests run in source order, so on too old a Node the user's
 * import fails with what to install instead of on the first API that Node lacks.
 */
import "../runtime/supportedNode.ts";
export * from "./index.ts";
