// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {UserOperation} from "@account-abstraction/contracts-v06/interfaces/UserOperation.sol";
import {BasePaymasterV06} from "./BasePaymasterV06.sol";
import {PaymasterBase} from "../core/PaymasterBase.sol";
import {TokenChargeBase} from "../core/TokenChargeBase.sol";

/// @title ERC20PaymasterV06
/// @notice Pays EntryPoint v0.6 gas for user operations whose sender pays in an allowlisted ERC-20 token at
///         a signed exchange rate. Must be staked (it returns a context).
/// @dev paymasterAndData = paymaster (20) | validUntil (6) | validAfter (6) | token (20) | exchangeRate (32)
///      | chargeMode (1) | maxTokenCharge (32) | signature (65) = 182 bytes. postOp never reverts with fewer than 32 bytes of data:
///      v0.6's EntryPoint would revert the whole bundle on such a revert.
contract ERC20PaymasterV06 is BasePaymasterV06, TokenChargeBase {
    /// @notice Exact length of paymasterAndData.
    uint256 public constant PAYMASTER_AND_DATA_LENGTH = PAYMASTER_DATA_OFFSET + TOKEN_PAYMASTER_DATA_LENGTH;

    /// @notice The op's fees, appended to the context: EntryPoint v0.6 does not hand postOp the gas price it charges.
    struct GasPriceContext {
        uint256 maxFeePerGas;
        uint256 maxPriorityFeePerGas;
    }

    /// @param entryPoint_ EntryPoint v0.6.
    /// @param owner_ Owner (signers, tokens, treasury, deposit, stake).
    /// @param signers_ Initially accepted signers.
    /// @param treasury_ Where accrued fees are swept.
    /// @param postOpGas_ Gas postOp uses, charged on top of actualGasCost.
    /// @param minPostOpGasLimit_ The lowest verificationGasLimit accepted (v0.6 runs postOp under it).
    constructor(
        address entryPoint_,
        address owner_,
        address[] memory signers_,
        address treasury_,
        uint256 postOpGas_,
        uint256 minPostOpGasLimit_
    ) PaymasterBase(entryPoint_, owner_, signers_) TokenChargeBase(treasury_, postOpGas_, minPostOpGasLimit_) {}

    /// @notice The hash a signer signs (as an EIP-191 personal message) to sponsor `userOp` in `token`.
    /// @param userOp The user operation; its paymasterAndData is not part of the hash.
    /// @param validUntil Last second the sponsorship is valid.
    /// @param validAfter First second the sponsorship is valid.
    /// @param token The token the sender pays with.
    /// @param exchangeRate Token base units per 1e18 wei.
    /// @param chargeMode CHARGE_IN_POSTOP or PRE_CHARGE.
    /// @param maxTokenCharge The most the sender may be charged for the op, in token base units.
    function getHash(
        UserOperation calldata userOp,
        uint48 validUntil,
        uint48 validAfter,
        address token,
        uint256 exchangeRate,
        uint8 chargeMode,
        uint256 maxTokenCharge
    ) public view returns (bytes32) {
        return _tokenHash(
            _userOpFieldsHash(userOp),
            TokenPaymasterData(validUntil, validAfter, token, exchangeRate, chargeMode, maxTokenCharge)
        );
    }

    function _validatePaymasterUserOp(UserOperation calldata userOp, uint256 maxCost)
        internal
        override
        returns (bytes memory context, uint256 validationData)
    {
        _requireLength(userOp.paymasterAndData, PAYMASTER_AND_DATA_LENGTH);
        TokenPaymasterData memory data;
        (data, validationData) = _tokenValidation(userOp.paymasterAndData[PAYMASTER_DATA_OFFSET:], _userOpFieldsHash(userOp));
        // v0.6 runs postOp with verificationGasLimit as its gas: an out-of-gas postOp returns no revert data and
        // the v0.6 EntryPoint then reverts the whole bundle, so the limit must cover the worst case.
        _requirePostOpGasLimit(userOp.verificationGasLimit);
        // maxCost already reserves postOp gas (v0.6 allows verificationGasLimit for it); postOpGas on top
        // keeps the pre-charge an upper bound of what postOp will compute. The signed maxTokenCharge caps it.
        uint256 preCharged = _preCharge(data, userOp.sender, maxCost + postOpGas * userOp.maxFeePerGas);
        context = abi.encode(
            ChargeContext({
                sender: userOp.sender,
                token: data.token,
                exchangeRate: data.exchangeRate,
                preCharged: preCharged,
                maxCharge: _maxCharge(data, preCharged)
            }),
            GasPriceContext({maxFeePerGas: userOp.maxFeePerGas, maxPriorityFeePerGas: userOp.maxPriorityFeePerGas})
        );
    }

    /// @dev Pre-charge mode cannot fail here. A failed CHARGE_IN_POSTOP charge reverts with TokenChargeFailed
    ///      (over 32 bytes) so the EntryPoint reverts the op's execution and calls again in postOpReverted mode,
    ///      where the sender's allowance and balance are restored. If that charge fails too, the loss is this
    ///      op's gas cost and is reported by TokenChargeUnpaid.
    function _postOp(PostOpMode mode, bytes calldata context, uint256 actualGasCost) internal override {
        (ChargeContext memory ctx, GasPriceContext memory fees) = abi.decode(context, (ChargeContext, GasPriceContext));
        uint256 gasCostWei = actualGasCost + (postOpGas + _coldSlotsGas(ctx)) * _userOpGasPrice(fees);
        (bool paid, uint256 amount) = _settleCharge(ctx, gasCostWei);
        if (paid) return;
        if (mode != PostOpMode.postOpReverted) revert TokenChargeFailed(ctx.token, ctx.sender, amount);
        emit TokenChargeUnpaid(ctx.sender, ctx.token, amount);
    }

    /// @dev The gas price the v0.6 EntryPoint charges the op (BASEFEE is allowed in postOp).
    function _userOpGasPrice(GasPriceContext memory fees) private view returns (uint256) {
        if (fees.maxFeePerGas == fees.maxPriorityFeePerGas) return fees.maxFeePerGas;
        uint256 price = fees.maxPriorityFeePerGas + block.basefee;
        return price < fees.maxFeePerGas ? price : fees.maxFeePerGas;
    }
}
