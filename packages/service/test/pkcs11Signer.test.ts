// The PKCS#11 signer against a real token (SoftHSM2, a throwaway token per test): its signatures are the
// contracts' (EIP-191 over the paymaster hash, low-s, v by recovery); the key cannot be read out of the token;
// a token that refuses or disappears gives SIGNER_UNAVAILABLE with the reason, never a wrong signature, and the
// signer recovers without a restart; concurrent requests share a bounded pool of sessions.
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { keccak256, recoverMessageAddress, toHex, type Hex } from "viem";
import { RpcError } from "../src/errors.ts";
import { openPkcs11Signer, type Pkcs11Signer } from "../src/signer/pkcs11Signer.ts";
import { findKey, generateKey, importKey, library, withTokenSession } from "../src/signer/pkcs11Token.ts";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { ECDH1 } from "pkcs11js";
import type { PaymasterSigner } from "../src/signer/signer.ts";
import { dropSessions, newSoftToken, requireSoftHsm, wholeBinding, wholeLibrary, type SoftToken } from "./helpers/softhsm.ts";

const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

function hashOf(i: number | string): Hex {
  return keccak256(toHex(`paymaster hash ${i}`));
}

/** A token with a created key, and the signer on it. */
async function tokenSigner(sessions?: number): Promise<{ token: SoftToken; signer: Pkcs11Signer }> {
  const token = newSoftToken();
  if (sessions !== undefined) token.config.sessions = sessions;
  withTokenSession(token.config, (lib, session) => generateKey(lib, session, token.config));
  return { token, signer: await openPkcs11Signer(token.config, "local") };
}

