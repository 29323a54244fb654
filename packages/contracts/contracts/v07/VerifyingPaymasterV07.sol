// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {PackedUserOperation} from "@account-abstraction/contracts-v07/interfaces/PackedUserOperation.sol";
import {BasePaymasterV07} from "./BasePaymasterV07.sol";
import {PaymasterBase} from "../core/PaymasterBase.sol";

/// @title VerifyingPaymasterV07
/// @notice Pays for EntryPoint v0.7 user operations that an accepted signer approved.
/// @dev paymasterAndData = paymaster (20) | paymasterVerificationGasLimit (16) | paymasterPostOpGasLimit (16)
///      | validUntil (6) | validAfter (6) | signature (65) = 129 bytes.
contract VerifyingPaymasterV07 is BasePaymasterV07 {
    /// @notice Exact length of paymasterAndData.
    uint256 public constant PAYMASTER_AND_DATA_LENGTH = PAYMASTER_DATA_OFFSET + VALIDITY_LENGTH + SIGNATURE_LENGTH;

    /// @param entryPoint_ EntryPoint v0.7.
    /// @param owner_ Owner (signers, deposit, stake).
    /// @param signers_ Initially accepted signers.
    constructor(address entryPoint_, address owner_, address[] memory signers_)
        PaymasterBase(entryPoint_, owner_, signers_)
    {}

    /// @notice The hash a signer signs (as an EIP-191 personal message) to sponsor `userOp`.
    /// @param userOp The packed user operation; only paymasterAndData[20:52] of its paymasterAndData is hashed.
    /// @param validUntil Last second the sponsorship is valid (0 = forever, never issued by the service).
    /// @param validAfter First second the sponsorship is valid.
    function getHash(PackedUserOperation calldata userOp, uint48 validUntil, uint48 validAfter)
        public
        view
        returns (bytes32)
    {
        return _verifyingHash(_userOpFieldsHash(userOp), validUntil, validAfter);
    }

    /// @dev No context: the EntryPoint does not call postOp.
    function _validatePaymasterUserOp(PackedUserOperation calldata userOp, uint256)
        internal
        view
        override
        returns (bytes memory, uint256)
    {
        _requireLength(userOp.paymasterAndData, PAYMASTER_AND_DATA_LENGTH);
        return ("", _verifyingValidationData(userOp.paymasterAndData[PAYMASTER_DATA_OFFSET:], _userOpFieldsHash(userOp)));
    }

    /// @dev Never reached: validation returns an empty context.
    function _postOp(PostOpMode, bytes calldata, uint256, uint256) internal pure override {}
}
