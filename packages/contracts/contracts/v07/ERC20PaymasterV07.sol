// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {PackedUserOperation} from "@account-abstraction/contracts-v07/interfaces/PackedUserOperation.sol";
import {BasePaymasterV07} from "./BasePaymasterV07.sol";
import {PaymasterBase} from "../core/PaymasterBase.sol";
import {TokenChargeBase} from "../core/TokenChargeBase.sol";

/// @title ERC20PaymasterV07
/// @notice Pays EntryPoint v0.7 gas for user operations whose sender pays in an allowlisted ERC-20 token at
///         a signed exchange rate. Must be staked (it returns a context).
/// @dev paymasterAndData = paymaster (20) | paymasterVerificationGasLimit (16) | paymasterPostOpGasLimit (16)
///      | validUntil (6) | validAfter (6) | token (20) | exchangeRate (32) | chargeMode (1) | maxTokenCharge (32)
///      | signature (65) = 214 bytes. v0.7 has no second postOp: in CHARGE_IN_POSTOP mode a failed charge reverts the op's
///      execution and the paymaster pays that op's gas (bounded loss); PRE_CHARGE's postOp never reverts.
///      EntryPoint v0.7 takes its 10% penalty on unused execution gas (callGasLimit + paymasterPostOpGasLimit)
///      from the deposit after postOp, so postOp charges it itself: exactly for the postOp limit, estimated from
///      below for callGasLimit (see _unusedCallGasPenalty).
contract ERC20PaymasterV07 is BasePaymasterV07, TokenChargeBase {
    /// @notice Exact length of paymasterAndData.
    uint256 public constant PAYMASTER_AND_DATA_LENGTH = PAYMASTER_DATA_OFFSET + TOKEN_PAYMASTER_DATA_LENGTH;
    /// @notice EntryPoint v0.7 charges 10% of the unused execution gas (callGasLimit + postOp limit).
    uint256 public constant UNUSED_GAS_PENALTY_PERCENT = 10;

    /// @notice The op's limits the EntryPoint's unused-gas penalty is computed from, appended to the context.
    struct PenaltyContext {
        uint256 postOpGasLimit;
        uint256 callGasLimit;
        uint256 preVerificationGas;
    }

    /// @param entryPoint_ EntryPoint v0.7.
    /// @param owner_ Owner (signers, tokens, treasury, deposit, stake).
    /// @param signers_ Initially accepted signers.
    /// @param treasury_ Where accrued fees are swept.
    /// @param postOpGas_ Gas postOp uses, charged on top of actualGasCost.
    /// @param minPostOpGasLimit_ The lowest paymasterPostOpGasLimit accepted.
    constructor(
        address entryPoint_,
        address owner_,
        address[] memory signers_,
        address treasury_,
        uint256 postOpGas_,
        uint256 minPostOpGasLimit_
    ) PaymasterBase(entryPoint_, owner_, signers_) TokenChargeBase(treasury_, postOpGas_, minPostOpGasLimit_) {}

    /// @notice The hash a signer signs (as an EIP-191 personal message) to sponsor `userOp` in `token`.
    /// @param userOp The packed user operation; only paymasterAndData[20:52] of its paymasterAndData is hashed.
    /// @param validUntil Last second the sponsorship is valid.
    /// @param validAfter First second the sponsorship is valid.
    /// @param token The token the sender pays with.
    /// @param exchangeRate Token base units per 1e18 wei.
    /// @param chargeMode CHARGE_IN_POSTOP or PRE_CHARGE.
    /// @param maxTokenCharge The most the sender may be charged for the op, in token base units.
    function getHash(
        PackedUserOperation calldata userOp,
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

    /// @notice Gas charged on top of actualGasCost for an op with `postOpGasLimit` (fee slots already
    ///         non-zero): postOp's own gas plus the EntryPoint's 10% penalty on the unused part of the limit.
    function postOpGasCharge(uint256 postOpGasLimit) public view returns (uint256) {
        return _postOpGasCharge(postOpGasLimit, postOpGas);
    }

    /// @dev `used` gas plus the EntryPoint's 10% penalty on the part of `postOpGasLimit` left unused.
    function _postOpGasCharge(uint256 postOpGasLimit, uint256 used) internal pure virtual returns (uint256) {
        uint256 unused = postOpGasLimit > used ? postOpGasLimit - used : 0;
        return used + (unused * UNUSED_GAS_PENALTY_PERCENT) / 100;
    }

    /// @dev The EntryPoint's 10% penalty on the part of callGasLimit the op left unused, which EntryPoint v0.7 takes
    ///      from the deposit after postOp (actualGasCost does not include it: audit 3, finding 5). postOp cannot see
    ///      the gas validation used (preOpGas), only actualGasCost = (preOpGas + execution so far) x price, so the
    ///      execution is taken as actualGasCost / price - preVerificationGas: validation's own gas counted as
    ///      execution. The unused call gas, and this penalty, are therefore estimated from below: the sender is never
    ///      charged a penalty the EntryPoint did not take, and however large callGasLimit is, the paymaster is short
    ///      at most 10% of the gas the op's validation used (which the sender paid in full), so inflating it never pays.
    function _unusedCallGasPenalty(PenaltyContext memory limits, uint256 actualGasCost, uint256 actualUserOpFeePerGas)
        internal
        pure
        virtual
        returns (uint256)
    {
        if (actualUserOpFeePerGas == 0) return 0;
        uint256 gasSoFar = actualGasCost / actualUserOpFeePerGas;
        uint256 executionAtMost = gasSoFar > limits.preVerificationGas ? gasSoFar - limits.preVerificationGas : 0;
        if (limits.callGasLimit <= executionAtMost) return 0;
        return ((limits.callGasLimit - executionAtMost) * UNUSED_GAS_PENALTY_PERCENT) / 100;
    }

    function _validatePaymasterUserOp(PackedUserOperation calldata userOp, uint256 maxCost)
        internal
        override
        returns (bytes memory context, uint256 validationData)
    {
        _requireLength(userOp.paymasterAndData, PAYMASTER_AND_DATA_LENGTH);
        TokenPaymasterData memory data;
        (data, validationData) = _tokenValidation(userOp.paymasterAndData[PAYMASTER_DATA_OFFSET:], _userOpFieldsHash(userOp));
        (, uint256 postOpGasLimit) = _paymasterGasLimits(userOp);
        _requirePostOpGasLimit(postOpGasLimit);
        // maxCost already includes the postOp gas limit at maxFeePerGas, which bounds postOpGasCharge, and the call
        // gas limit, which bounds the execution plus its penalty.
        uint256 preCharged = _preCharge(data, userOp.sender, maxCost);
        context = abi.encode(
            ChargeContext({
                sender: userOp.sender,
                token: data.token,
                exchangeRate: data.exchangeRate,
                preCharged: preCharged,
                maxCharge: _maxCharge(data, preCharged)
            }),
            PenaltyContext({
                postOpGasLimit: postOpGasLimit,
                callGasLimit: uint128(uint256(userOp.accountGasLimits)),
                preVerificationGas: userOp.preVerificationGas
            })
        );
    }

    /// @dev Pre-charge mode cannot fail here (the refund is owed if the token refuses it). A failed
    ///      CHARGE_IN_POSTOP charge reverts: the EntryPoint then reverts the op's execution and the paymaster pays
    ///      that op's gas (bounded by the signed limits); the service records the sender as unpaid.
    function _postOp(PostOpMode, bytes calldata context, uint256 actualGasCost, uint256 actualUserOpFeePerGas)
        internal
        override
    {
        (ChargeContext memory ctx, PenaltyContext memory limits) = abi.decode(context, (ChargeContext, PenaltyContext));
        uint256 postOpGasUsed = postOpGas + _coldSlotsGas(ctx);
        uint256 extraGas = _postOpGasCharge(limits.postOpGasLimit, postOpGasUsed)
            + _unusedCallGasPenalty(limits, actualGasCost, actualUserOpFeePerGas);
        uint256 gasCostWei = actualGasCost + extraGas * actualUserOpFeePerGas;
        (bool paid, uint256 amount) = _settleCharge(ctx, gasCostWei);
        if (!paid) revert TokenChargeFailed(ctx.token, ctx.sender, amount);
    }
}
