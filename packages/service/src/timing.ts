/**
 * Where a request's time goes: wall time spent waiting on the chain versus the service's own work. The
 * HTTP layer opens a Timing per request and hands it down with the call (CallContext.timing), chain calls
 * add their waits to it, and the response reports both in a `Server-Timing` header (the bench reads it).
 * Passed explicitly rather than through AsyncLocalStorage, whose promise hooks cost every promise of the
 * process (~8% of a sponsorship's CPU, measured).
 */

export class Timing {
  readonly startedAt = process.hrtime.bigint();
  /** Time during which at least one chain wait was in flight (waits that overlap count once). */
  #chainNs = 0n;
  chainCalls = 0;
  #inFlight = 0;
  #since = 0n;
  /** Time spent waiting on an external signer (a PKCS#11 token: its queue and its signing), apart from the chain. */
  signerNs = 0n;
  signerWaits = 0;

  get chainNs(): bigint {
    return this.#inFlight > 0 ? this.#chainNs + (process.hrtime.bigint() - this.#since) : this.#chainNs;
  }

  /** A chain wait starts. */
  begin(): void {
    this.chainCalls++;
    if (this.#inFlight++ === 0) this.#since = process.hrtime.bigint();
  }

  /** A chain wait ends. */
  end(): void {
    if (--this.#inFlight === 0) this.#chainNs += process.hrtime.bigint() - this.#since;
  }

  /** Total elapsed, chain-wait, signer-wait and own nanoseconds so far. */
  snapshot(): { totalNs: bigint; chainNs: bigint; signerNs: bigint; ownNs: bigint; chainCalls: number } {
    const totalNs = process.hrtime.bigint() - this.startedAt;
    const chainNs = this.chainNs;
    return { totalNs, chainNs, signerNs: this.signerNs, ownNs: totalNs - chainNs - this.signerNs, chainCalls: this.chainCalls };
  }

  /** `Server-Timing` header value: chain, signer (when an external signer was waited on) and own durations in milliseconds. */
  serverTiming(): string {
    const { chainNs, signerNs, ownNs, chainCalls } = this.snapshot();
    const ms = (ns: bigint) => (Number(ns) / 1e6).toFixed(3);
    const signer = this.signerWaits > 0 ? `, signer;dur=${ms(signerNs)}` : "";
    return `chain;dur=${ms(chainNs)};desc="${chainCalls} waits"${signer}, own;dur=${ms(ownNs)}`;
  }
}

/**
 * Runs `call` and awaits it, counting it as chain time of the request's `timing` (if any): the wait, and also
 * the synchronous work of making the calls (encoding calldata, building the JSON-RPC requests), which is the
 * cost of a chain call rather than of the service's own decisions. Work the service does while a wait is in
 * flight (the store's, alongside the final simulation) is inside the wait: it adds nothing to the request's time.
 */
export async function chainWait<T>(timing: Timing | undefined, call: () => Promise<T>): Promise<T> {
  if (!timing) return call();
  timing.begin();
  try {
    return await call();
  } finally {
    timing.end();
  }
}
