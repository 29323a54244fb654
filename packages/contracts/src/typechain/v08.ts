/**
 * ethers v6 bindings (typechain) of the EntryPoint v0.8 paymasters, plus TestToken. They extend the v0.7
 * contracts (v0.8 keeps v0.7's PackedUserOperation), so their base is v0.7's BasePaymasterV07.
 */
export type { BasePaymasterV07 } from "../../types/ethers-contracts/v07/BasePaymasterV07.ts";
export type { ERC20PaymasterV08 } from "../../types/ethers-contracts/v08/ERC20PaymasterV08.ts";
export type { VerifyingPaymasterV08 } from "../../types/ethers-contracts/v08/VerifyingPaymasterV08.ts";
export type { TestToken } from "../../types/ethers-contracts/test/TestToken.ts";
export { ERC20PaymasterV08__factory } from "../../types/ethers-contracts/factories/v08/ERC20PaymasterV08__factory.ts";
export { VerifyingPaymasterV08__factory } from "../../types/ethers-contracts/factories/v08/VerifyingPaymasterV08__factory.ts";
export { TestToken__factory } from "../../types/ethers-contracts/factories/test/TestToken__factory.ts";
