// The console shows each role what it may do (real Chromium, real service): signed in as a viewer, no page offers
// anything that writes; as an operator, the operator's actions are there and the admin's are not; and an action a
// role may not do, sent by hand from the page, is refused 403 with the role it needs.
//
// "Writes" is decided by what the page does, not by what it looks like: on every page the crawler presses every
// enabled button (again after each press, for what a press reveals: a "Reject…" form, a new row) and submits every
// form with validation off, confirming every dialog, and records every request that is not a GET to the admin API
// (but sign-out, which every role may do). A viewer's crawl must record none; an operator's must record writes,
// and only to routes its session permits.
import { expect } from "chai";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { startTestStack, type Embedded } from "../../service/test/helpers/stack.ts";
import { launchChromium, screenshots } from "./helpers/browser.ts";

const TOKENS = { viewer: "viewer-console-token-0123456789abcdef0123456789", operator: "operator-console-token-0123456789abcdef01234567", admin: "admin-console-token-0123456789abcdef0123456789ab" };
const SENDER = "0x9406Cc6185a346906296840746125a0E44976454";

describe("the console by role (Chromium, real service)", function () {
  this.timeout(600_000);
  let embedded: Embedded;
  let browser: Browser;
  let admin: string;
  const ids: { project?: string; code?: string } = {};

  const bearer = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${admin}/admin/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${TOKENS.admin}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await response.json()) as any;
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };

  before(async () => {
    [embedded, browser] = await Promise.all([
      startTestStack({
        admin: {
          host: "127.0.0.1",
          port: 0,
          tokens: [
            { name: "support", token: TOKENS.viewer, role: "viewer" },
            { name: "policy", token: TOKENS.operator, role: "operator" },
            { name: "root", token: TOKENS.admin, role: "admin" },
          ],
        },
        webhookDestinations: ["127.0.0.1/32"],
      }),
      launchChromium(),
    ]);
    admin = embedded.running.adminUrl!;
    // Something on every page for an action to act on: a project with a key, a strategy, a tank, a webhook, a
    // pending application.
    ids.project = (await bearer("POST", "/projects", { name: "Acme" })).id;
    await bearer("POST", "/keys", { projectId: ids.project, label: "web" });
    ids.code = (await bearer("POST", "/strategies", { code: "acme-free", project: ids.project, rules: { caps: { daily: { maxOps: 5 } } } })).code;
    await bearer("POST", `/tanks/local/${SENDER}/credit`, { wei: "1000" });
    await bearer("POST", `/tanks/local/${SENDER}/allow`, { project: ids.project });
    await bearer("POST", `/projects/${ids.project}/webhooks`, { url: "http://127.0.0.1:9/hook" });
    const applied = await fetch(`${embedded.running.url}/api/v1/applications`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contact: "dev@example.org", project: "Team Blue", networks: ["local"], use: "tests" }),
    });
    expect(applied.status).to.equal(202);
  });
  after(async () => {
    await browser?.close();
    await embedded?.close();
  });

  /** Every page of the console, with the data above (the operator's crawl may disable or revoke it: viewer first). */
  const pages = () => [
    "/overview",
    "/projects",
    `/projects/${ids.project}`,
    "/applications",
    "/strategies",
    `/strategies/${ids.code}`,
    "/strategies/new",
    "/sponsorships",
    "/tanks",
    `/tanks/local/${SENDER}`,
    `/webhooks?project=${ids.project}`,
    "/audit",
  ];

  async function signIn(role: keyof typeof TOKENS): Promise<{ context: BrowserContext; page: Page; writes: string[]; session: any }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    page.on("dialog", (dialog) => void dialog.accept());
    const writes: string[] = [];
    page.on("request", (request: Request) => {
      const url = new URL(request.url());
      if (request.method() !== "GET" && url.pathname.startsWith("/admin/v1/") && url.pathname !== "/admin/v1/session/end" && url.pathname !== "/admin/v1/session") {
        writes.push(`${request.method()} ${url.pathname}`);
      }
    });
    await page.goto(`${admin}/console/`);
    await page.getByLabel("Admin token").fill(TOKENS[role]);
    await page.keyboard.press("Enter");
    await page.getByText("Signed in as").waitFor();
    await page.locator(".topbar .role", { hasText: `(${role})` }).waitFor();
    const session = await page.evaluate(async () => (await fetch("../admin/v1/session")).json());
    expect(session.role).to.equal(role);
    return { context, page, writes, session };
  }

  /** The page has done what the last action started: effects run (two frames), no request in flight, <main> not busy. */
  async function settled(page: Page): Promise<void> {
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(resolve, 0)))));
    await page.locator('main[aria-busy="false"]').waitFor();
  }

  /** Presses every enabled button of the page at `route`, then submits each of its forms (see the file's comment). */
  async function pressEverything(page: Page, route: string): Promise<number> {
    const open = async () => {
      await page.goto(`${admin}/console/#${route}`);
      await page.locator("main h1").first().waitFor();
      await settled(page);
    };
    await open();
    const pressed = new Set<string>();
    for (let round = 0; round < 60; round++) {
      if (new URL(page.url()).hash !== `#${route}`) await open();
      // The next enabled, visible button not pressed yet (the top bar's sign-out aside), by its text and rank.
      const next = await page.evaluate((done) => {
        for (const form of document.querySelectorAll("form")) form.noValidate = true;
        const seen = new Map<string, number>();
        const buttons = [...document.querySelectorAll<HTMLButtonElement | HTMLInputElement>("main button, main input[type=submit]")];
        for (const [index, b] of buttons.entries()) {
          // A row's own id (a key, an address, a uuid) left out of the name: "Rotate key pm_…" is one kind of button.
          const label = (b.getAttribute("aria-label") ?? "").replace(/pm_[\w-]+|0x[0-9a-fA-F]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "…");
          const name = `${label}|${(b.textContent ?? (b as HTMLInputElement).value ?? "").trim()}`;
          const rank = (seen.get(name) ?? 0) + 1;
          seen.set(name, rank);
          const key = `${name}#${rank}`;
          const box = b.getBoundingClientRect();
          // Two of a name are enough (a row's button does what the next row's does): a press that adds a row (a new
          // key, a rotation) would otherwise add buttons to press without end.
          if (b.disabled || box.width === 0 || rank > 2 || done.includes(key)) continue;
          return { index, key };
        }
        return undefined;
      }, [...pressed]);
      if (!next) break;
      pressed.add(next.key);
      await page.locator("main button, main input[type=submit]").nth(next.index).click();
      await settled(page);
    }
    if (new URL(page.url()).hash !== `#${route}`) await open();
    const forms = await page.locator("main form").count();
    for (let i = 0; i < forms; i++) {
      if (new URL(page.url()).hash !== `#${route}`) await open();
      // Looked up without waiting: a form the previous submit took away is simply gone.
      const submitted = await page.evaluate((index) => {
        const form = document.querySelectorAll<HTMLFormElement>("main form")[index];
        if (!form) return false;
        form.noValidate = true;
        form.requestSubmit();
        return true;
      }, i);
      if (submitted) await settled(page);
    }
    return pressed.size + forms;
  }

  it("as a viewer: no page offers a write (every enabled button pressed, every form submitted); by hand, 403", async () => {
    const { context, page, writes } = await signIn("viewer");
    try {
      let actions = 0;
      for (const route of pages()) actions += await pressEverything(page, route);
      expect(actions, "buttons and forms the crawl found (tabs, filters, Search, Refresh, Copy…)").to.be.greaterThan(15);
      expect(writes, "requests other than GET a viewer's console made").to.deep.equal([]);
      // Where the actions would be, the page says why they are not.
      await page.goto(`${admin}/console/#/projects/${ids.project}`);
      await page.getByTestId("role-note").filter({ hasText: "Your role, viewer, does not change projects or their API keys." }).waitFor();
      expect(await page.getByRole("button", { name: /Revoke key|Rotate key|Disable project/ }).count()).to.equal(0);
      await page.goto(`${admin}/console/#/strategies/${ids.code}`);
      await page.getByTestId("role-note").waitFor();
      expect(await page.getByLabel("Code").isDisabled(), "the strategy shown, not editable").to.equal(true);
      expect(await page.getByRole("button", { name: "Save changes" }).count()).to.equal(0);
      expect(await page.getByRole("heading", { name: "Dry run" }).count()).to.equal(0);
      await screenshots(page, "roles-viewer-strategy");
      // Sent by hand from the page, with the session's CSRF value: refused, naming the role it needs.
      const byHand = await page.evaluate(async () => {
        const s = await (await fetch("../admin/v1/session")).json();
        const r = await fetch("../admin/v1/projects", { method: "POST", headers: { "content-type": "application/json", "x-paymaster-csrf": s.csrf }, body: JSON.stringify({ name: "by hand" }) });
        return { status: r.status, body: await r.json() };
      });
      expect(byHand.status).to.equal(403);
      expect(byHand.body.error).to.deep.include({ code: "FORBIDDEN", requiredRole: "operator" });
      expect((await bearer("GET", "/projects")).map((p: any) => p.name)).to.not.include("by hand");
    } finally {
      await context.close();
    }
  });

  it("as an operator: the operator's actions are offered and work, the admin's are not offered; by hand, 403", async () => {
    const { context, page, writes, session } = await signIn("operator");
    try {
      // Offered: what an operator does.
      await page.goto(`${admin}/console/#/projects`);
      await page.getByRole("button", { name: "Create project" }).waitFor();
      await page.goto(`${admin}/console/#/projects/${ids.project}`);
      await page.getByRole("button", { name: /^Revoke key/ }).waitFor();
      await page.goto(`${admin}/console/#/strategies/${ids.code}`);
      await page.getByRole("button", { name: "Save changes" }).waitFor();
      await page.getByRole("heading", { name: "Dry run" }).waitFor();
      // Not offered: a tank's credit and its projects (an admin's).
      await page.goto(`${admin}/console/#/tanks/local/${SENDER}`);
      await page.getByRole("table", { name: "Projects of the tank" }).waitFor();
      await page.getByTestId("role-note").filter({ hasText: "Your role, operator, does not credit gas tanks" }).waitFor();
      expect(await page.getByRole("button", { name: /Credit the tank|Allow the project|Disallow|Allow again/ }).count()).to.equal(0);
      await screenshots(page, "roles-operator-tank");

      const permitted = (session.permitted as string[]).map((route) => new RegExp(`^${route.replace(/:[^/]+/g, "[^/]+")}$`));
      for (const route of pages()) await pressEverything(page, route);
      expect(writes, "the operator's crawl made writes").to.include.members(["POST /admin/v1/projects", `POST /admin/v1/projects/${ids.project}/disable`]);
      expect(writes.some((w) => w.startsWith("PATCH /admin/v1/strategies/")), "saved a strategy").to.equal(true);
      const beyond = writes.filter((w) => !permitted.some((p) => p.test(w)));
      expect(beyond, "writes an operator's console offered that its role does not include").to.deep.equal([]);
      expect(writes.filter((w) => w.includes("/tanks/")), "no tank write").to.deep.equal([]);

      const byHand = await page.evaluate(async (sender) => {
        const s = await (await fetch("../admin/v1/session")).json();
        const r = await fetch(`../admin/v1/tanks/local/${sender}/credit`, { method: "POST", headers: { "content-type": "application/json", "x-paymaster-csrf": s.csrf }, body: JSON.stringify({ wei: "5" }) });
        return { status: r.status, body: await r.json() };
      }, SENDER);
      expect(byHand.status).to.equal(403);
      expect(byHand.body.error).to.deep.include({ code: "FORBIDDEN", requiredRole: "admin" });
      expect((await bearer("GET", `/tanks/local/${SENDER}`)).balanceWei).to.equal("1000");
    } finally {
      await context.close();
    }
  });
});
