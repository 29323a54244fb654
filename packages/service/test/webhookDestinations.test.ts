/**
 * Webhook destinations (issue 20, finding 6): internal addresses are refused by default — at creation when the
 * URL shows it (an IP literal, localhost), and at delivery on the address the host resolves to, which is then
 * the address connected to. No test here sends anything beyond loopback: the link-local and private classes
 * are refused at creation and by an injected resolver (a name that "resolves" to 10.x or 169.254.x), and the
 * only connections made are to a receiver on 127.0.0.1.
 */
import { mkdtempSync } from "node:fs";
import { connect, type BlockList } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { adminApiOptionsFromEnv } from "../src/adminApi/options.ts";
import { openSqliteStore } from "../src/store/index.ts";
import type { Store } from "../src/store/types.ts";
import { createEventWebhook, createApprovalWebhook } from "../src/webhooks/admin.ts";
import { askApproval } from "../src/webhooks/approval.ts";
import { PUBLIC_ONLY, destinationPolicy, internalClass, resolveDestination, socketBlockList, type Resolver } from "../src/webhooks/destination.ts";
import { sendSigned } from "../src/webhooks/send.ts";
import { startWebhookWorker } from "../src/webhooks/worker.ts";
import { createLogger } from "../src/log.ts";
import { startTestStack, type Embedded } from "./helpers/stack.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./helpers/webhookReceiver.ts";

/** A resolver for names that do not exist: each answers what the test says, nothing is looked up. */
const resolverOf = (answers: Record<string, string[]>): Resolver => async (hostname) => {
  const addresses = answers[hostname];
  if (addresses === undefined) throw Object.assign(new Error("unknown test name"), { code: "ENOTFOUND" });
  return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
};
const NAMES = resolverOf({
  "metadata.example.test": ["169.254.169.254"],
  "intranet.example.test": ["10.20.30.40"],
  "mixed.example.test": ["127.0.0.1", "192.168.1.10"],
  "receiver.example.test": ["127.0.0.1"],
  "v6.example.test": ["fe80::1"],
});
const send = (url: string, destinations = PUBLIC_ONLY) => sendSigned({ url, secret: "whsec_test", body: "{}", id: "evt_1", type: "sponsorship.signed" }, { timeoutMs: 2_000, destinations });

