// What the ERC-20 charge tests share: the test rates, the token fields of a sponsorship, a paymaster that already
// holds fees, and the TokenCharged events of a bundle.
import { type Contract, type TransactionResponse } from "ethers";
import type { EntryPointVersion } from "@paymaster/shared";
import type { Stack } from "./stack.ts";
import { accountCallData, draftOp, eventArgs, handleOps, signAsOwner, sponsor, type TokenFields } from "./userOps.ts";
import { readyAccount } from "./accounts.ts";

export type Symbol = "USDC" | "DAI";
/** 1 ETH = 3000 tokens, in token base units per 1e18 wei. */
export const RATES: Record<Symbol, bigint> = { USDC: 3_000n * 10n ** 6n, DAI: 3_000n * 10n ** 18n };
/** Close to what the ops' calls need, as the service's estimate would be (v0.7 penalises unused call gas). */
export const E2E_CALL_GAS_LIMIT = 60_000n;

export async function tokenFieldsFor(stack: Stack, symbol: Symbol, chargeMode: 0 | 1): Promise<TokenFields> {
  return { token: await stack.tokens[symbol].getAddress(), exchangeRate: RATES[symbol], chargeMode };
}

/** The TokenCharged events of a handleOps transaction, in bundle order. */
export async function tokenChargedEvents(paymaster: Contract, tx: TransactionResponse) {
  await tx.wait();
  return (await eventArgs(paymaster, tx, "TokenCharged")).map((args) => ({
    sender: args.sender as string,
    gasCostWei: args.gasCostWei as bigint,
    exchangeRate: args.exchangeRate as bigint,
    tokenAmount: args.tokenAmount as bigint,
  }));
}

/**
 * A paymaster that already charged in both tokens, as any paymaster has after its first op: the first fee in a
 * token costs one-time extra SSTOREs (0 -> non-zero), which postOp charges on top of postOpGas (see "the first
 * fee in a token"); the tests that start from here measure the usual case.
 */
export async function warmPaymaster(stack: Stack, version: EntryPointVersion) {
  for (const symbol of ["USDC", "DAI"] as const) {
    const account = await readyAccount(stack, version);
    const op = await sponsor(stack, version, await draftOp({ sender: account.address, callData: accountCallData(version, [{ to: account.owner.address, data: "0x" }]) }), {
      kind: "erc20",
      paymaster: stack.v[version].erc20,
      signer: stack.signer,
      tokenFields: await tokenFieldsFor(stack, symbol, 1),
    });
    await (await handleOps(stack, version, [await signAsOwner(stack, version, op, account.owner)])).wait();
  }
}
