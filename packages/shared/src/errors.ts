// Typed errors, so callers (the RPC layer, tests) can tell malformed input from bugs with `instanceof`
// and map it to a client error without parsing messages.

/** A value cannot be encoded or decoded: wrong hex, wrong length, out of range. */
export class EncodingError extends Error {
  override name = "EncodingError";
}

/** Why a paymasterData / paymasterAndData was refused. */
export type PaymasterDataErrorKind =
  /** Not exactly the layout's length (the contracts revert with InvalidPaymasterDataLength). */
  | "length"
  /** chargeMode is neither 0 nor 1 (the contracts revert with UnknownChargeMode). */
  | "chargeMode"
  /** A field is not valid hex, out of range or not an address. */
  | "field";

/** paymasterData or paymasterAndData that the paymaster contracts would refuse. */
export class PaymasterDataError extends EncodingError {
  override name = "PaymasterDataError";
  readonly kind: PaymasterDataErrorKind;

  constructor(kind: PaymasterDataErrorKind, message: string) {
    super(message);
    this.kind = kind;
  }
}

/** A user operation that cannot exist on-chain (e.g. a 1–19 byte initCode, a gas value over uint128). */
export class UserOperationError extends EncodingError {
  override name = "UserOperationError";
}
