/** ethers v6 bindings (typechain) of the EntryPoint v0.7 paymasters, plus TestToken. */
export type { BasePaymasterV07 } from "../../types/ethers-contracts/v07/BasePaymasterV07.ts";
export type { ERC20PaymasterV07 } from "../../types/ethers-contracts/v07/ERC20PaymasterV07.ts";
export type { VerifyingPaymasterV07 } from "../../types/ethers-contracts/v07/VerifyingPaymasterV07.ts";
export type { TestToken } from "../../types/ethers-contracts/test/TestToken.ts";
export { BasePaymasterV07__factory } from "../../types/ethers-contracts/factories/v07/BasePaymasterV07__factory.ts";
export { ERC20PaymasterV07__factory } from "../../types/ethers-contracts/factories/v07/ERC20PaymasterV07__factory.ts";
export { VerifyingPaymasterV07__factory } from "../../types/ethers-contracts/factories/v07/VerifyingPaymasterV07__factory.ts";
export { TestToken__factory } from "../../types/ethers-contracts/factories/test/TestToken__factory.ts";
