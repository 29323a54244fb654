/**
 * The paymaster signer whose key lives in a PKCS#11 token: the service asks the token for a CKM_ECDSA signature
 * of the same 32-byte EIP-191 digest the in-memory signer signs, makes it low-s and finds v by recovering the
 * token's public key (ecdsa.ts). A signature that does not recover to that key never leaves.
 *
 * Sessions: a small pool (config.sessions, default 4) shared by concurrent requests; a request takes an idle
 * session or opens one, up to the cap, else waits for one. A PKCS#11 session runs one operation at a time, so no
 * two requests ever share one at once.
 *
 * Faults: a lost session or token (closed sessions, a finalised library, a removed or re-initialised token)
 * drops every session and reconnects once within the request; when that fails too, or the PIN is refused, the
 * request gets SIGNER_UNAVAILABLE (503) with the cause only (pin, token, session, key, module: the library's path
 * and the CKR code go to the log and to `failing()`, which /ready and the admin API read), and the signer tries
 * to reconnect every second until it can (a later request does too): recovery without a restart, without
 * traffic. A refused PIN is not tried again (tokens lock after a few wrong PINs): the service waits for a changed
 * PIN file. A token whose key under the label is not the key the service started with (another address) is
 * refused, never signed with.
 */
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { toEthSignedMessageHash, type Address, type Hex } from "@paymaster/shared";
import { RpcError } from "../errors.ts";
import type { Timing } from "../timing.ts";
import { ethereumSignature } from "./ecdsa.ts";
import type { Pkcs11Library } from "./pkcs11Api.ts";
import {
  classify,
  closeSession,
  findKey,
  openSession,
  openToken,
  Pkcs11Failure,
  pkcs11js,
  readPin,
  type Pkcs11Config,
  type TokenKey,
} from "./pkcs11Token.ts";
import type { PaymasterSigner } from "./signer.ts";

/** Default size of the session pool. */
export const PKCS11_SESSIONS_DEFAULT = 4;
/** Longest a signature may take in the token before the request gets SIGNER_UNAVAILABLE. */
const SIGN_TIMEOUT_MS = 5_000;
/** Least time between two connection attempts after one failed (a token that is down is not hammered). */
const RECONNECT_MS = 1_000;

interface Connection {
  lib: Pkcs11Library;
  slot: Buffer;
  pin: string;
  key: TokenKey;
  idle: Buffer[];
  open: number;
  /** Sessions this connection may open: the configured pool size, less if the token refuses more. */
  cap: number;
  waiting: ((session: Buffer | Pkcs11Failure) => void)[];
  closed: boolean;
}

/** PINs a token refused, by library and token (a hash, never the PIN): not tried again. */
const refusedPins = new Map<string, string>();

function pinHash(pin: string): string {
  return createHash("sha256").update(pin).digest("hex");
}

export interface Pkcs11Signer extends PaymasterSigner {
  /** Sessions this signer holds open now (idle or signing): at most config.sessions. */
  sessionsOpen(): number;
}

/**
 * What a client is told of a token failure: SIGNER_UNAVAILABLE with the cause only; the failure itself (the
 * library's path, the CKR code) is its `cause`, for the log and the operator (dependencies/failure.ts).
 */
export function signerUnavailable(failure: Pkcs11Failure, network: string): RpcError {
  const error = new RpcError("SIGNER_UNAVAILABLE", `Network ${network}: the paymaster's signing key is unavailable (${failure.kind})`, { network, cause: failure.kind });
  error.cause = failure;
  return error;
}

/**
 * One signer's state: the token it signs with, its connection (a session pool) and, while it fails, what it
 * reports. Built by openPkcs11Signer, passed to each step below.
 */
interface SignerState {
  readonly config: Pkcs11Config;
  readonly network: string;
  /** The network's logger (it carries the network's name: the signer's lines do not repeat it). */
  readonly logger: Logger | undefined;
  /** The library and the token, the key of refusedPins. */
  readonly tokenId: string;
  /** The session pool's size. */
  readonly maxSessions: number;
  /** The address (and public key) the signer opened with: a token whose key is another one is refused. */
  address: Address | undefined;
  point: Buffer | undefined;
  connection: Connection | undefined;
  /** The last failed connection: no other attempt within RECONNECT_MS of it. */
  lastFailure: { at: number; failure: Pkcs11Failure } | undefined;
  /** The last failure while the signer fails (what `failing()` answers), logged once per kind and once when over. */
  reported: Pkcs11Failure | undefined;
  /** While the signer fails: a reconnection every RECONNECT_MS, so that it comes back without traffic. */
  retrying: NodeJS.Timeout | undefined;
}

