/**
 * The client address behind a reverse proxy (issue 20, finding 4): `trustedProxies` makes X-Forwarded-For
 * believed from those addresses only, and the one derived address drives the application and claim rate
 * limits and keys' IP allowlists. The test connects from 127.0.0.1, which plays the proxy when it is trusted.
 */
import { expect } from "chai";
import { clientAddress, clientBucket } from "../src/access/clientAddress.ts";
import { ipv6Bytes, ipv6Text } from "../src/access/ipv6.ts";
import { ConfigError } from "../src/config/errors.ts";
import { buildConfig, redactConfig } from "../src/config/load.ts";
import { startTestService, type TestService } from "./helpers/rpcService.ts";

const VPM = "0x9fa47A8D5435A5466cb484BBA6da42D451158B88";
const ENV = { PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" };
const APPLICATION = { contact: "dev@team.example", project: "Team dapp", networks: ["local"], use: "Sponsor mints" };

describe("client address (pure)", () => {
  const proxies = ["10.0.0.0/8", "127.0.0.1/32"];
  it("believes X-Forwarded-For only from a trusted proxy, and only up to the first untrusted hop", () => {
    expect(clientAddress("203.0.113.9", "198.51.100.1", proxies), "not from a proxy: the header is ignored").to.equal("203.0.113.9");
    expect(clientAddress("127.0.0.1", "198.51.100.1", undefined), "no proxies configured").to.equal("127.0.0.1");
    expect(clientAddress("127.0.0.1", "198.51.100.1", proxies)).to.equal("198.51.100.1");
    expect(clientAddress("::ffff:127.0.0.1", "198.51.100.1", proxies), "IPv4 on a dual-stack socket").to.equal("198.51.100.1");
    // The client may send its own header: entries left of the first untrusted hop are its claims.
    expect(clientAddress("127.0.0.1", "1.2.3.4, 198.51.100.1, 10.1.2.3", proxies)).to.equal("198.51.100.1");
    expect(clientAddress("127.0.0.1", "10.0.0.7, 10.1.2.3", proxies), "all hops trusted: the farthest").to.equal("10.0.0.7");
    expect(clientAddress("127.0.0.1", "junk, 10.1.2.3", proxies), "a malformed hop stops the walk").to.equal("10.1.2.3");
    expect(clientAddress("127.0.0.1", "", proxies), "no header: the proxy itself").to.equal("127.0.0.1");
    expect(clientAddress("127.0.0.1", " 2001:db8::1 ", proxies)).to.equal("2001:db8::1");
  });

  it("per-client bounds count an IPv6 client by its /64 (configurable), an IPv4-mapped one as its IPv4 address", () => {
    expect(clientBucket("203.0.113.9")).to.equal("203.0.113.9");
    expect(clientBucket("::ffff:203.0.113.9"), "dual-stack socket").to.equal("203.0.113.9");
    expect(clientBucket("::FFFF:cb00:7109"), "mapped, hex form").to.equal("203.0.113.9");
    expect(clientBucket("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).to.equal("2001:db8:1:2::/64");
    expect(clientBucket("2001:DB8:1:2::1")).to.equal("2001:db8:1:2::/64");
    expect(clientBucket("2001:db8:1:3::1"), "the next /64 is another client").to.equal("2001:db8:1:3::/64");
    expect(clientBucket("fe80::1%eth0")).to.equal("fe80::/64");
    expect(clientBucket("::1")).to.equal("::/64");
    expect(clientBucket("2001:db8:1:2ff::1", 56)).to.equal("2001:db8:1:200::/56");
    expect(clientBucket("2001:db8::1:2:3", 128)).to.equal("2001:db8::1:2:3/128");
    expect(clientBucket("2001:db8:1:2::9", 50)).to.equal("2001:db8:1::/50");
    expect(clientBucket("not an address")).to.equal("not an address");
  });

  it("IPv6 bytes and their canonical text (RFC 5952), as the URL serializer writes them", () => {
    const cases = ["::", "::1", "1::", "2001:db8::1", "2001:DB8:0:0:1:0:0:1", "2001:0:0:1:0:0:0:1", "1:0:1:0:1:0:1:0", "fe80::1:0:0:0", "0:0:1::", "1:2:3:4:5:6:7:8", "::ffff:10.1.2.3", "64:ff9b::192.0.2.33"];
    for (const address of cases) expect(ipv6Text(ipv6Bytes(address)!), address).to.equal(new URL(`http://[${address}]/`).hostname.slice(1, -1));
    expect(ipv6Bytes("10.1.2.3")).to.equal(undefined);
    expect(ipv6Bytes("2001:db8::g")).to.equal(undefined);
  });

  it("the configuration takes addresses and CIDR ranges, normalised, and refuses anything else by name", () => {
    const doc = (service: Record<string, unknown>) => ({
      ...service,
      networks: [{ name: "base-sepolia", rpcUrl: "https://rpc.example", entryPoints: { "v0.7": { verifyingPaymaster: VPM, erc20Paymaster: VPM } }, nativeUsdPrice: { type: "fixed", usd: "3000" } }],
    });
    const config = buildConfig(doc({ trustedProxies: ["10.0.0.5", "fd00::/8"] }), ENV);
    expect(config.trustedProxies).to.deep.equal(["10.0.0.5/32", "fd00::/8"]);
    expect(config.applicationExpiryDays).to.equal(14);
    expect(config.ipv6ClientPrefix, "IPv6 clients per /64 by default").to.equal(64);
    expect(buildConfig(doc({ ipv6ClientPrefix: 56 }), ENV).ipv6ClientPrefix).to.equal(56);
    expect(redactConfig(config).trustedProxies, "in the start-up log").to.deep.equal(["10.0.0.5/32", "fd00::/8"]);
    let issues: readonly string[] = [];
    try {
      buildConfig(doc({ trustedProxies: ["proxy.internal"], applicationExpiryDays: 0, ipv6ClientPrefix: 16 }), ENV);
    } catch (error) {
      if (error instanceof ConfigError) issues = error.issues;
    }
    expect(issues.join("\n")).to.match(/^trustedProxies\[0\]: must be an IP address or CIDR range/m);
    expect(issues.join("\n")).to.match(/^applicationExpiryDays: must be a number of days from 1 to 365/m);
    expect(issues.join("\n")).to.match(/^ipv6ClientPrefix: must be a prefix length from 32 to 128/m);
  });

  it("traceContext (issue 46, item 1): link by default; trusted-proxies needs trustedProxies; anything else refused by name", () => {
    const doc = (service: Record<string, unknown>) => ({
      ...service,
      networks: [{ name: "base-sepolia", rpcUrl: "https://rpc.example", entryPoints: { "v0.7": { verifyingPaymaster: VPM, erc20Paymaster: VPM } }, nativeUsdPrice: { type: "fixed", usd: "3000" } }],
    });
    expect(buildConfig(doc({}), ENV).traceContext, "unset: the dispatcher links").to.equal(undefined);
    const trusted = buildConfig(doc({ traceContext: "trusted-proxies", trustedProxies: ["10.0.0.5"] }), ENV);
    expect(redactConfig(trusted).traceContext, "in the start-up log").to.equal("trusted-proxies");
    for (const [value, message] of [
      [{ traceContext: "trusted-proxies" }, /^traceContext: "trusted-proxies" continues the traces of the addresses in trustedProxies: list your reverse proxy there/m],
      [{ traceContext: "follow" }, /^traceContext: must be one of: link, trusted-proxies, parent/m],
    ] as const) {
      let issues: readonly string[] = [];
      try {
        buildConfig(doc(value), ENV);
      } catch (error) {
        if (error instanceof ConfigError) issues = error.issues;
      }
      expect(issues.join("\n"), JSON.stringify(value)).to.match(message);
    }
  });
});

describe("client address over HTTP: application/claim limits and key IP allowlists behind a proxy", function () {
  this.timeout(60_000);
  let t: TestService;

  before(async () => {
    t = await startTestService();
  });
  after(async () => {
    await t?.close();
  });

  const apply = (forwardedFor?: string) =>
    fetch(`${t.url}/api/v1/applications`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(forwardedFor ? { "x-forwarded-for": forwardedFor } : {}) },
      body: JSON.stringify(APPLICATION),
    }).then((r) => r.status);
  const claim = (forwardedFor: string) =>
    fetch(`${t.url}/api/v1/applications/claim`, { method: "POST", headers: { "content-type": "application/json", "x-forwarded-for": forwardedFor }, body: JSON.stringify({ claimToken: "pmclaim_guess" }) }).then((r) => r.status);

  it("without trustedProxies a forged X-Forwarded-For does not escape the limit", async () => {
    t.service.config.trustedProxies = undefined;
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push(await apply(`198.51.100.${i}`));
    expect(statuses).to.deep.equal([202, 202, 202, 202, 202, 429]);
  });

  it("with the proxy trusted, one client's burst is its own: others still apply and claim", async () => {
    t.service.config.trustedProxies = ["127.0.0.1/32"];
    const flood = [];
    for (let i = 0; i < 6; i++) flood.push(await apply("203.0.113.66"));
    expect(flood).to.deep.equal([202, 202, 202, 202, 202, 429]);
    // A spoofed left entry does not help the flooding client: the proxy appended its real address last.
    expect(await apply("1.1.1.1, 203.0.113.66")).to.equal(429);
    expect(await apply("203.0.113.77"), "another applicant").to.equal(202);
    const claims = [];
    for (let i = 0; i < 6; i++) claims.push(await claim("203.0.113.66"));
    expect(claims).to.deep.equal([404, 404, 404, 404, 404, 429]);
    expect(await claim("203.0.113.78"), "another claimant").to.equal(404);
  });

  it("the second review's IPv6 attack: 8 addresses of one /64 share one application bucket; another /64 is another client", async () => {
    t.service.config.trustedProxies = ["127.0.0.1/32"];
    const statuses = [];
    for (let i = 1; i <= 8; i++) statuses.push(await apply(`2001:db8:77:1:${i}::${i}`));
    expect(statuses).to.deep.equal([202, 202, 202, 202, 202, 429, 429, 429]);
    expect(await apply("2001:db8:77:2::1"), "a neighbour's /64").to.equal(202);
    // Claims count the same way.
    const claims = [];
    for (let i = 1; i <= 6; i++) claims.push(await claim(`2001:db8:77:3::${i}`));
    expect(claims).to.deep.equal([404, 404, 404, 404, 404, 429]);
  });

  it("keys' IP allowlists see the forwarded client address from a trusted proxy, the socket address otherwise", async () => {
    const project = await t.store.createProject("ip allowlist");
    const key = await t.store.createApiKey(project.id, "office");
    await t.store.setApiKeyAccess(key.apiKey.id, { allowedOrigins: null, allowedIps: ["203.0.113.0/24"] });
    const call = async (forwardedFor: string) => {
      const response = await fetch(`${t.url}/api/v1/paymaster/local?apiKey=${encodeURIComponent(key.plaintext)}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": forwardedFor },
        body: JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" }),
      });
      const body = (await response.json()) as { data?: { reason?: string }; message: string };
      return { status: response.status, reason: body.data?.reason, message: body.message };
    };
    const standard = async (forwardedFor: string) => {
      const response = await fetch(`${t.url}/rpc/v1/local?apiKey=${encodeURIComponent(key.plaintext)}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": forwardedFor },
        body: JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" }),
      });
      return ((await response.json()) as { error?: { data?: { reason?: string } } }).error?.data?.reason;
    };
    t.service.config.trustedProxies = ["127.0.0.1/32"];
    expect((await call("203.0.113.9")).status).to.equal(200);
    expect(await standard("203.0.113.9")).to.equal(undefined);
    const outside = await call("198.51.100.1");
    expect(outside.reason).to.equal("CLIENT_IP_NOT_ALLOWED");
    expect(outside.message).to.equal("This API key is not allowed from client address 198.51.100.1");
    expect(await standard("198.51.100.1")).to.equal("CLIENT_IP_NOT_ALLOWED");
    t.service.config.trustedProxies = undefined;
    const untrusted = await call("203.0.113.9");
    expect(untrusted.reason, "a header from an untrusted peer is not believed").to.equal("CLIENT_IP_NOT_ALLOWED");
    expect(untrusted.message).to.match(/client address 127\.0\.0\.1$/);
  });
});
