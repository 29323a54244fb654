/**
 * Keys used from browsers: CORS preflights on the public endpoints (no credentials), per-key allowed origins
 * and client IP ranges enforced with a clear error, over real HTTP on 127.0.0.1, set through the admin
 * operations the CLI and the admin API use.
 */
import { expect } from "chai";
import { accessRefusal, validIpRange, validOrigin } from "../src/access/keyAccess.ts";
import { AdminError, type AdminContext } from "../src/admin/context.ts";
import { createKey, setKeyAccess } from "../src/admin/keys.ts";
import { startTestService, type TestService } from "./helpers/rpcService.ts";

describe("key access: origins and client IP ranges", () => {
  it("validates origins and ranges exactly", () => {
    expect(validOrigin("https://App.Example.com")).to.equal("https://app.example.com");
    expect(validOrigin("http://localhost:5173")).to.equal("http://localhost:5173");
    for (const bad of ["https://a.com/path", "ftp://a.com", "null", "*", "a.com", 5]) expect(validOrigin(bad), String(bad)).to.equal(undefined);
    expect(validIpRange("10.0.0.0/8")).to.equal("10.0.0.0/8");
    expect(validIpRange("2001:db8::1")).to.equal("2001:db8::1/128");
    for (const bad of ["10.0.0.0/33", "10.0.0/8", "::1/129", "1.2.3.4/8/1", "host"]) expect(validIpRange(bad), bad).to.equal(undefined);
  });

  it("decides: no list = anything; [] = server-side only; ranges by the connection's address", () => {
    const open = { allowedOrigins: null, allowedIps: null };
    expect(accessRefusal(open, { origin: "https://x.io", clientIp: "127.0.0.1" })).to.equal(undefined);
    const serverOnly = { allowedOrigins: [], allowedIps: null };
    expect(accessRefusal(serverOnly, {})).to.equal(undefined);
    expect(accessRefusal(serverOnly, { origin: "https://x.io" })?.reason).to.equal("ORIGIN_NOT_ALLOWED");
    const listed = { allowedOrigins: ["https://app.example.com"], allowedIps: ["10.0.0.0/8", "::1/128"] };
    expect(accessRefusal(listed, { origin: "https://APP.example.com", clientIp: "10.1.2.3" })).to.equal(undefined);
    expect(accessRefusal(listed, { clientIp: "::ffff:10.9.9.9" })).to.equal(undefined);
    expect(accessRefusal(listed, { clientIp: "::1" })).to.equal(undefined);
    expect(accessRefusal(listed, { clientIp: "11.0.0.1" })).to.deep.equal({ reason: "CLIENT_IP_NOT_ALLOWED", message: "This API key is not allowed from client address 11.0.0.1" });
    expect(accessRefusal(listed, { origin: "https://evil.example", clientIp: "10.0.0.1" })?.message).to.equal('This API key is not allowed from origin "https://evil.example"');
  });

  describe("over HTTP", () => {
    let t: TestService;
    let ctx: AdminContext;
    let projectId: string;

    before(async () => {
      t = await startTestService();
      ctx = { store: t.store, networks: ["local", "base-sepolia"], actor: "cli:test", role: "admin" };
      projectId = (await t.store.findApiKey(t.keys.active))!.projectId;
    });
    after(async () => {
      await t?.close();
    });

    const standard = (key: string, headers: Record<string, string> = {}) =>
      fetch(`${t.url}/rpc/v1/local?apiKey=${key}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "pm_supportEntrypoint", params: [] }),
      });
    const v1 = (key: string, headers: Record<string, string> = {}) =>
      fetch(`${t.url}/api/v1/paymaster/local?apiKey=${key}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ id: 1, jsonrpc: "2.0", method: "pm_supportEntrypoint" }),
      });

    it("answers CORS preflights on both public endpoints, without credentials", async () => {
      for (const path of ["/rpc/v1/local", "/api/v1/paymaster/local"]) {
        const r = await fetch(`${t.url}${path}?apiKey=x`, {
          method: "OPTIONS",
          headers: { origin: "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
        });
        expect(r.status, path).to.equal(204);
        expect(r.headers.get("access-control-allow-origin")).to.equal("*");
        expect(r.headers.get("access-control-allow-methods")).to.contain("POST");
        expect(r.headers.get("access-control-allow-headers")).to.contain("content-type");
        expect(r.headers.get("access-control-allow-credentials")).to.equal(null);
      }
      const answer = await standard(t.keys.active, { origin: "https://anywhere.example" });
      expect(answer.headers.get("access-control-allow-origin")).to.equal("*");
      expect((await answer.json() as { result?: unknown }).result).to.be.an("array"); // a key without a list: any origin
      const health = await fetch(`${t.url}/health`, { method: "OPTIONS" });
      expect(health.headers.get("access-control-allow-origin")).to.equal(null);
      await health.text();
    });

    it("enforces a key's origins with a clear error in both dialects", async () => {
      const key = await createKey(ctx, { projectId, origins: ["https://app.example.com"] });
      expect(key.allowedOrigins).to.deep.equal(["https://app.example.com"]);
      expect((await standard(key.key, { origin: "https://app.example.com" })).status).to.equal(200);
      expect((await standard(key.key)).status, "server-side calls carry no Origin").to.equal(200);

      const refused = (await (await standard(key.key, { origin: "https://evil.example" })).json()) as any;
      expect(refused.error).to.deep.include({ code: -32001, message: 'This API key is not allowed from origin "https://evil.example"' });
      expect(refused.error.data.reason).to.equal("ORIGIN_NOT_ALLOWED");
      const refusedV1 = await v1(key.key, { origin: "https://evil.example" });
      expect(refusedV1.status).to.equal(403);
      expect(((await refusedV1.json()) as any).data.reason).to.equal("ORIGIN_NOT_ALLOWED");

      await setKeyAccess(ctx, key.id, { origins: [] }); // server-side only
      expect(((await (await standard(key.key, { origin: "https://app.example.com" })).json()) as any).error.message).to.match(/server-side use only/);
      expect((await standard(key.key)).status).to.equal(200);
    });

    it("enforces client address ranges", async () => {
      const key = await createKey(ctx, { projectId, ips: ["10.0.0.0/8"] });
      const refused = (await (await v1(key.key)).json()) as any;
      expect(refused.data.reason).to.equal("CLIENT_IP_NOT_ALLOWED");
      expect(refused.message).to.equal("This API key is not allowed from client address 127.0.0.1");
      await setKeyAccess(ctx, key.id, { ips: ["127.0.0.0/8"] });
      expect((await v1(key.key)).status).to.equal(200);
      await setKeyAccess(ctx, key.id, { ips: null });
      expect((await v1(key.key)).status).to.equal(200);
    });

    it("refuses malformed lists naming the entry, writing nothing", async () => {
      const before = await t.store.listApiKeys(projectId);
      for (const input of [{ origins: ["https://a.com/path"] }, { ips: ["10.0.0.0/40"] }, { origins: "https://a.com" }]) {
        let error: unknown;
        try {
          await createKey(ctx, { projectId, ...input });
        } catch (err) {
          error = err;
        }
        expect(error).to.be.instanceOf(AdminError);
        expect((error as Error).message).to.match(/^(origins|ips)(\[0\])?: /);
      }
      expect(await t.store.listApiKeys(projectId)).to.deep.equal(before);
    });
  });
});