/**
 * Connects to the configured token and returns the network's signer; throws RpcError SIGNER_UNAVAILABLE when
 * the token cannot be used now (the network's pre-flight retries). `logger`: the network's (it carries the
 * network's name: the signer's lines do not repeat it).
 */
export async function openPkcs11Signer(config: Pkcs11Config, network: string, logger?: Logger): Promise<Pkcs11Signer> {
  const state: SignerState = {
    config,
    network,
    logger,
    tokenId: `${config.module}\n${config.tokenLabel ?? `slot ${config.slot}`}`,
    maxSessions: config.sessions ?? PKCS11_SESSIONS_DEFAULT,
    address: undefined,
    point: undefined,
    connection: undefined,
    lastFailure: undefined,
    reported: undefined,
    retrying: undefined,
  };
  let key: TokenKey;
  try {
    key = current(state).key;
  } catch (error) {
    throw signerUnavailable(classify(error, "connecting to the token"), network);
  }
  state.address = key.address;
  state.point = key.point;
  return {
    address: key.address,
    implementation: "pkcs11",
    signHash: (hash: Hex, timing?: Timing) => signHash(state, hash, timing),
    failing: () => (state.reported ? { cause: state.reported.kind, detail: state.reported.message } : undefined),
    close: () => closeSigner(state),
    sessionsOpen: () => state.connection?.open ?? 0,
  };
}

/** The token's signature of `hash` (EIP-191), made Ethereum's; SIGNER_UNAVAILABLE when the token cannot give it. */
async function signHash(state: SignerState, hash: Hex, timing?: Timing): Promise<Hex> {
  const digest = Buffer.from(toEthSignedMessageHash(hash).slice(2), "hex");
  try {
    const started = process.hrtime.bigint();
    let rs: Buffer;
    try {
      rs = await sign(state, digest);
    } finally {
      if (timing) {
        timing.signerWaits++;
        timing.signerNs += process.hrtime.bigint() - started;
      }
    }
    const signature = await ethereumSignature(rs, digest, state.point!);
    if (signature === undefined) throw new Pkcs11Failure("key", "the token's signature does not recover to its public key: refused");
    report(state, undefined);
    return signature;
  } catch (error) {
    const failure = classify(error, "signing");
    report(state, failure);
    throw signerUnavailable(failure, state.network);
  }
}

/** The connection to sign on: the open one, else a new one (at most one attempt per RECONNECT_MS). */
function current(state: SignerState): Connection {
  if (state.connection) return state.connection;
  if (state.lastFailure && Date.now() - state.lastFailure.at < RECONNECT_MS) throw state.lastFailure.failure;
  try {
    state.connection = connect(state);
    state.lastFailure = undefined;
    return state.connection;
  } catch (error) {
    const failure = classify(error, "connecting to the token");
    state.lastFailure = { at: Date.now(), failure };
    throw failure;
  }
}

/** A new connection: a logged-in session and the signing key found in it (the session becomes the pool's first). */
function connect(state: SignerState): Connection {
  const { lib, slot, pin, session } = login(state);
  try {
    const key = signingKey(state, lib, session);
    return { lib, slot, pin, key, idle: [session], open: 1, cap: state.maxSessions, waiting: [], closed: false };
  } catch (error) {
    closeSession(lib, session);
    throw error;
  }
}

/** Opens the token and a session logged in with the PIN; a PIN the token refused is remembered, never tried again. */
function login(state: SignerState): { lib: Pkcs11Library; slot: Buffer; pin: string; session: Buffer } {
  const { config, tokenId } = state;
  const pin = readPin(config);
  if (refusedPins.get(tokenId) === pinHash(pin)) {
    throw new Pkcs11Failure("pin", `the token refused this PIN before and it is not tried again (tokens lock after a few wrong PINs): correct the PIN${config.pin !== undefined && "file" in config.pin ? ` in ${config.pin.file}` : ` in ${config.pin?.env ?? "its variable"} and restart`}`);
  }
  const { lib, slot } = openToken(config);
  let session: Buffer;
  try {
    session = openSession(lib, slot, pin);
  } catch (error) {
    if (error instanceof Pkcs11Failure && error.kind === "pin" && error.ckr !== undefined) refusedPins.set(tokenId, pinHash(pin));
    throw error;
  }
  refusedPins.delete(tokenId);
  return { lib, slot, pin, session };
}

/** The key labelled config.keyLabel, which must be the one the signer opened with (its address). */
function signingKey(state: SignerState, lib: Pkcs11Library, session: Buffer): TokenKey {
  const { config, network, address } = state;
  const key = findKey(lib, session, config);
  if (key === undefined) throw new Pkcs11Failure("key", `no key labelled "${config.keyLabel}" in the token (create one with: paymaster signer add --network ${network} --pkcs11 --create)`);
  if (address !== undefined && key.address !== address) {
    throw new Pkcs11Failure("key", `the key labelled "${config.keyLabel}" is now ${key.address}, not ${address} that this service signs as: restart the service to adopt it (after signer add)`);
  }
  return key;
}

