/**
 * One deadline for a client's call. A JSON-RPC call to a door may make several chain calls one after another (a
 * sponsorship simulates its op twice); each has its own deadline (`rpcDeadlineMs`, src/chain/rpc.ts), so a
 * provider that rate-limits every other call could have each of them wait for a cool-down in turn, and the
 * client's answer come after the sum of those waits (3.2 s where the bound is 2 s). The door gives its call one
 * deadline, and every chain call made through the network it hands over carries it: a cool-down is waited for
 * only when the attempt after it still fits before that deadline too, so the waits of one client's call add up to
 * at most one `rpcDeadlineMs`. Past it a limited upstream fails the call at once (CHAIN_UNAVAILABLE, rate_limited);
 * calls to an upstream that is not cooling down go on as before (a deadline for waits, not for answers).
 *
 * Passed explicitly (a view of the network, its chain and its RPC client), not through AsyncLocalStorage, whose
 * promise hooks would cost every promise of the process (see src/timing.ts). Reads shared between calls (the
 * market's snapshot, the per-block reads) keep the network's own client: they serve every call, not one.
 */
import type { NetworkChain, NetworkRuntime } from "../context.ts";
import type { ChainRpc } from "./rpc.ts";

/** `rpc` whose calls wait for a rate-limited upstream only within `waitUntil` (performance.now() time). */
export function rpcWithin(rpc: ChainRpc, waitUntil: number): ChainRpc {
  return { ...rpc, request: (method, params, options) => rpc.request(method, params, { waitUntil, ...options }) };
}

/** `chain` whose RPC client's calls wait for a cool-down only within `waitUntil`. */
export function chainWithin(chain: NetworkChain, waitUntil: number): NetworkChain {
  return { ...chain, rpc: rpcWithin(chain.rpc, waitUntil) };
}

/**
 * `network` as one client's call sees it: its chain (once the pre-flight passed, read when asked) waits for a
 * cool-down only within `deadlineMs` from now. Everything else is the network's own (a view, not a copy).
 */
export function networkForCall(network: NetworkRuntime, deadlineMs: number): NetworkRuntime {
  const waitUntil = performance.now() + deadlineMs;
  let seen: NetworkChain | undefined;
  let view: NetworkChain | undefined;
  return Object.create(network, {
    chain: {
      get(): NetworkChain | undefined {
        const chain = network.chain;
        if (chain !== seen) {
          seen = chain;
          view = chain && chainWithin(chain, waitUntil);
        }
        return view;
      },
    },
  }) as NetworkRuntime;
}
