/**
 * The gas limits the service gives our paymasters' own work, used by both sides: the service puts them in
 * stub and signed data (the stub runs no simulation), and packages/contracts/test/paymasterGas.test.ts
 * measures each paymaster's worst case per EntryPoint version and asserts these cover it with
 * PAYMASTER_GAS_MARGIN_PERCENT to spare.
 */

/** v0.7 paymasterVerificationGasLimit per paymaster kind (its validatePaymasterUserOp, worst case). */
export const PAYMASTER_VERIFICATION_GAS = { verifying: 50_000n, erc20: 120_000n } as const;

/**
 * v0.7 paymasterPostOpGasLimit on top of the ERC-20 paymaster's postOpGas: a first payment to a treasury
 * that holds none of the token yet (a fresh storage slot) costs more than the steady-state postOpGas.
 */
export const ERC20_POST_OP_HEADROOM = 30_000n;

/** The least room, in percent of the measured gas, every constant above must leave. */
export const PAYMASTER_GAS_MARGIN_PERCENT = 25n;
