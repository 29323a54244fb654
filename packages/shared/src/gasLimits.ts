// Gas figures both sides rely on: the service signs these limits, the contract tests prove they hold.

/**
 * paymasterVerificationGasLimit the service signs for each paymaster kind (v0.7). The contract tests measure the
 * worst case of each (test/gasBar.test.ts) and require at least PAYMASTER_VERIFICATION_GAS_SLACK to spare.
 */
export const PAYMASTER_VERIFICATION_GAS_LIMIT = { verifying: 50_000n, erc20: 120_000n } as const;

/** Gas a paymasterVerificationGasLimit must leave unused in the worst case (security bar: >= 4000). */
export const PAYMASTER_VERIFICATION_GAS_SLACK = 4_000n;

/** Largest context a paymaster may return (security bar; bundlers refuse larger ones). */
export const MAX_PAYMASTER_CONTEXT_BYTES = 2_048;
