// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {PackedUserOperation} from "@account-abstraction/contracts-v07/interfaces/PackedUserOperation.sol";

/// @title PaymasterDataAccount (tests only)
/// @notice An EntryPoint v0.7 account whose validation reads the paymaster data it is given: it spends more gas when
///         the last byte of the paymaster signature's s (the byte before v) is odd. Every op is valid without a
///         signature. The service's one round trip must notice that its validation depends on values the op is
///         signed with, and simulate the signed op before handing it out (the paymaster service's docs/pipeline.md,
///         "One round trip", condition `account`).
contract PaymasterDataAccount {
    /// @notice The EntryPoint this account serves.
    address public immutable entryPoint;

    constructor(address entryPoint_) {
        entryPoint = entryPoint_;
    }

    /// @notice Accepts every op; its gas depends on paymasterAndData's second-to-last byte.
    function validateUserOp(PackedUserOperation calldata userOp, bytes32 userOpHash, uint256 missingAccountFunds)
        external
        returns (uint256 validationData)
    {
        require(msg.sender == entryPoint, "not the EntryPoint");
        bytes calldata data = userOp.paymasterAndData;
        uint256 rounds = data.length >= 2 && uint8(data[data.length - 2]) % 2 == 1 ? 40 : 1;
        bytes32 h = userOpHash;
        for (uint256 i = 0; i < rounds; i++) {
            h = keccak256(abi.encode(h, i));
        }
        if (missingAccountFunds > 0) {
            (bool paid,) = payable(msg.sender).call{value: missingAccountFunds}("");
            paid;
        }
        // Always 0 (valid): h is read only so that the loop is not optimised away.
        validationData = h == bytes32(0) ? 1 : 0;
    }

    /// @notice Calls `target` with `value` and `data` (the EntryPoint only), bubbling a revert.
    function execute(address target, uint256 value, bytes calldata data) external {
        require(msg.sender == entryPoint, "not the EntryPoint");
        (bool ok, bytes memory returned) = target.call{value: value}(data);
        if (!ok) {
            assembly {
                revert(add(returned, 32), mload(returned))
            }
        }
    }

    receive() external payable {}
}

/// @title PaymasterDataAccountFactory (tests only)
/// @notice Deploys PaymasterDataAccounts by CREATE2, so that an op can deploy its own (initCode = this factory and
///         createAccount(salt)).
contract PaymasterDataAccountFactory {
    /// @notice The EntryPoint every account it deploys serves.
    address public immutable entryPoint;

    constructor(address entryPoint_) {
        entryPoint = entryPoint_;
    }

    /// @notice The account for `salt`, deployed if it is not yet.
    function createAccount(uint256 salt) external returns (PaymasterDataAccount account) {
        address predicted = getAddress(salt);
        if (predicted.code.length > 0) return PaymasterDataAccount(payable(predicted));
        account = new PaymasterDataAccount{salt: bytes32(salt)}(entryPoint);
    }

    /// @notice Where createAccount(salt) deploys.
    function getAddress(uint256 salt) public view returns (address) {
        bytes32 codeHash = keccak256(abi.encodePacked(type(PaymasterDataAccount).creationCode, abi.encode(entryPoint)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), bytes32(salt), codeHash)))));
    }
}
