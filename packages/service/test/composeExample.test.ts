// The operator guide's compose example (packages/service/ops/compose: compose.yaml, prometheus.yml, paymaster.json)
// is not run whole by the tests (no registry serves its PostgreSQL, Redis and Prometheus images here; the guide
// says so). What can be checked without running it is checked against the real parts: the guide shows these very
// files; the service's own configuration loader accepts paymaster.json with the environment compose gives it; the
// mounts land where the Containerfile's image reads its configuration and keeps its data, and the image's own
// entrypoint runs (no command of the compose file's own); the URLs, ports and names agree with each other; nothing
// listens beyond loopback; and the guide says what it runs without (a bundler) and that it has not been run.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { parse } from "yaml";
import { CONFIG_PATH_ENV, DATABASE_URL_ENV, loadConfig, networkEnvVar } from "../src/config/load.ts";

const COMPOSE_DIR = fileURLToPath(new URL("../ops/compose/", import.meta.url));
const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const GUIDE = readFileSync(path.join(REPO, "docs/operator-guide.md"), "utf8");
const text = (file: string) => readFileSync(path.join(COMPOSE_DIR, file), "utf8");

interface ComposeService {
  build?: { context: string; dockerfile: string };
  image?: string;
  network_mode?: string;
  command?: string[];
  entrypoint?: unknown;
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
}
const compose = parse(text("compose.yaml")) as { services: Record<string, ComposeService>; volumes: Record<string, unknown> };
const { paymaster, postgres, redis, prometheus } = compose.services as Record<"paymaster" | "postgres" | "redis" | "prometheus", ComposeService>;

/** The image's settings as the Containerfile gives them (its final stage). */
function imageSettings() {
  const containerfile = readFileSync(path.join(COMPOSE_DIR, paymaster.build!.context, paymaster.build!.dockerfile), "utf8");
  const finalStage = containerfile.slice(containerfile.lastIndexOf("\nFROM "));
  const env = Object.fromEntries([...finalStage.matchAll(/\b(PAYMASTER_[A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
  return { env, volume: /^VOLUME (\S+)$/m.exec(finalStage)?.[1], entrypoint: /^ENTRYPOINT (.+)$/m.exec(finalStage)?.[1] };
}

/** A `${NAME}` of compose's interpolation, with a value the test gives in place of the .env's. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{([A-Z_]+)\}/g, (_, name: string) => {
    if (!(name in env)) throw new Error(`compose.yaml interpolates \${${name}}, which the test (and the guide's .env) does not give`);
    return env[name]!;
  });
}

describe("the operator guide's compose example, checked against the image and the service's configuration", () => {
  it("the guide shows the repository's files as they are", () => {
    const blocks = [...GUIDE.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
    for (const file of ["compose.yaml", "prometheus.yml"]) expect(blocks, `the guide's ${file}`).to.include(text(file));
    expect(GUIDE).to.include("packages/service/ops/compose");
  });

  it("the service's mounts are where the image reads its configuration and keeps its data; the image's own entrypoint runs", () => {
    const image = imageSettings();
    expect(image.entrypoint, "the Containerfile's entrypoint").to.match(/paymaster\.js", "start"\]$/);
    expect(paymaster.command, "no command of its own").to.equal(undefined);
    expect(paymaster.entrypoint).to.equal(undefined);
    expect(paymaster.volumes).to.include(`./paymaster.json:${image.env[CONFIG_PATH_ENV]}:ro`);
    expect(paymaster.volumes!.map((v) => v.split(":")[1])).to.include(image.volume);
    expect(existsSync(path.join(COMPOSE_DIR, "paymaster.json"))).to.equal(true);
    for (const mount of prometheus.volumes!) expect(existsSync(path.join(COMPOSE_DIR, mount.split(":")[0]!)), mount).to.equal(true);
  });

  it("paymaster.json, with the environment compose gives the service, is a configuration the service accepts; its listeners are the ones Prometheus and the proxy reach", async () => {
    const secrets = { POSTGRES_PASSWORD: "compose-test-password", PAYMASTER_NETWORK_BASE_SEPOLIA_SIGNER_KEYS: `0x${"11".repeat(32)}` };
    const environment = Object.fromEntries(Object.entries(paymaster.environment!).map(([name, value]) => [name, interpolate(value, secrets)]));
    const config = await loadConfig({ argv: [], env: { [CONFIG_PATH_ENV]: path.join(COMPOSE_DIR, "paymaster.json"), ...environment } });
    expect(config!.host).to.equal("127.0.0.1");
    expect(config!.databaseUrl).to.equal(environment[DATABASE_URL_ENV]);
    // Every network's signer keys come from the environment compose passes.
    for (const network of config!.networks) expect(environment, network.name).to.have.property(networkEnvVar(network.name, "SIGNER_KEYS"));
    // Prometheus scrapes the metrics listener the configuration opens; both in the host's network namespace.
    const scrape = parse(text("prometheus.yml")) as { scrape_configs: { static_configs: { targets: string[] }[] }[]; rule_files: string[] };
    expect(scrape.scrape_configs[0]!.static_configs[0]!.targets).to.deep.equal([`${config!.metrics!.host}:${config!.metrics!.port}`]);
    expect(prometheus.volumes!.map((v) => v.split(":")[1])).to.include(`/etc/prometheus/${scrape.rule_files[0]}`);
    // The store and the rate limits reach the PostgreSQL and Redis of this file, by its names and ports.
    const database = new URL(environment[DATABASE_URL_ENV]!);
    expect([database.username, database.pathname.slice(1)]).to.deep.equal([postgres.environment!.POSTGRES_USER, postgres.environment!.POSTGRES_DB]);
    expect(postgres.ports).to.deep.equal([`127.0.0.1:${database.port}:5432`]);
    expect(redis.ports).to.deep.equal([`127.0.0.1:${new URL(environment.REDIS_URL!).port}:6379`]);
    expect(paymaster.depends_on).to.have.keys("postgres", "redis");
  });

  it("nothing listens beyond loopback: published ports on 127.0.0.1 only; the loopback listeners share the host's network namespace", () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const port of service.ports ?? []) expect(port, name).to.match(/^127\.0\.0\.1:\d+:\d+$/);
      if (service.ports === undefined) expect(service.network_mode, name).to.equal("host");
    }
    expect(prometheus.command).to.include("--web.listen-address=127.0.0.1:9090");
  });

  it("the guide says what the example runs without and that it has not been run whole", () => {
    const section = GUIDE.slice(GUIDE.indexOf("#### Compose"), GUIDE.indexOf("## 4. Watch and adjust"));
    expect(section).to.match(/no bundler/i);
    expect(section).to.match(/bundlerUrl/);
    expect(section).to.match(/has not been run/);
    expect(section).to.include("test/composeExample.test.ts");
  });
});
