/**
 * A warning a door logs per answer (the admin API's 503 for a failed dependency), kept to one line per outage: the
 * first answer of a failure logs it (the driver's words included), the same failure (reason and cause: the driver's
 * words vary within one outage, e.g. the store's "not tried since …") logs again only after REPEAT_WARNING_SECONDS,
 * carrying how many answers it stood for in between (`repeated`); another failure logs at once. During an outage a console polling every few seconds no longer writes a line per request.
 */
import type { Logger } from "pino";
import type { DependencyFailure } from "./failure.ts";

/** How long the same failure stays quiet after its line. */
export const REPEAT_WARNING_SECONDS = 60;

export type RepeatedWarning = (failure: DependencyFailure, fields: Record<string, unknown>, message: string) => void;

/** `now`: Unix seconds. */
export function repeatedWarnings(logger: Logger, now: () => number): RepeatedWarning {
  let last: { key: string; at: number } | undefined;
  let repeated = 0;
  return (failure, fields, message) => {
    const key = `${failure.reason} ${failure.cause}`;
    const at = now();
    if (last !== undefined && last.key === key && at - last.at < REPEAT_WARNING_SECONDS) {
      repeated++;
      return;
    }
    logger.warn({ ...fields, reason: failure.reason, cause: failure.cause, detail: failure.detail, ...(repeated > 0 ? { repeated } : {}) }, message);
    last = { key, at };
    repeated = 0;
  };
}
