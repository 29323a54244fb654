/**
 * Imported for its effect, first, by an entry point: throws UnsupportedNodeError (saying what to install) on a Node
 * too old for the packages, before any other module runs into what that Node lacks (JSON.rawJSON, node:sqlite, …).
 */
import { assertSupportedNode } from "./nodeVersion.ts";

assertSupportedNode();
