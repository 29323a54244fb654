/**
 * The eth-infinitism artifacts shipped in the npm packages (their bytecode is the canonical deployment),
 * loaded at run time from node_modules.
 */
import { createRequire } from "node:module";

export interface ShippedArtifact {
  contractName: string;
  abi: readonly Record<string, unknown>[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
}

const require = createRequire(import.meta.url);
const cache = new Map<string, ShippedArtifact>();

/** Reads `<package>/artifacts/<name>.json` of the v0.6, v0.7 or v0.8 contracts package. */
export function loadShippedArtifact(version: "v06" | "v07" | "v08", name: string): ShippedArtifact {
  const id = `@account-abstraction/contracts-${version}/artifacts/${name}.json`;
  let artifact = cache.get(id);
  if (artifact === undefined) {
    const json = require(id) as ShippedArtifact;
    if (!json.bytecode?.startsWith("0x") || json.bytecode.length <= 2) throw new Error(`${id} has no bytecode`);
    artifact = json;
    cache.set(id, artifact);
  }
  return artifact;
}
