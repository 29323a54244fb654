/**
 * The benchmarks' local chain: the contracts package's start-local in its own process (so its work never
 * lands in the bench process's CPU figures), with the whole stack deployed and the manifest written.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Hex } from "@paymaster/shared";

export interface ChainProcess {
  url: string;
  signerKey: Hex;
  pid: number | undefined;
  stop(): void;
}

/** Starts the chain process and waits for its RPC URL and signer key. */
export async function startChainProcess(manifestPath: string): Promise<ChainProcess> {
  const script = fileURLToPath(new URL("../../contracts/scripts/start-local.ts", import.meta.url));
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, LOCAL_CHAIN_PORT: "0", MANIFEST_PATH: manifestPath },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // However the bench ends (a thrown error included), the chain process ends with it.
  process.once("exit", () => child.kill("SIGINT"));
  let output = "";
  const ready = await new Promise<{ url: string; signerKey: Hex }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the chain process did not start: ${output}`)), 90_000);
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const url = /Local chain\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      const signerKey = /Signer key\s+(0x[0-9a-fA-F]{64})/.exec(output)?.[1] as Hex | undefined;
      if (url && signerKey && output.includes("Ready in")) {
        clearTimeout(timer);
        resolve({ url, signerKey });
      }
    });
    child.on("exit", (code) => reject(new Error(`the chain process exited (${code}): ${output}`)));
  });
  return { ...ready, pid: child.pid, stop: () => child.kill("SIGINT") };
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

/**
 * CPU seconds a process has used so far (Linux /proc), or NaN elsewhere: the sum of its threads' run time in
 * nanoseconds (/proc/PID/task/TID/schedstat; V8's and libuv's helper threads included), else its user +
 * system time in 10 ms ticks (/proc/PID/stat), too coarse for a few hundred requests.
 */
export function cpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined || !existsSync(`/proc/${pid}/stat`)) return NaN;
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    if (Number.isFinite(ns) && ns > 0) return ns / 1e9;
  } catch {
    // a thread ended while listed, or no schedstat: the ticks below
  }
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
