/**
 * A secp256k1 key in a PKCS#11 token (a hardware HSM, a cloud KMS's PKCS#11 library, SoftHSM2), through the
 * pkcs11js binding: the vendor's library loaded once per process, the token found by label or slot, a user
 * session logged in with the PIN, the key pair found (or created) by its label. The private key is created
 * sensitive and non-extractable: only signatures ever leave the token. Every failure is a Pkcs11Failure whose
 * message names what failed and what to do, never the PIN.
 */
import { readFileSync } from "node:fs";
import { privateKeyToAccount } from "viem/accounts";
import type { Address, Hex } from "@paymaster/shared";
import { addressOfPoint, SECP256K1_EC_PARAMS, uncompressedPoint } from "./ecdsa.ts";
import type { Pkcs11Library, Template } from "./pkcs11Api.ts";
import { loadPkcs11Binding, type Pkcs11Binding } from "./pkcs11Binding.ts";

/** Where a network's token key is (the configuration's `pkcs11` block; the PIN comes from the environment or a file). */
export interface Pkcs11Config {
  /** Path of the vendor's PKCS#11 library (e.g. /usr/lib/softhsm/libsofthsm2.so). */
  module: string;
  /** The token by its label (tokenLabel) or by its slot id (slot): exactly one of them. */
  tokenLabel?: string;
  slot?: number;
  /** CKA_LABEL of the key pair (private and public key objects share it). */
  keyLabel: string;
  /**
   * The user PIN: its value from an environment variable, or a file read at each login (fixing it recovers
   * without a restart). Absent when the administration read the configuration without one.
   */
  pin?: { env: string; value: string } | { file: string };
  /** Sessions opened at most, i.e. signatures in flight at once (default 4). */
  sessions?: number;
}

/** What went wrong with the token, by kind: `pin` is never retried with the same PIN (tokens lock after a few). */
export type Pkcs11FailureKind = "module" | "token" | "pin" | "session" | "key";

export class Pkcs11Failure extends Error {
  override name = "Pkcs11Failure";
  readonly kind: Pkcs11FailureKind;
  /** The PKCS#11 return value's name (CKR_…), when the library gave one. */
  readonly ckr: string | undefined;
  constructor(kind: Pkcs11FailureKind, message: string, ckr?: string) {
    super(message);
    this.kind = kind;
    this.ckr = ckr;
  }
}

type Lib = Pkcs11Library;

let binding: Pkcs11Binding | undefined;
/** The binding (its constants and classes), loaded on first use: a service without a token never loads it. */
export function pkcs11js(): Pkcs11Binding {
  if (binding) return binding;
  try {
    binding = loadPkcs11Binding();
    return binding;
  } catch (error) {
    throw new Pkcs11Failure("module", (error as Error).message);
  }
}

/** The CKR_… name of a PKCS#11 error, if it is one. */
export function ckrOf(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : "";
  return /^CKR_[A-Z_]+/.exec(message)?.[0];
}

const SESSION_LOST = new Set([
  "CKR_SESSION_HANDLE_INVALID",
  "CKR_SESSION_CLOSED",
  "CKR_USER_NOT_LOGGED_IN",
  "CKR_CRYPTOKI_NOT_INITIALIZED",
  "CKR_OBJECT_HANDLE_INVALID",
  "CKR_KEY_HANDLE_INVALID",
  "CKR_OPERATION_ACTIVE",
  "CKR_OPERATION_NOT_INITIALIZED",
]);
const TOKEN_GONE = new Set(["CKR_TOKEN_NOT_PRESENT", "CKR_TOKEN_NOT_RECOGNIZED", "CKR_DEVICE_REMOVED", "CKR_DEVICE_ERROR", "CKR_SLOT_ID_INVALID", "CKR_GENERAL_ERROR", "CKR_DEVICE_MEMORY"]);
const PIN_REFUSED = new Set(["CKR_PIN_INCORRECT", "CKR_PIN_INVALID", "CKR_PIN_LEN_RANGE", "CKR_PIN_EXPIRED", "CKR_PIN_LOCKED"]);

/** A thrown PKCS#11 error as a Pkcs11Failure of the right kind, `doing` saying what was being done. */
export function classify(error: unknown, doing: string): Pkcs11Failure {
  if (error instanceof Pkcs11Failure) return error;
  const ckr = ckrOf(error);
  const what = ckr ?? (error instanceof Error ? error.message.split("\n")[0] : String(error));
  if (ckr !== undefined && PIN_REFUSED.has(ckr)) return new Pkcs11Failure("pin", `the token refused the PIN (${ckr}) while ${doing}`, ckr);
  if (ckr !== undefined && TOKEN_GONE.has(ckr)) return new Pkcs11Failure("token", `the token is not available (${ckr}) while ${doing}`, ckr);
  if (ckr !== undefined && SESSION_LOST.has(ckr)) return new Pkcs11Failure("session", `the token session was lost (${ckr}) while ${doing}`, ckr);
  return new Pkcs11Failure("token", `the token failed (${what}) while ${doing}`, ckr);
}

