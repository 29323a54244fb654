// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Eip7702Support} from "@account-abstraction/contracts-v08/core/Eip7702Support.sol";
import {InitCodeHash} from "../core/InitCodeHash.sol";

/// @title Eip7702InitCodeHash
/// @notice The initCode hash EntryPoint v0.8 puts in its userOpHash, for the paymaster hash: a 7702 sender
///         (initCode starting with the 0x7702 marker) is bound by its delegate — keccak(delegate ‖ initCode[20:])
///         — never by the raw marker, so a sponsorship signed for one delegate never validates for another. Any
///         other initCode has the word of every version (InitCodeHash): an already-delegated sender's empty
///         initCode is keccak(delegate), exactly the bare marker's hash.
/// @dev Same marker rule as Eip7702Support._getEip7702InitCodeHashOverride, which takes v0.8's own struct type;
///      the marker test and the marker op's delegate read (reverting as the EntryPoint does) are the package's.
library Eip7702InitCodeHash {
    function initCodeHash(address sender, bytes calldata initCode) internal view returns (bytes32) {
        if (!Eip7702Support._isEip7702InitCode(initCode)) return InitCodeHash.initCodeHash(sender, initCode);
        // Reverts when the sender is not delegated, as the EntryPoint's getUserOpHash does.
        address delegate = Eip7702Support._getEip7702Delegate(sender);
        if (initCode.length <= 20) return keccak256(abi.encodePacked(delegate));
        return keccak256(abi.encodePacked(delegate, initCode[20:]));
    }
}
