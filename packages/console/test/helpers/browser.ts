// Debian's Chromium driven by playwright-core (never a downloaded browser): headless, with the flags that keep
// it off the network (this machine's network is closed: background networking floods it with refused
// connections), a fresh profile per launch (Playwright makes one), and screenshots into test-artifacts/.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM = process.env.PAYMASTER_CHROMIUM ?? "/usr/bin/chromium";
export const ARTIFACTS = path.join(path.dirname(new URL(import.meta.url).pathname), "..", "..", "test-artifacts");

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
}

export const WIDTHS = { desktop: 1280, phone: 390 } as const;

/** Full-page screenshots of the page at desktop and phone width: test-artifacts/<name>-1280.png and -390.png. */
export async function screenshots(page: Page, name: string): Promise<string[]> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const files: string[] = [];
  const before = page.viewportSize() ?? { width: WIDTHS.desktop, height: 900 };
  for (const width of [WIDTHS.desktop, WIDTHS.phone]) {
    await page.setViewportSize({ width, height: width === WIDTHS.phone ? 844 : 900 });
    const file = path.join(ARTIFACTS, `${name}-${width}.png`);
    await page.screenshot({ path: file, fullPage: true });
    files.push(file);
  }
  await page.setViewportSize(before);
  return files;
}

/** Whether anything on the page is wider than the viewport (a layout that does not fit a phone). */
export async function overflowsHorizontally(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1);
}

/** A screenshot of one part of the page (a chart, a panel): test-artifacts/<name>.png. */
export async function partScreenshot(part: import("playwright-core").Locator, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await part.screenshot({ path: file });
  return file;
}
