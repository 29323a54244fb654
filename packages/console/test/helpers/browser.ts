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

/**
 * What a phone user cannot see without scrolling sideways: tables that scroll inside their box, and table cells,
 * buttons and links (the section menu's included) that lie partly outside the viewport. Each as a short text.
 */
export async function offScreen(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const width = document.documentElement.clientWidth;
    for (const wrap of document.querySelectorAll<HTMLElement>(".table-wrap")) {
      if (wrap.scrollWidth > wrap.clientWidth + 1) found.push(`table "${wrap.querySelector("caption")?.textContent}" scrolls sideways`);
    }
    for (const el of document.querySelectorAll<HTMLElement>("td, tbody th, button, a, nav a")) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || getComputedStyle(el).visibility === "hidden" || el.closest(".visually-hidden, .skip-link")) continue;
      if (box.left < -1 || box.right > width + 1) found.push(`${el.tagName.toLowerCase()} "${(el.textContent ?? "").trim().slice(0, 40)}" at ${Math.round(box.left)}..${Math.round(box.right)}`);
    }
    return found;
  });
}
