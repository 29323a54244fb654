/**
 * The settlement watcher of one network: one pass at once, then every pollMs (pass.ts runs the steps). A pass:
 *
 * 1. Reorg check (reorg.ts). The cursor (the last block fully processed) is stored with its block hash; a cursor
 *    block with another hash means a reorg: the settlements and deposit credits of the reorg window
 *    (`reorgDepth` blocks) whose block is gone are undone, and the window is rescanned.
 * 2. Scan (scan.ts), match (match.ts), settle (settle.ts), credit (credit.ts). Confirmed blocks (cursor+1 ..
 *    head - confirmations) are read in bounded ranges: the EntryPoints' UserOperationEvents whose paymaster is one
 *    of ours are matched to sponsorships by userOpHash and settled at their actualGasCost (USD at the current
 *    native price; ERC-20 mode: the paymaster's TokenCharged amount); with a deposit address, the range's
 *    transactions to it (value > 0, status 1) are credited to their sender's gas tank; with a deposit contract
 *    (GasTankDeposit), its Deposited events (eth_getLogs, so internal calls count: a smart account funding its own
 *    tank) are credited to the event's sender. The cursor moves to the end of a range only once the whole range
 *    is processed.
 *    Everything is idempotent (settling a settled sponsorship, crediting a known reference), so a crash
 *    anywhere at worst rescans a range.
 * 3. Expiry. Once caught up, reservations whose signature expired unused are released after a grace period.
 *
 * This file is the loop: passes serialised (the poller's and `tick()`'s), one log line per change of state,
 * and the stop. What the watcher keeps between passes is one WatcherState (state.ts).
 */
import { failureFields } from "../dependencies/failure.ts";
import type { WatcherOptions } from "./options.ts";
import { tracedPass } from "./pass.ts";
import { createWatcherState, type StartWatcherArgs, type TickResult, type WatcherState } from "./state.ts";

export { WATCHER_DEFAULTS, cursorNames, depositReference, watcherOptions, type WatcherOptions } from "./options.ts";
export type { StartWatcherArgs, TickResult } from "./state.ts";

export interface Watcher {
  readonly network: string;
  readonly options: Readonly<WatcherOptions>;
  /** One pass (serialised with the poller's). Throws what the chain or store threw. */
  tick(): Promise<TickResult>;
  /** Stops polling and waits for a tick in progress. */
  stop(): Promise<void>;
}

/** Starts polling at once (unless options.poll is false); throws when the network has no chain access or an option is unusable. */
export function startWatcher(args: StartWatcherArgs): Watcher {
  const state = createWatcherState(args);
  // The first pass at once, then every pollMs.
  if (state.options.poll !== false) void poll(state).finally(() => schedule(state));
  return {
    network: state.name,
    options: state.options,
    tick: () => tick(state),
    stop: () => stop(state),
  };
}

/** One pass, after the one queued before it: passes never overlap (each swaps in its traced store and client). */
function tick(state: WatcherState): Promise<TickResult> {
  const pass = () => tracedPass(state);
  const run = state.queue.then(pass, pass);
  state.queue = run.catch(() => undefined);
  return run;
}

/** The poller's pass: told to the observer; one log line per state change (the first failure, a different one, the recovery). */
function poll(state: WatcherState): Promise<void> {
  return tick(state).then(
    (result) => {
      state.observer?.passed(result);
      if (state.failing !== undefined) state.logger.info({ was: state.failing }, "settlement watcher recovered");
      state.failing = undefined;
    },
    (error: unknown) => {
      state.observer?.failed();
      // One line per outage: the problem reads the same for the same reason and cause (never a stack).
      const fields = failureFields(error);
      if (fields.problem !== state.failing) state.logger.warn(fields, "settlement pass failed: retrying every pollMs");
      state.failing = fields.problem;
    },
  );
}

/** The next poll, pollMs after the last one ended. */
function schedule(state: WatcherState): void {
  if (state.stopped) return;
  state.timer = setTimeout(() => {
    state.timer = undefined;
    void poll(state).finally(() => schedule(state));
  }, state.options.pollMs);
  state.timer.unref();
}

async function stop(state: WatcherState): Promise<void> {
  state.stopped = true;
  if (state.timer !== undefined) clearTimeout(state.timer);
  state.timer = undefined;
  await state.queue;
}