const libraries = new Map<string, Lib>();

/** The vendor library at `path`, loaded once per process and initialised (again, after a C_Finalize anywhere). */
export function library(path: string): Lib {
  let lib = libraries.get(path);
  if (!lib) {
    const { PKCS11 } = pkcs11js();
    lib = new PKCS11();
    try {
      lib.load(path);
    } catch (error) {
      throw new Pkcs11Failure("module", `cannot load the PKCS#11 library ${path} (${(error as Error).message.split("\n")[0]})`);
    }
    libraries.set(path, lib);
  }
  try {
    // OS locking: the signer's C_SignAsync calls run on libuv's threads, several sessions at once.
    lib.C_Initialize({ flags: pkcs11js().CKF_OS_LOCKING_OK });
  } catch (error) {
    if (ckrOf(error) !== "CKR_CRYPTOKI_ALREADY_INITIALIZED") throw classify(error, `initialising ${path}`);
  }
  return lib;
}

/** Finalises the library (every session of this process on it ends); the next `library` call initialises it again. */
export function finalize(path: string): void {
  try {
    libraries.get(path)?.C_Finalize();
  } catch {
    // not initialised: nothing to end
  }
}

/** The slot id of a slot handle (CK_ULONG, native byte order). */
function slotId(handle: Buffer): number {
  return handle.length >= 8 ? Number(handle.readBigUInt64LE(0)) : handle.readUInt32LE(0);
}

function tokenName(config: Pkcs11Config): string {
  return config.tokenLabel !== undefined ? `token "${config.tokenLabel}"` : `slot ${config.slot}`;
}

/** The slot holding the configured token. */
export function findSlot(lib: Lib, config: Pkcs11Config): Buffer {
  let slots: Buffer[];
  try {
    slots = lib.C_GetSlotList(true);
  } catch (error) {
    throw classify(error, "listing the slots");
  }
  for (const slot of slots) {
    if (config.slot !== undefined && slotId(slot) === config.slot) return slot;
    if (config.tokenLabel !== undefined) {
      try {
        if (lib.C_GetTokenInfo(slot).label.trim() === config.tokenLabel) return slot;
      } catch {
        // a slot whose token went away meanwhile: not ours
      }
    }
  }
  throw new Pkcs11Failure("token", `no ${tokenName(config)} in ${config.module} (the token is absent, or its label or slot is not the configured one)`);
}

/**
 * The library (initialised) and the slot of the configured token. A token not found is looked for once more
 * after re-initialising the library: some libraries (SoftHSM2 among them) list the tokens of their start only,
 * so a token created or restored since then needs it. Sessions of this process on that library end; the
 * signers reconnect.
 */
export function openToken(config: Pkcs11Config): { lib: Lib; slot: Buffer } {
  const lib = library(config.module);
  try {
    return { lib, slot: findSlot(lib, config) };
  } catch (error) {
    if (!(error instanceof Pkcs11Failure) || error.kind !== "token") throw error;
    finalize(config.module);
    const again = library(config.module);
    return { lib: again, slot: findSlot(again, config) };
  }
}

/** The user PIN, read now (a file is re-read at each login). */
export function readPin(config: Pkcs11Config): string {
  if (config.pin === undefined) throw new Pkcs11Failure("pin", "no PIN: set the network's PAYMASTER_NETWORK_<NAME>_PKCS11_PIN or _PKCS11_PIN_FILE");
  if ("value" in config.pin) return config.pin.value;
  try {
    const pin = readFileSync(config.pin.file, "utf8").trim();
    if (pin === "") throw new Error("the file is empty");
    return pin;
  } catch (error) {
    throw new Pkcs11Failure("pin", `cannot read the PIN file ${config.pin.file} (${(error as Error).message.split("\n")[0]})`);
  }
}

/** A read-write session on `slot`, logged in as the user with `pin` (a session of an already logged-in token needs no login). */
export function openSession(lib: Lib, slot: Buffer, pin: string): Buffer {
  const { CKF_SERIAL_SESSION, CKF_RW_SESSION, CKU_USER } = pkcs11js();
  let session: Buffer;
  try {
    session = lib.C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION);
  } catch (error) {
    throw classify(error, "opening a session");
  }
  try {
    lib.C_Login(session, CKU_USER, pin);
  } catch (error) {
    if (ckrOf(error) !== "CKR_USER_ALREADY_LOGGED_IN") {
      closeSession(lib, session);
      throw classify(error, "logging in");
    }
  }
  return session;
}

