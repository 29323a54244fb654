/**
 * One deadline for a client's call. A JSON-RPC call to a door may make several chain calls one after another (a
 * sponsorship simulates its op twice); each has its own deadline (`rpcDeadlineMs`, src/chain/rpc.ts), so a
 * provider that rate-limits every other call could have each of them wait for a cool-down in turn, and the
 * client's answer come after the sum of those waits (3.2 s where the bound is 2 s). The door gives its call one
 * deadline (`rpcDeadlineMs` from the call's arrival) and hands the handler a view of the network that keeps it:
 *
 * - the call's own chain calls (through the view's RPC client) wait for a cool-down only when the attempt after it
 *   still fits before that deadline too; past it a limited upstream fails the chain call at once (CHAIN_UNAVAILABLE,
 *   rate_limited), while one that is not cooling down is still asked (a deadline for waits, not for answers);
 * - what the call awaits of the network's shared reads (the market's snapshot and clocks, the per-block reads, the
 *   deposit guard, prices: they keep the network's own client, as they serve every call) is awaited past the
 *   deadline only while some upstream is usable: when every upstream that answers is cooling down, the call gets
 *   the rate-limited CHAIN_UNAVAILABLE then, and the read goes on for whoever else needs it.
 *
 * Passed explicitly (a view of the network and its chain), not through AsyncLocalStorage, whose promise hooks
 * would cost every promise of the process (see src/timing.ts).
 */
import type { NetworkChain, NetworkRuntime } from "../context.ts";
import type { ChainRpc } from "../chain/rpc.ts";

/**
 * A client's call's deadline (performance.now() time) while the call runs; undefined once it has answered, so a
 * read closure kept beyond it (a per-block read the call started is refreshed later with its closure) waits as
 * any call of the network does.
 */
export interface CallDeadline {
  at: number | undefined;
}

/** `rpc` whose calls wait for a rate-limited upstream only within the call's deadline. */
export function rpcWithin(rpc: ChainRpc, deadline: CallDeadline): ChainRpc {
  return {
    ...rpc,
    request: (method, params, options) => rpc.request(method, params, deadline.at === undefined ? options : { waitUntil: deadline.at, ...options }),
  };
}

/** Past the deadline, how often an awaited shared read looks again whether every upstream is cooling down. */
const RECHECK_MS = 50;

/** `pending`, given up at the deadline (or later) when `rpc` has no usable upstream, every one cooling down. */
function bounded<T>(rpc: ChainRpc, deadline: CallDeadline, pending: Promise<T>): Promise<T> {
  if (deadline.at === undefined) return pending;
  const at = deadline.at;
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const check = (): void => {
      const limited = rpc.rateLimited();
      if (limited) reject(limited);
      else timer = setTimeout(check, RECHECK_MS).unref();
    };
    timer = setTimeout(check, Math.max(0, at - performance.now())).unref();
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** `chain` as one client's call sees it (see the file's comment). */
export function chainWithin(chain: NetworkChain, deadline: CallDeadline): NetworkChain {
  const { rpc, market, blockReads, deposits, prices } = chain;
  const within = <T>(pending: Promise<T>) => bounded(rpc, deadline, pending);
  return {
    ...chain,
    rpc: rpcWithin(rpc, deadline),
    market: {
      ...market,
      current: () => within(market.current()),
      freshClocks: () => {
        const read = market.freshClocks();
        return read && within(read);
      },
    },
    blockReads: { ...blockReads, value: (key, block, read) => within(blockReads.value(key, block, read)), fresh: (key, block, read) => within(blockReads.fresh(key, block, read)) },
    deposits: { ...deposits, deposit: (...args) => within(deposits.deposit(...args)), check: (args) => within(deposits.check(args)) },
    prices: { ...prices, usd: (source) => within(prices.usd(source)) },
  };
}

/**
 * `network` as one client's call sees it: its chain (once the pre-flight passed, read when asked) keeps the call's
 * deadline, `deadlineMs` from now, until `end()` (when the call has answered). Everything else is the network's
 * own (a view, not a copy).
 */
export function networkForCall(network: NetworkRuntime, deadlineMs: number): { network: NetworkRuntime; end(): void } {
  const deadline: CallDeadline = { at: performance.now() + deadlineMs };
  let seen: NetworkChain | undefined;
  let view: NetworkChain | undefined;
  const forCall = Object.create(network, {
    chain: {
      get(): NetworkChain | undefined {
        const chain = network.chain;
        if (chain !== seen) {
          seen = chain;
          view = chain && chainWithin(chain, deadline);
        }
        return view;
      },
    },
  }) as NetworkRuntime;
  return { network: forCall, end: () => (deadline.at = undefined) };
}
