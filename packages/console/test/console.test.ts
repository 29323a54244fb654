// The operator console in a real headless Chromium against the real service (embedded local chain, SQLite):
// sign in (a wrong token refused), create a project and a key, approve an application a team made on the public
// application page and claim its key there, create a strategy with a cap through the form (the service's
// field-named error first), dry-run an operation, sponsor operations with the new key from Node (one lands and
// settles), see them on the usage chart, in the sponsorship list and in a sponsorship's timeline, credit a gas
// tank, bill the project (plan, credit, an op held then billed, its statement as CSV), revoke the key in the
// console and see the next request refused; a change without the CSRF header, or
// from another origin, is refused; sign-out ends the session. Screenshots of each page at 1280 and 390 px go to
// test-artifacts/.
import { expect } from "chai";
import type { Browser, BrowserContext, Page, Route } from "playwright-core";
import { executeCallData } from "../../service/src/local/embedded.ts";
import { call, chainRequest, handleOps, newWallet, opFromResponse, signAsOwner, startTestStack, wireOp, type Embedded } from "../../service/test/helpers/stack.ts";
import { launchChromium, offScreen, overflowsHorizontally, partScreenshot, screenshots } from "./helpers/browser.ts";
import { serveFiles } from "./helpers/staticServer.ts";

const TOKEN = "console-test-token-0123456789abcdef0123456789";

