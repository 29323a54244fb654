/**
 * Whether the database works, as the store's own traffic shows it: every statement a driver runs reports its
 * outcome here (answered, or failed for want of the database: a StoreUnavailableError). The state is what
 * /ready, the metrics and the log lines report (src/server.ts), and what the PostgreSQL driver fails fast on.
 *
 *   up                     the last statements answered
 *   down, scope "all"      the database cannot be reached (refused, timeout, connection, dns, auth) or its disk
 *                          fails (io, corrupt)
 *   down, scope "writes"   reads answer but writes fail (disk_full, read_only): a read-only probe would stay green
 *
 * A failure of load (busy: no free connection, a lock held elsewhere) fails its request but changes nothing here.
 * One state is for good: "writes", cause schema_too_new (`outdated`), once a newer version of the service migrated
 * the database under this running one; only a restart on the new version ends it, so no probe runs and no answer
 * brings it up.
 * While down, a probe runs every PROBE_MS (a read, or a write while only writes fail) so the state comes back up
 * without traffic and without a restart; any statement that answers (a write, while writes failed) brings it up too.
 */
import { LOAD_CAUSES, WRITE_CAUSES, type StoreCause, type StoreUnavailableError } from "./unavailable.ts";

export type StoreScope = "all" | "writes";

export type StoreState =
  | { readonly up: true }
  | {
      readonly up: false;
      readonly scope: StoreScope;
      readonly cause: StoreCause;
      /** When it went down (Unix ms). */
      readonly since: number;
      /** The driver's words for the failure (log and admin only). */
      readonly detail: string;
    };

/** What the rest of the service reads of the store's health. */
export interface StoreHealth {
  state(): StoreState;
  /** Called at each state change (down, a different cause or scope, up again). */
  onChange(listener: (now: StoreState, before: StoreState) => void): void;
  /** Called for every statement that failed for want of the database (load included): the metrics count them. */
  onFailure(listener: (cause: StoreCause) => void): void;
  /** A newer version of the service migrated the database: this process reserves nothing from now on (for good). */
  outdated(detail: string): void;
}

/** How often a store that is down is probed. */
export const PROBE_MS = 200;

const UP: StoreState = Object.freeze({ up: true });

/** The state that is for good: a newer version of the service migrated the database under this one (`outdated`). */
function isOutdated(state: StoreState): boolean {
  return !state.up && state.cause === "schema_too_new";
}

/** "the database refuses connections (refused) since 12:00:01Z", for /ready and the status pages. */
export function describeStoreState(state: StoreState): string | undefined {
  if (state.up) return undefined;
  if (isOutdated(state)) return `migrated by a newer version of the service (schema_too_new) since ${new Date(state.since).toISOString()}: this replica reserves nothing; upgrade it`;
  const what = state.scope === "writes" ? "writes fail" : "unavailable";
  return `${what} (${state.cause}) since ${new Date(state.since).toISOString()}`;
}

/** The state machine the drivers report to; `probe` is set once the database is open (it runs through the driver). */
export class StoreAvailability implements StoreHealth {
  #state: StoreState = UP;
  readonly #changeListeners: ((now: StoreState, before: StoreState) => void)[] = [];
  readonly #failureListeners: ((cause: StoreCause) => void)[] = [];
  #probe: ((scope: StoreScope) => Promise<unknown>) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #probeMs: number;

  constructor(probeMs = PROBE_MS) {
    this.#probeMs = probeMs;
  }

  state(): StoreState {
    return this.#state;
  }

  onChange(listener: (now: StoreState, before: StoreState) => void): void {
    this.#changeListeners.push(listener);
  }

  onFailure(listener: (cause: StoreCause) => void): void {
    this.#failureListeners.push(listener);
  }

  /** How to probe the database while it is down (a failed probe reports itself like any statement). */
  setProbe(probe: (scope: StoreScope) => Promise<unknown>): void {
    this.#probe = probe;
  }

  /** A statement answered; `wrote`: it changed the database (a write, a COMMIT after writes). The hot path: one check when up. */
  answered(wrote: boolean): void {
    if (this.#state.up) return;
    if ((this.#state.scope === "writes" && !wrote) || isOutdated(this.#state)) return;
    this.#set(UP);
  }

  /** A statement failed for want of the database: counted, and the state follows (load aside). */
  failed(error: StoreUnavailableError): void {
    this.count(error.cause);
    if (LOAD_CAUSES.has(error.cause)) return;
    const scope: StoreScope = WRITE_CAUSES.has(error.cause) ? "writes" : "all";
    const now = this.#state;
    // Outdated is for good: an outage on top of it would, once over, bring the replica up again.
    if (isOutdated(now)) return;
    // A write failing while nothing at all can be reached says nothing new.
    if (!now.up && (now.scope === "all" || now.scope === scope) && now.cause === error.cause) return;
    if (!now.up && now.scope === "all" && scope === "writes") return;
    this.#set({ up: false, scope, cause: error.cause, since: now.up ? Date.now() : now.since, detail: error.detail });
  }

  outdated(detail: string): void {
    if (isOutdated(this.#state)) return;
    this.count("schema_too_new");
    this.#set({ up: false, scope: "writes", cause: "schema_too_new", since: Date.now(), detail });
  }

  /** A statement failed for want of the database, counted only (its driver checks before changing the state). */
  count(cause: StoreCause): void {
    for (const listener of this.#failureListeners) listener(cause);
  }

  /** The state while the whole database is down (scope "all"): the PostgreSQL driver fails at once instead of waiting on it. */
  down(): Extract<StoreState, { up: false }> | undefined {
    const state = this.#state;
    return !state.up && state.scope === "all" ? state : undefined;
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #set(next: StoreState): void {
    const before = this.#state;
    this.#state = next;
    if (next.up) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    } else if (isOutdated(next)) {
      // For good: nothing to probe (a probe's answer would bring it up).
      clearInterval(this.#timer);
      this.#timer = undefined;
    } else if (this.#timer === undefined && !this.#closed) {
      // Probes may overlap (a probe of an unreachable database lasts up to its connect timeout): recovery is
      // seen within PROBE_MS of the database answering, not after the probe in flight gives up.
      this.#timer = setInterval(() => {
        const state = this.#state;
        if (!state.up) void this.#probe?.(state.scope).catch(() => undefined);
      }, this.#probeMs);
      this.#timer.unref();
    }
    for (const listener of this.#changeListeners) listener(next, before);
  }
}
