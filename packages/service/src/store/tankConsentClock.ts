/**
 * When a gas tank consent signed by the tank's owner counts (threat-model.md, "Gas tanks answer only to their
 * owner"; second review, finding 1). The dapp builds the message the owner signs, so it chooses `issuedAt`, and
 * it could hold a signed "allow" back to undo the owner's later withdrawal. Two rules close that:
 *
 * - Dated near the service's clock: at most CONSENT_CLOCK.pastSeconds old (a slow hardware wallet), at most
 *   CONSENT_CLOCK.futureSeconds ahead (a dapp's clock a little fast). Nothing dated further ahead is accepted.
 * - Ordered by when the service recorded the change it replaces, not only by what messages claim: a consent
 *   recorded at T is replaced only by a message dated at T or later, and a withdrawal (allowed false, signed or
 *   the operator's `tank disallow`) only by one dated after T + futureSeconds. Every message signed before T
 *   is dated at most T + futureSeconds (else it would have been refused), so a withdrawal beats every consent
 *   signed before it was recorded, whatever the message says. A withdrawal right after an allow is accepted at
 *   once; allowing again after a withdrawal takes a message signed more than futureSeconds after it.
 *
 * The operator's changes by hand are dated when recorded and always apply.
 */

export const CONSENT_CLOCK = Object.freeze({ pastSeconds: 600, futureSeconds: 60 });

/** Why a consent dated `issuedAt` is refused at `now` (unix seconds), or undefined when its date may count. Pure. */
export function consentDateRefusal(issuedAt: number, now: number): string | undefined {
  if (issuedAt > now + CONSENT_CLOCK.futureSeconds) {
    return `issuedAt ${issuedAt} is ahead of the service's clock (${now}) by more than ${CONSENT_CLOCK.futureSeconds} s: sign a consent dated now (pm_gasTankConsentRequest gives one)`;
  }
  if (issuedAt < now - CONSENT_CLOCK.pastSeconds) {
    return `issuedAt ${issuedAt} is more than ${CONSENT_CLOCK.pastSeconds} s before the service's clock (${now}): sign a fresh consent`;
  }
  return undefined;
}

/**
 * The SQL expression (over `table`'s row of gas_tank_consents) of the latest date a signed message may carry and
 * still not replace that row: its recording time minus one for an allow, plus futureSeconds for a withdrawal.
 * The one statement of the ordering rule: the upsert's WHERE and the row's `replaceableAfter` both use it.
 */
export function replaceableAfterSql(table: string): string {
  return `(${table}.updated_at + CASE WHEN ${table}.allowed THEN -1 ELSE ${CONSENT_CLOCK.futureSeconds} END)`;
}
