// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {PackedUserOperation} from "@account-abstraction/contracts-v07/interfaces/PackedUserOperation.sol";
import {VerifyingPaymasterV07} from "../v07/VerifyingPaymasterV07.sol";
import {Eip7702InitCodeHash} from "./Eip7702InitCodeHash.sol";

/// @title VerifyingPaymasterV08
/// @notice Pays for EntryPoint v0.8 user operations that an accepted signer approved. v0.8 keeps v0.7's
///         PackedUserOperation and IPaymaster (same ABI), so this is VerifyingPaymasterV07 except for the one
///         place the EntryPoints differ: a 7702 sender's delegate is hashed instead of the initCode marker.
/// @dev paymasterAndData layout and length as VerifyingPaymasterV07 (129 bytes).
contract VerifyingPaymasterV08 is VerifyingPaymasterV07 {
    /// @param entryPoint_ EntryPoint v0.8.
    /// @param owner_ Owner (signers, deposit, stake).
    /// @param signers_ Initially accepted signers.
    constructor(address entryPoint_, address owner_, address[] memory signers_)
        VerifyingPaymasterV07(entryPoint_, owner_, signers_)
    {}

    function _initCodeHash(PackedUserOperation calldata userOp) internal view override returns (bytes32) {
        return Eip7702InitCodeHash.initCodeHash(userOp.sender, userOp.initCode);
    }
}
