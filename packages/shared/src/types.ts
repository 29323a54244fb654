// Domain types shared by the contracts' tests and the service. Quantities are bigint here; the
// hex-string wire forms live in userOperation.ts (Rpc*) and are converted at the boundary.

/** 0x-prefixed hex string (byte strings are even-length; see bytes.ts for the checks). */
export type Hex = `0x${string}`;

/** 20-byte address as 0x-prefixed hex (any case; viem's Address is the same type). */
export type Address = `0x${string}`;

/** The EntryPoint versions the paymasters support. v0.8 shares v0.7's PackedUserOperation layout. */
export type EntryPointVersion = "v0.6" | "v0.7" | "v0.8";

/** EntryPoint v0.6 UserOperation (struct and RPC shape are the same fields). */
export type UserOperationV06 = {
  sender: Address;
  nonce: bigint;
  initCode: Hex;
  callData: Hex;
  callGasLimit: bigint;
  verificationGasLimit: bigint;
  preVerificationGas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  paymasterAndData: Hex;
  signature: Hex;
};

/**
 * EntryPoint v0.7 user operation in its unpacked ERC-7769 RPC form. `factory`/`factoryData` are
 * absent without a factory; the `paymaster*` fields are absent without a paymaster.
 */
export type UserOperationV07 = {
  sender: Address;
  nonce: bigint;
  factory?: Address;
  factoryData?: Hex;
  callData: Hex;
  callGasLimit: bigint;
  verificationGasLimit: bigint;
  preVerificationGas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  paymaster?: Address;
  paymasterVerificationGasLimit?: bigint;
  paymasterPostOpGasLimit?: bigint;
  paymasterData?: Hex;
  signature: Hex;
};

/**
 * A signed EIP-7702 authorization tuple as bundlers take it with a v0.8 user operation (`eip7702Auth`):
 * the sender EOA delegates its code to `address` (the delegate implementation).
 */
export type Eip7702Authorization = {
  chainId: bigint;
  /** The delegate contract the EOA's code will point to (0xef0100 ‖ address). */
  address: Address;
  nonce: bigint;
  r: Hex;
  s: Hex;
  yParity: number;
};

/**
 * EntryPoint v0.8 user operation: v0.7's unpacked form plus, for an EIP-7702 sender, the authorization
 * tuple. With `factory` = the 0x7702 marker the EntryPoint hashes the delegate instead of the marker.
 */
export type UserOperationV08 = UserOperationV07 & { eip7702Auth?: Eip7702Authorization };

/** EntryPoint v0.7/v0.8 on-chain PackedUserOperation. */
export type PackedUserOperation = {
  sender: Address;
  nonce: bigint;
  /** factory (20) ‖ factoryData, or 0x. */
  initCode: Hex;
  callData: Hex;
  /** bytes32: verificationGasLimit (high 128 bits) ‖ callGasLimit (low 128 bits). */
  accountGasLimits: Hex;
  preVerificationGas: bigint;
  /** bytes32: maxPriorityFeePerGas (high 128 bits) ‖ maxFeePerGas (low 128 bits). */
  gasFees: Hex;
  /** paymaster (20) ‖ paymasterVerificationGasLimit (16) ‖ paymasterPostOpGasLimit (16) ‖ paymasterData, or 0x. */
  paymasterAndData: Hex;
  signature: Hex;
};

/** A user operation tagged with its EntryPoint version, so one API can take either. */
export type VersionedUserOperation =
  | { version: "v0.6"; userOp: UserOperationV06 }
  | { version: "v0.7"; userOp: UserOperationV07 }
  | { version: "v0.8"; userOp: UserOperationV08 };
