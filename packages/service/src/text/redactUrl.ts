/**
 * An RPC URL safe to log: scheme, host and port. Query strings and userinfo are dropped, and so is the path
 * (shown as "/…"), because providers put keys there too (…/v2/<key>). Here, at the bottom, so that clients of
 * upstreams (chain RPC, bundler) can redact without importing the configuration loader.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    // "/…" says something was cut: a path, or a query alone.
    return `${u.protocol}//${u.host}${(u.pathname !== "" && u.pathname !== "/") || u.search !== "" ? "/…" : ""}`;
  } catch {
    return "(unparseable URL)";
  }
}
