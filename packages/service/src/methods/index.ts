/** Every method the service serves, in the spec's order. */
import type { MethodDefinition } from "../rpc/method.ts";
import { pm_getPaymasterData } from "./pm_getPaymasterData.ts";
import { pm_getPaymasterStubData } from "./pm_getPaymasterStubData.ts";
import { pm_getTokenQuotes } from "./pm_getTokenQuotes.ts";
import { pm_paymasterAccount } from "./pm_paymasterAccount.ts";
import { pm_checkPolicy } from "./pm_checkPolicy.ts";
import { pm_estimateUserOperationGas } from "./pm_estimateUserOperationGas.ts";
import { pm_sponsorUserOperation } from "./pm_sponsorUserOperation.ts";
import { pm_supportEntrypoint } from "./pm_supportEntrypoint.ts";

export const METHODS: readonly MethodDefinition<any>[] = Object.freeze([
  pm_supportEntrypoint,
  pm_paymasterAccount,
  pm_sponsorUserOperation,
  pm_estimateUserOperationGas,
  pm_checkPolicy,
  pm_getPaymasterStubData,
  pm_getPaymasterData,
  pm_getTokenQuotes,
]);
