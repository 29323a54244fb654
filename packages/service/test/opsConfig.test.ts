// The operations settings of the configuration: fallback RPC URLs (file and environment), RPC timeouts, the
// low-deposit threshold, the metrics listener (loopback only), watch, leader retry, cap warning level, rate
// limits per key and project; refusals name the field; redactConfig hides the fallback URLs' secrets.
import { expect } from "chai";
import { ConfigError } from "../src/config/errors.ts";
import { buildConfig, redactConfig } from "../src/config/load.ts";

const KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const VPM = "0x9fa47A8D5435A5466cb484BBA6da42D451158B88";
const EPM = "0x4C48baE99f5d4dA1e9E57dA5805FFC0528208feC";
const ENV = { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: KEY };

function doc(service: Record<string, unknown> = {}, network: Record<string, unknown> = {}) {
  return {
    ...service,
    networks: [
      {
        name: "base-sepolia",
        rpcUrl: "https://primary.example/v2/PRIMARYSECRET",
        entryPoints: { "v0.7": { verifyingPaymaster: VPM, erc20Paymaster: EPM } },
        nativeUsdPrice: { type: "fixed", usd: "3000" },
        ...network,
      },
    ],
  };
}

function problems(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.issues;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration: operations settings", () => {
  it("reads every operations setting, with defaults where absent", () => {
    const config = buildConfig(
      doc(
        {
          metrics: { port: 9464 },
          watch: false,
          leaderRetryMs: 500,
          alerts: { capWarnPercent: 90, watcherLagBlocks: 50 },
          rateLimit: { perSecond: 100, sponsorshipsPerMinute: 600, keys: { k1: { perSecond: 5 } }, projects: { p1: { sponsorshipsPerMinute: 60 } } },
        },
        { fallbackRpcUrls: ["https://fallback.example/key/FALLBACKSECRET"], rpcTimeoutMs: 800, rpcDeadlineMs: 1200, depositAlertWei: "1000000000000000000" },
      ),
      ENV,
    );
    expect(config.metrics).to.deep.equal({ host: "127.0.0.1", port: 9464 });
    expect(config.watch).to.equal(false);
    expect(config.leaderRetryMs).to.equal(500);
    expect(config.alerts).to.deep.equal({ capWarnPercent: 90, watcherLagBlocks: 50 });
    expect(config.rateLimit?.keys?.k1).to.deep.equal({ perSecond: 5 });
    const network = config.networks[0]!;
    expect(network.fallbackRpcUrls).to.deep.equal(["https://fallback.example/key/FALLBACKSECRET"]);
    expect([network.rpcTimeoutMs, network.rpcDeadlineMs, network.depositAlertWei]).to.deep.equal([800, 1200, 10n ** 18n]);
    expect(buildConfig(doc(), ENV).watch, "watch defaults to true").to.equal(true);
    expect(buildConfig(doc(), ENV).metrics, "no metrics listener unless configured").to.equal(undefined);

    const redacted = JSON.stringify(redactConfig(config));
    expect(redacted).to.not.include("FALLBACKSECRET").and.not.include("PRIMARYSECRET");
    expect(redactConfig(config).networks[0]!.fallbackRpcUrls).to.deep.equal(["https://fallback.example/…"]);
  });

  it("takes fallback URLs from PAYMASTER_NETWORK_<NAME>_FALLBACK_RPC_URLS (comma-separated)", () => {
    const config = buildConfig(doc(), { ...ENV, PAYMASTER_NETWORK_BASE_SEPOLIA_FALLBACK_RPC_URLS: "https://a.example, https://b.example/x" });
    expect(config.networks[0]!.fallbackRpcUrls).to.deep.equal(["https://a.example", "https://b.example/x"]);
  });

  it("refuses bad values, naming the field", () => {
    expect(problems(() => buildConfig(doc({ metrics: { host: "0.0.0.0", port: 9464 } }), ENV)).join("\n")).to.match(/^metrics\.host: must be a loopback address/m);
    expect(problems(() => buildConfig(doc({ metrics: { host: "127.0.0.1" } }), ENV)).join("\n")).to.match(/^metrics\.port: is required/m);
    expect(problems(() => buildConfig(doc({ watch: "no" }), ENV)).join("\n")).to.match(/^watch: must be true or false/m);
    expect(problems(() => buildConfig(doc({ alerts: { capWarnPercent: 0 } }), ENV)).join("\n")).to.match(/^alerts\.capWarnPercent: must be a percentage from 1 to 100/m);
    expect(problems(() => buildConfig(doc({ rateLimit: { perSecond: 0 } }), ENV)).join("\n")).to.match(/^rateLimit\.perSecond: must be requests per second/m);
    expect(problems(() => buildConfig(doc({ rateLimit: { keys: { k: { burst: -1 } } } }), ENV)).join("\n")).to.match(/^rateLimit\.keys\.k\.burst:/m);
    expect(problems(() => buildConfig(doc({}, { rpcTimeoutMs: 10 }), ENV)).join("\n")).to.match(/^networks\[0\]\.rpcTimeoutMs: must be milliseconds from 50 to 120000/m);
    expect(problems(() => buildConfig(doc({}, { fallbackRpcUrls: ["ftp://x"] }), ENV)).join("\n")).to.match(/^networks\[0\]\.fallbackRpcUrls\[0\]: must be an http/m);
    expect(problems(() => buildConfig(doc({}, { depositAlertWei: 5 }), ENV)).join("\n")).to.match(/^networks\[0\]\.depositAlertWei: must be a decimal amount of wei as a string/m);
  });
});
