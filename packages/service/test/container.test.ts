// The container image (Containerfile at the repository root), built by podman and run as an operator runs it: in the
// host's network namespace (the service listens on loopback only), against PostgreSQL and a chain on the host, the
// configuration in a file mounted at /etc/paymaster and the secrets in the environment (never in podman's argv), the
// data directory on a named volume. A sponsorship goes through it and lands on chain, settled by the service's
// watcher; the image's HEALTHCHECK says healthy; `podman stop` (SIGTERM) drains and the service exits 0 by itself.
// Run by scripts/container-test.sh, which installs podman and the base image first (CONTAINERS_CONF is set there).
import { expect } from "chai";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { executeCallData } from "../src/local/embedded.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { createTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { writeLocalConfig } from "./helpers/serviceProcess.ts";
import { call, chainRequest, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "./helpers/stack.ts";
import { freeLoopbackPort } from "./helpers/throwawayServers.ts";

const REPOSITORY = new URL("../../..", import.meta.url).pathname;
const IMAGE = process.env.PAYMASTER_TEST_IMAGE ?? "localhost/paymaster-service:test";
const SIGNER_ENV = "PAYMASTER_NETWORK_LOCAL_SIGNER_KEYS";
/** Written into every stray file of the build context: found nowhere in the image. */
const STRAY_MARKER = `stray-${randomBytes(8).toString("hex")}`;
const STRAY_PACKAGE = `packages/stray-${randomBytes(3).toString("hex")}`;

/**
 * What an operator may keep in a checkout (secrets beside the code, a package folder of their own that would not
 * install), put into the build context for the build: each marked, and removed afterwards. Files already there are
 * left alone (and not checked).
 */
function writeStrayFiles(): string[] {
  const files = {
    ".env": `PAYMASTER_ADMIN_TOKENS=${STRAY_MARKER}\n`,
    "paymaster.json": JSON.stringify({ marker: STRAY_MARKER }),
    "packages/service/.env": `DATABASE_URL=postgres://${STRAY_MARKER}@127.0.0.1/x\n`,
    "packages/service/paymaster.json": JSON.stringify({ marker: STRAY_MARKER }),
    [`${STRAY_PACKAGE}/package.json`]: JSON.stringify({ name: STRAY_MARKER, dependencies: { "no-such-package-anywhere-at-all": "0.0.0" } }),
  };
  const written: string[] = [];
  for (const [file, content] of Object.entries(files)) {
    const target = path.join(REPOSITORY, file);
    if (existsSync(target)) continue;
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, content);
    written.push(target);
  }
  return written;
}

/** Runs podman; its output, or an error with it. `env` adds variables that `-e NAME` passes on without argv. */
function podman(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("podman", args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, output }));
  });
}

/** A command's output inside the container, without podman's own log lines (it logs that it has no systemd here). */
function inContainer(output: string): string {
  return output
    .split("\n")
    .filter((line) => !/^time="[^"]*" level=/.test(line))
    .join("\n")
    .trim();
}

async function podmanOk(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const { code, output } = await podman(args, env);
  if (code !== 0) throw new Error(`podman ${args[0]} exited with ${code}:\n${output.slice(-4000)}`);
  return output;
}

