// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {Ownable, Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {IEntryPointStake} from "./IEntryPointStake.sol";

/// @title PaymasterBase
/// @notice Version-agnostic core of every paymaster here: the EntryPoint it serves, a two-step owner,
///         a set of accepted signers (so a signer can be rotated without downtime), deposit and stake
///         management, signature checking and validationData packing.
/// @dev The owner manages signers and funds; signers only sign sponsorships. The two roles are separate
///      so the hot signing key in the service never controls funds.
abstract contract PaymasterBase is Ownable2Step {
    // ---------------------------------------------------------------- errors
    /// @notice A function reserved to the EntryPoint was called by `caller`.
    error NotEntryPoint(address caller);
    /// @notice paymasterAndData has `length` bytes where exactly `expected` are required.
    error InvalidPaymasterDataLength(uint256 length, uint256 expected);
    /// @notice A zero address was given where a real one is required.
    error ZeroAddress();
    /// @notice `signer` is already an accepted signer.
    error SignerAlreadyAdded(address signer);
    /// @notice `signer` is not an accepted signer.
    error SignerNotFound(address signer);
    /// @notice Renouncing ownership would lock the deposit, the stake and the signer set for good.
    error RenounceOwnershipDisabled();

    // ---------------------------------------------------------------- events
    /// @notice `signer` may now sign sponsorships.
    event SignerAdded(address indexed signer);
    /// @notice `signer` may no longer sign sponsorships.
    event SignerRemoved(address indexed signer);
    /// @notice The last accepted signer was removed: every sponsorship fails from now on (the kill switch)
    ///         until the owner adds a signer again.
    event AllSignersRemoved();

    // ---------------------------------------------------------------- constants
    /// @notice validationData bit that tells the EntryPoint the signature is invalid.
    uint256 internal constant SIG_VALIDATION_FAILED = 1;
    /// @notice Bytes of validUntil (uint48) + validAfter (uint48) at the start of paymasterData.
    uint256 internal constant VALIDITY_LENGTH = 12;
    /// @notice Only 65-byte (r, s, v) ECDSA signatures are accepted.
    uint256 internal constant SIGNATURE_LENGTH = 65;
    /// @notice Longest validity window (validUntil - validAfter) a signature may carry; a longer one, or
    ///         validUntil = 0 (which the EntryPoint reads as "never expires"), counts as a failed signature.
    uint256 public constant MAX_VALIDITY_WINDOW = 1 days;

    // ---------------------------------------------------------------- storage
    /// @notice The EntryPoint this paymaster serves.
    IEntryPointStake public immutable entryPoint;
    /// @notice Whether an address is an accepted sponsorship signer.
    mapping(address signer => bool accepted) public isSigner;
    /// @notice How many signers are accepted (0: every sponsorship fails, the kill switch).
    uint256 public signerCount;

    // ---------------------------------------------------------------- constructor
    /// @param entryPoint_ The EntryPoint this paymaster serves.
    /// @param owner_ The owner (manages signers, deposit and stake).
    /// @param signers_ The initially accepted signers.
    constructor(address entryPoint_, address owner_, address[] memory signers_) Ownable(owner_) {
        if (entryPoint_ == address(0)) revert ZeroAddress();
        entryPoint = IEntryPointStake(entryPoint_);
        for (uint256 i = 0; i < signers_.length; i++) {
            _addSigner(signers_[i]);
        }
    }

    /// @dev Reverts unless called by the EntryPoint.
    modifier onlyEntryPoint() {
        if (msg.sender != address(entryPoint)) revert NotEntryPoint(msg.sender);
        _;
    }

    // ---------------------------------------------------------------- admin: signers
    /// @notice Accepts `signer` as a sponsorship signer. Rotation: add the new signer, let the old
    ///         signer's signatures expire, then remove the old one.
    function addSigner(address signer) external onlyOwner {
        _addSigner(signer);
    }

    /// @notice Stops accepting `signer`; signatures it already issued fail from now on. Removing the last
    ///         signer is allowed on purpose: it is the kill switch that stops all sponsoring at once.
    function removeSigner(address signer) external onlyOwner {
        if (!isSigner[signer]) revert SignerNotFound(signer);
        isSigner[signer] = false;
        signerCount -= 1;
        emit SignerRemoved(signer);
        if (signerCount == 0) emit AllSignersRemoved();
    }

    /// @notice Disabled: an ownerless paymaster could never withdraw its deposit or stake nor rotate signers.
    function renounceOwnership() public pure override {
        revert RenounceOwnershipDisabled();
    }

    // ---------------------------------------------------------------- admin: deposit and stake
    /// @notice Adds the sent value to this paymaster's EntryPoint deposit. Anyone may top it up.
    function deposit() external payable {
        entryPoint.depositTo{value: msg.value}(address(this));
    }

    /// @notice Withdraws `amount` of the EntryPoint deposit to `to`.
    function withdrawTo(address payable to, uint256 amount) external onlyOwner {
        if (to == address(0)) revert ZeroAddress();
        entryPoint.withdrawTo(to, amount);
    }

    /// @notice Stakes the sent value in the EntryPoint with `unstakeDelaySec`.
    function addStake(uint32 unstakeDelaySec) external payable onlyOwner {
        entryPoint.addStake{value: msg.value}(unstakeDelaySec);
    }

    /// @notice Starts the unstake delay.
    function unlockStake() external onlyOwner {
        entryPoint.unlockStake();
    }

    /// @notice Withdraws the unlocked stake to `to`.
    function withdrawStake(address payable to) external onlyOwner {
        if (to == address(0)) revert ZeroAddress();
        entryPoint.withdrawStake(to);
    }

    /// @notice This paymaster's current EntryPoint deposit, in wei.
    function getDeposit() external view returns (uint256) {
        return entryPoint.balanceOf(address(this));
    }

    // ---------------------------------------------------------------- internal
    function _addSigner(address signer) private {
        if (signer == address(0)) revert ZeroAddress();
        if (isSigner[signer]) revert SignerAlreadyAdded(signer);
        isSigner[signer] = true;
        signerCount += 1;
        emit SignerAdded(signer);
    }

    /// @dev validUntil and validAfter, the first 12 bytes of paymasterData.
    function _parseValidity(bytes calldata paymasterData) internal pure returns (uint48 validUntil, uint48 validAfter) {
        validUntil = uint48(bytes6(paymasterData[0:6]));
        validAfter = uint48(bytes6(paymasterData[6:12]));
    }

    /// @dev Reverts unless paymasterAndData has exactly the layout's length.
    function _requireLength(bytes calldata paymasterAndData, uint256 expected) internal pure {
        if (paymasterAndData.length != expected) revert InvalidPaymasterDataLength(paymasterAndData.length, expected);
    }

    /// @dev The verifying paymasters' hash: the op's fields, where (chain, paymaster) and when it is valid.
    function _verifyingHash(bytes32 userOpFieldsHash, uint48 validUntil, uint48 validAfter)
        internal
        view
        returns (bytes32)
    {
        return keccak256(abi.encode(userOpFieldsHash, block.chainid, address(this), validUntil, validAfter));
    }

    /// @dev validationData of a verifying paymasterData (validity window | signature), already length-checked.
    function _verifyingValidationData(bytes calldata paymasterData, bytes32 userOpFieldsHash)
        internal
        view
        returns (uint256)
    {
        (uint48 validUntil, uint48 validAfter) = _parseValidity(paymasterData);
        bytes32 hash = _verifyingHash(userOpFieldsHash, validUntil, validAfter);
        return _validationData(hash, paymasterData[VALIDITY_LENGTH:], validUntil, validAfter);
    }

    /// @dev Packs validationData for the EntryPoint. A bad, malleable (high-s) or unknown-signer signature
    ///      sets SIG_VALIDATION_FAILED instead of reverting, so estimation with a dummy signature follows the
    ///      same code path. The time window is enforced by the EntryPoint (no TIMESTAMP here, ERC-7562); a
    ///      window the EntryPoint would read as unbounded (validUntil = 0) or one longer than
    ///      MAX_VALIDITY_WINDOW fails like a bad signature, so no signature can be valid for years.
    function _validationData(bytes32 hash, bytes calldata signature, uint48 validUntil, uint48 validAfter)
        internal
        view
        returns (uint256)
    {
        (address recovered, ECDSA.RecoverError err,) =
            ECDSA.tryRecover(MessageHashUtils.toEthSignedMessageHash(hash), signature);
        bool badWindow = validUntil == 0 || uint256(validUntil) > uint256(validAfter) + MAX_VALIDITY_WINDOW;
        uint256 sigFailed =
            (badWindow || err != ECDSA.RecoverError.NoError || !isSigner[recovered]) ? SIG_VALIDATION_FAILED : 0;
        return sigFailed | (uint256(validUntil) << 160) | (uint256(validAfter) << 208);
    }
}
