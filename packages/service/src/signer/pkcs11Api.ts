/**
 * The part of the pkcs11js binding this package uses, declared here. pkcs11js is an optional peer (a native addon:
 * ./pkcs11Binding.ts), so a project without an HSM does not install it; our published declarations (dist/*.d.ts)
 * must then not name it, or a project that type-checks its dependencies (`skipLibCheck: false`) fails on them.
 * These are pkcs11js's own shapes, narrowed to what we call: test/pkcs11Binding.test.ts checks that pkcs11js's
 * types are assignable to them, so a binding that changes a signature we use fails our typecheck.
 */

/** A PKCS#11 handle (slot, session, object), as the binding gives it. */
export type Handle = Buffer;

export interface Attribute {
  type: number;
  value?: number | boolean | string | Buffer | Date;
}

export type Template = Attribute[];

export interface AttributeResult {
  type: number;
  value: Buffer;
}

export interface Mechanism {
  mechanism: number;
  parameter?: Buffer | number;
}

/** The calls we make on a loaded library (the binding's PKCS11 class). */
export interface Pkcs11Library {
  load(path: string): void;
  C_Initialize(options?: { flags?: number }): void;
  C_Finalize(): void;
  C_GetSlotList(tokenPresent?: boolean): Handle[];
  C_GetTokenInfo(slot: Handle): { label: string };
  C_OpenSession(slot: Handle, flags: number): Handle;
  C_CloseSession(session: Handle): void;
  C_Login(session: Handle, userType: number, pin?: string): void;
  C_FindObjectsInit(session: Handle, template: Template): void;
  C_FindObjects(session: Handle, maxObjectCount: number): Handle[];
  C_FindObjectsFinal(session: Handle): void;
  C_GetAttributeValue(session: Handle, object: Handle, template: Template): AttributeResult[];
  C_CreateObject(session: Handle, template: Template): Handle;
  C_GenerateKeyPair(session: Handle, mechanism: Mechanism, publicTemplate: Template, privateTemplate: Template): { publicKey: Handle; privateKey: Handle };
  C_SignInit(session: Handle, mechanism: Mechanism, key: Handle): void;
  C_SignAsync(session: Handle, data: Buffer, signature: Buffer): Promise<Buffer>;
}

/** The binding module: its library class and the constants we use. */
export interface Pkcs11Binding {
  PKCS11: new () => Pkcs11Library;
  readonly CKF_OS_LOCKING_OK: number;
  readonly CKF_SERIAL_SESSION: number;
  readonly CKF_RW_SESSION: number;
  readonly CKU_USER: number;
  readonly CKM_ECDSA: number;
  readonly CKM_EC_KEY_PAIR_GEN: number;
  readonly CKO_PRIVATE_KEY: number;
  readonly CKO_PUBLIC_KEY: number;
  readonly CKK_EC: number;
  readonly CKA_CLASS: number;
  readonly CKA_KEY_TYPE: number;
  readonly CKA_LABEL: number;
  readonly CKA_TOKEN: number;
  readonly CKA_PRIVATE: number;
  readonly CKA_SENSITIVE: number;
  readonly CKA_EXTRACTABLE: number;
  readonly CKA_SIGN: number;
  readonly CKA_SIGN_RECOVER: number;
  readonly CKA_VERIFY: number;
  readonly CKA_VERIFY_RECOVER: number;
  readonly CKA_DECRYPT: number;
  readonly CKA_ENCRYPT: number;
  readonly CKA_UNWRAP: number;
  readonly CKA_WRAP: number;
  readonly CKA_DERIVE: number;
  readonly CKA_EC_PARAMS: number;
  readonly CKA_EC_POINT: number;
  readonly CKA_VALUE: number;
}
