/**
 * How many chain round trips a request waited for one after the other: the benches' "critical path" count.
 * The delaying forwarder (bench/forwarder.ts) records every chain call's [start, end]; the bench records each
 * request's window (sent, answered). A request's calls are those that began and ended inside its window (a
 * call it started but did not wait for, ending after its answer, is not on its path); its critical path is the
 * largest number of those calls that do not overlap one another (the longest chain of calls made one after the
 * other: two calls in flight together count once). Earliest-end-first picks that largest set.
 *
 * Read it in a sequential phase (one request at a time): with requests in parallel, a window also holds other
 * requests' calls. A background call (the per-block refreshes, the settlement watcher) that happens to fall
 * inside a window beside none of the request's own counts too: the count is an upper bound, and that
 * coincidence is rare at the benches' request lengths.
 */
export interface ChainCall {
  method: string;
  /** performance.now() of the recording process. */
  start: number;
  end: number;
  /** The node's answer time (from the forwarder, on loopback). */
  nodeMs: number;
  /** What the forwarder added to its round trip: its [start, end] less the node's answer time. */
  addedMs: number;
}

export interface RequestWindow {
  start: number;
  end: number;
}

export interface PathCount {
  /** Calls in the longest chain of non-overlapping calls. */
  sequential: number;
  /** All calls inside the window. */
  total: number;
  /** The chain's calls' methods, in order. */
  methods: string[];
}

/** The critical path of the request that ran in `window`, from every recorded call. */
export function criticalPath(calls: readonly ChainCall[], window: RequestWindow): PathCount {
  const inside = calls.filter((c) => c.start >= window.start && c.end <= window.end).sort((a, b) => a.end - b.end);
  const chain: ChainCall[] = [];
  for (const call of inside) if (chain.length === 0 || call.start >= chain.at(-1)!.end) chain.push(call);
  return { sequential: chain.length, total: inside.length, methods: chain.map((c) => c.method) };
}

/** p50 and p99 of `values`, in ms. */
function spread(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(1);
  return `p50 ${at(0.5)} / p99 ${at(0.99)} ms`;
}

/**
 * The round trip the forwarder really added per call (timers fire late on a loaded machine), and the node's
 * own answer time per JSON-RPC method: what a round trip costs beyond the distance.
 */
export function describeAddedDelay(calls: readonly ChainCall[]): string {
  if (calls.length === 0) return "no calls";
  const methods = [...new Set(calls.map((c) => c.method))].sort();
  const node = methods.map((m) => `${m} ${spread(calls.filter((c) => c.method === m).map((c) => c.nodeMs))}`).join(", ");
  return `${spread(calls.map((c) => c.addedMs))} over ${calls.length} calls; the node's own answer time: ${node}`;
}

/** One line: the critical path's mean, its distribution ("1×38 2×2") and the methods of the longest one seen. */
export function describePaths(counts: readonly PathCount[]): string {
  if (counts.length === 0) return "no requests";
  const mean = counts.reduce((sum, c) => sum + c.sequential, 0) / counts.length;
  const totalMean = counts.reduce((sum, c) => sum + c.total, 0) / counts.length;
  const histogram = new Map<number, number>();
  for (const c of counts) histogram.set(c.sequential, (histogram.get(c.sequential) ?? 0) + 1);
  const spread = [...histogram].sort(([a], [b]) => a - b).map(([n, times]) => `${n}×${times}`).join(" ");
  const longest = counts.reduce((a, b) => (b.sequential > a.sequential ? b : a));
  return `mean ${mean.toFixed(2)} (${spread}; longest: ${longest.methods.join(" → ") || "none"}), calls in the window ${totalMean.toFixed(2)}`;
}
