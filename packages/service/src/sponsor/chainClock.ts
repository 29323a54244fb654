/**
 * The signature's validity window on a chain whose clock moves at will (a development chain: evm_increaseTime,
 * blocks mined faster than one a second; src/chain/market.ts). A request computes its window from the market
 * snapshot it already holds (no round trip), while the chain's clocks — the latest and the pending block's
 * timestamps — are read beside its chain work. Before the op is reserved (and so before its signature leaves) the
 * window must hold them (the commit step awaits the check): the op must be valid at the block simulations run at
 * and at the one it will land in. When it does not (the clock moved since
 * the snapshot), or when the run was refused while the fresh clocks lie outside the window it used (a simulation
 * that met the moved clock: AA32), the request runs once more on the fresh clocks. So the common case costs no
 * round trip on the critical path, and a moved clock costs one run more.
 */
import type { ChainClocks } from "../chain/market.ts";
import type { CallContext } from "../context.ts";
import { validityWindow } from "./validityWindow.ts";
import { chainWait } from "../timing.ts";

type Window = { readonly validAfter: number; readonly validUntil: number };

/** Checks, before the reservation, that the chain's clocks fall inside `window` (throws ClockMoved when not). */
export type WindowCheck = (window: Window) => Promise<void>;

/** The chain's clock lies outside the window a run computed: run again on these clocks. Never reaches a client. */
export class ClockMoved extends Error {
  override name = "ClockMoved";
  readonly clocks: ChainClocks;
  constructor(clocks: ChainClocks) {
    super("the chain's clock moved out of the request's validity window");
    this.clocks = clocks;
  }
}

/** What a bundler asks of validUntil beyond the block an op lands in. */
const LANDING_MARGIN_SECONDS = 30;

/** Whether an op signed for `window` is valid at the chain's latest block and, with a margin, at its next one. */
export function coversClocks(window: Window, clocks: ChainClocks): boolean {
  const next = clocks.nextBlockAt ?? clocks.chainNow;
  return window.validAfter <= clocks.chainNow && clocks.chainNow <= window.validUntil && window.validAfter <= next && next + LANDING_MARGIN_SECONDS <= window.validUntil;
}

/** The check of a run on fresh clocks, or of a chain whose clock only moves with the wall clock: none. */
export const NO_CHECK: WindowCheck = async () => {};

/** Runs `run` on the snapshot's clock, and once more on fresh clocks when the chain's clock moved out of its window. */
export async function onTheChainsClock<T>(call: CallContext, run: (clocks: ChainClocks | undefined, check: WindowCheck) => Promise<T>): Promise<T> {
  const fresh = call.network.chain?.market.freshClocks();
  if (fresh === undefined) return run(undefined, NO_CHECK);
  const read = fresh.catch(() => undefined); // a failed read: the window is not second-guessed
  const check: WindowCheck = async (window) => {
    const clocks = await chainWait(call.timing, () => read);
    if (clocks !== undefined && !coversClocks(window, clocks)) throw new ClockMoved(clocks);
  };
  try {
    return await run(undefined, check);
  } catch (error) {
    const clocks = error instanceof ClockMoved ? error.clocks : await read;
    if (clocks === undefined || (!(error instanceof ClockMoved) && coversClocks(await snapshotWindow(call), clocks))) throw error;
    return run(clocks, NO_CHECK);
  }
}

/** The window a run computed on the snapshot's clock (src/sponsor/steps/target.ts). */
async function snapshotWindow(call: CallContext): Promise<Window> {
  const market = await call.network.chain!.market.current();
  return validityWindow({ wallNow: call.service.now(), chainNow: market.timestamp, ttlSeconds: call.service.config.signatureTtlSeconds });
}
