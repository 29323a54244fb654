// The hash the paymaster contracts' getHash returns and the service signs (docs/paymaster-data.md):
// keccak256(abi.encode(fieldsHash, chainId, paymaster, validUntil, validAfter[, token, rate, mode, maxCharge])).
// Each Solidity type's range is checked, so a value the contract could never receive is refused
// instead of being hashed into a signature that can never verify.
import { addressWord, bytes32Word, keccakWord, keccakWords, uintWord } from "./abiWords.ts";
import { keccak256 } from "./keccak.ts";
import { initCodeHashV08, isEip7702InitCode, paymasterInitCodeHash } from "./eip7702.ts";
import { initCodeV07 } from "./userOperation.ts";
import type { Erc20ModeFields, ValidityWindow } from "./paymasterData.ts";
import type { Address, Hex, UserOperationV06, UserOperationV07, UserOperationV08, VersionedUserOperation } from "./types.ts";

/** Inputs of VerifyingPaymasterV06/V07/V08.getHash plus what the contract reads itself (chainid, address(this)). */
export type VerifyingPaymasterHashParams = VersionedUserOperation &
  ValidityWindow & {
    chainId: bigint | number;
    /** The paymaster contract's address (address(this) in getHash). */
    paymaster: Address;
    /**
     * The EIP-7702 delegate the sender's code (0xef0100 ‖ delegate) points to when the op is validated, undefined
     * when the sender is not a delegated EOA. Required for an op without initCode (its hash binds the delegate,
     * re-audit N-5) and for a v0.8 0x7702 marker op. v0.8: undefined falls back to userOp.eip7702Auth.address
     * (the bundler applies that authorization before validation).
     */
    eip7702Delegate: Address | undefined;
  };

/** Inputs of ERC20PaymasterV06/V07/V08.getHash. */
export type Erc20PaymasterHashParams = VerifyingPaymasterHashParams & Erc20ModeFields;

/**
 * keccak256(abi.encode(sender, nonce, initCodeHash, keccak256(callData), callGasLimit, verificationGasLimit,
 * preVerificationGas, maxFeePerGas, maxPriorityFeePerGas)) — BasePaymasterV06. initCodeHash is
 * paymasterInitCodeHash: keccak256(initCode), or keccak256(delegate) for an empty initCode from a sender
 * delegated to `senderDelegate`. paymasterAndData and signature are not covered (they hold the signature
 * being made).
 */
export function userOpFieldsHashV06(op: UserOperationV06, senderDelegate?: Address): Hex {
  return keccakWords(userOpWordsV06(op, paymasterInitCodeHash(op.initCode, senderDelegate).slice(2)));
}

/**
 * The nine words both the paymaster hash and the EntryPoint's v0.6 userOpHash start with: sender, nonce,
 * the initCode word (the EntryPoint's: keccak(initCode)), keccak(callData) and the five gas values, in the
 * UserOperation's field order.
 */
export function userOpWordsV06(op: UserOperationV06, initCodeHashWord = keccakWord(op.initCode, "initCode")) {
  return [
    addressWord(op.sender, "sender"),
    uintWord(op.nonce, 256, "nonce"),
    initCodeHashWord,
    keccakWord(op.callData, "callData"),
    uintWord(op.callGasLimit, 256, "callGasLimit"),
    uintWord(op.verificationGasLimit, 256, "verificationGasLimit"),
    uintWord(op.preVerificationGas, 256, "preVerificationGas"),
    uintWord(op.maxFeePerGas, 256, "maxFeePerGas"),
    uintWord(op.maxPriorityFeePerGas, 256, "maxPriorityFeePerGas"),
  ];
}

/**
 * The v0.6 field order plus paymasterVerificationGasLimit and paymasterPostOpGasLimit — BasePaymasterV07.
 * initCode = factory ‖ factoryData (empty without a factory: then a sender delegated to `senderDelegate` has
 * the word keccak(delegate), as in v0.6); absent paymaster gas limits are 0. The values packed into bytes32
 * on-chain (gas limits, fees) are uint128, so they are range-checked as such.
 */
