// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

/// @title InitCodeHash
/// @notice The initCode word of every paymaster hash (v0.6, v0.7 and, outside the 0x7702 marker, v0.8):
///         keccak256(initCode), except for an op that deploys nothing (empty initCode) whose sender is an EOA
///         delegated by EIP-7702 — its code is exactly 0xef0100 ‖ delegate (23 bytes). That op's word is
///         keccak256(delegate), the hash v0.8 gives the bare marker, so a sponsorship names the code the sender
///         runs and stops validating once the sender re-delegates (re-audit N-5).
/// @dev Only an empty initCode reads the sender's code (EXTCODESIZE, then EXTCODECOPY of 23 bytes). ERC-7562
///      allows a paymaster EXTCODE* of the op's own sender (OP-041/042; AUTH-030 for a delegated sender).
library InitCodeHash {
    /// @notice A delegated EOA's code: this prefix, then the delegate's 20 bytes.
    bytes3 internal constant EIP7702_PREFIX = 0xef0100;
    uint256 internal constant EIP7702_CODE_LENGTH = 23;

    function initCodeHash(address sender, bytes calldata initCode) internal view returns (bytes32) {
        if (initCode.length == 0) {
            address delegate = eip7702Delegate(sender);
            if (delegate != address(0)) return keccak256(abi.encodePacked(delegate));
        }
        return keccak256(initCode);
    }

    /// @notice The delegate `account`'s code points to, or address(0) when its code is not an EIP-7702 delegation
    ///         (delegating to address(0) clears the code instead, so address(0) is never a delegate).
    function eip7702Delegate(address account) internal view returns (address) {
        if (account.code.length != EIP7702_CODE_LENGTH) return address(0);
        bytes32 code;
        assembly ("memory-safe") {
            extcodecopy(account, 0, 0, 23) // scratch space
            code := mload(0)
        }
        if (bytes3(code) != EIP7702_PREFIX) return address(0);
        return address(bytes20(code << 24));
    }
}
