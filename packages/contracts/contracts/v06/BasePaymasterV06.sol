// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {IPaymaster} from "@account-abstraction/contracts-v06/interfaces/IPaymaster.sol";
import {UserOperation} from "@account-abstraction/contracts-v06/interfaces/UserOperation.sol";
import {PaymasterBase} from "../core/PaymasterBase.sol";
import {InitCodeHash} from "../core/InitCodeHash.sol";

/// @title BasePaymasterV06
/// @notice EntryPoint v0.6 glue: the IPaymaster entry points (EntryPoint-only) and the v0.6 user operation
///         fields that every paymaster signature covers.
/// @dev paymasterAndData = paymaster (20) | paymasterData.
abstract contract BasePaymasterV06 is PaymasterBase, IPaymaster {
    /// @notice Offset of paymasterData inside paymasterAndData.
    uint256 internal constant PAYMASTER_DATA_OFFSET = 20;

    /// @inheritdoc IPaymaster
    function validatePaymasterUserOp(UserOperation calldata userOp, bytes32, uint256 maxCost)
        external
        override
        onlyEntryPoint
        returns (bytes memory context, uint256 validationData)
    {
        return _validatePaymasterUserOp(userOp, maxCost);
    }

    /// @inheritdoc IPaymaster
    function postOp(PostOpMode mode, bytes calldata context, uint256 actualGasCost) external override onlyEntryPoint {
        _postOp(mode, context, actualGasCost);
    }

    /// @dev Validates the op for this paymaster; reverts on malformed data, signals a bad signature.
    function _validatePaymasterUserOp(UserOperation calldata userOp, uint256 maxCost)
        internal
        virtual
        returns (bytes memory context, uint256 validationData);

    /// @dev Only paymasters that return a non-empty context are called here.
    function _postOp(PostOpMode mode, bytes calldata context, uint256 actualGasCost) internal virtual;

    /// @notice Hash of every user operation field a signature covers, each listed explicitly (never a
    ///         calldata copy, never the userOpHash, which contains paymasterAndData). The initCode word binds an
    ///         already-delegated EIP-7702 sender's delegate (InitCodeHash).
    function _userOpFieldsHash(UserOperation calldata userOp) internal view returns (bytes32) {
        return keccak256(
            abi.encode(
                userOp.sender,
                userOp.nonce,
                InitCodeHash.initCodeHash(userOp.sender, userOp.initCode),
                keccak256(userOp.callData),
                userOp.callGasLimit,
                userOp.verificationGasLimit,
                userOp.preVerificationGas,
                userOp.maxFeePerGas,
                userOp.maxPriorityFeePerGas
            )
        );
    }
}
