/**
 * The console's built pages as static files (packages/console builds them into dist/): the operator console on
 * the admin listener (/console/, adminApi/app.ts) and the public key application page on the public port
 * (/apply, app.ts). Only files under the site's own folder are served (names of letters, digits, '.', '_' and
 * '-' in plain sub-folders: no '..', no dot files), with a strict Content-Security-Policy: the pages load their
 * own scripts and styles only and talk only to their own origin. Hashed asset names are cached for good;
 * the HTML never.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { Context } from "koa";
import { consoleDist } from "@paymaster/console";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

const SAFE_PATH = /^(?:[A-Za-z0-9_-][A-Za-z0-9._-]{0,100}\/){0,3}[A-Za-z0-9_-][A-Za-z0-9._-]{0,100}$/;
/** esbuild's hashed names: name-HASH.ext */
const HASHED = /-[A-Z0-9]{8}\.[a-z]+$/;

/** The folder of one built site ("console" or "apply"). */
export function siteDir(site: "console" | "apply"): string {
  return path.join(consoleDist, site);
}

/**
 * Serves `file` (relative to the site's folder; "" = index.html) into ctx, or answers 404; 503 with what to do
 * when the console has not been built.
 */
export async function sendSiteFile(ctx: Context, site: "console" | "apply", file: string): Promise<void> {
  const relative = file === "" ? "index.html" : file;
  const type = TYPES[path.extname(relative)];
  if (!SAFE_PATH.test(relative) || type === undefined) {
    ctx.status = 404;
    ctx.type = "text/plain";
    ctx.body = "not found";
    return;
  }
  let body: Buffer;
  try {
    body = await readFile(path.join(siteDir(site), relative));
  } catch {
    if (relative === "index.html") {
      ctx.status = 503;
      ctx.type = "text/plain";
      ctx.body = `the ${site} page is not built: run "pnpm build" (it builds packages/console)`;
      return;
    }
    ctx.status = 404;
    ctx.type = "text/plain";
    ctx.body = "not found";
    return;
  }
  ctx.status = 200;
  ctx.type = type;
  ctx.set("Cache-Control", HASHED.test(relative) ? "public, max-age=31536000, immutable" : "no-cache");
  ctx.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("X-Frame-Options", "DENY");
  ctx.set("Referrer-Policy", "no-referrer");
  ctx.body = body;
}
