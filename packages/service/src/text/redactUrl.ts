/**
 * An RPC URL safe to log: scheme, host and port. Query strings and userinfo are dropped, and so is the path
 * (shown as "/…"), because providers put keys there too (…/v2/<key>). Here, at the bottom, so that clients of
 * upstreams (chain RPC, bundler) can redact without importing the configuration loader.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname !== "" && u.pathname !== "/" ? "/…" : ""}`;
  } catch {
    return "(unparseable URL)";
  }
}
