// SPDX-License-Identifier: GPL-3.0
pragma solidity ^0.8.28;

import {EntryPointSimulations} from "@account-abstraction/contracts-v08/core/EntryPointSimulations.sol";

/// @title EntryPointSimulatorV08
/// @notice EntryPointSimulatorV07 for EntryPoint v0.8: eth-infinitism's v0.8 EntryPointSimulations plus the
///         op's execution outcome and a read right after the op, in ONE simulateHandleOp (see V07 for how it is
///         reached: a state override at the EntryPoint's address, never a real EntryPoint).
/// @dev v0.8 names the event hook `_emitUserOperationEvent`; its simulations keep the domain separator and the
///      SenderCreator in storage (set by simulateHandleOp itself), so running at the EntryPoint's address works.
contract EntryPointSimulatorV08 is EntryPointSimulations {
    /// @dev 1: the op's execution succeeded, 2: it reverted (or its postOp did); 0: no op finished yet.
    uint256 private _opOutcome;

    function _emitUserOperationEvent(UserOpInfo memory opInfo, bool success, uint256 actualGasCost, uint256 actualGas)
        internal
        virtual
        override
    {
        _opOutcome = success ? 1 : 2;
        super._emitUserOperationEvent(opInfo, success, actualGasCost, actualGas);
    }

    /// @notice simulateHandleOp's target: whether the op's execution and postOp succeeded, and the outcome of
    ///         calling `target` with `data` (skipped for address 0).
    function opOutcome(address target, bytes calldata data)
        external
        returns (bool opSucceeded, bool readSuccess, bytes memory readResult)
    {
        opSucceeded = _opOutcome == 1;
        if (target != address(0)) (readSuccess, readResult) = target.call(data);
    }
}
