// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {PaymasterBase} from "./PaymasterBase.sol";

/// @title TokenChargeBase
/// @notice Version-agnostic ERC-20 charging shared by ERC20PaymasterV06 and ERC20PaymasterV07: the token
///         allowlist, the fees held per token, the treasury they are swept to, the postOp gas figures, the
///         paymasterData layout, the rounded-up cost and the pre-charge / postOp-charge settlement.
/// @dev paymasterData (after the paymaster address, and for v0.7 after its two gas limits) is
///      validUntil (6) | validAfter (6) | token (20) | exchangeRate (32) | chargeMode (1) | maxTokenCharge (32)
///      | signature (65). exchangeRate is in token base units per 1e18 wei, so the token's decimals are inside
///      the rate. maxTokenCharge is the most the sender can be charged for the op, whatever the owner-set
///      postOpGas says when it lands: every token amount taken from a sender is bounded by signed fields.
///      Every fee stays in this contract (accruedFees) and reaches the treasury only through sweepFees or
///      withdrawTokens, outside postOp: no third party's transfer can make a postOp fail.
abstract contract TokenChargeBase is PaymasterBase {
    // ---------------------------------------------------------------- errors
    /// @notice `token` is not on this paymaster's allowlist.
    error UnsupportedToken(address token);
    /// @notice A zero exchange rate was signed: the user would pay nothing.
    error ZeroExchangeRate();
    /// @notice setPostOpGas was given more than MAX_POST_OP_GAS.
    error PostOpGasTooHigh(uint256 postOpGas, uint256 maximum);
    /// @notice chargeMode is neither CHARGE_IN_POSTOP nor PRE_CHARGE.
    error UnknownChargeMode(uint8 chargeMode);
    /// @notice Moving `amount` of `token` from `from` failed (no allowance, no balance, or the token refused).
    /// @dev Carries arguments so its revert data is always longer than 32 bytes (EntryPoint v0.6 requirement).
    error TokenChargeFailed(address token, address from, uint256 amount);
    /// @notice The op's postOp gas limit (v0.7 paymasterPostOpGasLimit, v0.6 verificationGasLimit, under which
    ///         v0.6 runs postOp) is below minPostOpGasLimit, the worst case postOp needs.
    error PostOpGasLimitTooLow(uint256 postOpGasLimit, uint256 required);
    /// @notice Sending `amount` of `token` to `to` failed outside postOp (a sweep, withdrawal or refund claim).
    error TokenTransferFailed(address token, address to, uint256 amount);
    /// @notice Only `available` of `token` is free to withdraw (the rest is owed to users as refunds).
    error InsufficientWithdrawable(address token, uint256 requested, uint256 available);
    /// @notice `account` has no refund of `token` to claim.
    error NothingToClaim(address token, address account);

    // ---------------------------------------------------------------- events
    /// @notice `sender` paid `tokenAmount` of `token` (kept in this paymaster) for `gasCostWei` at `exchangeRate`.
    event TokenCharged(
        address indexed sender, address indexed token, uint256 gasCostWei, uint256 exchangeRate, uint256 tokenAmount
    );
    /// @notice v0.6 only: the charge failed even after the EntryPoint reverted the op's execution; the
    ///         paymaster's loss is this op's gas cost.
    event TokenChargeUnpaid(address indexed sender, address indexed token, uint256 tokenAmount);
    /// @notice A pre-charge refund to `sender` could not be sent in postOp (the token refused it, or postOp was
    ///         short of gas): `amount` is held for `sender`, who takes it with claimRefund.
    event RefundDeferred(address indexed sender, address indexed token, uint256 amount);
    /// @notice `account` took its deferred refund of `amount` `token`, sent to `to`.
    event RefundClaimed(address indexed account, address indexed token, address to, uint256 amount);
    /// @notice `amount` of accrued `token` fees were sent to the treasury `to`.
    event FeesSwept(address indexed token, address indexed to, uint256 amount);
    /// @notice The owner withdrew `amount` of `token` to `to`.
    event TokensWithdrawn(address indexed token, address indexed to, uint256 amount);
    /// @notice `token` was added to (true) or removed from (false) the allowlist.
    event TokenSupportSet(address indexed token, bool supported);
    /// @notice Fees are now swept to `treasury`.
    event TreasurySet(address indexed treasury);
    /// @notice The gas postOp uses, charged on top of the EntryPoint's actualGasCost, is now `postOpGas`.
    event PostOpGasSet(uint256 postOpGas);
    /// @notice The lowest postOp gas limit an op may carry is now `minPostOpGasLimit`.
    event MinPostOpGasLimitSet(uint256 minPostOpGasLimit);

    // ---------------------------------------------------------------- constants
    /// @notice Charge the actual cost in postOp (the sender's allowance did not cover the maximum upfront).
    uint8 public constant CHARGE_IN_POSTOP = 0;
    /// @notice Pull the maximum cost in validation and refund the difference in postOp.
    uint8 public constant PRE_CHARGE = 1;
    /// @notice Gas postOp keeps back from the refund transfer, so that recording a deferred refund (two fresh
    ///         storage slots and an event) still fits whatever the token's transfer does with the rest.
    uint256 public constant REFUND_BOOKKEEPING_GAS = 50_000;
    /// @notice Bytes of the mode fields: token (20) + exchangeRate (32) + chargeMode (1) + maxTokenCharge (32).
    uint256 internal constant TOKEN_FIELDS_LENGTH = 85;
    /// @notice The highest postOpGas the owner may set (the charge is capped by the signed maxTokenCharge
    ///         anyway; this keeps a mistyped figure from making every charge hit that cap).
    uint256 public constant MAX_POST_OP_GAS = 200_000;
    /// @notice Gas one storage slot costs more when postOp writes it from zero (EIP-2929/3529 SSTORE: 20,000
    ///         instead of 2,900). postOpGas is measured with the fee slots already non-zero, so postOp charges this
    ///         much more per slot it really sets from a zero the slot also held at the start of the transaction
    ///         (EIP-2200: only then does the write cost 20,000): accruedFees on a token's first fee, and in
    ///         CHARGE_IN_POSTOP mode the paymaster's token balance only when it is zero too (audit 4, R4-1: a
    ///         balance someone else made non-zero, by sending one unit or by a pre-charge validated in the same
    ///         bundle, costs its write 2,900 or 100, not 20,000). In PRE_CHARGE mode validation set the balance and
    ///         the EntryPoint counted that gas.
    uint256 public constant FIRST_FEE_SLOT_GAS = 17_100;
    /// @notice Gas a first fee spends beyond its slots: the transient note that the token's fees were zero at the
    ///         start of the transaction (so that a withdrawal later in the bundle cannot hide it; ~0.9k measured).
    uint256 public constant FIRST_FEE_NOTE_GAS = 1_000;
    /// @notice Gas CHARGE_IN_POSTOP's first fee spends deciding whether the paymaster's token balance is set from
    ///         zero (R4-1): the transient sent-out note and a balanceOf of its own (measured, see the tests). That
    ///         read warms the balance slot the charge's transfer then writes, so the call is all it adds.
    uint256 public constant FIRST_FEE_BALANCE_CHECK_GAS = 1_600;
    /// @notice Base units of each token's fees sweepFees leaves in accruedFees (R4-1): once a token has earned a
    ///         fee, neither accruedFees nor the paymaster's balance of it returns to zero through a sweep, so no
    ///         later op pays for setting them from zero again (a first fee is one per token, not one per sweep).
    uint256 public constant FEES_KEPT_BY_SWEEP = 1;
    /// @notice Gas CHARGE_IN_POSTOP's postOp may spend beyond postOpGas reading the sender's token balance and
    ///         allowance cold (2 x EIP-2929's 2,100): nothing earlier in the transaction need have touched them
    ///         (pre-charge mode's validation always has), while postOpGas is measured with them warm.
    uint256 public constant POSTOP_MODE_COLD_GAS = 4_200;
    /// @dev Transient slot base of the pre-charges taken in validation whose postOp has not run yet (per token):
    ///      they sit in this contract's balance but belong to senders until settled, so they are not
    ///      withdrawable. Transient: validation and postOp of a bundle run in one transaction, and an op whose
    ///      postOp never settles cannot leave a stale figure behind.
    bytes32 private constant IN_FLIGHT_SLOT = keccak256("paymaster.TokenChargeBase.inFlightPreCharges");
    /// @dev Transient slot base of what accruedFees held (per token) when this transaction first changed it:
    ///      FEES_WERE_ZERO or FEES_WERE_NONZERO; 0 while this transaction has not changed it. A slot set from zero
    ///      costs SSTORE_SET only if it also held zero at the start of the transaction (EIP-2200): after a
    ///      sweepFees earlier in the same bundle, the next fee's writes are cheap, and must not be priced as a
    ///      first fee (audit 3, finding 4).
    bytes32 private constant FEES_AT_TX_START_SLOT = keccak256("paymaster.TokenChargeBase.accruedFeesAtTxStart");
    uint256 private constant FEES_WERE_ZERO = 1;
    uint256 private constant FEES_WERE_NONZERO = 2;
    /// @dev Transient slot base, per token: non-zero once this transaction sent some of the token out of this
    ///      paymaster through _send (sweepFees, withdrawTokens, claimRefund). Until then the paymaster's balance has
    ///      not fallen below its value at the start of the transaction (R4-1, see _balanceSetFromZero).
    bytes32 private constant SENT_OUT_SLOT = keccak256("paymaster.TokenChargeBase.sentOutThisTx");
    /// @notice Bytes of paymasterData: validity + token fields + signature.
    uint256 internal constant TOKEN_PAYMASTER_DATA_LENGTH = VALIDITY_LENGTH + TOKEN_FIELDS_LENGTH + SIGNATURE_LENGTH;

    // ---------------------------------------------------------------- storage
    /// @notice Where sweepFees sends accrued fees.
    address public treasury;
    /// @notice Gas postOp itself uses in the usual case (measured, see the tests), added to actualGasCost when
    ///         charging.
    uint256 public postOpGas;
    /// @notice The lowest postOp gas limit accepted: the worst case of both charge modes (measured, see the
    ///         tests and THREAT_MODEL.md), which is above postOpGas.
    uint256 public minPostOpGasLimit;
    /// @notice Tokens this paymaster accepts (no fee-on-transfer or rebasing tokens).
    mapping(address token => bool supported) public isSupportedToken;
    /// @notice Fees charged and not yet swept or withdrawn, per token.
    mapping(address token => uint256 amount) public accruedFees;
    /// @notice Deferred pre-charge refunds, per token and account (see RefundDeferred).
    mapping(address token => mapping(address account => uint256 amount)) public owedRefunds;
    /// @notice Sum of owedRefunds per token: never withdrawable by the owner.
    mapping(address token => uint256 amount) public totalOwedRefunds;

    /// @notice Fields of paymasterData for the ERC-20 paymasters, parsed.
    struct TokenPaymasterData {
        uint48 validUntil;
        uint48 validAfter;
        address token;
        uint256 exchangeRate;
        uint8 chargeMode;
        uint256 maxTokenCharge;
    }

    /// @notice What validation hands to postOp about the charge (5 static words); each version's paymaster appends
    ///         the gas fields its postOp needs (v0.6: 2 words, v0.7/v0.8: 3), so a context is 224 or 256 bytes.
    struct ChargeContext {
        address sender;
        address token;
        uint256 exchangeRate;
        uint256 preCharged;
        /// @dev The most postOp may keep or take: the pre-charge, or in CHARGE_IN_POSTOP mode maxTokenCharge.
        uint256 maxCharge;
    }

    // ---------------------------------------------------------------- constructor
    /// @param treasury_ Where accrued fees are swept.
    /// @param postOpGas_ Gas postOp uses, charged on top of actualGasCost.
    /// @param minPostOpGasLimit_ The lowest postOp gas limit accepted (worst case of both modes).
    constructor(address treasury_, uint256 postOpGas_, uint256 minPostOpGasLimit_) {
        _setTreasury(treasury_);
        _setPostOpGas(postOpGas_);
        minPostOpGasLimit = minPostOpGasLimit_;
        emit MinPostOpGasLimitSet(minPostOpGasLimit_);
    }

    // ---------------------------------------------------------------- admin
    /// @notice Adds `token` to or removes it from the allowlist.
    function setTokenSupport(address token, bool supported) external onlyOwner {
        if (token == address(0)) revert ZeroAddress();
        isSupportedToken[token] = supported;
        emit TokenSupportSet(token, supported);
    }

    /// @notice Sends future sweeps to `treasury_`.
    function setTreasury(address treasury_) external onlyOwner {
        _setTreasury(treasury_);
    }

    /// @notice Sets the gas postOp uses, charged on top of actualGasCost (at most MAX_POST_OP_GAS). Whatever it
    ///         is set to, no op is charged more than the maxTokenCharge its sponsorship signed.
    function setPostOpGas(uint256 postOpGas_) external onlyOwner {
        _setPostOpGas(postOpGas_);
    }

    /// @notice Sets the lowest postOp gas limit accepted; measure it for each token (THREAT_MODEL.md).
    function setMinPostOpGasLimit(uint256 minPostOpGasLimit_) external onlyOwner {
        minPostOpGasLimit = minPostOpGasLimit_;
        emit MinPostOpGasLimitSet(minPostOpGasLimit_);
    }

    /// @notice Sends the accrued fees of `token` to the treasury but FEES_KEPT_BY_SWEEP (one base unit), which
    ///         stays in accruedFees. Anyone may call it: it only ever pays the owner's treasury, and it moves only
    ///         settled fees (never a pre-charge still in flight in a bundle). The unit kept keeps accruedFees and the
    ///         paymaster's balance non-zero, so the next op does not pay ~35k gas to set them from zero again
    ///         (R4-1); withdrawTokens can still take everything.
    /// @dev Leaves whether accruedFees is zero unchanged (0 stays 0, non-zero stays non-zero), so it need not note
    ///      the fees at the start of the transaction (_noteFeesAtTxStart).
    function sweepFees(address token) external returns (uint256 amount) {
        uint256 fees = accruedFees[token];
        amount = fees > FEES_KEPT_BY_SWEEP ? fees - FEES_KEPT_BY_SWEEP : 0;
        accruedFees[token] = fees - amount;
        _send(token, treasury, amount);
        emit FeesSwept(token, treasury, amount);
    }

    /// @notice Owner: sends `amount` of `token` held by this paymaster to `to` (fees, or any token sent here by
    ///         mistake). What is owed to users as deferred refunds is never withdrawable.
    function withdrawTokens(address token, address to, uint256 amount) external onlyOwner {
        if (to == address(0)) revert ZeroAddress();
        uint256 available = withdrawableTokens(token);
        if (amount > available) revert InsufficientWithdrawable(token, amount, available);
        _noteFeesAtTxStart(token);
        uint256 fees = accruedFees[token];
        accruedFees[token] = amount < fees ? fees - amount : 0;
        _send(token, to, amount);
        emit TokensWithdrawn(token, to, amount);
    }

    /// @notice Takes the caller's deferred refund of `token`, sent to `to`.
    function claimRefund(address token, address to) external returns (uint256 amount) {
        if (to == address(0)) revert ZeroAddress();
        amount = owedRefunds[token][msg.sender];
        if (amount == 0) revert NothingToClaim(token, msg.sender);
        owedRefunds[token][msg.sender] = 0;
        totalOwedRefunds[token] -= amount;
        _send(token, to, amount);
        emit RefundClaimed(msg.sender, token, to, amount);
    }

    /// @notice How much of `token` the owner may withdraw: the balance less the refunds owed to users and less
    ///         the pre-charges of ops in the current bundle whose postOp has not run yet (an owner op earlier in
    ///         the same bundle must not take a later op's pre-charge, whose refund would then be unbacked).
    function withdrawableTokens(address token) public view returns (uint256) {
        uint256 balance = IERC20(token).balanceOf(address(this));
        uint256 held = totalOwedRefunds[token] + inFlightPreCharges(token);
        return balance > held ? balance - held : 0;
    }

    /// @notice Pre-charges of `token` taken in validation in this transaction whose postOp has not run yet.
    function inFlightPreCharges(address token) public view returns (uint256) {
        return _tload(_transientSlot(IN_FLIGHT_SLOT, token));
    }

    /// @notice Token amount for `gasCostWei` at `exchangeRate` (token base units per 1e18 wei), rounded up
    ///         so a non-zero cost is never charged as zero.
    function tokenCost(uint256 gasCostWei, uint256 exchangeRate) public pure returns (uint256) {
        return Math.mulDiv(gasCostWei, exchangeRate, 1e18, Math.Rounding.Ceil);
    }

    // ---------------------------------------------------------------- internal
    function _setPostOpGas(uint256 postOpGas_) private {
        if (postOpGas_ > MAX_POST_OP_GAS) revert PostOpGasTooHigh(postOpGas_, MAX_POST_OP_GAS);
        postOpGas = postOpGas_;
        emit PostOpGasSet(postOpGas_);
    }

    /// @dev The transient slot of `token` under `base`: keccak256(abi.encode(token, base)), hashed in scratch space.
    function _transientSlot(bytes32 base, address token) private pure returns (bytes32 slot) {
        assembly ("memory-safe") {
            mstore(0x00, token)
            mstore(0x20, base)
            slot := keccak256(0x00, 0x40)
        }
    }

    function _tload(bytes32 slot) private view returns (uint256 value) {
        assembly ("memory-safe") {
            value := tload(slot)
        }
    }

    function _tstore(bytes32 slot, uint256 value) private {
        assembly ("memory-safe") {
            tstore(slot, value)
        }
    }

    function _setInFlightPreCharges(address token, uint256 amount) private {
        _tstore(_transientSlot(IN_FLIGHT_SLOT, token), amount);
    }

    /// @dev Before this transaction's first change of accruedFees[token]: notes whether it held zero. Called by
    ///      every change that can lower it to zero (withdrawTokens; sweepFees keeps a unit) and by a fee into zero
    ///      fees; a fee into non-zero fees need not note: either they were non-zero at the start, or a first fee
    ///      earlier in this transaction noted that they were zero.
    function _noteFeesAtTxStart(address token) private {
        bytes32 slot = _transientSlot(FEES_AT_TX_START_SLOT, token);
        if (_tload(slot) == 0) _tstore(slot, accruedFees[token] == 0 ? FEES_WERE_ZERO : FEES_WERE_NONZERO);
    }

    /// @dev Whether this fee sets accruedFees[token] from a zero it also held at the start of the transaction.
    function _isFirstFee(address token) private view returns (bool) {
        return accruedFees[token] == 0 && _tload(_transientSlot(FEES_AT_TX_START_SLOT, token)) != FEES_WERE_NONZERO;
    }

    /// @dev Whether a CHARGE_IN_POSTOP transfer into this paymaster now writes its balance of `token` from a zero it
    ///      also held at the start of the transaction, the only case in which that write costs 20,000 (EIP-2200).
    ///      Tokens leave this paymaster only through _send and _refund (it approves no one), and a refund returns
    ///      part of a pre-charge taken in this same transaction: until a _send, the balance has not fallen below its
    ///      start value, so zero now means zero then. After a _send the start value is unknown and the slot is not
    ///      charged: no op pays for a write that did not cost it 20,000. The paymaster can then be short 17,100 gas
    ///      once, in a transaction where the owner's own withdrawTokens emptied a balance that was zero at its
    ///      start: sweepFees keeps a unit, and a claimRefund that empties the balance pays a refund owed from an
    ///      earlier transaction (one owed from this one came with a fee of at least a unit, so no first fee follows).
    ///      A token that fails to answer balanceOf is taken as holding some: the op is never charged for it, and
    ///      postOp never reverts here.
    function _balanceSetFromZero(address token) private view returns (bool) {
        if (_tload(_transientSlot(SENT_OUT_SLOT, token)) != 0) return false;
        (bool ok, bytes memory ret) = token.staticcall(abi.encodeCall(IERC20.balanceOf, (address(this))));
        return ok && ret.length == 32 && abi.decode(ret, (uint256)) == 0;
    }

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
        data.maxTokenCharge = uint256(bytes32(paymasterData[65:97]));
        signature = paymasterData[97:162];
    }

    /// @dev The ERC-20 paymasters' hash: the verifying hash's fields plus every mode field.
    function _tokenHash(bytes32 userOpFieldsHash, TokenPaymasterData memory data) internal view returns (bytes32) {
        return keccak256(
            abi.encode(
                userOpFieldsHash,
                block.chainid,
                address(this),
                data.validUntil,
                data.validAfter,
                data.token,
                data.exchangeRate,
                data.chargeMode,
                data.maxTokenCharge
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
        bytes32 hash = _tokenHash(userOpFieldsHash, data);
        validationData = _validationData(hash, signature, data.validUntil, data.validAfter);
    }

    /// @dev Checks the signed mode fields; reverts on what no valid signature could make acceptable.
    function _checkTokenData(TokenPaymasterData memory data) private view {
        if (data.chargeMode > PRE_CHARGE) revert UnknownChargeMode(data.chargeMode);
        if (data.exchangeRate == 0) revert ZeroExchangeRate();
        if (!isSupportedToken[data.token]) revert UnsupportedToken(data.token);
    }

    /// @dev Reverts unless the op's postOp gas limit covers the worst case postOp (so postOp cannot run out
    ///      of gas: pre-charge mode must never revert there).
    function _requirePostOpGasLimit(uint256 postOpGasLimit) internal view {
        uint256 required = minPostOpGasLimit;
        if (postOpGasLimit < required) revert PostOpGasLimitTooLow(postOpGasLimit, required);
    }

    /// @dev In PRE_CHARGE mode pulls the maximum token cost, never more than the signed maxTokenCharge, into
    ///      this contract (validation may only touch storage associated with the sender or this staked
    ///      paymaster) and counts it as in flight until postOp. Returns the amount pre-charged (0 in
    ///      CHARGE_IN_POSTOP mode).
    function _preCharge(TokenPaymasterData memory data, address sender, uint256 maxGasCostWei)
        internal
        returns (uint256 preCharged)
    {
        if (data.chargeMode != PRE_CHARGE) return 0;
        preCharged = Math.min(tokenCost(maxGasCostWei, data.exchangeRate), data.maxTokenCharge);
        if (!_tryTransferFrom(data.token, sender, address(this), preCharged)) {
            revert TokenChargeFailed(data.token, sender, preCharged);
        }
        _setInFlightPreCharges(data.token, inFlightPreCharges(data.token) + preCharged);
    }

    /// @dev The most postOp may charge the op: what was pre-charged, else the signed maxTokenCharge.
    function _maxCharge(TokenPaymasterData memory data, uint256 preCharged) internal pure returns (uint256) {
        return data.chargeMode == PRE_CHARGE ? preCharged : data.maxTokenCharge;
    }

    /// @dev Gas postOp may spend beyond postOpGas, which is measured with every slot it touches warm and
    ///      non-zero: the paymaster must not pay for storage it did not charge, nor an op for storage it did not
    ///      cause. CHARGE_IN_POSTOP: the sender's slots may be cold (POSTOP_MODE_COLD_GAS). A first fee (accruedFees
    ///      zero now and at the start of the transaction) sets accruedFees from zero; in CHARGE_IN_POSTOP mode it also
    ///      checks the paymaster's token balance and charges its slot only when that is set from zero too (R4-1).
    ///      Not a first fee: accruedFees is non-zero, so is the balance holding it, or the owner withdrew them in
    ///      this transaction (a _send, after which the balance slot is never charged).
    function _coldSlotsGas(ChargeContext memory ctx) internal view returns (uint256 gas) {
        bool firstFee = _isFirstFee(ctx.token);
        if (ctx.preCharged > 0) return firstFee ? FIRST_FEE_SLOT_GAS + FIRST_FEE_NOTE_GAS : 0;
        gas = POSTOP_MODE_COLD_GAS;
        if (!firstFee) return gas;
        gas += FIRST_FEE_SLOT_GAS + FIRST_FEE_NOTE_GAS + FIRST_FEE_BALANCE_CHECK_GAS;
        if (_balanceSetFromZero(ctx.token)) gas += FIRST_FEE_SLOT_GAS;
    }

    /// @dev Settles the charge for `gasCostWei`, never more than ctx.maxCharge (the pre-charge, or the signed
    ///      maxTokenCharge); the fee stays here (accruedFees). Pre-charged: keeps the cost and refunds the rest
    ///      (no longer in flight); a refund the token refuses is recorded as owed, so this branch never fails.
    ///      Otherwise pulls the cost from the sender. Returns whether the sender paid, and the amount due.
    function _settleCharge(ChargeContext memory ctx, uint256 gasCostWei) internal returns (bool paid, uint256 amount) {
        amount = Math.min(tokenCost(gasCostWei, ctx.exchangeRate), ctx.maxCharge);
        uint256 refund;
        if (ctx.preCharged > 0) {
            uint256 inFlight = inFlightPreCharges(ctx.token);
            _setInFlightPreCharges(ctx.token, inFlight > ctx.preCharged ? inFlight - ctx.preCharged : 0);
            refund = ctx.preCharged - amount;
            paid = true;
        } else {
            paid = _tryTransferFrom(ctx.token, ctx.sender, address(this), amount);
        }
        if (!paid) return (false, amount);
        uint256 fees = accruedFees[ctx.token];
        // Only a fee into zero fees can be this transaction's first change (a sweep or withdrawal notes its own).
        if (fees == 0) _noteFeesAtTxStart(ctx.token);
        accruedFees[ctx.token] = fees + amount;
        emit TokenCharged(ctx.sender, ctx.token, gasCostWei, ctx.exchangeRate, amount);
        // Last, so that REFUND_BOOKKEEPING_GAS only has to cover recording a deferred refund.
        if (refund > 0) _refund(ctx.token, ctx.sender, refund);
    }

    /// @dev Sends `amount` back to `sender`, keeping REFUND_BOOKKEEPING_GAS back; if the token refuses (e.g. a
    ///      blocklist) or there is not enough gas to try, the refund is owed instead of lost.
    function _refund(address token, address sender, uint256 amount) private {
        uint256 gas = gasleft();
        if (gas > REFUND_BOOKKEEPING_GAS) {
            (bool ok, bytes memory ret) =
                token.call{gas: gas - REFUND_BOOKKEEPING_GAS}(abi.encodeCall(IERC20.transfer, (sender, amount)));
            if (_tokenCallSucceeded(token, ok, ret)) return;
        }
        owedRefunds[token][sender] += amount;
        totalOwedRefunds[token] += amount;
        emit RefundDeferred(sender, token, amount);
    }

    /// @dev A transfer outside postOp: reverts when the token refuses. Notes that this transaction lowered the
    ///      paymaster's balance (_balanceSetFromZero); a transfer of nothing lowers nothing and notes nothing.
    function _send(address token, address to, uint256 amount) private {
        if (amount != 0) _tstore(_transientSlot(SENT_OUT_SLOT, token), 1);
        if (!_callToken(token, abi.encodeCall(IERC20.transfer, (to, amount)))) {
            revert TokenTransferFailed(token, to, amount);
        }
    }

    /// @dev transferFrom that reports failure instead of bubbling the token's revert data (which may be
    ///      shorter than 32 bytes and would break EntryPoint v0.6's postOp handling).
    function _tryTransferFrom(address token, address from, address to, uint256 amount) internal returns (bool) {
        return _callToken(token, abi.encodeCall(IERC20.transferFrom, (from, to, amount)));
    }

    /// @dev A plain call forwarding all gas (GAS right before CALL, as ERC-7562 OP-012 requires in validation).
    function _callToken(address token, bytes memory call) private returns (bool) {
        (bool ok, bytes memory ret) = token.call(call);
        return _tokenCallSucceeded(token, ok, ret);
    }

    /// @dev Success means: the call did not revert and returned either nothing from a contract (USDT-style
    ///      tokens) or exactly one 32-byte word equal to 1 (`true`). Stricter than SafeERC20, which accepts any
    ///      return data that decodes to true: a token returning more than 32 bytes, or a non-canonical true
    ///      (e.g. 2), is treated as failing (THREAT_MODEL.md lists what that excludes).
    function _tokenCallSucceeded(address token, bool ok, bytes memory ret) private view returns (bool) {
        return ok && (ret.length == 0 ? token.code.length > 0 : (ret.length == 32 && abi.decode(ret, (uint256)) == 1));
    }
}
