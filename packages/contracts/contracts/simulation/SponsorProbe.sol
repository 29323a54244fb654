// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

/// @title SponsorProbe
/// @notice Everything a paymaster service reads and simulates for one sponsorship, in ONE eth_call: whether the
///         paymaster accepts the service's signer, the sender's token holdings (ERC-20 mode), then the op's
///         simulations, run in the charge mode those holdings select. The service's estimate and its check that
///         the signed op will land then cost one round trip to the node instead of two or three.
/// @dev Never deployed: it runs at an address of the service's choosing through an eth_call state override
///      (its runtime code set there), beside the EntryPoint (or its simulator) it calls. It holds no state and
///      trusts nothing it is given: every call is made as given, and what it returns is read by the service only.
///      A call marked `isolated` runs inside a call to `isolate`, which always reverts: its state changes are
///      discarded, so that a later simulation of the same op starts from the chain's state again.
contract SponsorProbe {
    /// @notice One call to make: `target` with `data`; `isolated`: its state changes are discarded afterwards.
    struct Call {
        address target;
        bytes data;
        bool isolated;
    }

    /// @notice A call's outcome: whether it returned, and what it returned or reverted with.
    struct Result {
        bool success;
        bytes data;
    }

    /// @notice `owner`'s balance of a token, its allowance to `spender`, and `spender`'s balance of the token.
    struct Holdings {
        uint256 balance;
        uint256 allowance;
        uint256 spenderBalance;
    }

    /// @notice How `isolate` ends: always, with the call's outcome.
    error Isolated(bool success, bytes data);

    /// @notice The paymaster's view of the sponsorship's parties, then the calls the sender's allowance selects.
    /// @param paymaster Whose `isSigner(signer)` is read.
    /// @param signer The service's signer.
    /// @param token ERC-20 mode: the token the sender pays with; address 0 otherwise (no holdings read).
    /// @param sender The op's sender (whose holdings are read).
    /// @param preChargeFrom With a token: the least allowance to the paymaster that selects `preChargeCalls`.
    /// @param preChargeCalls Made when a token is given and the sender's allowance is at least `preChargeFrom`.
    /// @param otherCalls Made otherwise.
    /// @return signerAccepted Whether the paymaster accepts `signer` (false if it does not answer).
    /// @return before The sender's holdings before any call (zeros without a token).
    /// @return preCharge Whether `preChargeCalls` were made.
    /// @return results Each call's outcome, in order.
    function probe(
        address paymaster,
        address signer,
        address token,
        address sender,
        uint256 preChargeFrom,
        Call[] calldata preChargeCalls,
        Call[] calldata otherCalls
    ) external returns (bool signerAccepted, Holdings memory before, bool preCharge, Result[] memory results) {
        signerAccepted = _readWord(paymaster, abi.encodeWithSignature("isSigner(address)", signer)) == 1;
        before = holdings(token, sender, paymaster);
        preCharge = token != address(0) && before.allowance >= preChargeFrom;
        Call[] calldata calls = preCharge ? preChargeCalls : otherCalls;
        results = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            results[i] = calls[i].isolated ? _isolated(calls[i]) : _call(calls[i]);
        }
    }

    /// @notice `owner`'s balance of `token`, its allowance to `spender` and `spender`'s balance (zeros for token 0;
    ///         a read that fails counts as 0). Also the simulations' read right after the op.
    function holdings(address token, address owner, address spender) public view returns (Holdings memory h) {
        if (token == address(0)) return h;
        h.balance = _readWord(token, abi.encodeWithSignature("balanceOf(address)", owner));
        h.allowance = _readWord(token, abi.encodeWithSignature("allowance(address,address)", owner, spender));
        h.spenderBalance = _readWord(token, abi.encodeWithSignature("balanceOf(address)", spender));
    }

    /// @notice Makes the call and reverts with its outcome (Isolated): nothing it changed remains.
    function isolate(address target, bytes calldata data) external {
        (bool success, bytes memory returned) = target.call(data);
        revert Isolated(success, returned);
    }

    function _call(Call calldata c) private returns (Result memory) {
        (bool success, bytes memory returned) = c.target.call(c.data);
        return Result(success, returned);
    }

    /// @dev The call through `isolate`; anything else than its Isolated revert (e.g. out of gas) is a failure.
    function _isolated(Call calldata c) private returns (Result memory) {
        try this.isolate(c.target, c.data) {
            return Result(false, "");
        } catch (bytes memory reason) {
            if (reason.length < 4 || bytes4(reason) != Isolated.selector) return Result(false, reason);
            // The error's arguments in place: a bytes value 4 bytes further on, its length written over the selector.
            bytes memory args;
            assembly ("memory-safe") {
                args := add(reason, 4)
                mstore(args, sub(mload(reason), 4))
            }
            (bool success, bytes memory returned) = abi.decode(args, (bool, bytes));
            return Result(success, returned);
        }
    }

    /// @dev One word a view returns (0 when the call fails or returns less than a word).
    function _readWord(address target, bytes memory data) private view returns (uint256 word) {
        (bool success, bytes memory returned) = target.staticcall(data);
        if (success && returned.length >= 32) word = abi.decode(returned, (uint256));
    }
}
