/**
 * Pending key applications expire (issue 20): the public form may hold at most APPLICATION_LIMITS.pending of
 * them, so ones the operator never decided must not fill it for good. An expired application becomes
 * `rejected` by "expiry" with a reason saying so (no new status: the table's CHECK stays as it is).
 */
export const EXPIRY_DECIDER = "expiry";

export const EXPIRE_PENDING_APPLICATIONS = `UPDATE key_applications SET status = 'rejected', decided_at = ?, decided_by = '${EXPIRY_DECIDER}', reason = ?
  WHERE status = 'pending' AND created_at < ?`;

export function expiryReason(ttlSeconds: number): string {
  return `expired: not decided within ${Math.round(ttlSeconds / 86_400)} day(s)`;
}