export function closeSession(lib: Lib, session: Buffer): void {
  try {
    lib.C_CloseSession(session);
  } catch {
    // already closed (the token went away, or another handle closed it)
  }
}

function find(lib: Lib, session: Buffer, template: Template): Buffer[] {
  lib.C_FindObjectsInit(session, template);
  try {
    return lib.C_FindObjects(session, 4);
  } finally {
    lib.C_FindObjectsFinal(session);
  }
}

/** The key pair labelled `keyLabel`: the private key's handle (valid for this login) and the public point. */
export interface TokenKey {
  privateKey: Buffer;
  point: Buffer;
  address: Address;
}

/** Finds the key pair labelled `config.keyLabel`; undefined when there is none. Refuses a label on two keys or a key of another curve. */
export function findKey(lib: Lib, session: Buffer, config: Pkcs11Config): TokenKey | undefined {
  const { CKA_CLASS, CKA_LABEL, CKA_KEY_TYPE, CKA_EC_PARAMS, CKA_EC_POINT, CKO_PRIVATE_KEY, CKO_PUBLIC_KEY, CKK_EC } = pkcs11js();
  const where = `key "${config.keyLabel}" in ${tokenName(config)}`;
  try {
    const privates = find(lib, session, [{ type: CKA_CLASS, value: CKO_PRIVATE_KEY }, { type: CKA_LABEL, value: config.keyLabel }]);
    if (privates.length === 0) return undefined;
    if (privates.length > 1) throw new Pkcs11Failure("key", `${privates.length} private keys are labelled "${config.keyLabel}" in ${tokenName(config)}: a key label must name one key`);
    const publics = find(lib, session, [{ type: CKA_CLASS, value: CKO_PUBLIC_KEY }, { type: CKA_LABEL, value: config.keyLabel }]);
    if (publics.length !== 1) throw new Pkcs11Failure("key", `the ${where} has ${publics.length} public key objects of that label (one is needed: the service reads the address from it)`);
    const [type, params] = lib.C_GetAttributeValue(session, privates[0]!, [{ type: CKA_KEY_TYPE }, { type: CKA_EC_PARAMS }]);
    if ((type!.value as Buffer).readUInt32LE(0) !== CKK_EC || !Buffer.from(params!.value as Buffer).equals(SECP256K1_EC_PARAMS)) {
      throw new Pkcs11Failure("key", `the ${where} is not a secp256k1 EC key (CKA_EC_PARAMS must be the OID 1.3.132.0.10)`);
    }
    const [ecPoint] = lib.C_GetAttributeValue(session, publics[0]!, [{ type: CKA_EC_POINT }]);
    const point = uncompressedPoint(ecPoint!.value as Buffer);
    return { privateKey: privates[0]!, point, address: addressOfPoint(point) };
  } catch (error) {
    if (error instanceof Pkcs11Failure) throw error;
    if (error instanceof Error && !ckrOf(error)) throw new Pkcs11Failure("key", `the ${where}: ${error.message}`);
    throw classify(error, `reading the ${where}`);
  }
}

/**
 * What a signer key pair may be used for (second review, finding 8): signing and verifying only. Tokens default
 * the other uses as they like (SoftHSM2 lets a private key decrypt, unwrap and derive), and a key that may unwrap
 * or decrypt is one more way to use it for something else. So every use is stated: the private key signs (and
 * nothing else: no decrypt, unwrap, derive or sign-recover), private, sensitive and never extractable
 * (CKA_EXTRACTABLE false: the token refuses to export it, even wrapped); the public key verifies (no encrypt,
 * wrap, derive or verify-recover) and is readable.
 */
function privateKeyAttributes(p: ReturnType<typeof pkcs11js>) {
  return [
    { type: p.CKA_PRIVATE, value: true },
    { type: p.CKA_SENSITIVE, value: true },
    { type: p.CKA_EXTRACTABLE, value: false },
    { type: p.CKA_SIGN, value: true },
    { type: p.CKA_SIGN_RECOVER, value: false },
    { type: p.CKA_DECRYPT, value: false },
    { type: p.CKA_UNWRAP, value: false },
    { type: p.CKA_DERIVE, value: false },
  ];
}

