// A page on another origin attacks the admin listener from the operator's own browser (real Chromium, real
// service): while the operator is signed in to the console, the page fires "simple" cross-site writes
// (fetch with mode: "no-cors": text/plain, form and multipart bodies, or none) at every spelling of the admin
// paths that matter — the canonical one, upper and mixed case, percent-encoded letters, '//', a trailing '/'.
// Nothing changes: no gas tank credited, no project, strategy, key or token written, no audit row.
import { expect } from "chai";
import type { Browser } from "playwright-core";
import { startTestStack, type Embedded } from "../../service/test/helpers/stack.ts";
import { launchChromium } from "./helpers/browser.ts";
import { serveFiles, type StaticServer } from "./helpers/staticServer.ts";

const TOKEN = "cross-site-test-token-0123456789abcdef01234567";
const VICTIM = "0x9406Cc6185a346906296840746125a0E44976454";

/** The attacker's page: fires every request, then sets window.done to how many it sent. */
function attackPage(admin: string, usdc: string): string {
  const writes: [string, unknown][] = [
    [`/admin/v1/tanks/local/${VICTIM}/credit`, { wei: "7000000000000000000" }],
    ["/admin/v1/projects", { name: "Attacker" }],
    ["/admin/v1/strategies", { code: "attacker-free", project: "x" }],
    ["/admin/v1/apply", { projects: [{ name: "Applied by attacker" }], tokens: [{ network: "local", symbol: "USDC", address: usdc, decimals: 6, priceSource: { type: "fixed", usd: "1000000" } }] }],
  ];
  const spell = (p: string) => {
    const rest = p.slice("/admin/v1".length);
    return [p, p.toUpperCase(), `/ADMIN/v1${rest}`, `/Admin/V1${rest}`, `/%61dmin/v1${rest}`, `//admin/v1${rest}`, `/admin//v1${rest}`, `${p}/`, `/admin/v1/x/..${rest}`];
  };
  const requests = writes.flatMap(([p, body]) => spell(p).map((path) => ({ path, body: JSON.stringify(body) })));
  return `<!doctype html><meta charset="utf-8"><title>cute cats</title><script>
    const admin = ${JSON.stringify(admin)};
    const requests = ${JSON.stringify(requests)};
    (async () => {
      let sent = 0;
      const all = [];
      for (const { path, body } of requests) {
        const form = new FormData();
        form.append("json", body);
        for (const init of [
          { method: "POST", body },
          { method: "POST", body, headers: { "content-type": "text/plain" } },
          { method: "POST", body: new URLSearchParams({ json: body }) },
          { method: "POST", body: form },
          { method: "POST" },
        ]) {
          sent++;
          all.push(fetch(admin + path, { ...init, mode: "no-cors", credentials: "include" }).catch(() => {}));
        }
      }
      await Promise.all(all);
      window.done = sent;
    })();
  </script>`;
}

describe("cross-site writes to the admin listener (Chromium)", function () {
  let embedded: Embedded;
  let browser: Browser;
  let attacker: StaticServer[] = [];
  let admin: string;
  const bearer = async (route: string) => {
    const response = await fetch(`${admin}/admin/v1${route}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status, route).to.equal(200);
    return (await response.json()) as any;
  };
  /** What an attack would change. */
  const state = async () => ({
    tank: await bearer(`/tanks/local/${VICTIM}`),
    projects: await bearer("/projects"),
    strategies: await bearer("/strategies"),
    keys: await bearer("/keys"),
    audit: await bearer("/audit?limit=1000"),
  });

  before(async () => {
    [embedded, browser] = await Promise.all([startTestStack({ admin: { host: "127.0.0.1", port: 0, tokens: [{ name: "ops", token: TOKEN }] } }), launchChromium()]);
    admin = embedded.running.adminUrl!;
  });
  after(async () => {
    await browser?.close();
    await Promise.all(attacker.map((s) => s.close()));
    await embedded?.close();
  });

  it("changes nothing, whatever the path's spelling, while the operator is signed in", async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(20_000);
    const console = await context.newPage();
    await console.goto(`${admin}/console/`);
    await console.getByLabel("Admin token").fill(TOKEN);
    await console.keyboard.press("Enter");
    await console.getByText("Signed in as").waitFor();
    expect((await context.cookies(`${admin}/admin/v1/`)).some((c) => c.name === "pm_console"), "signed in: the cookie is there").to.equal(true);

    const before = await state();
    const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!.address;
    const html = attackPage(admin, usdc);
    // Another port of the same address (the same site: the SameSite cookie goes along) and another name.
    const sameSite = await serveFiles({ "/": { type: "text/html", body: html } });
    const otherSite = await serveFiles({ "/": { type: "text/html", body: html } });
    attacker = [sameSite, otherSite];
    for (const origin of [sameSite.origin, otherSite.origin.replace("127.0.0.1", "localhost")]) {
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      const sent = await page.waitForFunction(() => (window as unknown as { done?: number }).done).then((h) => h.jsonValue());
      expect(sent, origin).to.equal(4 * 9 * 5);
      await page.close();
    }
    const after = await state();
    expect(after.tank, "the victim's tank").to.deep.equal(before.tank);
    expect(after.projects).to.deep.equal(before.projects);
    expect(after.strategies).to.deep.equal(before.strategies);
    expect(after.keys).to.deep.equal(before.keys);
    expect(after.audit, "no audit row: nothing was done").to.deep.equal(before.audit);
    const usdcRow = (await embedded.running.service.store.listTokens("local")).find((t) => t.symbol === "USDC");
    expect(usdcRow?.priceSource, "the USDC price is untouched").to.not.deep.equal({ type: "fixed", usd: "1000000" });
    await context.close();
  });
});
