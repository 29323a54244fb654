/**
 * Fixed addresses, salts and init-code inputs of the deterministic deployment.
 * Importing this module loads nothing beyond the module itself.
 */
import type { Address } from "../manifest.ts";

/** Arachnid's deterministic deployment proxy (CREATE2 factory), present on most public chains. */
export const CREATE2_DEPLOYER_ADDRESS: Address = "0x4e59b44847b379578588920cA78FbF26c0B4956C";

/**
 * Runtime code of the CREATE2 deployer proxy. Calldata = salt (32 bytes) ‖ init code; it CREATE2s with the
 * call value and returns the 20-byte address, or reverts when the deployment fails.
 */
export const CREATE2_DEPLOYER_RUNTIME_CODE =
  "0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf3" as const;

/** Canonical EntryPoint addresses (shipped bytecode of @account-abstraction/contracts 0.6.0 / 0.7.0). */
export { ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS, ENTRY_POINT_V08_ADDRESS } from "@paymaster/shared";

/** Salts that put the shipped EntryPoint bytecode at its canonical address. */
export const ENTRY_POINT_V06_SALT = "0x0000000000000000000000000000000000000000000000000000000000000000" as const;
export const ENTRY_POINT_V07_SALT = "0x90d8084deab30c2a37c45e8d47f49f2f7965183cb6990a98943ef94940681de3" as const;
/** @account-abstraction/contracts 0.8.0's EntryPoint artifact with this salt lands at 0x4337084D…F108. */
export const ENTRY_POINT_V08_SALT = "0x0a59dbff790c23c976a548690c27297883cc66b4c67024f9117b0238995e35e9" as const;

/** Chain ids `deployLocalStack` accepts without `allowNonLocalChain` (Hardhat / Anvil, Ganache / Geth dev). */
export const LOCAL_CHAIN_IDS: readonly number[] = [31337, 1337];

/** Defaults of `deployLocalStack` options. */
/**
 * Gas the ERC-20 paymasters' postOp and the EntryPoint's work after it take, charged on top of actualGasCost, per
 * version. Measured by test/erc20Paymaster.test.ts in charge-in-postOp mode with a paymaster that already holds
 * fees in the token: ~25.8k (v0.6) and ~30.6k (v0.7, whose EntryPoint does more after postOp), plus ~5%. v0.8 (same
 * test): ~28.1k plus ~3% — v0.7's figure overcharged v0.8 ops by ~3.9k gas, because v0.7's 32k also absorbs
 * the small call-gas penalty of an op whose callGasLimit is close to its use, which v0.7's postOp estimates from
 * below (ERC20PaymasterV07._unusedCallGasPenalty: zero when less call gas is left unused than validation used),
 * while v0.8 shows it to postOp (and waives it under 40k unused).
 * Pre-charge mode's postOp finds its slots warm (validation touched them) and uses ~10k less: those ops are
 * overcharged by that much gas. What this warm figure leaves out (a token's first fee setting slots from zero, the
 * sender's slots read cold in charge-in-postOp mode) the contracts add themselves (TokenChargeBase
 * FIRST_FEE_SLOT_GAS, POSTOP_MODE_COLD_GAS).
 */
export const DEFAULT_POST_OP_GAS = { "v0.6": 27_000n, "v0.7": 32_000n, "v0.8": 29_000n } as const;
/**
 * The lowest postOp gas limit the ERC-20 paymasters accept (v0.7 paymasterPostOpGasLimit, v0.6
 * verificationGasLimit): the worst case of both charge modes for the test tokens, measured by
 * test/postOpGas.test.ts (~87.1k on v0.7 after audit 3: a pre-charge refund, which keeps REFUND_BOOKKEEPING_GAS back),
 * plus ~9%.
 * THREAT_MODEL.md says how to measure it for a real token.
 */
export const DEFAULT_MIN_POST_OP_GAS_LIMIT = 95_000n;
export const DEFAULT_DEPOSIT_TARGET = 100n * 10n ** 18n;
export const DEFAULT_STAKE_AMOUNT = 10n ** 18n;
export const DEFAULT_UNSTAKE_DELAY_SEC = 86_400;

/** The two local test tokens (TestToken constructor arguments). */
export const LOCAL_TEST_TOKENS = [
  { symbol: "USDC", name: "Test USD Coin (local test token)", decimals: 6 },
  { symbol: "DAI", name: "Test Dai Stablecoin (local test token)", decimals: 18 },
] as const;
