/**
 * Text from an upstream (a bundler's error, a provider's rate-limit message) made fit for our log: URLs reduced to
 * scheme, host and port (redactUrl: userinfo, path and query are where keys live), long opaque tokens redacted,
 * bounded. Here, at the bottom, for every client of an upstream.
 */
import { redactUrl } from "./redactUrl.ts";

/** A URL of any scheme, up to whitespace, a quote or a closing bracket. */
export const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>()\]]+/gi;
/** An opaque token (API key, bearer, session id): a long run that is not 0x-hex (revert data, addresses stay). */
export const TOKEN_PATTERN = /(?<![\w-])(?!0x)[A-Za-z0-9_-]{24,}/g;

/** `text` for the log: URLs reduced to scheme, host and port, opaque tokens redacted, at most `maxChars` (then "…"). */
export function loggedText(text: string, maxChars = 4_000): string {
  const redacted = text.replace(URL_PATTERN, (url) => redactUrl(url)).replace(TOKEN_PATTERN, "[redacted]");
  return redacted.length > maxChars ? `${redacted.slice(0, maxChars)}…` : redacted;
}