describe("webhook destinations", function () {
  this.timeout(60_000);
  let receiver: WebhookReceiver;
  let store: Store;
  let projectId: string;

  before(async () => {
    receiver = await startWebhookReceiver();
    store = openSqliteStore(path.join(mkdtempSync(path.join(tmpdir(), "pm-destinations-")), "db.sqlite"));
    projectId = (await store.createProject("hooks")).id;
  });
  after(async () => {
    await receiver?.close();
    await store?.close();
  });

  it("classifies internal addresses (IPv4, IPv6, IPv4-mapped) and leaves public ones alone", () => {
    const cases: [string, string | undefined][] = [
      ["127.0.0.1", "a loopback address"],
      ["127.9.9.9", "a loopback address"],
      ["::1", "a loopback address"],
      ["10.1.2.3", "a private address"],
      ["172.16.5.4", "a private address"],
      ["172.31.255.255", "a private address"],
      ["192.168.0.1", "a private address"],
      ["fd12::1", "a private address"],
      ["169.254.169.254", "a link-local address"],
      ["fe80::1", "a link-local address"],
      ["::ffff:169.254.169.254", "a link-local address"],
      ["::ffff:a9fe:a9fe", "a link-local address"],
      ["::ffff:7f00:1", "a loopback address"],
      ["100.64.0.1", "a shared (carrier-grade NAT) address"],
      ["0.0.0.0", "an unspecified address"],
      ["224.0.0.1", "a multicast or broadcast address"],
      ["8.8.8.8", undefined],
      ["172.32.0.1", undefined],
      ["2606:4700::1111", undefined],
    ];
    for (const [address, expected] of cases) expect(internalClass(address), address).to.equal(expected);
  });

  it("IPv6 forms that carry an IPv4 address (second review, finding 3): NAT64 is judged by what it carries; 6to4, Teredo, IPv4-compatible/-translated, local-use NAT64 and site-local are refused whole", () => {
    const TRANSITION = "an IPv6 transition address that may reach IPv4 hosts (6to4, Teredo, IPv4-compatible, IPv4-translated)";
    const cases: [string, string | undefined][] = [
      // NAT64, the well-known prefix: the IPv4 address it stands for decides.
      ["64:ff9b::7f00:1", "a loopback address"],
      ["64:ff9b::127.0.0.1", "a loopback address"],
      ["64:ff9b::a9fe:a9fe", "a link-local address"],
      ["64:ff9b::169.254.169.254", "a link-local address"],
      ["64:ff9b::a00:5", "a private address"],
      ["64:FF9B::10.0.0.5", "a private address"],
      ["64:ff9b::808:808", undefined],
      // Local-use NAT64: the site's own translator, refused whatever it carries.
      ["64:ff9b:1::7f00:1", "a local-use NAT64 address (a site's own translator)"],
      ["64:ff9b:1:ffff::808:808", "a local-use NAT64 address (a site's own translator)"],
      // Deprecated forms, refused whole.
      ["2002:7f00:1::1", TRANSITION], // 6to4 of 127.0.0.1
      ["2002:a9fe:a9fe::", TRANSITION],
      ["2002:808:808::1", TRANSITION],
      ["2001:0:4136:e378:8000:63bf:80ff:fffe", TRANSITION], // Teredo, client 127.0.0.1 obfuscated
      ["::127.0.0.1", TRANSITION], // IPv4-compatible
      ["::a9fe:a9fe", TRANSITION],
      ["::ffff:0:7f00:1", TRANSITION], // IPv4-translated
      ["::ffff:0:10.0.0.5", TRANSITION],
      ["fec0::1", "a site-local address (deprecated)"],
      ["feff::1", "a site-local address (deprecated)"],
      ["192.88.99.1", "a reserved address"], // the 6to4 relay anycast
      // Unchanged: the unspecified and loopback addresses inside ::/96 keep their names; public IPv6 stays public.
      ["::", "an unspecified address"],
      ["::1", "a loopback address"],
      ["2001:4860:4860::8888", undefined],
      ["2a00:1450::1", undefined],
    ];
    for (const [address, expected] of cases) expect(internalClass(address), address).to.equal(expected);
  });

  it("at creation and at delivery, those forms are refused before any connection; the operator's allowlist judges NAT64 by its IPv4", async () => {
    const cases: [string, RegExp][] = [
      ["http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", /64:ff9b::a9fe:a9fe \(NAT64 for 169\.254\.169\.254\) is a link-local address/],
      ["http://[64:ff9b::7f00:1]:8080/", /NAT64 for 127\.0\.0\.1\) is a loopback address/],
      ["http://[64:ff9b::a00:5]/", /NAT64 for 10\.0\.0\.5\) is a private address/],
      ["http://[2002:7f00:1::1]/", /2002:7f00:1::1 is an IPv6 transition address/],
      ["http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", /is an IPv6 transition address/],
      ["http://[::7f00:1]/", /::7f00:1 is an IPv6 transition address/],
      ["http://[::ffff:0:a00:5]/", /is an IPv6 transition address/],
      ["http://[64:ff9b:1::a00:5]/", /is a local-use NAT64 address/],
      ["http://[fec0::1]/", /fec0::1 is a site-local address/],
    ];
    for (const [url, message] of cases) {
      const refused = await createEventWebhook(store, { projectId, url }, PUBLIC_ONLY).then(
        () => undefined,
        (e: { code: string; message: string }) => e,
      );
      expect(refused?.code, url).to.equal("INVALID_INPUT");
      expect(refused!.message, url).to.match(message);
    }
    // A name resolving to such a form is refused at delivery by the check that precedes any connection (asked
    // directly: were it to pass, nothing is sent beyond loopback).
    const names = resolverOf({ "nat64.example.test": ["64:ff9b::a9fe:a9fe"], "sixtofour.example.test": ["2002:a00:5::1"], "sitelocal.example.test": ["fec0::5"] });
    for (const host of ["nat64", "sixtofour", "sitelocal"]) {
      const result = await resolveDestination(new URL(`http://${host}.example.test/hook`), destinationPolicy({ resolve: names }));
      expect("refused" in result && result.refused, host).to.match(/^destination refused: /);
    }
    // The operator's allowlist: an allowed internal IPv4 range also allows its NAT64 form; a public NAT64 one needs nothing.
    const internal = destinationPolicy({ allowed: ["10.0.0.0/24"] });
    await createEventWebhook(store, { projectId, url: "http://[64:ff9b::a00:5]:8080/" }, internal);
    await createEventWebhook(store, { projectId, url: "http://[64:ff9b::808:808]/" }, PUBLIC_ONLY);
    expect(socketBlockList("64:ff9b::a00:5", internal), "allowed: no block").to.equal(undefined);
    expect(receiver.requests, "nothing reached the receiver").to.have.length(0);
  });

  it("the socket layer blocks those forms on its own: a lookup answering them is refused by Node before any packet", async () => {
    const forms = ["64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:5", "64:ff9b:1::7f00:1", "2002:7f00:1::1", "2001:0:4136:e378:8000:63bf:80ff:fffe", "::7f00:1", "::ffff:0:7f00:1", "fec0::1", "::ffff:127.0.0.1"];
    for (const address of forms) {
      const blockList = socketBlockList(address, PUBLIC_ONLY)!;
      // Checked first: were the list not to block it, no connection is tried (nothing may leave loopback).
      expect(blockList.check(address, "ipv6"), address).to.equal(true);
      const code = await new Promise<string>((resolve) => {
        const socket = connect({
          host: "embedded.example.test",
          port: 80,
          blockList,
          lookup: (_host, options, callback) => {
            if ((options as { all?: boolean }).all) (callback as unknown as (e: null, all: { address: string; family: number }[]) => void)(null, [{ address, family: 6 }]);
            else callback(null, address, 6);
          },
        });
        socket.on("connect", () => {
          socket.destroy();
          resolve("connected");
        });
        socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
      });
      expect(code, address).to.equal("ERR_IP_BLOCKED");
    }
    // A public NAT64 address is not blocked (only checked: nothing is connected to).
    expect(socketBlockList("64:ff9b::808:808", PUBLIC_ONLY)!.check("64:ff9b::808:808", "ipv6")).to.equal(false);
  });

  it("at creation, by default: loopback, localhost, link-local, private and IPv6 internal literals are refused by name", async () => {
    const cases: [string, RegExp][] = [
      [receiver.url, /url: destination refused: 127\.0\.0\.1 is a loopback address \(allow internal receivers with webhooks\.allowedDestinations\)/],
      ["http://localhost:8080/hook", /127\.0\.0\.1 is a loopback address/],
      ["http://169.254.169.254/latest/meta-data/", /169\.254\.169\.254 is a link-local address/],
      ["http://10.0.0.5:8080/", /10\.0\.0\.5 is a private address/],
      ["https://192.168.1.1/", /192\.168\.1\.1 is a private address/],
      ["http://[fd00::1]/", /fd00::1 is a private address/],
      ["http://[::ffff:a9fe:a9fe]/", /169\.254\.169\.254 is a link-local address/],
    ];
    for (const [url, message] of cases) {
      const refused = await createEventWebhook(store, { projectId, url }, PUBLIC_ONLY).then(
        () => undefined,
        (e: { code: string; message: string }) => e,
      );
      expect(refused, url).to.not.equal(undefined);
      expect(refused!.code, url).to.equal("INVALID_INPUT");
      expect(refused!.message, url).to.match(message);
    }
    await createApprovalWebhook(store, { projectId, url: "http://10.1.1.1/approve" }, PUBLIC_ONLY).then(
      () => expect.fail("accepted"),
      (e: { message: string }) => expect(e.message).to.match(/private address/),
    );
    // A name is not resolved at creation (it is at delivery): accepted here.
    await createEventWebhook(store, { projectId, url: "https://metadata.example.test/hook" }, PUBLIC_ONLY);
    // The operator's allowlist lets an internal receiver in, and only what it lists.
    const internal = destinationPolicy({ allowed: ["10.0.0.0/24"] });
    await createEventWebhook(store, { projectId, url: "http://10.0.0.5:8080/" }, internal);
    await createEventWebhook(store, { projectId, url: "http://10.0.1.5:8080/" }, internal).then(
      () => expect.fail("accepted"),
      (e: { message: string }) => expect(e.message).to.match(/10\.0\.1\.5 is a private address/),
    );
  });

  it("at delivery, on the resolved address: link-local, private, mixed and IPv6 answers are refused without connecting", async () => {
    const policy = destinationPolicy({ allowed: ["127.0.0.1/32"], resolve: NAMES });
    const cases: [string, RegExp][] = [
      ["http://metadata.example.test/latest", /^destination refused: 169\.254\.169\.254 is a link-local address/],
      ["https://intranet.example.test/hook", /^destination refused: 10\.20\.30\.40 is a private address/],
      ["http://mixed.example.test/hook", /^destination refused: 192\.168\.1\.10 is a private address/],
      ["http://v6.example.test/hook", /^destination refused: fe80::1 is a link-local address/],
      ["http://nowhere.example.test/hook", /^host not found \(ENOTFOUND\)/],
    ];
    // A resolution that never answers is bounded by the attempt's timeout.
    const stuck = await sendSigned(
      { url: "http://stuck.example.test/hook", secret: "whsec_test", body: "{}", id: "evt_2", type: "sponsorship.signed" },
      { timeoutMs: 200, destinations: destinationPolicy({ resolve: () => new Promise(() => {}) }) },
    );
    expect(stuck).to.deep.equal({ ok: false, error: "timed out after 200 ms", timedOut: true });
    for (const [url, message] of cases) {
      const result = await send(url, policy);
      expect(result.ok, url).to.equal(false);
      expect(!result.ok && result.error, url).to.match(message);
    }
    expect(receiver.requests, "nothing reached the receiver").to.have.length(0);
  });

  it("a name resolving to an allowed address is delivered to that very address; without the allowlist 127.0.0.1 is refused", async () => {
    const port = new URL(receiver.url).port;
    const allowed = destinationPolicy({ allowed: ["127.0.0.1/32"], resolve: NAMES });
    const delivered = await send(`http://receiver.example.test:${port}/hooks`, allowed);
    expect(delivered, JSON.stringify(delivered)).to.deep.include({ ok: true, status: 200 });
    expect(receiver.requests).to.have.length(1);
    const refused = await send(receiver.url);
    expect(!refused.ok && refused.error).to.match(/^destination refused: 127\.0\.0\.1 is a loopback address/);
    const byName = await send(`http://receiver.example.test:${port}/hooks`, destinationPolicy({ resolve: NAMES }));
    expect(!byName.ok && byName.error).to.match(/^destination refused: 127\.0\.0\.1 is a loopback address/);
    expect(receiver.requests, "the refused ones never arrived").to.have.length(1);
  });

  it("the socket layer refuses internal addresses on its own (a second guard): nothing is sent to a blocked 127.0.0.1", async () => {
    const port = Number(new URL(receiver.url).port);
    const before = receiver.requests.length;
    const attempt = (blockList: BlockList | undefined) =>
      new Promise<string>((resolve) => {
        const socket = connect({ host: "127.0.0.1", port, ...(blockList ? { blockList } : {}) });
        socket.on("connect", () => {
          socket.destroy();
          resolve("connected");
        });
        socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
      });
    expect(await attempt(socketBlockList("127.0.0.1", PUBLIC_ONLY))).to.equal("ERR_IP_BLOCKED");
    expect(socketBlockList("10.0.0.5", destinationPolicy({ allowed: ["10.0.0.0/8"] })), "allowed: no block").to.equal(undefined);
    expect(await attempt(socketBlockList("127.0.0.1", destinationPolicy({ allowed: ["127.0.0.1/32"] })))).to.equal("connected");
    expect(receiver.requests.length).to.equal(before);
  });

  it("an endpoint stored before (or allowed then) is refused at delivery by the worker, the reason on the delivery; approvals fall to their default", async () => {
    const project = await store.createProject("stored before");
    await createEventWebhook(store, { projectId: project.id, url: receiver.url, events: ["deposit.low"] }, destinationPolicy({ allowed: ["127.0.0.1/32"] }));
    const { emitDepositLow } = await import("../src/webhooks/systemEvents.ts");
    await emitDepositLow(store, { network: "local", version: "v0.7", kind: "verifying", paymaster: "0x1111111111111111111111111111111111111111", depositWei: "1", thresholdWei: "2" });
    const before = receiver.requests.length;
    const worker = startWebhookWorker({ store, logger: createLogger("silent"), settings: { maxAttempts: 1 }, autoStart: false, destinations: PUBLIC_ONLY });
    expect(await worker.runOnce()).to.be.at.least(1);
    await worker.stop();
    const { listDeliveries } = await import("../src/webhooks/admin.ts");
    const dead = (await listDeliveries(store, { projectId: project.id, status: "dead" }))[0];
    expect(dead?.lastError).to.match(/^destination refused: 127\.0\.0\.1 is a loopback address/);
    expect(receiver.requests.length).to.equal(before);

    const endpoint = { id: "whe_1", projectId, kind: "approval" as const, url: "http://intranet.example.test/approve", events: [], timeoutMs: 500, defaultDecision: "deny" as const, createdAt: 0, secret: "whsec_x" };
    const decision = await askApproval(endpoint, { op: 1 }, { destinations: destinationPolicy({ resolve: NAMES }) });
    expect(decision.approved).to.equal(false);
    expect(!decision.approved && decision.reason).to.match(/destination refused: 10\.20\.30\.40 is a private address/);
  });
});

