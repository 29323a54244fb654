/**
 * Step of the settlement pass: the confirmed UserOperationEvents of one block range, settled in ONE store call
 * (Store.settleSponsorships: two round trips to the database whatever the number of ops), then told apart in the
 * pass's counts and the log. An ERC-20 op whose token charge went unpaid (v0.6 TokenChargeUnpaid; v0.7 a
 * reverted postOp, reported with PostOpRevertReason; or no charge event at all) is recorded unpaid by the same
 * call, settled or not yet (idempotent: a rescan after a crash records it too); the pipeline then offers that
 * sender pre-charge only.
 */
import type { Logger } from "pino";
import { weiToUsdMicros } from "../policy/rules.ts";
import type { UsdPrice } from "../billing/usdPrice.ts";
import type { SettleItem, Store } from "../store/types.ts";
import { logKey, type TokenChargeLog, type UserOperationEventLog } from "./logs.ts";

export interface SettleEventsInput {
  store: Store;
  logger: Logger;
  network: string;
  events: readonly UserOperationEventLog[];
  /** The token charge of each ERC-20 op's event, by logKey. */
  chargeOf: ReadonlyMap<string, TokenChargeLog>;
  /** The ERC-20 paymasters (lowercase): their ops carry a token charge. */
  erc20Paymasters: ReadonlySet<string>;
  price: UsdPrice;
}

/** What settling a range did, added to the pass's counts. */
export interface SettleCounts {
  settled: number;
  alreadySettled: number;
  unmatched: number;
}

/** The store's item for one event: what the chain charged, and (ERC-20) what the token charge came to. */
function itemOf(event: UserOperationEventLog, input: SettleEventsInput): SettleItem {
  const erc20 = input.erc20Paymasters.has(event.paymaster.toLowerCase());
  const charge = input.chargeOf.get(logKey(event));
  return {
    userOpHash: event.userOpHash,
    network: input.network,
    entryPoint: event.entryPoint,
    ...(erc20 ? { tokenUnpaid: !charge?.paid } : {}),
    settlement: {
      actualGasCostWei: event.actualGasCost,
      actualCostUsdMicros: weiToUsdMicros(event.actualGasCost, input.price),
      actualTokenCost: erc20 ? (charge?.paid ? charge.tokenAmount : 0n) : null,
      success: event.success,
      txHash: event.txHash,
      blockNumber: event.blockNumber,
      blockHash: event.blockHash,
      logIndex: event.logIndex,
    },
  };
}

export async function settleEvents(input: SettleEventsInput, counts: SettleCounts): Promise<void> {
  if (input.events.length === 0) return;
  const outcomes = await input.store.settleSponsorships(input.events.map((event) => itemOf(event, input)));
  input.events.forEach((event, i) => {
    const outcome = outcomes[i]!;
    const where = { userOpHash: event.userOpHash, txHash: event.txHash, block: event.blockNumber.toString(), paymaster: event.paymaster };
    if (outcome.outcome === "unmatched") {
      counts.unmatched++;
      input.logger.warn(where, "UserOperationEvent of our paymaster with no sponsorship: skipped");
      return;
    }
    if (outcome.outcome === "alreadySettled") {
      counts.alreadySettled++; // a rescan of the reorg window, or another watcher on the same database: said before
      return;
    }
    const { record } = outcome;
    const charge = input.chargeOf.get(logKey(event));
    if (record.mode === "erc20" && charge === undefined) input.logger.warn({ ...where, sponsorship: record.id }, "ERC-20 sponsorship without a token charge event: settled with 0 tokens");
    else if (record.mode === "erc20" && !charge!.paid) input.logger.warn({ ...where, sponsorship: record.id, tokenAmount: charge!.tokenAmount.toString() }, "the token charge failed (TokenChargeUnpaid)");
    if (outcome.outcome === "settled") {
      counts.settled++;
      // A released one (expired before its event was seen, or replaced) that the chain charged is settled all the same.
      if (record.status === "released") input.logger.warn({ ...where, sponsorship: record.id }, "UserOperationEvent of a released sponsorship: settled it");
      input.logger.info({ ...where, sponsorship: record.id, mode: record.mode, actualGasCost: event.actualGasCost.toString(), success: event.success }, "sponsorship settled");
    } else {
      counts.unmatched++;
      input.logger.error({ ...where, sponsorship: record.id, status: record.status }, "UserOperationEvent of a sponsorship that cannot be settled (never signed?): skipped");
    }
  });
}
