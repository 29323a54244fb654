/**
 * Where a request's time goes: wall time spent waiting on the chain versus the service's own work. The
 * HTTP layer opens a Timing per request and hands it down with the call (CallContext.timing), chain calls
 * add their waits to it, and the response reports both in a `Server-Timing` header (the bench reads it).
 * Passed explicitly rather than through AsyncLocalStorage, whose promise hooks cost every promise of the
 * process (~8% of a sponsorship's CPU, measured).
 */

export class Timing {
  readonly startedAt = process.hrtime.bigint();
  chainNs = 0n;
  chainCalls = 0;

  /** Total elapsed, chain-wait and own nanoseconds so far. */
  snapshot(): { totalNs: bigint; chainNs: bigint; ownNs: bigint; chainCalls: number } {
    const totalNs = process.hrtime.bigint() - this.startedAt;
    return { totalNs, chainNs: this.chainNs, ownNs: totalNs - this.chainNs, chainCalls: this.chainCalls };
  }

  /** `Server-Timing` header value: chain and own durations in milliseconds. */
  serverTiming(): string {
    const { chainNs, ownNs, chainCalls } = this.snapshot();
    const ms = (ns: bigint) => (Number(ns) / 1e6).toFixed(3);
    return `chain;dur=${ms(chainNs)};desc="${chainCalls} waits", own;dur=${ms(ownNs)}`;
  }
}

/**
 * Runs `call` and awaits it, counting it as chain time of the request's `timing` (if any): the wait, and also
 * the synchronous work of making the calls (encoding calldata, building the JSON-RPC requests), which is the
 * cost of a chain call rather than of the service's own decisions.
 */
export async function chainWait<T>(timing: Timing | undefined, call: () => Promise<T>): Promise<T> {
  if (!timing) return call();
  const start = process.hrtime.bigint();
  timing.chainCalls++;
  try {
    return await call();
  } finally {
    timing.chainNs += process.hrtime.bigint() - start;
  }
}
