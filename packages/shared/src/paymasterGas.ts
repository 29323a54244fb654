/**
 * Gas figures both sides rely on: the service puts these limits in stub and signed data (the stub runs no
 * simulation), and the contract tests measure each paymaster's worst case per EntryPoint version and prove the
 * limits hold — packages/contracts/test/paymasterGas.test.ts (PAYMASTER_GAS_MARGIN_PERCENT to spare) and
 * test/gasBar.test.ts (at least PAYMASTER_VERIFICATION_GAS_SLACK unused, the security bar).
 * The ERC-20 paymaster's postOp limit is not a constant here: the contract states its own minimum
 * (minPostOpGasLimit, measured for the worst case of both charge modes), which the service reads at start-up.
 */

/** v0.7 paymasterVerificationGasLimit per paymaster kind (its validatePaymasterUserOp, worst case). */
export const PAYMASTER_VERIFICATION_GAS = { verifying: 50_000n, erc20: 120_000n } as const;

/** The least room, in percent of the measured gas, PAYMASTER_VERIFICATION_GAS must leave. */
export const PAYMASTER_GAS_MARGIN_PERCENT = 25n;

/** Gas a paymasterVerificationGasLimit must leave unused in the worst case (security bar: >= 4000). */
export const PAYMASTER_VERIFICATION_GAS_SLACK = 4_000n;

/** Largest context a paymaster may return (security bar; bundlers refuse larger ones). */
export const MAX_PAYMASTER_CONTEXT_BYTES = 2_048;
