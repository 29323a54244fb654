// Trims a `pnpm deploy --prod` folder of @paymaster/service down to what the container image runs (Containerfile):
// the service serving its configured networks and the operator CLI. Dropped:
// - the embedded local stack's own dependencies, Hardhat (the local chain) and @pimlico/alto (the local bundler),
//   with everything only they need: the image always runs with a configuration (PAYMASTER_CONFIG), and both are
//   loaded on demand only without one (docs/operator-guide.md#container-image);
// - typescript, an optional peer of viem, abitype and ox used for their types only;
// - files nothing runs: source maps, type declarations, TypeScript sources (Node does not run .ts from
//   node_modules) and markdown.
// Usage: node image-prune.mjs <deployed folder>. Prints what it removed.
import { lstatSync, readdirSync, readlinkSync, realpathSync, rmSync, existsSync, statSync } from "node:fs";
import path from "node:path";

const root = path.resolve(process.argv[2] ?? "");
const store = path.join(root, "node_modules/.pnpm");
if (!existsSync(store)) {
  console.error(`image-prune: ${store} is not a pnpm deploy's store`);
  process.exit(1);
}
const DROPPED = new Set(["hardhat", "@pimlico/alto", "typescript"]);
const JUNK = /(\.map|\.d\.ts|\.d\.mts|\.d\.cts|\.md|(?<!\.d)\.ts|\.mts|\.cts)$/;

/** The entries of a node_modules folder (scoped ones as `@scope/name`), with their paths. */
function entries(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (name.startsWith(".")) return [];
    if (name.startsWith("@")) return readdirSync(path.join(dir, name)).map((sub) => [`${name}/${sub}`, path.join(dir, name, sub)]);
    return [[name, path.join(dir, name)]];
  });
}

// Reachable store folders (.pnpm/<id>), from the deployed package's own node_modules, not through DROPPED names.
// In pnpm's layout a package's dependencies are the links beside it in its .pnpm/<id>/node_modules.
const reachable = new Set();
const queue = entries(path.join(root, "node_modules")).filter(([name]) => !DROPPED.has(name));
while (queue.length) {
  const [, link] = queue.pop();
  let real;
  try {
    real = realpathSync(link);
  } catch {
    continue;
  }
  const relative = path.relative(store, real);
  if (relative.startsWith("..")) continue;
  const id = relative.split(path.sep)[0];
  if (reachable.has(id)) continue;
  reachable.add(id);
  for (const entry of entries(path.join(store, id, "node_modules"))) if (!DROPPED.has(entry[0])) queue.push(entry);
}

let removedPackages = 0;
for (const id of readdirSync(store)) {
  if (id === "node_modules" || id.startsWith(".") || reachable.has(id)) continue;
  rmSync(path.join(store, id), { recursive: true, force: true });
  removedPackages++;
}
// Links left pointing at removed folders (the deployed package's own, pnpm's hoisted .pnpm/node_modules, siblings).
function removeDangling(dir) {
  for (const [, link] of entries(dir)) {
    if (lstatSync(link).isSymbolicLink() && !existsSync(link)) rmSync(link);
  }
}
removeDangling(path.join(root, "node_modules"));
removeDangling(path.join(store, "node_modules"));
for (const id of reachable) removeDangling(path.join(store, id, "node_modules"));

let removedBytes = 0;
function prune(dir) {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const stat = lstatSync(file);
    if (stat.isSymbolicLink()) continue;
    if (stat.isDirectory()) prune(file);
    else if (JUNK.test(name)) {
      removedBytes += stat.size;
      rmSync(file);
    }
  }
}
prune(store);
prune(path.join(root, "dist"));
console.log(`image-prune: kept ${reachable.size} packages, removed ${removedPackages} and ${(removedBytes / 1e6).toFixed(0)} MB of maps, declarations, sources and markdown`);