export function userOpFieldsHashV07(op: UserOperationV07, senderDelegate?: Address): Hex {
  return keccakWords(packedFieldWords(op, paymasterInitCodeHash(initCodeV07(op), senderDelegate).slice(2)));
}

/**
 * BasePaymasterV08: v0.7's words, except that a 7702 marker op's initCode word is the EntryPoint's override
 * keccak(delegate ‖ initCode[20:]) — the delegate is bound, never the raw marker. The delegate is
 * `delegate` if given (read from the chain), else `eip7702Auth.address` (for an op without initCode too).
 */
export function userOpFieldsHashV08(op: UserOperationV08, delegate?: Address): Hex {
  const initCode = initCodeV07(op);
  const senderDelegate = delegate ?? op.eip7702Auth?.address;
  const word = isEip7702InitCode(initCode) ? initCodeHashV08(initCode, senderDelegate) : paymasterInitCodeHash(initCode, senderDelegate);
  return keccakWords(packedFieldWords(op, word.slice(2)));
}

function packedFieldWords(op: UserOperationV07, initCodeWord: string): string[] {
  return [
    addressWord(op.sender, "sender"),
    uintWord(op.nonce, 256, "nonce"),
    initCodeWord,
    keccakWord(op.callData, "callData"),
    uintWord(op.callGasLimit, 128, "callGasLimit"),
    uintWord(op.verificationGasLimit, 128, "verificationGasLimit"),
    uintWord(op.preVerificationGas, 256, "preVerificationGas"),
    uintWord(op.maxFeePerGas, 128, "maxFeePerGas"),
    uintWord(op.maxPriorityFeePerGas, 128, "maxPriorityFeePerGas"),
    uintWord(op.paymasterVerificationGasLimit ?? 0n, 128, "paymasterVerificationGasLimit"),
    uintWord(op.paymasterPostOpGasLimit ?? 0n, 128, "paymasterPostOpGasLimit"),
  ];
}

/** The fields hash of any version (`delegate`: the sender's EIP-7702 delegate, VerifyingPaymasterHashParams). */
export function userOpFieldsHash(versioned: VersionedUserOperation, delegate: Address | undefined): Hex {
  switch (versioned.version) {
    case "v0.6":
      return userOpFieldsHashV06(versioned.userOp, delegate);
    case "v0.7":
      return userOpFieldsHashV07(versioned.userOp, delegate);
    case "v0.8":
      return userOpFieldsHashV08(versioned.userOp, delegate);
  }
}

/** VerifyingPaymasterV06/V07.getHash: the bytes32 a signer signs (as an EIP-191 message) to sponsor. */
export function verifyingPaymasterHash(params: VerifyingPaymasterHashParams): Hex {
  return keccakWords(commonWords(params));
}

/** ERC20PaymasterV06/V07/V08.getHash: the verifying words plus token, exchangeRate, chargeMode (uint8), maxTokenCharge. */
export function erc20PaymasterHash(params: Erc20PaymasterHashParams): Hex {
  return keccakWords([
    ...commonWords(params),
    addressWord(params.token, "token"),
    uintWord(params.exchangeRate, 256, "exchangeRate"),
    uintWord(params.chargeMode, 8, "chargeMode"),
    uintWord(params.maxTokenCharge, 256, "maxTokenCharge"),
  ]);
}

const EIP191_PREFIX_32 = "19457468657265756d205369676e6564204d6573736167653a0a3332"; // "\x19Ethereum Signed Message:\n32"

/** keccak256("\x19Ethereum Signed Message:\n32" ‖ hash): MessageHashUtils.toEthSignedMessageHash(bytes32). */
export function toEthSignedMessageHash(hash: Hex): Hex {
  return keccak256(`0x${EIP191_PREFIX_32}${bytes32Word(hash, "hash")}`);
}

function commonWords(params: VerifyingPaymasterHashParams): string[] {
  return [
    userOpFieldsHash(params, params.eip7702Delegate).slice(2),
    uintWord(params.chainId, 256, "chainId"),
    addressWord(params.paymaster, "paymaster"),
    uintWord(params.validUntil, 48, "validUntil"),
    uintWord(params.validAfter, 48, "validAfter"),
  ];
}
