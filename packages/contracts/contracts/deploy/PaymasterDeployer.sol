// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

/// @dev What this contract needs of a paymaster: Ownable2Step's transfer (the new owner accepts).
interface IOwnable2StepTransfer {
    function transferOwnership(address newOwner) external;
}

/// @title PaymasterDeployer
/// @notice Deploys a paymaster at the same address on every chain and hands it over in the same transaction.
///         The paymaster is created with fixed constructor arguments (this contract as its first owner and
///         treasury, no signers), so its address depends only on who deploys, the salt and the code, never on
///         its owner, signers or treasury. The set-up (signers, treasury, tokens, deposit, stake) then runs as
///         calls from this contract, the first owner, and ownership is offered to the real owner, who accepts
///         it (Ownable2Step). Nothing is left half done: any failing step reverts the whole deployment.
/// @dev The CREATE2 salt is keccak256(abi.encode(msg.sender, salt)): nobody can take "your" address on a chain
///      where you have not deployed yet (squatting), and one deployer key gets the same addresses everywhere.
///      This contract holds no ether after `deploy`. It stays the paymaster's owner until the offered owner
///      accepts. For REOFFER_WINDOW after `deploy`, and only while no owner accepted, the deploying key may offer
///      ownership to someone else (reofferOwnership), itself included: in that window the deploying key is as
///      strong as the owner. After it, the deploying key can do nothing, and nobody else ever can. The window is
///      kept here, not in the paymaster's constructor arguments, so the paymaster's address stays deterministic.
contract PaymasterDeployer {
    // ---------------------------------------------------------------- types
    /// @notice One set-up call on the new paymaster, with the ether it carries (e.g. addStake, deposit).
    struct Call {
        bytes data;
        uint256 value;
    }

    // ---------------------------------------------------------------- errors
    error ZeroOwner();
    error ValueMismatch(uint256 sent, uint256 needed);
    error DeploymentFailed();
    error SetupCallFailed(uint256 index, bytes reason);
    /// @notice `caller` did not deploy `paymaster` through this contract.
    error NotDeployer(address paymaster, address caller);
    /// @notice The deploying key's window to re-offer `paymaster` closed at `closedAt` (unix seconds).
    error ReofferWindowClosed(address paymaster, uint256 closedAt);

    // ---------------------------------------------------------------- events
    event PaymasterDeployed(address indexed paymaster, address indexed deployer, bytes32 salt, address owner);
    /// @notice The key that deployed `paymaster` offered its ownership again, now to `owner`.
    event OwnershipReoffered(address indexed paymaster, address indexed deployer, address owner);

    // ---------------------------------------------------------------- constants
    /// @notice How long after `deploy` the deploying key may re-offer ownership nobody accepted yet: long enough
    ///         to notice and correct an owner that can never accept, short enough that the deploying key does not
    ///         stay as strong as the owner indefinitely.
    uint256 public constant REOFFER_WINDOW = 7 days;

    // ---------------------------------------------------------------- storage
    /// @notice Who deployed a contract through `deploy`, and until when (unix seconds) that key may re-offer it.
    struct Deployment {
        address deployer;
        uint64 reofferUntil;
    }

    /// @notice Each contract deployed through `deploy`: the only key that may re-offer it, and until when.
    mapping(address paymaster => Deployment) public deployments;

    // ---------------------------------------------------------------- views
    /// @notice The address `deployer` gets for `initCode` (by its keccak256) with `salt`.
    function addressOf(address deployer, bytes32 salt, bytes32 initCodeHash) public view returns (address) {
        bytes32 digest = keccak256(abi.encodePacked(bytes1(0xff), address(this), _salt(deployer, salt), initCodeHash));
        return address(uint160(uint256(digest)));
    }

    // ---------------------------------------------------------------- deploy
    /// @notice Creates `initCode` with CREATE2, runs `setup` on it from this contract, then offers its
    ///         ownership to `owner`. msg.value must equal the sum of the calls' values.
    /// @return paymaster The new contract's address (equal to addressOf(msg.sender, salt, keccak256(initCode))).
    function deploy(bytes32 salt, bytes calldata initCode, Call[] calldata setup, address owner)
        external
        payable
        returns (address paymaster)
    {
        if (owner == address(0)) revert ZeroOwner();
        uint256 needed;
        for (uint256 i = 0; i < setup.length; i++) {
            needed += setup[i].value;
        }
        if (msg.value != needed) revert ValueMismatch(msg.value, needed);

        bytes memory code = initCode;
        bytes32 mixed = _salt(msg.sender, salt);
        assembly ("memory-safe") {
            paymaster := create2(0, add(code, 0x20), mload(code), mixed)
        }
        if (paymaster == address(0)) revert DeploymentFailed();

        for (uint256 i = 0; i < setup.length; i++) {
            (bool ok, bytes memory reason) = paymaster.call{value: setup[i].value}(setup[i].data);
            if (!ok) revert SetupCallFailed(i, reason);
        }
        deployments[paymaster] = Deployment(msg.sender, uint64(block.timestamp + REOFFER_WINDOW));
        IOwnable2StepTransfer(paymaster).transferOwnership(owner);
        emit PaymasterDeployed(paymaster, msg.sender, salt, owner);
    }

    /// @notice Offers `paymaster`'s ownership to `owner` instead of the owner offered at deployment, for when
    ///         that one can never accept (a typo, a multisig absent on this chain): without it the deposit and
    ///         stake sent with `deploy` would be locked and the address could not be deployed again. Only the
    ///         key that deployed it, only for REOFFER_WINDOW after `deploy`, and only while the offer is open: once
    ///         an owner accepted, this contract is no longer the owner and the paymaster refuses the call.
    function reofferOwnership(address paymaster, address owner) external {
        if (owner == address(0)) revert ZeroOwner();
        Deployment memory deployment = deployments[paymaster];
        if (deployment.deployer != msg.sender || msg.sender == address(0)) revert NotDeployer(paymaster, msg.sender);
        if (block.timestamp > deployment.reofferUntil) revert ReofferWindowClosed(paymaster, deployment.reofferUntil);
        IOwnable2StepTransfer(paymaster).transferOwnership(owner);
        emit OwnershipReoffered(paymaster, msg.sender, owner);
    }

    // ---------------------------------------------------------------- internal
    function _salt(address deployer, bytes32 salt) private pure returns (bytes32) {
        return keccak256(abi.encode(deployer, salt));
    }
}