function publicKeyAttributes(p: ReturnType<typeof pkcs11js>) {
  return [
    { type: p.CKA_PRIVATE, value: false },
    { type: p.CKA_VERIFY, value: true },
    { type: p.CKA_VERIFY_RECOVER, value: false },
    { type: p.CKA_ENCRYPT, value: false },
    { type: p.CKA_WRAP, value: false },
    { type: p.CKA_DERIVE, value: false },
  ];
}

/**
 * Creates a secp256k1 key pair labelled `config.keyLabel` in the token, for signing only (privateKeyAttributes,
 * publicKeyAttributes). Refuses when a key of that label exists.
 */
export function generateKey(lib: Lib, session: Buffer, config: Pkcs11Config): TokenKey {
  if (findKey(lib, session, config) !== undefined) throw new Pkcs11Failure("key", `${tokenName(config)} already holds a key labelled "${config.keyLabel}": register it instead of creating one`);
  const p = pkcs11js();
  const label = { type: p.CKA_LABEL, value: config.keyLabel };
  try {
    lib.C_GenerateKeyPair(
      session,
      { mechanism: p.CKM_EC_KEY_PAIR_GEN },
      [
        { type: p.CKA_CLASS, value: p.CKO_PUBLIC_KEY },
        { type: p.CKA_KEY_TYPE, value: p.CKK_EC },
        { type: p.CKA_TOKEN, value: true },
        ...publicKeyAttributes(p),
        { type: p.CKA_EC_PARAMS, value: SECP256K1_EC_PARAMS },
        label,
      ],
      [
        { type: p.CKA_CLASS, value: p.CKO_PRIVATE_KEY },
        { type: p.CKA_KEY_TYPE, value: p.CKK_EC },
        { type: p.CKA_TOKEN, value: true },
        ...privateKeyAttributes(p),
        label,
      ],
    );
  } catch (error) {
    throw classify(error, `creating the key "${config.keyLabel}" (does the token support secp256k1?)`);
  }
  const key = findKey(lib, session, config);
  if (key === undefined) throw new Pkcs11Failure("key", `the key "${config.keyLabel}" was created but cannot be found again in ${tokenName(config)}`);
  return key;
}

/**
 * Imports the secp256k1 `privateKey` into the token under `config.keyLabel` (a migration that keeps the signer's
 * address), marked like a created key: for signing only, sensitive, never extractable. The key passes through this process's
 * memory once; refused when a key of that label exists.
 */
export function importKey(lib: Lib, session: Buffer, config: Pkcs11Config, privateKey: Hex): TokenKey {
  if (findKey(lib, session, config) !== undefined) throw new Pkcs11Failure("key", `${tokenName(config)} already holds a key labelled "${config.keyLabel}"`);
  const p = pkcs11js();
  const point = Buffer.from(privateKeyToAccount(privateKey).publicKey.slice(2), "hex");
  const common = [
    { type: p.CKA_KEY_TYPE, value: p.CKK_EC },
    { type: p.CKA_TOKEN, value: true },
    { type: p.CKA_EC_PARAMS, value: SECP256K1_EC_PARAMS },
    { type: p.CKA_LABEL, value: config.keyLabel },
  ];
  try {
    lib.C_CreateObject(session, [
      { type: p.CKA_CLASS, value: p.CKO_PRIVATE_KEY },
      ...common,
      ...privateKeyAttributes(p),
      { type: p.CKA_VALUE, value: Buffer.from(privateKey.slice(2), "hex") },
    ]);
    // CKA_EC_POINT: the DER OCTET STRING of the uncompressed point.
    lib.C_CreateObject(session, [
      { type: p.CKA_CLASS, value: p.CKO_PUBLIC_KEY },
      ...common,
      ...publicKeyAttributes(p),
      { type: p.CKA_EC_POINT, value: Buffer.concat([Buffer.from([0x04, point.length]), point]) },
    ]);
  } catch (error) {
    throw classify(error, `importing the key "${config.keyLabel}"`);
  }
  const key = findKey(lib, session, config);
  if (key === undefined) throw new Pkcs11Failure("key", `the key "${config.keyLabel}" was imported but cannot be found again in ${tokenName(config)}`);
  return key;
}

/**
 * Opens the configured token once (load, find, log in), runs `body` on a session, and closes the session: the
 * CLI's way in (`paymaster signer add --pkcs11`). The service keeps its sessions (pkcs11Signer.ts).
 */
export function withTokenSession<T>(config: Pkcs11Config, body: (lib: Lib, session: Buffer) => T): T {
  const { lib, slot } = openToken(config);
  const session = openSession(lib, slot, readPin(config));
  try {
    return body(lib, session);
  } finally {
    closeSession(lib, session);
  }
}
