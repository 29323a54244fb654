// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {IPaymaster} from "@account-abstraction/contracts-v07/interfaces/IPaymaster.sol";
import {PackedUserOperation} from "@account-abstraction/contracts-v07/interfaces/PackedUserOperation.sol";
import {PaymasterBase} from "../core/PaymasterBase.sol";
import {InitCodeHash} from "../core/InitCodeHash.sol";

/// @title BasePaymasterV07
/// @notice EntryPoint v0.7 glue: the IPaymaster entry points (EntryPoint-only) and the v0.7 user operation
///         fields, unpacked, that every paymaster signature covers.
/// @dev paymasterAndData = paymaster (20) | paymasterVerificationGasLimit (16) | paymasterPostOpGasLimit (16)
///      | paymasterData.
abstract contract BasePaymasterV07 is PaymasterBase, IPaymaster {
    /// @notice Offset of paymasterData inside paymasterAndData.
    uint256 internal constant PAYMASTER_DATA_OFFSET = 52;

    /// @inheritdoc IPaymaster
    function validatePaymasterUserOp(PackedUserOperation calldata userOp, bytes32, uint256 maxCost)
        external
        override
        onlyEntryPoint
        returns (bytes memory context, uint256 validationData)
    {
        return _validatePaymasterUserOp(userOp, maxCost);
    }

    /// @inheritdoc IPaymaster
    function postOp(PostOpMode mode, bytes calldata context, uint256 actualGasCost, uint256 actualUserOpFeePerGas)
        external
        override
        onlyEntryPoint
    {
        _postOp(mode, context, actualGasCost, actualUserOpFeePerGas);
    }

    /// @dev Validates the op for this paymaster; reverts on malformed data, signals a bad signature.
    function _validatePaymasterUserOp(PackedUserOperation calldata userOp, uint256 maxCost)
        internal
        virtual
        returns (bytes memory context, uint256 validationData);

    /// @dev Only paymasters that return a non-empty context are called here.
    function _postOp(PostOpMode mode, bytes calldata context, uint256 actualGasCost, uint256 actualUserOpFeePerGas)
        internal
        virtual;

    /// @notice Hash of every user operation field a signature covers, each listed explicitly and unpacked:
    ///         the same order as v0.6 plus the paymaster's own two gas limits (paymasterAndData[20:52]).
    function _userOpFieldsHash(PackedUserOperation calldata userOp) internal view returns (bytes32) {
        (uint256 verificationGasLimit, uint256 callGasLimit) = _unpackHighLow(userOp.accountGasLimits);
        (uint256 maxPriorityFeePerGas, uint256 maxFeePerGas) = _unpackHighLow(userOp.gasFees);
        (uint256 paymasterVerificationGasLimit, uint256 paymasterPostOpGasLimit) = _paymasterGasLimits(userOp);
        return keccak256(
            abi.encode(
                userOp.sender,
                userOp.nonce,
                _initCodeHash(userOp),
                keccak256(userOp.callData),
                callGasLimit,
                verificationGasLimit,
                userOp.preVerificationGas,
                maxFeePerGas,
                maxPriorityFeePerGas,
                paymasterVerificationGasLimit,
                paymasterPostOpGasLimit
            )
        );
    }

    /// @dev The initCode word of the fields hash: InitCodeHash's (keccak256(initCode), or the delegate of an
    ///      already-delegated EIP-7702 sender with empty initCode); v0.8 also binds the delegate of a 0x7702 marker
    ///      op (VerifyingPaymasterV08 / ERC20PaymasterV08), as its EntryPoint's userOpHash does.
    function _initCodeHash(PackedUserOperation calldata userOp) internal view virtual returns (bytes32) {
        return InitCodeHash.initCodeHash(userOp.sender, userOp.initCode);
    }

    /// @dev paymasterVerificationGasLimit and paymasterPostOpGasLimit; the caller checked the length.
    function _paymasterGasLimits(PackedUserOperation calldata userOp)
        internal
        pure
        returns (uint256 verificationGasLimit, uint256 postOpGasLimit)
    {
        verificationGasLimit = uint128(bytes16(userOp.paymasterAndData[20:36]));
        postOpGasLimit = uint128(bytes16(userOp.paymasterAndData[36:52]));
    }

    /// @dev The two uint128 halves of a packed bytes32 (high, low).
    function _unpackHighLow(bytes32 packed) private pure returns (uint256 high, uint256 low) {
        high = uint256(packed) >> 128;
        low = uint128(uint256(packed));
    }
}