/** SIGNER_UNAVAILABLE whose client message says the cause only; `pattern` matches the operator's detail (its `cause`). */
async function expectUnavailable(promise: Promise<unknown>, pattern: RegExp): Promise<RpcError> {
  const error = await promise.then(
    (value) => {
      throw new Error(`expected SIGNER_UNAVAILABLE, got ${String(value)}`);
    },
    (e: unknown) => e,
  );
  expect(error).to.be.instanceOf(RpcError);
  expect((error as RpcError).reason).to.equal("SIGNER_UNAVAILABLE");
  expect((error as RpcError).status).to.equal(503);
  const { cause, network } = (error as RpcError).details as { cause: string; network: string };
  expect((error as RpcError).message).to.equal(`Network ${network}: the paymaster's signing key is unavailable (${cause})`);
  expect(JSON.stringify((error as RpcError).details)).to.not.match(/CKR_|\.so/);
  expect(((error as RpcError).cause as Error).message).to.match(pattern);
  return error as RpcError;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("PKCS#11 signer (SoftHSM2)", function () {
  this.timeout(60_000);
  const signers: PaymasterSigner[] = [];
  before(function () {
    requireSoftHsm(this);
  });
  after(() => {
    for (const s of signers) s.close?.();
  });
  async function opened(sessions?: number) {
    const made = await tokenSigner(sessions);
    signers.push(made.signer);
    return made;
  }

  it("signs the paymaster hash as the contracts expect: EIP-191, low-s, v recovering the token's address", async () => {
    const { signer } = await opened();
    expect(signer.implementation).to.equal("pkcs11");
    for (let i = 0; i < 24; i++) {
      const hash = hashOf(i);
      const signature = await signer.signHash(hash);
      expect(signature).to.match(/^0x[0-9a-f]{128}(1b|1c)$/);
      expect(BigInt(`0x${signature.slice(66, 130)}`) <= HALF_N, "low s").to.equal(true);
      expect(await recoverMessageAddress({ message: { raw: hash }, signature })).to.equal(signer.address);
    }
  });

  it("creates the key non-extractable and sensitive: the token refuses to give out its value", async () => {
    const { token } = await opened();
    const p = wholeBinding();
    withTokenSession(token.config, (tokenLib, session) => {
      const key = findKey(tokenLib, session, token.config)!;
      const lib = wholeLibrary(tokenLib);
      const [extractable, sensitive, neverExtractable] = lib.C_GetAttributeValue(session, key.privateKey, [
        { type: p.CKA_EXTRACTABLE },
        { type: p.CKA_SENSITIVE },
        { type: p.CKA_NEVER_EXTRACTABLE },
      ]);
      expect((extractable!.value as Buffer)[0], "CKA_EXTRACTABLE").to.equal(0);
      expect((sensitive!.value as Buffer)[0], "CKA_SENSITIVE").to.equal(1);
      expect((neverExtractable!.value as Buffer)[0], "CKA_NEVER_EXTRACTABLE").to.equal(1);
      expect(() => lib.C_GetAttributeValue(session, key.privateKey, [{ type: p.CKA_VALUE }])).to.throw(/CKR_ATTRIBUTE_SENSITIVE/);
      // Nor can it be made extractable afterwards.
      expect(() => lib.C_SetAttributeValue(session, key.privateKey, [{ type: p.CKA_EXTRACTABLE, value: true }])).to.throw(/CKR_/);
      expect(() => lib.C_GetAttributeValue(session, key.privateKey, [{ type: p.CKA_VALUE }])).to.throw(/CKR_ATTRIBUTE_SENSITIVE/);
    });
  });

  it("a created or imported key may only sign (and verify): its attributes read back, and the token refuses ECDH with it (second review, finding 8)", async () => {
    const p = wholeBinding();
    const { token } = await opened();
    const imported = { ...token.config, keyLabel: "imported" };
    withTokenSession(imported, (lib, session) => importKey(lib, session, imported, generatePrivateKey()));
    const flag = (value: unknown) => (value as Buffer)[0];
    for (const config of [token.config, imported]) {
      withTokenSession(config, (tokenLib, session) => {
        const key = findKey(tokenLib, session, config)!;
        const lib = wholeLibrary(tokenLib);
        lib.C_FindObjectsInit(session, [{ type: p.CKA_CLASS, value: p.CKO_PUBLIC_KEY }, { type: p.CKA_LABEL, value: config.keyLabel }]);
        const [publicKey] = lib.C_FindObjects(session, 1);
        lib.C_FindObjectsFinal(session);
        const privateUses = { CKA_SIGN: 1, CKA_SIGN_RECOVER: 0, CKA_DECRYPT: 0, CKA_UNWRAP: 0, CKA_DERIVE: 0, CKA_EXTRACTABLE: 0, CKA_SENSITIVE: 1, CKA_PRIVATE: 1 } as const;
        const publicUses = { CKA_VERIFY: 1, CKA_VERIFY_RECOVER: 0, CKA_ENCRYPT: 0, CKA_WRAP: 0, CKA_DERIVE: 0 } as const;
        for (const [handle, uses] of [[key.privateKey, privateUses], [publicKey!, publicUses]] as const) {
          const names = Object.keys(uses) as (keyof typeof uses & keyof typeof p)[];
          const values = lib.C_GetAttributeValue(session, handle, names.map((name) => ({ type: p[name] as number })));
        names.forEach((name, i) => expect(flag(values[i]!.value), `${config.keyLabel} ${handle === key.privateKey ? "private" : "public"} ${name}`).to.equal(uses[name as keyof typeof uses]));
        }
        // Someone with the PIN tries to use the signer key for ECDH (a derived secret is extractable): refused (SoftHSM2
        // defaults CKA_DERIVE to false already; other tokens do not, hence it is stated).
        const other = Buffer.from(privateKeyToAccount(generatePrivateKey()).publicKey.slice(2), "hex");
        expect(() =>
          lib.C_DeriveKey(session, { mechanism: p.CKM_ECDH1_DERIVE, parameter: { type: p.CK_PARAMS_EC_DH, kdf: p.CKD_NULL, publicData: other } as ECDH1 }, key.privateKey, [
            { type: p.CKA_CLASS, value: p.CKO_SECRET_KEY },
            { type: p.CKA_KEY_TYPE, value: p.CKK_GENERIC_SECRET },
            { type: p.CKA_VALUE_LEN, value: 32 },
            { type: p.CKA_TOKEN, value: false },
            { type: p.CKA_SENSITIVE, value: false },
            { type: p.CKA_EXTRACTABLE, value: true },
          ]),
        ).to.throw(/CKR_KEY_FUNCTION_NOT_PERMITTED|CKR_KEY_TYPE_INCONSISTENT/);
      });
    }
  });

  it("refuses to create a second key under a label, and to start without one", async () => {
    const { token } = await opened();
    expect(() => withTokenSession(token.config, (lib, session) => generateKey(lib, session, token.config))).to.throw(/already holds a key labelled/);
    await expectUnavailable(openPkcs11Signer({ ...token.config, keyLabel: "absent" }, "local"), /no key labelled "absent"/);
  });

  it("a wrong PIN: 503 naming it, not tried again while unchanged, and signing once the PIN file is fixed (no restart)", async () => {
    const { token, signer } = await opened();
    const before = await signer.signHash(hashOf("before"));
    expect(await recoverMessageAddress({ message: { raw: hashOf("before") }, signature: before })).to.equal(signer.address);
    writeFileSync(token.pinFile, "wrong-pin\n");
    // The sessions go (as when the token restarts): the signer must log in again, with the file's PIN.
    dropSessions(token);
    await expectUnavailable(signer.signHash(hashOf(1)), /refused the PIN \(CKR_PIN_INCORRECT\)/);
    await wait(1_100);
    await expectUnavailable(signer.signHash(hashOf(2)), /refused this PIN before and it is not tried again/);
    writeFileSync(token.pinFile, `${token.pin}\n`);
    await wait(1_100);
    const hash = hashOf(3);
    expect(await recoverMessageAddress({ message: { raw: hash }, signature: await signer.signHash(hash) })).to.equal(signer.address);
  });

  it("sessions closed or the library finalised by another handle: the next signature reconnects within the request", async () => {
    const { token, signer } = await opened();
    await signer.signHash(hashOf("warm"));
    dropSessions(token);
    let hash = hashOf("after close");
    expect(await recoverMessageAddress({ message: { raw: hash }, signature: await signer.signHash(hash) })).to.equal(signer.address);
    library(token.config.module).C_Finalize();
    hash = hashOf("after finalize");
    expect(await recoverMessageAddress({ message: { raw: hash }, signature: await signer.signHash(hash) })).to.equal(signer.address);
  });

  it("the token gone (its directory removed): 503 naming it, never a signature; back once the token is back", async () => {
    const { token, signer } = await opened();
    await signer.signHash(hashOf("warm"));
    const saved = path.join(mkdtempSync(path.join(tmpdir(), "paymaster-token-saved-")), "token"); // outside the token directory
    cpSync(token.dir, saved, { recursive: true });
    rmSync(token.dir, { recursive: true });
    library(token.config.module).C_Finalize(); // SoftHSM2 reads its token directory at initialisation (a restarted HSM)
    await expectUnavailable(signer.signHash(hashOf(1)), new RegExp(`no token "${token.config.tokenLabel}"`));
    cpSync(saved, token.dir, { recursive: true });
    library(token.config.module).C_Finalize();
    await wait(1_100);
    const hash = hashOf(2);
    expect(await recoverMessageAddress({ message: { raw: hash }, signature: await signer.signHash(hash) })).to.equal(signer.address);
  });

  it("the token re-initialised with another key under the label: refused (503), never signed with", async () => {
    const { token, signer } = await opened();
    await signer.signHash(hashOf("warm"));
    rmSync(token.dir, { recursive: true });
    library(token.config.module).C_Finalize();
    // Same token label, same PIN, same key label: another key.
    const again = newSoftToken({ label: token.config.tokenLabel!, pin: token.pin });
    const other = withTokenSession(again.config, (lib, session) => generateKey(lib, session, again.config));
    expect(other.address).to.not.equal(signer.address);
    await wait(1_100);
    await expectUnavailable(signer.signHash(hashOf(1)), new RegExp(`is now ${other.address}, not ${signer.address}`));
  });

  for (const sessions of [1, 3]) {
    it(`concurrent requests share ${sessions} session(s): each signature valid, none mixed up`, async () => {
      const { signer } = await opened(sessions);
      const hashes = Array.from({ length: 48 }, (_, i) => hashOf(`concurrent ${sessions} ${i}`));
      const signatures = await Promise.all(hashes.map((h) => signer.signHash(h)));
      expect(new Set(signatures).size).to.equal(hashes.length);
      expect(signer.sessionsOpen()).to.be.at.least(1).and.at.most(sessions);
      for (const [i, signature] of signatures.entries()) {
        expect(await recoverMessageAddress({ message: { raw: hashes[i]! }, signature })).to.equal(signer.address);
      }
    });
  }
});
