// Fixed literal inputs for the golden vectors. Every value is distinct and non-zero so that a swapped,
// dropped or mis-sized field changes every hash.
import type { Address, Hex, UserOperationV06, UserOperationV07, UserOperationV08 } from "../src/index.ts";

export const CHAIN_ID = 31337n;
export const PAYMASTER: Address = "0x1111111111111111111111111111111111111111";
export const TOKEN: Address = "0x4444444444444444444444444444444444444444";
export const VALID_UNTIL = 1_700_000_300;
export const VALID_AFTER = 1_700_000_000;
/** 3500 USDC (6 decimals) per ETH: token base units per 1e18 wei. */
export const EXCHANGE_RATE = 3_500_000_000n;
/** A signed maximum token charge (0x12d687). */
export const MAX_TOKEN_CHARGE = 1_234_567n;

const FACTORY: Address = "0x3333333333333333333333333333333333333333";
const FACTORY_DATA: Hex =
  "0x5fbfb9cf0000000000000000000000005555555555555555555555555555555555555555000000000000000000000000000000000000000000000000000000000000002a";
const CALL_DATA: Hex =
  "0xb61d27f600000000000000000000000066666666666666666666666666666666666666660000000000000000000000000000000000000000000000000de0b6b3a764000000000000000000000000000000000000000000000000000000000000000000600000000000000000000000000000000000000000000000000000000000000000";
const SIGNATURE: Hex = `0x${"ab".repeat(64)}1b`;
const PAYMASTER_DATA_VERIFYING: Hex = `0x${"00006553f22c"}${"00006553f100"}${"cd".repeat(64)}1c`;

export const OP_V06: UserOperationV06 = {
  sender: "0x9d1c2b7b8e2f3a4c5d6e7f8091a2b3c4d5e6f708",
  nonce: (7n << 64n) + 5n,
  initCode: `${FACTORY}${FACTORY_DATA.slice(2)}`,
  callData: CALL_DATA,
  callGasLimit: 100_000n,
  verificationGasLimit: 250_000n,
  preVerificationGas: 50_000n,
  maxFeePerGas: 30_000_000_000n,
  maxPriorityFeePerGas: 1_500_000_000n,
  paymasterAndData: `${PAYMASTER}${PAYMASTER_DATA_VERIFYING.slice(2)}`,
  signature: SIGNATURE,
};

export const OP_V07: UserOperationV07 = {
  sender: "0x9d1c2b7b8e2f3a4c5d6e7f8091a2b3c4d5e6f708",
  nonce: (7n << 64n) + 6n,
  factory: FACTORY,
  factoryData: FACTORY_DATA,
  callData: CALL_DATA,
  callGasLimit: 110_000n,
  verificationGasLimit: 260_000n,
  preVerificationGas: 51_000n,
  maxFeePerGas: 31_000_000_000n,
  maxPriorityFeePerGas: 1_600_000_000n,
  paymaster: PAYMASTER,
  paymasterVerificationGasLimit: 60_000n,
  paymasterPostOpGasLimit: 45_000n,
  paymasterData: PAYMASTER_DATA_VERIFYING,
  signature: SIGNATURE,
};

/** OP_V07 without factory and paymaster (an already deployed account paying for itself). */
export const OP_V07_BARE: UserOperationV07 = {
  sender: OP_V07.sender,
  nonce: OP_V07.nonce,
  callData: OP_V07.callData,
  callGasLimit: OP_V07.callGasLimit,
  verificationGasLimit: OP_V07.verificationGasLimit,
  preVerificationGas: OP_V07.preVerificationGas,
  maxFeePerGas: OP_V07.maxFeePerGas,
  maxPriorityFeePerGas: OP_V07.maxPriorityFeePerGas,
  signature: OP_V07.signature,
};

/** The delegate implementation a 7702 sender points to (any contract address; distinct from the others). */
export const DELEGATE_7702: Address = "0xe6Cae83BdE06E4c305530e199D7217f42808555B";
export const OTHER_DELEGATE_7702: Address = "0x7777777777777777777777777777777777777777";

/** A v0.8 op of an EIP-7702 sender: factory = the marker, factoryData = an init call, with its authorization. */
export const OP_V08_7702: UserOperationV08 = {
  ...OP_V07,
  sender: "0x8a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
  factory: "0x7702000000000000000000000000000000000000",
  factoryData: "0xc0ffee",
  eip7702Auth: { chainId: 31337n, address: DELEGATE_7702, nonce: 3n, r: `0x${"12".repeat(32)}`, s: `0x${"34".repeat(32)}`, yParity: 1 },
};
