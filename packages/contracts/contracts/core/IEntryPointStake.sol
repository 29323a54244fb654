// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

/// @title IEntryPointStake
/// @notice The deposit and stake functions that EntryPoint v0.6 and v0.7 share (their IStakeManager),
///         so the version-agnostic base can manage funds without importing either version.
interface IEntryPointStake {
    /// @notice Adds the sent value to `account`'s deposit.
    function depositTo(address account) external payable;

    /// @notice Adds the sent value to the caller's stake and sets its unstake delay.
    function addStake(uint32 unstakeDelaySec) external payable;

    /// @notice Starts the unstake delay of the caller's stake.
    function unlockStake() external;

    /// @notice Withdraws the caller's unlocked stake.
    function withdrawStake(address payable withdrawAddress) external;

    /// @notice Withdraws from the caller's deposit.
    function withdrawTo(address payable withdrawAddress, uint256 withdrawAmount) external;

    /// @notice The deposit of `account`.
    function balanceOf(address account) external view returns (uint256);
}
