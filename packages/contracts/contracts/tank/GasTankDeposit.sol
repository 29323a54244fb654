// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {Ownable, Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {IEntryPointStake} from "../core/IEntryPointStake.sol";

/// @title GasTankDeposit
/// @notice Where anyone, a smart account included, funds a gas tank (User Sponsor mode): `depositFor(sender)`
///         or a plain transfer (credited to the caller) emits `Deposited`, which the paymaster service's
///         settlement watcher reads with eth_getLogs and credits to `sender`'s tank on this chain once the
///         block is confirmed. Events are emitted by internal calls too, so a smart account can fund its own
///         tank from a user operation, which a plain transfer to an EOA deposit address cannot be seen doing.
/// @dev The ether stays here until the owner withdraws it (to the paymasters' EntryPoint deposits or a
///      treasury). Holding rather than forwarding means a deposit can never fail because a recipient
///      reverts or runs out of gas, and a deposit costs the depositor only the event. The owner is two-step
///      (Ownable2Step) and cannot be renounced (ether would be locked for good). The contract keeps no
///      per-sender balances: the service's ledger is the gas tank, this contract is the till.
contract GasTankDeposit is Ownable2Step {
    // ---------------------------------------------------------------- errors
    /// @notice A deposit carried no ether.
    error ZeroAmount();
    /// @notice `depositFor` named the zero address as the tank to credit.
    error ZeroSender();
    /// @notice A withdrawal named the zero address as the recipient.
    error ZeroRecipient();
    /// @notice The withdrawal of `amount` wei to `to` failed (the recipient reverted, or the balance is short).
    error WithdrawFailed(address to, uint256 amount);
    /// @notice Renouncing ownership would lock the deposited ether for good.
    error RenounceOwnershipDisabled();
    /// @notice `to` is an EntryPoint: plain ether sent to it would be credited to this contract's own
    ///         EntryPoint deposit, which it can never withdraw. Use depositToPaymaster.
    error RecipientIsEntryPoint(address to);
    /// @notice depositToPaymaster named the zero address as the EntryPoint or the paymaster.
    error ZeroPaymaster();
    /// @notice depositToPaymaster named this contract as the paymaster: the ether would become this contract's
    ///         own EntryPoint deposit, which it can never withdraw.
    error PaymasterIsTank();
    /// @notice `paymaster` does not answer entryPoint() with `entryPoint` (it serves another EntryPoint, or it is
    ///         not a paymaster): a deposit there could never pay for its operations, and nobody could take it back
    ///         but `paymaster` itself. `answered` is the address it named, or zero when it named none.
    error PaymasterNotOfEntryPoint(address entryPoint, address paymaster, address answered);

    // ---------------------------------------------------------------- events
    /// @notice `from` paid `amount` wei into the gas tank of `sender` (the smart account whose User Sponsor
    ///         mode operations it pays for). The service credits exactly this, once, after confirmation.
    event Deposited(address indexed sender, address indexed from, uint256 amount);
    /// @notice The owner moved `amount` wei of deposits to `to`.
    event Withdrawn(address indexed to, uint256 amount);
    /// @notice The owner moved `amount` wei of deposits into `paymaster`'s deposit at `entryPoint`.
    event PaymasterFunded(address indexed entryPoint, address indexed paymaster, uint256 amount);

    // ---------------------------------------------------------------- constructor
    /// @param owner_ The owner (withdraws the deposits). Deployed through PaymasterDeployer, it is the
    ///        deployer contract first, which offers ownership to the real owner in the same transaction.
    constructor(address owner_) Ownable(owner_) {}

    // ---------------------------------------------------------------- deposits
    /// @notice Credits the sent value to the gas tank of `sender` (any caller, any sender: paying for
    ///         someone else's operations is allowed).
    /// @param sender The smart account whose gas tank is credited.
    function depositFor(address sender) external payable {
        if (sender == address(0)) revert ZeroSender();
        _deposit(sender);
    }

    /// @notice A plain transfer credits the caller's own gas tank.
    receive() external payable {
        _deposit(msg.sender);
    }

    // ---------------------------------------------------------------- owner
    /// @notice Sends `amount` wei of the deposits to `to` (a treasury). Refuses an EntryPoint: to top up a
    ///         paymaster's EntryPoint deposit, use depositToPaymaster.
    function withdraw(address payable to, uint256 amount) external onlyOwner {
        if (to == address(0)) revert ZeroRecipient();
        if (_isEntryPoint(to)) revert RecipientIsEntryPoint(to);
        (bool ok,) = to.call{value: amount}("");
        if (!ok) revert WithdrawFailed(to, amount);
        emit Withdrawn(to, amount);
    }

    /// @notice Adds `amount` wei of the deposits to `paymaster`'s deposit at `entryPoint` (EntryPoint.depositTo).
    ///         Refuses a paymaster that does not name `entryPoint` as its own (`entryPoint()`, which every paymaster
    ///         here and eth-infinitism's BasePaymaster have), and this contract itself: the arguments are typed by
    ///         hand by a multisig owner, and ether deposited for the wrong pair is stranded for good.
    function depositToPaymaster(address entryPoint, address paymaster, uint256 amount) external onlyOwner {
        if (entryPoint == address(0) || paymaster == address(0)) revert ZeroPaymaster();
        if (paymaster == address(this)) revert PaymasterIsTank();
        address answered = _entryPointOf(paymaster);
        if (answered != entryPoint) revert PaymasterNotOfEntryPoint(entryPoint, paymaster, answered);
        IEntryPointStake(entryPoint).depositTo{value: amount}(paymaster);
        emit PaymasterFunded(entryPoint, paymaster, amount);
    }

    /// @notice Disabled: without an owner the deposited ether could never be withdrawn.
    function renounceOwnership() public pure override {
        revert RenounceOwnershipDisabled();
    }

    // ---------------------------------------------------------------- internal
    /// @dev Whether `to` answers EntryPoint's getDepositInfo(address) (v0.6, v0.7 and v0.8 all have it, with a
    ///      five-word DepositInfo): an EOA or an ordinary wallet answers nothing or reverts.
    function _isEntryPoint(address to) private view returns (bool) {
        if (to.code.length == 0) return false;
        (bool ok, bytes memory ret) = to.staticcall(abi.encodeWithSignature("getDepositInfo(address)", address(this)));
        return ok && ret.length >= 160;
    }

    /// @dev The EntryPoint `paymaster` names with entryPoint(), or zero when it names none: a low-level staticcall,
    ///      so an EOA, a contract without the function or one answering something else than one address word is
    ///      refused by the caller's custom error rather than an empty revert.
    function _entryPointOf(address paymaster) private view returns (address) {
        (bool ok, bytes memory ret) = paymaster.staticcall(abi.encodeWithSignature("entryPoint()"));
        if (!ok || ret.length != 32) return address(0);
        uint256 word = abi.decode(ret, (uint256));
        return word >> 160 == 0 ? address(uint160(word)) : address(0);
    }

    function _deposit(address sender) private {
        if (msg.value == 0) revert ZeroAmount();
        emit Deposited(sender, msg.sender, msg.value);
    }
}
