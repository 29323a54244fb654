// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {IPaymaster} from "@account-abstraction/contracts-v07/interfaces/IPaymaster.sol";
import {PackedUserOperation} from "@account-abstraction/contracts-v07/interfaces/PackedUserOperation.sol";

/// @notice Deployed by ValidationProbePaymaster's CREATE probe.
contract Empty {}

/// @title ValidationProbePaymaster
/// @notice Test-only EntryPoint v0.7 paymaster whose validation does one thing ERC-7562 restricts, chosen by
///         the first byte of paymasterData, so the conformance checker can be shown a real trace of each.
///         It approves every op (no signature); never deploy it outside tests.
contract ValidationProbePaymaster is IPaymaster {
    uint8 public constant READ_TIMESTAMP = 1;
    uint8 public constant READ_FOREIGN_STORAGE = 2;
    uint8 public constant READ_OWN_STORAGE = 3;
    uint8 public constant GAS_WITHOUT_CALL = 4;
    uint8 public constant READ_SELF_BALANCE = 5;
    uint8 public constant APPLY_PERMIT = 6;
    uint8 public constant NOTHING = 7;
    uint8 public constant READ_SENDER_BALANCE = 8;
    uint8 public constant CALL_WITH_VALUE = 9;
    uint8 public constant CREATE_CONTRACT = 10;

    address public immutable entryPoint;
    uint256 public counter = 1;

    constructor(address entryPoint_) {
        entryPoint = entryPoint_;
    }

    receive() external payable {}

    /// @notice Adds the sent value to this paymaster's EntryPoint deposit.
    function deposit() external payable {
        (bool ok,) = entryPoint.call{value: msg.value}(abi.encodeWithSignature("depositTo(address)", address(this)));
        require(ok, "deposit failed");
    }

    /// @inheritdoc IPaymaster
    /// @dev paymasterData = probe (1) | arguments (probe-specific, abi-encoded).
    function validatePaymasterUserOp(PackedUserOperation calldata userOp, bytes32, uint256)
        external
        returns (bytes memory context, uint256 validationData)
    {
        bytes calldata data = userOp.paymasterAndData[52:];
        uint8 probe = uint8(data[0]);
        uint256 sink;
        if (probe == READ_TIMESTAMP) {
            sink = block.timestamp;
        } else if (probe == READ_FOREIGN_STORAGE) {
            sink = IERC20(abi.decode(data[1:], (address))).totalSupply();
        } else if (probe == READ_OWN_STORAGE) {
            sink = counter;
        } else if (probe == GAS_WITHOUT_CALL) {
            sink = gasleft();
        } else if (probe == READ_SELF_BALANCE) {
            sink = address(this).balance;
        } else if (probe == READ_SENDER_BALANCE) {
            sink = IERC20(abi.decode(data[1:], (address))).balanceOf(userOp.sender);
        } else if (probe == CALL_WITH_VALUE) {
            (bool ok,) = payable(userOp.sender).call{value: 1}("");
            sink = ok ? 2 : 3;
        } else if (probe == CREATE_CONTRACT) {
            sink = uint160(address(new Empty()));
        } else if (probe == APPLY_PERMIT) {
            (address token, address owner, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) =
                abi.decode(data[1:], (address, address, uint256, uint256, uint8, bytes32, bytes32));
            IERC20Permit(token).permit(owner, address(this), value, deadline, v, r, s);
        }
        // A value that depends on the probe, so the optimizer keeps every read.
        return ("", sink == type(uint256).max ? 1 : 0);
    }

    /// @inheritdoc IPaymaster
    function postOp(PostOpMode, bytes calldata, uint256, uint256) external pure {}
}