describe("container image: built by podman, run against PostgreSQL and a chain on the host", function () {
  this.timeout(1_200_000);
  const name = `paymaster-test-${randomBytes(4).toString("hex")}`;
  const volume = `${name}-data`;
  let embedded: Embedded;
  let database: TestDatabase;
  let strayFiles: string[] = [];

  before(async function () {
    // The build args and the bind mount only matter where npm goes through a TLS-inspecting proxy (as here).
    const ca = process.env.NODE_EXTRA_CA_CERTS;
    const caArgs = ca ? ["-v", `${ca}:${ca}:ro`, "--build-arg", `NODE_EXTRA_CA_CERTS=${ca}`] : [];
    const started = Date.now();
    strayFiles = writeStrayFiles();
    try {
      // The docker format: the OCI one has no HEALTHCHECK.
      await podmanOk(["build", "--format", "docker", "-f", path.join(REPOSITORY, "Containerfile"), "-t", IMAGE, ...caArgs, REPOSITORY]);
    } finally {
      for (const file of strayFiles) rmSync(file, { force: true });
      rmSync(path.join(REPOSITORY, STRAY_PACKAGE), { recursive: true, force: true });
    }
    console.log(`      image built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    embedded = await startTestStack();
    database = await createTestDatabase("paymaster_container");
  });
  after(async () => {
    await podman(["rm", "-f", "-t", "0", name]);
    await podman(["volume", "rm", "-f", volume]);
    // Each build leaves the previous image and its build stage untagged (about a gigabyte each): only the cache
    // mounts (pnpm's store, turbo's cache) are worth keeping for the next build.
    await podman(["image", "prune", "-f"]);
    await embedded?.close();
    await database?.drop();
  });

  it("holds compiled output and production dependencies only, its own layers under 150 MB, and nothing stray from the build context", async () => {
    const size = Number((await podmanOk(["image", "inspect", IMAGE, "--format", "{{.Size}}"])).trim());
    const base = Number((await podmanOk(["image", "inspect", "docker.io/library/node:22-bookworm-slim", "--format", "{{.Size}}"])).trim());
    console.log(`      image ${(size / 1e6).toFixed(0)} MB: node:22-bookworm-slim as made here ${(base / 1e6).toFixed(0)} MB + ${((size - base) / 1e6).toFixed(0)} MB of ours`);
    // The service's own layers: the whole workspace (sources, tests, dev dependencies) weighed about 800 MB.
    expect(size - base, "the service's layers").to.be.below(150e6);
    const listing = await podmanOk(["run", "--rm", "--network", "none", "--entrypoint", "sh", IMAGE, "-c", "ls /app; ls /app/node_modules; test -f /app/node_modules/pkcs11js/build/Release/pkcs11.node && echo pkcs11js-built"]);
    expect(listing).to.include("dist").and.include("pkcs11js-built");
    expect(listing.split(/\s+/), "no sources, tests or workspace in the image").to.not.include.members(["src", "test", "packages", "bench"]);
    expect(strayFiles.length, "stray files were put in the context").to.be.greaterThan(0);
    const found = await podman(["run", "--rm", "--network", "none", "--entrypoint", "sh", IMAGE, "-c", `grep -rlsF ${STRAY_MARKER} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; true`]);
    expect(found.code, found.output).to.equal(0);
    expect(inContainer(found.output), "a stray file of the build context in the image").to.equal("");
    // The PKCS#11 binding the image ships loads (the operator's vendor library is mounted at run time).
    const binding = await podmanOk(["run", "--rm", "--network", "none", "--entrypoint", "node", IMAGE, "-e", 'import("/app/dist/signer/pkcs11Binding.js").then((m) => console.log(typeof m.loadPkcs11Binding().PKCS11))']);
    expect(inContainer(binding)).to.equal("function");
  });

  it("serves, is healthy, sponsors an op that lands and settles, runs as non-root, and drains on SIGTERM", async () => {
    const store = await openPostgresStore(database.url);
    const project = await store.createProject("container");
    const { plaintext: apiKey } = await store.createApiKey(project.id);
    const code = `C${randomBytes(3).toString("hex").toUpperCase()}`;
    await store.createStrategy({ projectId: project.id, code, name: code, rules: {} });

    const port = await freeLoopbackPort();
    const metricsPort = await freeLoopbackPort();
    const configFile = writeLocalConfig(embedded.stack.manifest, embedded.stack.chain.url, { service: { port, metrics: { host: "127.0.0.1", port: metricsPort } } });
    // The container's user (uid 10001) reads the mounted file.
    chmodSync(path.dirname(configFile), 0o755);
    chmodSync(configFile, 0o644);
    await podmanOk(
      ["run", "-d", "--name", name, "--network", "host", "-v", `${configFile}:/etc/paymaster/paymaster.json:ro`, "-v", `${volume}:/var/lib/paymaster`, "-e", SIGNER_ENV, "-e", "DATABASE_URL", IMAGE],
      { [SIGNER_ENV]: embedded.stack.signer.privateKey, DATABASE_URL: database.url },
    );
    const inspect = await podmanOk(["inspect", name, "--format", "{{json .Config.Cmd}} {{json .Config.Entrypoint}}"]);
    expect(inspect, "no secret in the container's command line").to.not.include(embedded.stack.signer.privateKey.slice(2));

    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const ready = await fetch(`${base}/ready`).then((r) => r.status, () => 0);
      if (ready === 200) break;
      if (Date.now() > deadline) throw new Error(`not ready in 120 s:\n${(await podman(["logs", name])).output.slice(-4000)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const health = await podman(["healthcheck", "run", name]);
    expect(health.code, health.output).to.equal(0);
    expect((await podmanOk(["exec", name, "id", "-u"])).trim(), "the service's user").to.equal("10001");
    expect((await podmanOk(["exec", name, "stat", "-c", "%U %a", "/var/lib/paymaster"])).trim(), "the data volume is the service's").to.match(/^paymaster 7\d\d$/);
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text());
    expect(metrics).to.include("# TYPE");

    // A sponsorship through the container, signed by the owner and landed on the host's chain.
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const { status, body } = await call(`${base}/api/v1/paymaster/local?apiKey=${apiKey}`, "pm_sponsorUserOperation", [wire, { strategy_code: code, version: "v0.7" }]);
    expect(status, JSON.stringify(body)).to.equal(200);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    expect(outcome.event!.success).to.equal(true);
    expect(outcome.event!.paymaster.toLowerCase()).to.equal(embedded.stack.manifest.entryPoints["v0.7"].verifyingPaymaster.toLowerCase());
    await chainRequest(embedded, "evm_mine", []);
    const settledBy = Date.now() + 30_000;
    let record = await store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
    while (record?.status !== "settled" && Date.now() < settledBy) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      record = await store.findSponsorshipByUserOpHash(outcome.event!.userOpHash);
    }
    expect(record?.status, "settled by the container's watcher").to.equal("settled");
    await store.close();

    // podman stop sends SIGTERM and would SIGKILL after 30 s: the service must be gone well before, on its own.
    const stopping = Date.now();
    await podmanOk(["stop", "-t", "30", name]);
    const took = Date.now() - stopping;
    const exitCode = (await podmanOk(["inspect", name, "--format", "{{.State.ExitCode}}"])).trim();
    const logs = (await podman(["logs", name])).output;
    expect(exitCode, logs.slice(-2000)).to.equal("0");
    expect(took, "drained without being killed").to.be.below(25_000);
    expect(logs).to.match(/SIGTERM: shutting down/);
    expect(logs, "no secret in the logs").to.not.include(embedded.stack.signer.privateKey.slice(2));
  });
});
