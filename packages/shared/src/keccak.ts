// keccak256 of hex byte strings: the native XKCP addon of the `keccak` package when it loads (its
// prebuilt N-API binary; ~10x faster than JS here, and the service hashes on every sponsorship), else
// viem's pure-JS keccak (noble). Both give identical results (test/keccak.test.ts).
import { createRequire } from "node:module";
import path from "node:path";
import { keccak256 as keccak256Viem } from "viem/utils";
import type { Hex } from "./types.ts";

/** The addon's raw sponge (keccak/src/addon.cc); its own JS wrapper is a Transform stream per hash, too heavy here. */
interface KeccakState {
  initialize(rate: number, capacity: number): void;
  absorb(data: Buffer): void;
  squeeze(length: number): Buffer;
}

function loadNative(): KeccakState | undefined {
  try {
    const require = createRequire(import.meta.url);
    const packageJson = require.resolve("keccak/package.json");
    // The same loader the package's own bindings.js uses, resolved from the package so pnpm's layout finds it.
    const nodeGypBuild = createRequire(packageJson)("node-gyp-build") as (dir: string) => unknown;
    const State = nodeGypBuild(path.dirname(packageJson));
    if (typeof State !== "function") return undefined;
    const state = new (State as new () => KeccakState)();
    // Self-check against a known vector before trusting it: keccak256 of the empty string.
    state.initialize(1088, 512);
    state.absorb(Buffer.alloc(0));
    const empty = state.squeeze(32).toString("hex");
    return empty === "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470" ? state : undefined;
  } catch {
    return undefined;
  }
}

// One sponge, re-initialized per hash: every use below is synchronous, so calls never interleave.
const native = loadNative();

/** Which implementation hashes: "native" (XKCP addon) or "js" (viem/noble). */
export const keccakImplementation: "native" | "js" = native ? "native" : "js";

/** keccak256 with viem (pure JS); the fallback, and the reference the tests compare the addon with. */
export function keccak256Js(hex: Hex): Hex {
  return keccak256Viem(hex);
}

/** keccak256 with the addon, or undefined when it did not load. `hex` must be valid even-length hex. */
export function keccak256Native(hex: Hex): Hex | undefined {
  if (!native) return undefined;
  native.initialize(1088, 512); // keccak256: rate 1088 bits, capacity 512; squeeze pads with 0x01
  native.absorb(Buffer.from(hex.slice(2), "hex"));
  return `0x${native.squeeze(32).toString("hex")}`;
}

/**
 * keccak256 of a byte string given as 0x-hex (lowercase 0x-hex result). Callers pass validated, even-length
 * hex (the abi word helpers check it): Buffer's hex parser would stop silently at a bad digit.
 */
export const keccak256: (hex: Hex) => Hex = native ? (keccak256Native as (hex: Hex) => Hex) : keccak256Js;
