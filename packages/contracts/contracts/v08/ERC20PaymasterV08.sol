// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {PackedUserOperation} from "@account-abstraction/contracts-v07/interfaces/PackedUserOperation.sol";
import {ERC20PaymasterV07} from "../v07/ERC20PaymasterV07.sol";
import {Eip7702InitCodeHash} from "./Eip7702InitCodeHash.sol";

/// @title ERC20PaymasterV08
/// @notice ERC20PaymasterV07 for EntryPoint v0.8 (same PackedUserOperation, IPaymaster and postOp). Two things
///         differ, both where the EntryPoint differs: a 7702 sender's delegate is hashed instead of the marker, and
///         v0.8's unused-gas penalty has a 40,000-gas threshold (none when at most that much is left unused). v0.8
///         also adds the execution-gas penalty before postOp, so actualGasCost already includes it here.
/// @dev paymasterAndData layout and length as ERC20PaymasterV07 (214 bytes).
contract ERC20PaymasterV08 is ERC20PaymasterV07 {
    /// @param entryPoint_ EntryPoint v0.8.
    /// @param owner_ Owner (signers, tokens, treasury, deposit, stake).
    /// @param signers_ Initially accepted signers.
    /// @param treasury_ Where accrued fees are swept.
    /// @param postOpGas_ Gas postOp uses, charged on top of actualGasCost.
    /// @param minPostOpGasLimit_ The lowest paymasterPostOpGasLimit accepted.
    constructor(
        address entryPoint_,
        address owner_,
        address[] memory signers_,
        address treasury_,
        uint256 postOpGas_,
        uint256 minPostOpGasLimit_
    ) ERC20PaymasterV07(entryPoint_, owner_, signers_, treasury_, postOpGas_, minPostOpGasLimit_) {}

    /// @notice EntryPoint v0.8 penalises unused gas only beyond this much (EntryPoint.PENALTY_GAS_THRESHOLD).
    uint256 public constant PENALTY_GAS_THRESHOLD = 40_000;

    /// @dev postOp's own gas plus v0.8's penalty on the unused postOp limit: 10% of all of it, but only
    ///      when more than PENALTY_GAS_THRESHOLD is left unused (EntryPoint._getUnusedGasPenalty).
    function _postOpGasCharge(uint256 postOpGasLimit, uint256 used) internal pure override returns (uint256) {
        if (postOpGasLimit <= used + PENALTY_GAS_THRESHOLD) return used;
        return used + ((postOpGasLimit - used) * UNUSED_GAS_PENALTY_PERCENT) / 100;
    }

    /// @dev None: EntryPoint v0.8 adds its call-gas penalty (beyond its threshold, with the exact preOpGas) before
    ///      postOp, so actualGasCost already includes it.
    function _unusedCallGasPenalty(PenaltyContext memory, uint256, uint256) internal pure override returns (uint256) {
        return 0;
    }

    function _initCodeHash(PackedUserOperation calldata userOp) internal view override returns (bytes32) {
        return Eip7702InitCodeHash.initCodeHash(userOp.sender, userOp.initCode);
    }
}
