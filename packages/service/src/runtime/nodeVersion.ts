/**
 * Which Node.js runs the packages, checked before anything loads `node:sqlite` (on too old a Node that import
 * fails with "No such built-in module: node:sqlite", saying nothing of what to do). The minimum is the first Node
 * whose node:sqlite has what the store uses: no flag needed from 22.13, and `DatabaseSync#isTransaction` (the
 * store's rollback after a failed transaction) from 22.16 on the 22 line and 24.0 on the next (23.x never had it).
 * package.json's `engines` says the same (test/nodeVersion.test.ts holds them together).
 */

/** The oldest supported release of each supported major line; majors above the last one are all supported. */
export const SUPPORTED_NODE_LINES: readonly (readonly [major: number, minor: number, patch: number])[] = [
  [22, 16, 0],
  [24, 0, 0],
];

/** The `engines.node` range those lines make. */
export const NODE_ENGINES_RANGE = "^22.16.0 || >=24.0.0";

/** [major, minor, patch] of "22.16.0" or "v22.16.0"; undefined when it is not a version. */
export function parseNodeVersion(version: string): [number, number, number] | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

/** Whether `version` is at or above the oldest release of its line (a major between the supported lines is not). */
export function isSupportedNode(version: string): boolean {
  const parsed = parseNodeVersion(version);
  if (!parsed) return false;
  const [major] = parsed;
  const last = SUPPORTED_NODE_LINES[SUPPORTED_NODE_LINES.length - 1]!;
  const line = major > last[0] ? last : SUPPORTED_NODE_LINES.find(([m]) => m === major);
  if (!line) return false;
  for (let i = 0; i < 3; i++) {
    if (parsed[i]! !== line[i]!) return parsed[i]! > line[i]!;
  }
  return true;
}

/** What to tell someone on `version`, or undefined when it will do. */
export function unsupportedNodeMessage(version: string): string | undefined {
  if (isSupportedNode(version)) return undefined;
  return `@paymaster/service needs Node.js 22.16 or later on the 22 line, or 24 or later (this is Node.js ${version.startsWith("v") ? version : `v${version}`}, whose node:sqlite is missing or lacks what the store uses): install Node.js 22 LTS or 24 LTS (https://nodejs.org, or \`nvm install 22\`) and run this again`;
}

/** Too old a Node, as an error whose message is the whole story (its stack would only show our internals). */
export class UnsupportedNodeError extends Error {
  override name = "UnsupportedNodeError";
  constructor(message: string) {
    super(message);
    this.stack = `${this.name}: ${message}`;
  }
}

/** Throws UnsupportedNodeError on an unsupported Node (a library's check: the caller's process decides what to do). */
export function assertSupportedNode(version: string = process.versions.node): void {
  const message = unsupportedNodeMessage(version);
  if (message) throw new UnsupportedNodeError(message);
}
