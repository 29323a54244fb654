// @pimlico/alto, a real ERC-4337 bundler, for the tests that run inside a loopback-only network namespace
// (scripts/netns-test.sh). It is started by the local stack's own launcher (src/local/bundler.ts: bound to
// 127.0.0.1 by its preload, checked in the socket table); the tests run it in the namespace all the same.
import type { ChildProcess } from "node:child_process";
import { networkInterfaces } from "node:os";
import { startLocalBundler, stopChild } from "../../src/local/bundler.ts";

export { altoPackageDir, stopChild } from "../../src/local/bundler.ts";
export { freeLoopbackPort } from "../../src/local/ports.ts";

/** Only the loopback interface exists (a fresh network namespace). */
export function onlyLoopback(): boolean {
  const names = Object.keys(networkInterfaces());
  return names.length > 0 && names.every((name) => name === "lo");
}

/** Starts alto against `rpcUrl` and waits until it answers. */
export async function startAlto(options: { rpcUrl: string; entryPoints: string[]; executorKey: string; utilityKey: string; port?: number }): Promise<{ alto: ChildProcess; url: string }> {
  if (!onlyLoopback()) {
    throw new Error(`the tests start alto inside a loopback-only network namespace only (found interfaces: ${Object.keys(networkInterfaces()).join(", ")}); use scripts/netns-test.sh`);
  }
  const bundler = await startLocalBundler({ ...options, ...(process.env.ALTO_LOG_LEVEL ? { logLevel: process.env.ALTO_LOG_LEVEL } : {}) });
  return { alto: bundler.child, url: bundler.url };
}

export const stopAlto = (alto: ChildProcess | undefined): Promise<void> => stopChild(alto);