/** Ends a connection: its sessions are closed, whoever waits for one is told why. */
function drop(state: SignerState, conn: Connection, failure: Pkcs11Failure): void {
  if (conn.closed) return;
  conn.closed = true;
  if (state.connection === conn) state.connection = undefined;
  for (const session of conn.idle) closeSession(conn.lib, session);
  conn.idle = [];
  for (const wake of conn.waiting.splice(0)) wake(failure);
}

/** A signature of `digest`; a lost session or token is reconnected once, within this request. */
async function sign(state: SignerState, digest: Buffer): Promise<Buffer> {
  const conn = current(state);
  try {
    return await signWith(conn, digest);
  } catch (error) {
    const failure = classify(error, "signing");
    drop(state, conn, failure);
    if (failure.kind !== "session" && failure.kind !== "token") throw failure;
    // The session or the token went away under us: one fresh connection, within this request.
    return signWith(current(state), digest);
  }
}

/** One signature on one session of `conn`; a failed session is closed, not put back. */
async function signWith(conn: Connection, digest: Buffer): Promise<Buffer> {
  const session = await acquire(conn);
  const { CKM_ECDSA } = pkcs11js();
  let timer: NodeJS.Timeout | undefined;
  try {
    conn.lib.C_SignInit(session, { mechanism: CKM_ECDSA }, conn.key.privateKey);
    const signing = conn.lib.C_SignAsync(session, digest, Buffer.alloc(72));
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Pkcs11Failure("token", `the token did not sign within ${SIGN_TIMEOUT_MS} ms`)), SIGN_TIMEOUT_MS);
    });
    const rs = await Promise.race([signing, timeout]);
    release(conn, session);
    return rs;
  } catch (error) {
    conn.open--;
    closeSession(conn.lib, session);
    throw classify(error, "signing");
  } finally {
    clearTimeout(timer);
  }
}

/** A session of `conn` to sign on: an idle one, a new one while under the cap, else the next one released. */
async function acquire(conn: Connection): Promise<Buffer> {
  const idle = conn.idle.pop();
  if (idle) return idle;
  if (conn.open < conn.cap) {
    conn.open++;
    try {
      return openSession(conn.lib, conn.slot, conn.pin);
    } catch (error) {
      conn.open--;
      // The token allows fewer sessions than configured: make do with those it gave (wait for one below).
      if (classify(error, "opening a session").ckr !== "CKR_SESSION_COUNT" || conn.open === 0) throw error;
      conn.cap = conn.open;
    }
  }
  const next = await new Promise<Buffer | Pkcs11Failure>((resolve) => conn.waiting.push(resolve));
  if (next instanceof Pkcs11Failure) throw next;
  return next;
}

/** A session back to the pool: to the next request waiting for one, else idle (closed if its connection was dropped). */
function release(conn: Connection, session: Buffer): void {
  if (conn.closed) {
    closeSession(conn.lib, session);
    return;
  }
  const wake = conn.waiting.shift();
  if (wake) wake(session);
  else conn.idle.push(session);
}

/**
 * What the signer's health is now (`failure`: failing; undefined: signing again). A new line when the kind changes
 * (the PIN refused, then not tried again, is one problem), the latest words kept; while it fails, it reconnects
 * every RECONNECT_MS.
 */
function report(state: SignerState, failure: Pkcs11Failure | undefined): void {
  const changed = failure?.kind !== state.reported?.kind;
  state.reported = failure;
  if (!changed) return;
  if (failure !== undefined) {
    state.logger?.error({ cause: failure.kind, ...(failure.ckr ? { ckr: failure.ckr } : {}), problem: failure.message }, "the network's signing key is unavailable: sponsorships get 503 SIGNER_UNAVAILABLE");
    state.retrying ??= setInterval(() => reconnect(state), RECONNECT_MS).unref();
  } else {
    state.logger?.info("the network's signing key is available again");
    clearInterval(state.retrying);
    state.retrying = undefined;
  }
}

/** The failing signer's timer: one connection attempt, its outcome reported. */
function reconnect(state: SignerState): void {
  try {
    current(state);
    report(state, undefined);
  } catch (error) {
    report(state, classify(error, "reconnecting to the token"));
  }
}

/** Stops reconnecting and closes the sessions; a request waiting for one gets SIGNER_UNAVAILABLE. */
function closeSigner(state: SignerState): void {
  clearInterval(state.retrying);
  state.retrying = undefined;
  if (state.connection) drop(state, state.connection, new Pkcs11Failure("session", "the signer was closed"));
}
