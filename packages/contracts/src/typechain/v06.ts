/** ethers v6 bindings (typechain) of the EntryPoint v0.6 paymasters, plus TestToken. */
export type { BasePaymasterV06 } from "../../types/ethers-contracts/v06/BasePaymasterV06.ts";
export type { ERC20PaymasterV06 } from "../../types/ethers-contracts/v06/ERC20PaymasterV06.ts";
export type { VerifyingPaymasterV06 } from "../../types/ethers-contracts/v06/VerifyingPaymasterV06.ts";
export type { TestToken } from "../../types/ethers-contracts/test/TestToken.ts";
export { BasePaymasterV06__factory } from "../../types/ethers-contracts/factories/v06/BasePaymasterV06__factory.ts";
export { ERC20PaymasterV06__factory } from "../../types/ethers-contracts/factories/v06/ERC20PaymasterV06__factory.ts";
export { VerifyingPaymasterV06__factory } from "../../types/ethers-contracts/factories/v06/VerifyingPaymasterV06__factory.ts";
export { TestToken__factory } from "../../types/ethers-contracts/factories/test/TestToken__factory.ts";
