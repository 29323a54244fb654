// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {InitCodeHash} from "../core/InitCodeHash.sol";

/// @title SponsorProbe
/// @notice Everything a paymaster service reads and simulates for one sponsorship, in ONE eth_call: whether the
///         paymaster accepts the service's signer, the sender's token holdings (ERC-20 mode), then the op's
///         simulations, run in the charge mode those holdings select. The service's estimate and its check that
///         the signed op will land then cost one round trip to the node instead of two or three. It also reads
///         the EIP-7702 delegate the sender's code names (the paymaster hash binds it), so a sponsorship of a
///         deployed sender needs no eth_getCode of its own.
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

    /// @notice How `readBefore` ends: always, with what it read.
    error ReadBefore(bool signerAccepted, Holdings holdings, address senderDelegate);

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
    /// @return senderDelegate The delegate the sender's code names before any call (InitCodeHash.eip7702Delegate,
    ///         as the paymasters read it; address(0) when its code is not an EIP-7702 delegation).
    function probe(
        address paymaster,
        address signer,
        address token,
        address sender,
        uint256 preChargeFrom,
        Call[] calldata preChargeCalls,
        Call[] calldata otherCalls
    )
        external
        returns (bool signerAccepted, Holdings memory before, bool preCharge, Result[] memory results, address senderDelegate)
    {
        (signerAccepted, before, senderDelegate) = _readBeforeIsolated(paymaster, signer, token, sender);
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

    /// @notice isSigner(signer), the sender's holdings and its EIP-7702 delegate, then a revert with them (ReadBefore): the accounts and
    ///         slots it read are cold again for the calls after it (EIP-2929 undoes a reverted frame's accesses),
    ///         so the simulations cost what they will on chain, not less.
    function readBefore(address paymaster, address signer, address token, address sender) external view {
        bool accepted = _readWord(paymaster, abi.encodeWithSignature("isSigner(address)", signer)) == 1;
        revert ReadBefore(accepted, holdings(token, sender, paymaster), InitCodeHash.eip7702Delegate(sender));
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
            (bool success, bytes memory returned) = abi.decode(_errorArguments(reason), (bool, bytes));
            return Result(success, returned);
        }
    }

    /// @dev readBefore through a call whose revert carries its reads (nothing read before stays warm).
    function _readBeforeIsolated(address paymaster, address signer, address token, address sender)
        private
        view
        returns (bool accepted, Holdings memory h, address senderDelegate)
    {
        try this.readBefore(paymaster, signer, token, sender) {}
        catch (bytes memory reason) {
            if (reason.length >= 4 && bytes4(reason) == ReadBefore.selector) {
                (accepted, h, senderDelegate) = abi.decode(_errorArguments(reason), (bool, Holdings, address));
            }
        }
    }

    /// @dev A custom error's arguments, in place: a bytes value 4 bytes further on, its length written over the
    ///      selector (the revert data is not used after).
    function _errorArguments(bytes memory reason) private pure returns (bytes memory args) {
        assembly ("memory-safe") {
            args := add(reason, 4)
            mstore(args, sub(mload(reason), 4))
        }
    }

    /// @dev One word a view returns (0 when the call fails or returns less than a word).
    function _readWord(address target, bytes memory data) private view returns (uint256 word) {
        (bool success, bytes memory returned) = target.staticcall(data);
        if (success && returned.length >= 32) word = abi.decode(returned, (uint256));
    }
}
