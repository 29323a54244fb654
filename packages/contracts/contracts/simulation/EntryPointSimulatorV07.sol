// SPDX-License-Identifier: GPL-3.0
pragma solidity ^0.8.23;

import {EntryPointSimulations} from "@account-abstraction/contracts-v07/core/EntryPointSimulations.sol";

/// @title EntryPointSimulatorV07
/// @notice eth-infinitism's EntryPointSimulations (v0.7) plus what a paymaster service needs to check an op
///         with ONE simulateHandleOp: whether the op's execution succeeded (the EntryPoint only tells it in
///         UserOperationEvent, and eth_call returns no logs) and a read made right after the op (e.g. the
///         treasury's token balance). Pass this contract's address and `opOutcome(target, data)` as
///         simulateHandleOp's target and target call data.
/// @dev Never an EntryPoint: it runs at the EntryPoint's address inside eth_call, either as a state override
///      of the EntryPoint's code, or behind a small delegating override with this runtime code deployed once
///      elsewhere (deployed as runtime code only: the parent's constructor, which refuses deployment, never
///      runs, and no state of its own is needed). Its storage is the EntryPoint's; `_opOutcome` takes a slot
///      the real EntryPoint never uses, and eth_call discards the write.
contract EntryPointSimulatorV07 is EntryPointSimulations {
    /// @dev 1: the op's execution succeeded, 2: it reverted (or its postOp did); 0: no op finished yet.
    uint256 private _opOutcome;

    function emitUserOperationEvent(UserOpInfo memory opInfo, bool success, uint256 actualGasCost, uint256 actualGas)
        internal
        virtual
        override
    {
        _opOutcome = success ? 1 : 2;
        super.emitUserOperationEvent(opInfo, success, actualGasCost, actualGas);
    }

    /// @notice simulateHandleOp's target (the EntryPoint calls itself after the op): whether the op's execution
    ///         and postOp succeeded, and the outcome of calling `target` with `data` (skipped for address 0).
    function opOutcome(address target, bytes calldata data)
        external
        returns (bool opSucceeded, bool readSuccess, bytes memory readResult)
    {
        opSucceeded = _opOutcome == 1;
        if (target != address(0)) (readSuccess, readResult) = target.call(data);
    }
}