describe("webhook destinations: this service's own listeners", function () {
  this.timeout(120_000);
  let embedded: Embedded;
  const TOKEN = "d".repeat(40);

  before(async () => {
    embedded = await startTestStack({ admin: adminApiOptionsFromEnv({ PAYMASTER_ADMIN_TOKENS: `ops=${TOKEN}`, PAYMASTER_ADMIN_PORT: "0" })! });
  });
  after(async () => {
    await embedded?.close();
  });

  it("the admin API refuses its own listener and the public one, even when loopback is allowed, and any loopback by default", async () => {
    const service = embedded.running.service;
    const project = await service.store.createProject("self");
    const create = async (url: string) => {
      const response = await fetch(`${embedded.running.adminUrl}/admin/v1/projects/${project.id}/webhooks`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ url }),
      });
      return { status: response.status, json: (await response.json()) as { error?: { code: string; message: string } } };
    };
    for (const url of [`${embedded.running.adminUrl}/admin/v1/projects`, `${embedded.running.url}/api/v1/applications`]) {
      const answer = await create(url);
      expect(answer.status, url).to.equal(400);
      expect(answer.json.error?.message, url).to.match(/destination refused: 127\.0\.0\.1:\d+ is this service's own listener/);
    }
    const receiver = await startWebhookReceiver();
    try {
      const loopback = await create(receiver.url);
      expect(loopback.status).to.equal(400);
      expect(loopback.json.error?.message).to.match(/127\.0\.0\.1 is a loopback address/);
      // The same with loopback allowed (as webhooks.allowedDestinations would): own listeners stay refused, the receiver is accepted.
      (service.webhookDestinations!.allowed as string[]).push("127.0.0.1/32");
      expect((await create(receiver.url)).status).to.equal(201);
      expect((await create(`${embedded.running.adminUrl}/admin/v1/projects`)).status).to.equal(400);
    } finally {
      await receiver.close();
    }
  });
});
