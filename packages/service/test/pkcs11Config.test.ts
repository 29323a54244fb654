// A network's PKCS#11 signer in the configuration: where the token and key are in the file, the PIN only from
// the environment or a file (refused in the file, never in a message or the redacted configuration), and
// either the token or signer keys, not both.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { ConfigError } from "../src/config/errors.ts";
import { buildConfig, redactConfig } from "../src/config/load.ts";
import { REDACT_PATHS } from "../src/log.ts";

const PIN = "s3cret-pin-4711";
const PKCS11 = { module: "/usr/lib/softhsm/libsofthsm2.so", tokenLabel: "paymaster", keyLabel: "signer-1" };

function doc(pkcs11: Record<string, unknown> = PKCS11): Record<string, unknown> {
  return {
    networks: [
      {
        name: "base-sepolia",
        rpcUrl: "https://rpc.example.org",
        entryPoints: { "v0.7": { verifyingPaymaster: "0x1111111111111111111111111111111111111111", erc20Paymaster: "0x2222222222222222222222222222222222222222" } },
        nativeUsdPrice: { type: "fixed", usd: "3000" },
        pkcs11,
      },
    ],
  };
}

function issues(document: unknown, env: NodeJS.ProcessEnv): readonly string[] {
  try {
    buildConfig(document, env);
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return (error as ConfigError).issues;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration: a network's PKCS#11 signer", () => {
  it("takes the PIN from PAYMASTER_NETWORK_<NAME>_PKCS11_PIN and needs no signer key; the redacted configuration names the variable, not the PIN", () => {
    const config = buildConfig(doc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN: PIN });
    const n = config.networks[0]!;
    expect(n.signerKeys).to.deep.equal([]);
    expect(n.pkcs11).to.deep.equal({ ...PKCS11, pin: { env: "PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN", value: PIN } });
    const redacted = JSON.stringify(redactConfig(config));
    expect(redacted).to.not.include(PIN);
    expect(redactConfig(config).networks[0]!.pkcs11).to.deep.equal({ ...PKCS11, pinFrom: "PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN" });
    expect(REDACT_PATHS).to.include("*.*.pin");
  });

  it("or from a file (its path kept: the signer reads it at each login)", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "paymaster-pin-")), "pin");
    fs.writeFileSync(file, `${PIN}\n`);
    const n = buildConfig(doc({ module: PKCS11.module, slot: 3, keyLabel: PKCS11.keyLabel }), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN_FILE: file }).networks[0]!;
    expect(n.pkcs11).to.deep.equal({ module: PKCS11.module, slot: 3, keyLabel: PKCS11.keyLabel, pin: { file } });
  });

  it("refuses the PIN in the file, no PIN, both PIN sources, an unreadable PIN file, signer keys beside the token, and a token named twice or not at all", () => {
    const inline = issues(doc({ ...PKCS11, pin: PIN }), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN: PIN });
    expect(inline.join("\n")).to.match(/networks\[0\]\.pkcs11\.pin: the PIN is a secret and is not accepted in the configuration file: set PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN/);
    expect(inline.join("\n")).to.not.include(PIN);
    expect(issues(doc(), {}).join("\n")).to.match(/networks\[0\]\.pkcs11\.pin: no PIN for the token: set PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN or PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN_FILE/);
    expect(issues(doc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN: PIN, PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN_FILE: "/x" }).join("\n")).to.match(/not both/);
    expect(issues(doc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN_FILE: "/nonexistent/pin" }).join("\n")).to.match(/cannot read the PIN file/);
    const both = issues(doc(), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN: PIN, PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: `0x${"11".repeat(32)}` });
    expect(both.join("\n")).to.match(/networks\[0\]\.signerKeys \(from PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS\): the network signs with its PKCS#11 key \(pkcs11\): unset PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS/);
    expect(issues(doc({ ...PKCS11, slot: 0 }), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN: PIN }).join("\n")).to.match(/tokenLabel or by slot \(exactly one\)/);
    expect(issues(doc({ module: PKCS11.module, keyLabel: "k" }), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN: PIN }).join("\n")).to.match(/tokenLabel or by slot \(exactly one\)/);
    expect(issues(doc({ tokenLabel: "t", keyLabel: "k" }), { PAYMASTER_NETWORK_BASE_SEPOLIA_PKCS11_PIN: PIN }).join("\n")).to.match(/networks\[0\]\.pkcs11\.module/);
  });
});
