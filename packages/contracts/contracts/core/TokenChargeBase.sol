// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {PaymasterBase} from "./PaymasterBase.sol";

/// @title TokenChargeBase
/// @notice Version-agnostic ERC-20 charging shared by ERC20PaymasterV06 and ERC20PaymasterV07: the token
///         allowlist, the treasury, the postOp gas overhead, the paymasterData layout, the rounded-up cost
///         and the pre-charge / postOp-charge settlement.
/// @dev paymasterData (after the paymaster address, and for v0.7 after its two gas limits) is
///      validUntil (6) | validAfter (6) | token (20) | exchangeRate (32) | chargeMode (1) | signature (65).
///      exchangeRate is in token base units per 1e18 wei, so the token's decimals are inside the rate.
abstract contract TokenChargeBase is PaymasterBase {
    // ---------------------------------------------------------------- errors
    /// @notice `token` is not on this paymaster's allowlist.
    error UnsupportedToken(address token);
    /// @notice A zero exchange rate was signed: the user would pay nothing.
    error ZeroExchangeRate();
    /// @notice chargeMode is neither CHARGE_IN_POSTOP nor PRE_CHARGE.
    error UnknownChargeMode(uint8 chargeMode);
    /// @notice Moving `amount` of `token` from `from` failed (no allowance, no balance, or the token refused).
    /// @dev Carries arguments so its revert data is always longer than 32 bytes (EntryPoint v0.6 requirement).
    error TokenChargeFailed(address token, address from, uint256 amount);

    // ---------------------------------------------------------------- events
    /// @notice `sender` paid `tokenAmount` of `token` to the treasury for `gasCostWei` at `exchangeRate`.
    event TokenCharged(
        address indexed sender, address indexed token, uint256 gasCostWei, uint256 exchangeRate, uint256 tokenAmount
    );
    /// @notice v0.6 only: the charge failed even after the EntryPoint reverted the op's execution; the
    ///         paymaster's loss is this op's gas cost.
    event TokenChargeUnpaid(address indexed sender, address indexed token, uint256 tokenAmount);
    /// @notice `token` was added to (true) or removed from (false) the allowlist.
    event TokenSupportSet(address indexed token, bool supported);
    /// @notice Token payments now go to `treasury`.
    event TreasurySet(address indexed treasury);
    /// @notice The gas postOp uses, charged on top of the EntryPoint's actualGasCost, is now `postOpGas`.
    event PostOpGasSet(uint256 postOpGas);

    // ---------------------------------------------------------------- constants
    /// @notice Charge the actual cost in postOp (the sender's allowance did not cover the maximum upfront).
    uint8 public constant CHARGE_IN_POSTOP = 0;
    /// @notice Pull the maximum cost in validation and refund the difference in postOp.
    uint8 public constant PRE_CHARGE = 1;
    /// @notice Bytes of the mode fields: token (20) + exchangeRate (32) + chargeMode (1).
    uint256 internal constant TOKEN_FIELDS_LENGTH = 53;
    /// @notice Bytes of paymasterData: validity + token fields + signature.
    uint256 internal constant TOKEN_PAYMASTER_DATA_LENGTH = VALIDITY_LENGTH + TOKEN_FIELDS_LENGTH + SIGNATURE_LENGTH;

    // ---------------------------------------------------------------- storage
    /// @notice Receives every token payment.
    address public treasury;
    /// @notice Gas postOp itself uses (measured, see the tests), added to actualGasCost when charging.
    uint256 public postOpGas;
    /// @notice Tokens this paymaster accepts (no fee-on-transfer or rebasing tokens).
    mapping(address token => bool supported) public isSupportedToken;

    /// @notice Fields of paymasterData for the ERC-20 paymasters, parsed.
    struct TokenPaymasterData {
        uint48 validUntil;
        uint48 validAfter;
        address token;
        uint256 exchangeRate;
        uint8 chargeMode;
    }

    /// @notice What validation hands to postOp.
    struct ChargeContext {
        address sender;
        address token;
        uint256 exchangeRate;
        uint256 preCharged;
        uint256 maxFeePerGas;
        uint256 maxPriorityFeePerGas;
        uint256 postOpGasLimit;
    }

    // ---------------------------------------------------------------- constructor
    /// @param treasury_ Receives token payments.
    /// @param postOpGas_ Gas postOp uses, charged on top of actualGasCost.
    constructor(address treasury_, uint256 postOpGas_) {
        _setTreasury(treasury_);
        postOpGas = postOpGas_;
        emit PostOpGasSet(postOpGas_);
    }

    // ---------------------------------------------------------------- admin
    /// @notice Adds `token` to or removes it from the allowlist.
    function setTokenSupport(address token, bool supported) external onlyOwner {
        if (token == address(0)) revert ZeroAddress();
        isSupportedToken[token] = supported;
        emit TokenSupportSet(token, supported);
    }

    /// @notice Sends future token payments to `treasury_`.
    function setTreasury(address treasury_) external onlyOwner {
        _setTreasury(treasury_);
    }

    /// @notice Sets the gas postOp uses, charged on top of actualGasCost.
    function setPostOpGas(uint256 postOpGas_) external onlyOwner {
        postOpGas = postOpGas_;
        emit PostOpGasSet(postOpGas_);
    }

    /// @notice Token amount for `gasCostWei` at `exchangeRate` (token base units per 1e18 wei), rounded up
    ///         so a non-zero cost is never charged as zero.
    function tokenCost(uint256 gasCostWei, uint256 exchangeRate) public pure returns (uint256) {
        return Math.mulDiv(gasCostWei, exchangeRate, 1e18, Math.Rounding.Ceil);
    }

    // ---------------------------------------------------------------- internal
    function _setTreasury(address treasury_) private {
        if (treasury_ == address(0)) revert ZeroAddress();
        treasury = treasury_;
        emit TreasurySet(treasury_);
    }

    /// @dev Parses the fixed layout; `paymasterData` is already known to have the exact length.
    function _parseTokenData(bytes calldata paymasterData)
        private
        pure
        returns (TokenPaymasterData memory data, bytes calldata signature)
    {
        (data.validUntil, data.validAfter) = _parseValidity(paymasterData);
        data.token = address(bytes20(paymasterData[12:32]));
        data.exchangeRate = uint256(bytes32(paymasterData[32:64]));
        data.chargeMode = uint8(paymasterData[64]);
        signature = paymasterData[65:130];
    }

    /// @dev The ERC-20 paymasters' hash: the verifying hash's fields plus every mode field.
    function _tokenHash(
        bytes32 userOpFieldsHash,
        uint48 validUntil,
        uint48 validAfter,
        address token,
        uint256 exchangeRate,
        uint8 chargeMode
    ) internal view returns (bytes32) {
        return keccak256(
            abi.encode(
                userOpFieldsHash, block.chainid, address(this), validUntil, validAfter, token, exchangeRate, chargeMode
            )
        );
    }

    /// @dev Parses and checks an ERC-20 paymasterData (already length-checked) and its signature.
    function _tokenValidation(bytes calldata paymasterData, bytes32 userOpFieldsHash)
        internal
        view
        returns (TokenPaymasterData memory data, uint256 validationData)
    {
        bytes calldata signature;
        (data, signature) = _parseTokenData(paymasterData);
        _checkTokenData(data);
        bytes32 hash =
            _tokenHash(userOpFieldsHash, data.validUntil, data.validAfter, data.token, data.exchangeRate, data.chargeMode);
        validationData = _validationData(hash, signature, data.validUntil, data.validAfter);
    }

    /// @dev Checks the signed mode fields; reverts on what no valid signature could make acceptable.
    function _checkTokenData(TokenPaymasterData memory data) private view {
        if (data.chargeMode > PRE_CHARGE) revert UnknownChargeMode(data.chargeMode);
        if (data.exchangeRate == 0) revert ZeroExchangeRate();
        if (!isSupportedToken[data.token]) revert UnsupportedToken(data.token);
    }

    /// @dev In PRE_CHARGE mode pulls the maximum token cost into this contract (validation may only touch
    ///      storage associated with the sender or this staked paymaster, so not the treasury's balance).
    ///      Returns the amount pre-charged (0 in CHARGE_IN_POSTOP mode).
    function _preCharge(TokenPaymasterData memory data, address sender, uint256 maxGasCostWei)
        internal
        returns (uint256 preCharged)
    {
        if (data.chargeMode != PRE_CHARGE) return 0;
        preCharged = tokenCost(maxGasCostWei, data.exchangeRate);
        if (!_tryTransferFrom(data.token, sender, address(this), preCharged)) {
            revert TokenChargeFailed(data.token, sender, preCharged);
        }
    }

    /// @dev Settles the charge for `gasCostWei`. Pre-charged: pays the treasury (capped at the pre-charge)
    ///      and refunds the rest to the sender; cannot fail for an allowlisted token. Otherwise pulls the cost
    ///      from the sender to the treasury. Returns whether the sender paid, and the amount due.
    function _settleCharge(ChargeContext memory ctx, uint256 gasCostWei) internal returns (bool paid, uint256 amount) {
        amount = tokenCost(gasCostWei, ctx.exchangeRate);
        if (ctx.preCharged > 0) {
            if (amount > ctx.preCharged) amount = ctx.preCharged;
            uint256 refund = ctx.preCharged - amount;
            paid = _tryTransfer(ctx.token, treasury, amount) && (refund == 0 || _tryTransfer(ctx.token, ctx.sender, refund));
        } else {
            paid = _tryTransferFrom(ctx.token, ctx.sender, treasury, amount);
        }
        if (paid) emit TokenCharged(ctx.sender, ctx.token, gasCostWei, ctx.exchangeRate, amount);
    }

    /// @dev transferFrom that reports failure instead of bubbling the token's revert data (which may be
    ///      shorter than 32 bytes and would break EntryPoint v0.6's postOp handling). Accepts tokens that
    ///      return nothing.
    function _tryTransferFrom(address token, address from, address to, uint256 amount) internal returns (bool) {
        return _callToken(token, abi.encodeCall(IERC20.transferFrom, (from, to, amount)));
    }

    /// @dev transfer with the same failure reporting as _tryTransferFrom.
    function _tryTransfer(address token, address to, uint256 amount) internal returns (bool) {
        return _callToken(token, abi.encodeCall(IERC20.transfer, (to, amount)));
    }

    function _callToken(address token, bytes memory call) private returns (bool) {
        (bool ok, bytes memory ret) = token.call(call);
        return ok && (ret.length == 0 ? token.code.length > 0 : (ret.length == 32 && abi.decode(ret, (uint256)) == 1));
    }
}