describe("operator console (Chromium, real service)", function () {
  this.bail(true); // one journey: a step that fails leaves the next ones nothing to stand on
  let embedded: Embedded;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let admin: string;
  let publicUrl: string;
  /** The admin API with the bearer token (what the console must agree with). */
  const bearer = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${admin}/admin/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as any };
  };
  const state: { key?: string; projectId?: string; settledTx?: string; settledHash?: string } = {};
  /** Holds the page's requests matching `which` until release(); `asked` resolves when the first one arrives. */
  const hold = async (which: (url: URL) => boolean) => {
    let release!: () => void;
    let arrived!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const asked = new Promise<void>((resolve) => (arrived = resolve));
    const handler = async (route: Route) => {
      arrived();
      await held;
      await route.continue();
    };
    await page.route(which, handler);
    return { asked, release, end: async () => (release(), await page.unroute(which, handler)) };
  };

  before(async () => {
    [embedded, browser] = await Promise.all([startTestStack({
        admin: { host: "127.0.0.1", port: 0, tokens: [{ name: "ops", token: TOKEN }] },
        // The webhook page adds a loopback endpoint: allowed explicitly, as an operator would for an internal receiver.
        webhookDestinations: ["127.0.0.1/32"],
      }), launchChromium()]);
    admin = embedded.running.adminUrl!;
    publicUrl = embedded.running.url;
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: admin });
    page = await context.newPage();
    page.on("dialog", (dialog) => void dialog.accept());
  });
  afterEach(async function () {
    // What the page showed when a step failed.
    if (this.currentTest?.state === "failed" && page) await screenshots(page, `failed-${this.currentTest.title.slice(0, 40).replace(/\W+/g, "-")}`);
  });
  after(async () => {
    await browser?.close();
    await embedded?.close();
  });

  it("refuses a wrong token, signs in with the right one (a session cookie, never the token)", async () => {
    await page.goto(`${admin}/console/`);
    await page.getByLabel("Admin token").fill("not-the-token-but-long-enough-0000000000");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "invalid admin token" }).waitFor();
    await screenshots(page, "01-sign-in-refused");
    // By keyboard alone: type the token, press Enter.
    await page.getByLabel("Admin token").fill("");
    await page.getByLabel("Admin token").focus();
    await page.keyboard.type(TOKEN);
    await page.keyboard.press("Enter");
    await page.getByText("Signed in as").waitFor();
    // Focus moves to the page's heading (screen readers announce the page); Tab goes on to its first control,
    // drawn with a visible focus ring.
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal("Overview");
    await page.keyboard.press("Tab");
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const style = getComputedStyle(el);
      return { label: (el as HTMLSelectElement).labels?.[0]?.textContent, outline: style.outlineStyle, width: style.outlineWidth };
    });
    expect(focused).to.deep.equal({ label: "Network", outline: "solid", width: "3px" });
    const cookies = await context.cookies(`${admin}/admin/v1/`);
    const session = cookies.find((c) => c.name === "pm_console")!;
    expect(session, "the session cookie").to.not.equal(undefined);
    expect(session).to.include({ httpOnly: true, sameSite: "Strict", path: "/admin/v1" });
    expect(session.value).to.not.contain(TOKEN);
    expect(await page.evaluate(() => document.cookie), "HttpOnly: no script sees it").to.equal("");
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByText("Paymaster deposits in the EntryPoint").first().waitFor();
    await page.locator('main[aria-busy="false"]').waitFor(); // every panel loaded before the width is measured
    await screenshots(page, "02-overview");
    expect(await overflowsHorizontally(page)).to.equal(false);
  });

  it("creates a project and an API key (plaintext once, copy button)", async () => {
    await page.getByRole("link", { name: "Projects & keys" }).click();
    await page.getByLabel("Project name").fill("Acme");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.getByRole("heading", { name: "Acme" }).waitFor();
    state.projectId = decodeURIComponent(new URL(page.url()).hash.split("/")[2]!);
    await page.getByLabel("Label (optional)").fill("web");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = page.locator("input[data-secret]");
    await secret.waitFor();
    state.key = await secret.inputValue();
    expect(state.key).to.match(/^pm_/);
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByText("Copied").waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(state.key);
    // Rotate: a new plaintext shown once, the first key revoked at once.
    const first = state.key;
    // The new key's box replaces the first one's once the rotate is answered (its value is a DOM property,
    // not an attribute: no CSS selector can tell the two apart), so wait for that answer and the box it brings.
    const rotate = page.waitForResponse((r) => r.request().method() === "POST" && /\/admin\/v1\/keys\/[^/]+\/rotate$/.test(r.url()));
    await page.getByRole("button", { name: /^Rotate key/ }).click();
    const rotated = await (await rotate).json();
    state.key = await page.getByLabel(`API key ${rotated.prefix}… (the old key is revoked)`, { exact: true }).inputValue();
    expect(state.key).to.match(/^pm_/).and.not.equal(first);
    expect(state.key, "the page shows the key the service made").to.equal(rotated.key);
    expect((await call(`${publicUrl}/api/v1/paymaster/local?apiKey=${first}`, "pm_supportEntrypoint")).status).to.equal(401);
    expect((await call(`${publicUrl}/api/v1/paymaster/local?apiKey=${state.key}`, "pm_supportEntrypoint")).status).to.equal(200);
    // The store has hashes only: no listing shows a plaintext again.
    const listed = await bearer("GET", `/keys?project=${state.projectId}`);
    expect(listed.json.map((k: any) => k.status).sort()).to.deep.equal(["active", "revoked"]);
    expect(JSON.stringify(listed.json)).to.not.contain(state.key).and.not.contain(first);
    await screenshots(page, "03-project");
  });

  it("approves an application made on the public page, whose team then claims its key there", async () => {
    const team = await context.newPage();
    await team.goto(`${publicUrl}/apply/`);
    // Sent empty: the service's refusal names its field, and the page shows it at that field.
    await team.getByRole("button", { name: "Send application" }).click();
    const contact = team.getByLabel("Contact");
    await team.locator('input[aria-invalid="true"]').waitFor();
    expect(await contact.getAttribute("aria-invalid")).to.equal("true");
    expect(await team.locator(".field.invalid .error").first().textContent()).to.equal("required, at most 200 characters");
    await contact.fill("dev@example.org");
    await team.getByLabel("Project name").fill("Team Blue");
    await team.getByLabel("local").check();
    await team.getByLabel("What will the paymaster pay for?").fill("Gasless mints for our game, about 100 a day.");
    await screenshots(team, "04-apply-form");
    await team.getByRole("button", { name: "Send application" }).click();
    await team.getByText("Application received.").waitFor();
    await team.getByText("What happens next").waitFor();
    await screenshots(team, "05-apply-confirmation");

    await page.getByRole("link", { name: "Key applications" }).click();
    await page.getByRole("heading", { name: "Team Blue" }).waitFor();
    await screenshots(page, "06-applications");
    await page.getByRole("button", { name: "Approve" }).click();
    const claimToken = await page.locator("input[data-secret]").inputValue();
    expect(claimToken).to.match(/^pmclaim_/);

    await team.goto(`${publicUrl}/apply/#claim`);
    await team.getByLabel("Claim token").fill(claimToken);
    await team.getByRole("button", { name: "Claim the key" }).click();
    const teamKey = await team.locator("input[data-secret]").inputValue();
    expect(teamKey).to.match(/^pm_/);
    await team.getByText(`/rpc/v1/local?apiKey=`).waitFor();
    // What else the key needs: a strategy_code (this project has no strategy yet).
    await team.getByRole("heading", { name: "Name the strategy that pays" }).waitFor();
    await team.getByTestId("no-strategy").waitFor();
    await screenshots(team, "07-apply-claimed");
    // The claimed key is real: it answers on the public endpoint.
    const support = await call(`${publicUrl}/api/v1/paymaster/local?apiKey=${teamKey}`, "pm_supportEntrypoint");
    expect(support.status).to.equal(200);
    await team.close();
  });

  it("creates a strategy with a cap through the form: the service's field-named error first, then saved", async () => {
    await page.getByRole("link", { name: "Strategies" }).click();
    await page.getByRole("link", { name: "New strategy" }).click();
    await page.getByLabel("Code").fill("acme-free");
    await page.getByLabel("Name", { exact: true }).fill("Acme free mints");
    await page.getByLabel("Project").selectOption(state.projectId!);
    await page.getByRole("group", { name: "Networks" }).getByLabel("local").check();
    const dailyUsd = page.getByRole("group", { name: "Daily cap" }).getByLabel("Max USD");
    await dailyUsd.fill("lots");
    await page.getByRole("button", { name: "Create strategy" }).click();
    // The message the CLI and the admin API give for the same document, at the field.
    const same = await bearer("POST", "/strategies", { code: "acme-free", project: state.projectId, rules: { caps: { daily: { maxUsd: "lots" } } } });
    expect(same.status).to.equal(400);
    const expected = same.json.error.issues.find((i: any) => i.field === "rules.caps.daily.maxUsd").message as string;
    expect(expected).to.match(/USD decimal string/);
    await page.locator(".field.invalid .error").filter({ hasText: expected }).waitFor();
    expect(await dailyUsd.getAttribute("aria-invalid")).to.equal("true");
    await screenshots(page, "08-strategy-form-error");

    await dailyUsd.fill("50.00");
    await page.getByRole("group", { name: "Per-operation cap" }).getByLabel("Max USD per operation").fill("5");
    await page.getByRole("group", { name: "Browser clients" }).getByLabel("Open sponsorships per browser client").fill("3");
    await page.getByRole("button", { name: "Create strategy" }).click();
    await page.getByRole("heading", { name: "Strategy acme-free" }).waitFor();
    const stored = await bearer("GET", "/strategies/acme-free");
    expect(stored.json).to.deep.include({ code: "acme-free", name: "Acme free mints", projectId: state.projectId, networks: ["local"], status: "enabled" });
    expect(stored.json.rules).to.deep.equal({ caps: { daily: { maxUsd: "50.00" }, perOp: { maxUsd: "5" } }, maxOutstandingPerClientIp: 3 });

    // The JSON view is the same document.
    await page.getByRole("tab", { name: "JSON" }).click();
    const json = JSON.parse(await page.getByLabel("Strategy document (JSON)").inputValue());
    expect(json.rules).to.deep.equal(stored.json.rules);
    await page.getByRole("tab", { name: "Form" }).click();
  });

  it("dry-runs a pasted user operation: every rule's verdict, as pm_checkPolicy answers", async () => {
    const wallet = await newWallet(embedded, "v0.7");
    const op = wireOp(wallet, executeCallData(wallet.owner.address));
    await page.getByLabel("User operation").fill(JSON.stringify(op, null, 2));
    await page.getByRole("button", { name: "Check" }).click();
    await page.getByText("Would sponsor.").waitFor();
    const verdicts = page.getByRole("table", { name: "Verdict of each rule" });
    await verdicts.getByText("caps.daily.maxUsd").waitFor();
    // The same verdicts through the public method with the project's key.
    const direct = await call(`${publicUrl}/api/v1/paymaster/local?apiKey=${state.key}`, "pm_checkPolicy", [op, { strategy_code: "acme-free", version: "v0.7" }]);
    expect(direct.status, JSON.stringify(direct.body)).to.equal(200);
    const rules = (await verdicts.locator("tbody th").allTextContents()).map((t) => t.trim());
    expect(rules).to.deep.equal(direct.body.data.verdicts.map((v: any) => v.rule));
    await screenshots(page, "09-strategy-dry-run");
  });

  it("sponsored operations show on the usage chart, in the sponsorship list and in a timeline", async () => {
    const endpoint = `${publicUrl}/api/v1/paymaster/local?apiKey=${state.key}`;
    // One op lands (and settles), one is signed and never sent.
    const landed = await newWallet(embedded, "v0.7");
    const wire = wireOp(landed, executeCallData(landed.owner.address));
    const answer = await call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: "acme-free", version: "v0.7" }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, landed, opFromResponse(landed, wire, answer.body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    state.settledHash = outcome.event!.userOpHash;
    const pending = await newWallet(embedded, "v0.7");
    const second = await call(endpoint, "pm_sponsorUserOperation", [wireOp(pending, executeCallData(pending.owner.address)), { strategy_code: "acme-free", version: "v0.7" }]);
    expect(second.status).to.equal(200);
    await chainRequest(embedded, "evm_mine", []); // the confirmation the watcher waits for
    for (let i = 0; i < 100; i++) {
      const s = await bearer("GET", `/sponsorships/${state.settledHash}`);
      if (s.json.status === "settled") {
        state.settledTx = s.json.settlement.txHash;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(state.settledTx, "settled by the watcher").to.match(/^0x[0-9a-f]{64}$/);

    await page.reload();
    const chart = page.locator("figure", { hasText: "Spent and reserved per day (USD)" });
    await chart.waitFor();
    // The figure's frame comes before its data: wait for the bars, then count them.
    await chart.locator("svg rect").nth(1).waitFor();
    expect(await chart.locator("svg rect").count(), "a spent bar and a reserved bar").to.equal(2);
    await chart.getByText("Show the data").click();
    // Summed over the days, not read from the row of the test's own "today": the service buckets by the UTC
    // day each was signed, which is yesterday for a run that crosses midnight.
    const days = await chart.locator("tbody tr").evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((td) => Number(td.textContent))));
    const spent = days.reduce((sum, [day]) => sum + day!, 0);
    const reserved = days.reduce((sum, [, day]) => sum + day!, 0);
    expect(spent).to.be.greaterThan(0);
    expect(reserved).to.be.greaterThan(0);
    await page.getByRole("table", { name: "Remaining budget per cap" }).getByText("caps.daily").waitFor();
    // What the strategy spent in all, though it has no global cap: the settled op's cost, as the admin API says.
    const totals = (await bearer("GET", "/strategies/acme-free/usage")).json.totals;
    expect(BigInt(totals.spentWei) > 0n, JSON.stringify(totals)).to.equal(true);
    expect(totals.ops).to.equal(2);
    await page.getByTestId("strategy-totals").filter({ hasText: `Spent so far:` }).filter({ hasText: `($${totals.spentUsd})` }).filter({ hasText: "2 operations" }).waitFor();
    await screenshots(page, "10-strategy-usage");
    await partScreenshot(page.locator("section", { has: page.getByRole("heading", { name: "Usage" }) }), "10-strategy-usage-chart");

    // The overview charts the same activity once this process has written its request counts.
    await embedded.running.requestCounts.flush();
    await page.getByRole("link", { name: "Overview" }).click();
    const requests = page.locator("figure", { hasText: "Requests over time" });
    await requests.locator("svg rect").first().waitFor();
    // Over the last 24 hours the recent activity is a bar one can see, not a 1-2 px line at the right edge.
    const widths = await requests.locator("svg rect").evaluateAll((rects) => rects.map((r) => r.getBoundingClientRect().width));
    expect(Math.min(...widths), "the narrowest bar (px)").to.be.at.least(4);
    await page.locator("figure", { hasText: "Sponsorships over time" }).locator("svg rect").first().waitFor();
    // The configured tokens' state on the ERC-20 paymasters (what `paymaster token list` reads).
    const tokens = page.getByRole("table", { name: "Tokens the ERC-20 paymasters accept on local" });
    await tokens.locator("tbody tr").first().waitFor();
    expect(await tokens.locator("tbody tr", { hasText: "USDC" }).count(), "USDC on each version's ERC-20 paymaster").to.equal(3);
    expect(await tokens.locator("tbody tr", { hasText: "NOT allowed" }).count()).to.equal(0);
    await screenshots(page, "16-overview-with-activity");

    await page.getByRole("link", { name: "Sponsorships" }).click();
    await page.getByRole("heading", { name: "Sponsorships", level: 1 }).waitFor();
    await page.getByLabel("Strategy", { exact: true }).selectOption("acme-free");
    // The unfiltered list is on screen until the search's own request is answered (the route changes, the page
    // is made again and asks for the filtered list): wait for that answer, then for the list it brings.
    const searched = page.waitForResponse((r) => r.request().method() === "GET" && new URL(r.url()).pathname.endsWith("/admin/v1/sponsorships") && new URL(r.url()).searchParams.get("strategy") === "acme-free");
    await page.getByRole("button", { name: "Search" }).click();
    expect((await searched).status()).to.equal(200);
    await page.waitForURL(/strategy=acme-free/);
    await page.getByText("2 found, newest first:").waitFor();
    // The list can come before the strategies' codes (a row shows the strategy's id until then).
    await page.locator('main[aria-busy="false"]').waitFor();
    const table = page.getByRole("table", { name: "Sponsorships" });
    expect(await table.locator("tbody tr").count(), "the strategy's two sponsorships").to.equal(2);
    expect((await table.locator("tbody tr td:nth-of-type(3)").allTextContents()).map((t) => t.trim()), "each under acme-free").to.deep.equal(["acme-free", "acme-free"]);
    await table.getByText("settled", { exact: true }).waitFor();
    await table.getByText("signed", { exact: true }).waitFor();
    // Search again with the same criteria asks again (a signed one may have settled since).
    const again = page.waitForResponse((r) => r.request().method() === "GET" && new URL(r.url()).pathname.endsWith("/admin/v1/sponsorships") && new URL(r.url()).searchParams.get("strategy") === "acme-free");
    await page.getByRole("button", { name: "Search" }).click();
    expect((await again).status(), "the same search sent again").to.equal(200);
    await screenshots(page, "11-sponsorships");
    await table.locator("tbody tr", { hasText: "settled" }).getByRole("link").click();
    await page.getByRole("heading", { name: "Timeline" }).waitFor();
    await page.locator(".timeline li", { hasText: "Settled" }).waitFor();
    await page.getByText(state.settledTx!).waitFor();
    await page.getByText(state.settledHash!).waitFor();
    await screenshots(page, "12-sponsorship-detail");
  });

  it("credits a gas tank by hand with a reference; the ledger shows it", async () => {
    const sender = embedded.demoAccounts[1]!.sender;
    // Until the networks are known there is no tank to open: hold /info and look at the button.
    const info = await hold((url) => url.pathname.endsWith("/admin/v1/info"));
    try {
      await page.getByRole("link", { name: "Gas tanks" }).click();
      await page.getByRole("table", { name: "Gas tanks" }).waitFor();
      await page.getByLabel("Sender (smart account)").fill(sender);
      await info.asked;
      expect(await page.getByRole("button", { name: "Open tank" }).isDisabled(), "no network known yet").to.equal(true);
    } finally {
      await info.end();
    }
    await page.getByRole("button", { name: "Open tank" }).click();
    await page.getByRole("heading", { name: "Credit by hand" }).waitFor();
    await page.getByLabel("Amount (ETH)").fill("0.25");
    await page.getByLabel("Reference").fill("invoice-42");
    await page.getByRole("button", { name: "Credit the tank" }).click();
    await page.getByText("Credited 0.25 ETH (reference invoice-42)").waitFor();
    await page.getByRole("table", { name: "Credits, debits and operations paid" }).getByText("invoice-42").waitFor();
    const tank = await bearer("GET", `/tanks/local/${sender}`);
    expect(tank.json.balanceWei).to.equal((10n ** 18n + 25n * 10n ** 16n).toString());
    // The demo account's tank allows the demo project; allow the test's project too, then disallow it.
    const projects = page.getByRole("table", { name: "Projects of the tank" });
    await projects.getByText("Demo project").waitFor();
    await page.getByLabel("Project to allow").selectOption(state.projectId!);
    await page.getByRole("button", { name: "Allow the project" }).click();
    const row = projects.getByRole("row").filter({ has: page.getByRole("link", { name: "Acme", exact: true }) });
    await row.getByRole("button", { name: "Disallow" }).waitFor();
    let consents = (await bearer("GET", `/tanks/local/${sender}`)).json.projects;
    expect(consents.find((c: any) => c.projectId === state.projectId)).to.include({ allowed: true });
    expect(consents.find((c: any) => c.projectId === state.projectId).changedBy).to.match(/^console:/);
    await row.getByRole("button", { name: "Disallow" }).click();
    await row.getByRole("button", { name: "Allow again" }).waitFor();
    consents = (await bearer("GET", `/tanks/local/${sender}`)).json.projects;
    expect(consents.find((c: any) => c.projectId === state.projectId)).to.include({ allowed: false });
    await screenshots(page, "13-gas-tank");
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByText("No endpoint").waitFor();
    await page.getByLabel("Project").selectOption(state.projectId!);
    await page.getByLabel("URL").fill("http://127.0.0.1:9/paymaster-hook");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secret = await page.locator("input[data-secret]").inputValue();
    expect(secret.length).to.be.greaterThan(20);
    await page.getByRole("table", { name: "Endpoints" }).getByText("http://127.0.0.1:9/paymaster-hook").waitFor();
    const hooks = await bearer("GET", `/projects/${state.projectId}/webhooks`);
    expect(hooks.json.map((h: any) => h.url)).to.deep.equal(["http://127.0.0.1:9/paymaster-hook"]);
    expect(JSON.stringify(hooks.json)).to.not.contain(secret);
    await screenshots(page, "14-webhooks");
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.getByRole("table", { name: "Audit log" }).getByText("tank.credit").waitFor();
    await screenshots(page, "15-audit");
  });

  it("bills a project: the plan turned on, a credit by hand (once per reference), an op held then billed, the statement on screen and as CSV", async () => {
    await page.goto(`${admin}/console/#/projects/${encodeURIComponent(state.projectId!)}`);
    await page.locator("main").getByRole("link", { name: "Billing", exact: true }).click();
    await page.getByRole("heading", { name: "Billing of Acme" }).waitFor();
    await page.getByText("Billing is off for this project").waitFor();
    await page.getByLabel("Billing", { exact: true }).selectOption("on");
    await page.getByLabel("Markup (basis points)").fill("1000");
    await page.getByLabel("Fee per operation (USD)").fill("0.01");
    await page.getByLabel("Alert below (USD)").fill("5");
    await page.getByRole("button", { name: "Save the plan" }).click();
    await page.getByText("Plan saved.").waitFor();
    expect((await bearer("GET", `/projects/${state.projectId}/billing`)).json).to.include({ enabled: true, markupBps: 1000, feeUsd: "0.01", alertBelowUsd: "5.00" });

    // Without credit the project's next op is refused; the operator credits it (twice with one reference: once).
    const endpoint = `${publicUrl}/api/v1/paymaster/local?apiKey=${state.key}`;
    const wallet = await newWallet(embedded, "v0.7");
    const wire = wireOp(wallet, executeCallData(wallet.owner.address));
    const refused = await call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: "acme-free", version: "v0.7" }]);
    expect([refused.status, (refused.body as any).data.reason]).to.deep.equal([402, "PROJECT_BALANCE_EXHAUSTED"]);
    for (const expected of ["Credited $20.00 (reference inv-7). Balance now $20.00.", "Reference inv-7 was credited before: nothing changed. Balance $20.00."]) {
      await page.getByLabel("Amount (USD)").fill("20");
      await page.getByLabel("Reference").fill("inv-7");
      await page.getByRole("button", { name: "Credit the project" }).click();
      await page.getByText(expected).waitFor();
    }
    const answer = await call(endpoint, "pm_sponsorUserOperation", [wire, { strategy_code: "acme-free", version: "v0.7" }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const held = (await bearer("GET", `/projects/${state.projectId}/billing`)).json.heldUsd;
    expect(Number(held)).to.be.greaterThan(0.01);
    const outcome = await handleOps(embedded, await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, answer.body.data)));
    expect(outcome.reverted, outcome.failedOp).to.equal(false);
    await chainRequest(embedded, "evm_mine", []);
    for (let i = 0; i < 100 && (await bearer("GET", `/projects/${state.projectId}/billing`)).json.heldUsd !== "0.00"; i++) await new Promise((r) => setTimeout(r, 100));

    await page.reload();
    const statement = page.getByRole("table", { name: `Statement of ${new Date().toISOString().slice(0, 7)}` });
    await statement.getByText("inv-7").waitFor();
    await statement.getByRole("rowheader", { name: "Operation" }).waitFor();
    const billed = (await bearer("GET", `/projects/${state.projectId}/billing/statement`)).json;
    expect(billed.lines.map((l: any) => l.kind)).to.deep.equal(["credit", "debit"]);
    await page.getByText(`closing balance $${billed.closingBalanceUsd}`).waitFor();
    await screenshots(page, "17-project-billing");
    const download = page.waitForEvent("download");
    await page.getByRole("link", { name: "Download CSV" }).click();
    const file = await download;
    expect(file.suggestedFilename()).to.match(/^statement-.*\.csv$/);
    const csv = await new Promise<string>((resolve, reject) => {
      void file.createReadStream().then((stream) => {
        let text = "";
        stream.on("data", (chunk) => (text += chunk));
        stream.on("end", () => resolve(text));
        stream.on("error", reject);
      }, reject);
    });
    expect(csv).to.match(/\r\n1,[^,]+,credit,inv-7,/);
    expect(csv).to.contain(`,debit,${billed.lines[1].reference},local,sponsor,${billed.lines[1].userOpHash},${billed.lines[1].txHash},`);

    await page.getByRole("navigation").getByRole("link", { name: "Billing", exact: true }).click();
    await page.getByRole("table", { name: "Billed projects" }).getByRole("link", { name: "Acme" }).waitFor();
    await screenshots(page, "18-billing");
  });

  it("a change without the CSRF header, or from another origin, is refused and writes nothing", async () => {
    const before = (await bearer("GET", "/projects")).json.length;
    const refused = await page.evaluate(async () => {
      const r = await fetch("../admin/v1/projects", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "no csrf" }) });
      return { status: r.status, body: await r.json() };
    });
    expect(refused.status).to.equal(403);
    expect(refused.body.error.message).to.match(/X-Paymaster-CSRF/i);
    // The page's own mutations carry it: the same request with the session's value passes.
    const allowed = await page.evaluate(async () => {
      const s = await (await fetch("../admin/v1/session")).json();
      const r = await fetch("../admin/v1/projects", { method: "POST", headers: { "content-type": "application/json", "x-paymaster-csrf": s.csrf }, body: JSON.stringify({ name: "with csrf" }) });
      return r.status;
    });
    expect(allowed).to.equal(201);
    // A page of another origin on the same host: same site, so the browser does send the SameSite=Strict cookie
    // with its (CORS-simple) POST; the service refuses it (no CSRF value, a foreign origin).
    const site = await serveFiles({ "/": { type: "text/html", body: "<!doctype html><title>elsewhere</title>" } });
    try {
      const other = await context.newPage();
      await other.goto(site.origin);
      const answered = other.waitForResponse((r) => r.url() === `${admin}/admin/v1/projects`);
      await other.evaluate(async (url) => {
        await fetch(`${url}/admin/v1/projects`, { method: "POST", mode: "no-cors", credentials: "include", headers: { "content-type": "text/plain" }, body: JSON.stringify({ name: "forged" }) }).catch(() => undefined);
      }, admin);
      const response = await answered;
      // 415: a CORS-simple request can never be JSON, and the admin listener takes no other write (the CSRF
      // check behind it, with the cookie that did go along, is proven above).
      expect(response.status()).to.equal(415);
      await other.close();
    } finally {
      await site.close();
    }
    const names = (await bearer("GET", "/projects")).json.map((p: any) => p.name);
    expect(names).to.have.length(before + 1);
    expect(names).to.include("with csrf").and.not.include("forged").and.not.include("no csrf");
    const audit = await bearer("GET", "/audit?action=project.create");
    expect(audit.json.find((e: any) => e.after.name === "with csrf").actor).to.equal("console:ops");
  });

  it("revokes the key in the console: its next request is refused", async () => {
    const active = (await bearer("GET", `/keys?project=${state.projectId}`)).json.filter((k: any) => k.status === "active");
    expect(active, "one active key: the rotated one").to.have.length(1);
    const key = active[0];
    expect(state.key!.startsWith(key.prefix)).to.equal(true);
    await page.goto(`${admin}/console/#/projects/${encodeURIComponent(state.projectId!)}`);
    // The key's own row: the table also lists the key rotated earlier, already revoked.
    const row = page.getByRole("table", { name: "API keys" }).getByRole("row").filter({ has: page.getByRole("rowheader", { name: `${key.prefix}…`, exact: true }) });
    await row.getByText("active", { exact: true }).waitFor();
    const revoke = page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith(`/admin/v1/keys/${encodeURIComponent(key.id)}/revoke`));
    // Until the page has read the keys again, the row still shows the key active: the action must stay busy
    // (no second click on a row that no longer holds). Hold that read to look.
    const reread = await hold((url) => url.pathname.endsWith(`/admin/v1/projects/${encodeURIComponent(state.projectId!)}`));
    try {
      await row.getByRole("button", { name: `Revoke key ${key.prefix}` }).click();
      expect((await revoke).status()).to.equal(200);
      await reread.asked;
      expect(await row.getByRole("button", { name: `Revoke key ${key.prefix}` }).isDisabled(), "busy until the keys are read again").to.equal(true);
    } finally {
      await reread.end();
    }
    await row.getByText("revoked", { exact: true }).waitFor();
    const refused = await call(`${publicUrl}/api/v1/paymaster/local?apiKey=${state.key}`, "pm_supportEntrypoint");
    expect(refused.status).to.equal(401);
    expect((refused.body as any).data.reason).to.equal("API_KEY_REVOKED");
  });

  it("a page says it is busy while its data loads (main aria-busy), and no longer once it is on screen", async () => {
    // Hold the overview's chain read: until it is let through, the page must say it is still loading.
    const networks = await hold((url) => url.pathname.endsWith("/admin/v1/networks"));
    try {
      await page.goto(`${admin}/console/#/overview`);
      await page.getByRole("heading", { level: 1, name: "Overview", exact: true }).waitFor();
      await page.getByText("Loading the networks' state from the chain").waitFor();
      expect(await page.locator("main").getAttribute("aria-busy")).to.equal("true");
      networks.release();
      await page.getByText("Paymaster deposits in the EntryPoint").first().waitFor();
      await page.locator('main[aria-busy="false"]').waitFor();
    } finally {
      await networks.end();
    }
  });

  it("another list never shows the previous one's answer while it loads (applications by status)", async () => {
    await page.goto(`${admin}/console/#/applications`);
    await page.getByText("No application is waiting.").waitFor();
    const claimed = await hold((url) => url.pathname.endsWith("/admin/v1/applications") && url.searchParams.get("status") === "claimed");
    try {
      await page.getByRole("tab", { name: "Claimed" }).click();
      await claimed.asked;
      // The pending tab's answer (none) must not stand for the claimed one meanwhile.
      await page.getByText("Loading the applications…").waitFor();
      expect(await page.getByText("No claimed application.").count()).to.equal(0);
      claimed.release();
      await page.getByRole("heading", { name: "Team Blue" }).waitFor();
    } finally {
      await claimed.end();
    }
  });

  it("at 1280 px a long project name is whole in the new strategy form's project list", async () => {
    const long = "Northwind Traders mobile wallet onboarding (EU)";
    const created = await bearer("POST", "/projects", { name: long });
    expect(created.status).to.equal(201);
    await page.goto(`${admin}/console/#/strategies/new`);
    const project = page.getByLabel("Project");
    await project.selectOption(created.json.id);
    const fits = await project.evaluate((select: HTMLSelectElement) => {
      const style = getComputedStyle(select);
      const context = document.createElement("canvas").getContext("2d")!;
      context.font = style.font;
      const text = context.measureText(select.selectedOptions[0]!.text).width;
      // The text plus the padding and the arrow (about 24 px) within the box.
      return { text: Math.ceil(text), room: select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 24 };
    });
    expect(fits.text, `the project name (${fits.text} px) within the list's ${fits.room} px`).to.be.at.most(fits.room);
  });

  it("at 390 px no table column, button or section is off-screen (the project's key buttons, the overview's columns, the menu)", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    // An active key, so that the project page has its Origins / Rotate / Revoke buttons.
    expect((await bearer("POST", "/keys", { projectId: state.projectId, label: "phone" })).status).to.equal(201);
    const pages: [string, string][] = [
      ["/overview", "Overview"],
      [`/projects/${encodeURIComponent(state.projectId!)}`, "Acme"],
      ["/strategies/acme-free", "Strategy acme-free"],
      ["/sponsorships", "Sponsorships"],
      ["/audit", "Audit log"],
    ];
    try {
      for (const [route, heading] of pages) {
        await page.goto(`${admin}/console/#${route}`);
        await page.getByRole("heading", { level: 1, name: heading, exact: true }).waitFor();
        await page.locator('main[aria-busy="false"]').waitFor();
        expect(await offScreen(page), `${route} at 390 px`).to.deep.equal([]);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it("at 390 px the deposits chart shows every paymaster's whole name", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${admin}/console/#/overview`);
      const deposits = page.locator("figure", { hasText: "Paymaster deposits in the EntryPoint" });
      await deposits.locator("svg text").first().waitFor();
      const clipped = await deposits.evaluate((figure) => {
        const svg = figure.querySelector("svg")!.getBoundingClientRect();
        return [...figure.querySelectorAll("svg text")].filter((t) => /Paymaster/.test(t.textContent ?? "")).filter((t) => {
          const box = t.getBoundingClientRect();
          return box.left < svg.left - 0.5 || box.right > svg.right + 0.5;
        }).map((t) => t.textContent);
      });
      expect(clipped, "names cut at the chart's edge").to.deep.equal([]);
      await partScreenshot(deposits, "17-deposits-390");
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it("at 390 px a strategy form refused after Enter: the error summary takes the focus and is in view", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${admin}/console/#/strategies/new`);
      await page.getByLabel("Code").fill("phone-free");
      await page.getByRole("group", { name: "Networks" }).getByLabel("local").check();
      const dailyUsd = page.getByRole("group", { name: "Daily cap" }).getByLabel("Max USD");
      await dailyUsd.fill("lots");
      await dailyUsd.press("Enter");
      const summary = page.locator(".notice.error", { hasText: "The service refused the strategy" });
      await summary.waitFor();
      await page.waitForFunction(() => document.activeElement?.classList.contains("notice"), undefined, { timeout: 3000 });
      const box = (await summary.boundingBox())!;
      expect(box.y >= 0 && box.y < 844, `the error summary in view (y ${box.y})`).to.equal(true);
      await screenshots(page, "18-strategy-refused-focus");
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it("every page fits a phone-width screen; sign-out ends the session", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const pages: [string, string][] = [
      ["/overview", "Overview"],
      ["/projects", "Projects and API keys"],
      ["/applications", "Key applications"],
      ["/strategies/acme-free", "Strategy acme-free"],
      ["/sponsorships", "Sponsorships"],
      ["/tanks", "Gas tanks"],
      ["/billing", "Billing"],
      [`/billing/${encodeURIComponent(state.projectId!)}`, "Billing of Acme"],
      ["/webhooks", "Webhooks"],
      ["/audit", "Audit log"],
    ];
    for (const [route, heading] of pages) {
      await page.goto(`${admin}/console/#${route}`);
      // This page's own heading (not the previous page's), then its data on screen: <main> no longer busy.
      await page.getByRole("heading", { level: 1, name: heading, exact: true }).waitFor();
      await page.locator('main[aria-busy="false"]').waitFor();
      expect(await overflowsHorizontally(page), route).to.equal(false);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Admin token").waitFor();
    expect((await context.cookies(`${admin}/admin/v1/`)).find((c) => c.name === "pm_console")).to.equal(undefined);
    const after = await page.evaluate(async () => (await fetch("../admin/v1/projects")).status);
    expect(after).to.equal(401);
    const audit = await bearer("GET", "/audit?action=session.end");
    expect(audit.json[0].actor).to.equal("console:ops");
  });
});
