// A seeded pseudo-random source for tests that draw many cases (fuzzing, random mixes of operations): the same
// seed gives the same cases, so a failure names its seed and reproduces.

/** mulberry32: a small deterministic PRNG; numbers in [0, 1). */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
