/**
 * Text from an upstream (a bundler's error, a provider's rate-limit message) made fit for our log: URLs reduced to
 * scheme, host and port (redactUrl: userinfo, path and query are where keys live), credentials and long opaque
 * tokens redacted, bounded. Here, at the bottom, for every client of an upstream; the bundler's message as a
 * client gets it (bundler/rejection.ts) goes through the same redaction, its URLs replaced whole.
 */
import { redactUrl } from "./redactUrl.ts";

/** A URL of any scheme, up to whitespace, a quote or a closing bracket (a sentence's punctuation after it is not its). */
const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>()\]]*[^\s"'<>()\].,;:!?]/gi;
/**
 * A URL without a scheme: a host (a dotted name, an IPv4 address or localhost) and port, then a path or a query
 * ("rpc.example.org/v3/<key>", "10.0.0.3:8545/?key=…"). Not inside a word or a path (/srv/app/x.js stays).
 */
const HOST_PATH_PATTERN = /(?<![\w.\/:-])((?:localhost|\d{1,3}(?:\.\d{1,3}){3}|(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63})(?::\d{1,5})?)[\/?](?:[^\s"'<>()\]]*[^\s"'<>()\].,;:!?])?/gi;
/** `user:password@` before a host, without a scheme (a scheme's URL has lost its userinfo already). */
const USERINFO_PATTERN = /(?<![\w.+-])[^\s\/@:"'<>()[\]{},;]+:[^\s\/@"'<>()[\]{},;]+@(?=[\w[])/g;
/** The words a secret's name ends with: api_key, x-api-key, access_token, client_secret, db_password, session_id, sig… */
const SECRET_NAME = String.raw`[\w.-]*?(?:key|token|secret|passw(?:or)?d|pwd|pass|auth|authorization|sig|signature|session(?:[_-]?id)?|sid|credentials?|jwt)`;
/** `name=value` (a query, a form, an environment line) whatever the value's length; quoted values whole. */
const NAMED_SECRET_PATTERN = new RegExp(String.raw`\b(${SECRET_NAME}\s*=\s*)(?:"[^"]*"|'[^']*'|[^\s&"'<>,;()[\]{}]+)`, "gi");
/** `"name": "value"` (JSON an upstream put in its data). */
const JSON_SECRET_PATTERN = new RegExp(String.raw`("${SECRET_NAME}"\s*:\s*)"(?:[^"\\]|\\.)*"`, "gi");
/** An Authorization header's credentials (a value with a digit in it: "Basic validation" is a phrase). */
const AUTH_SCHEME_PATTERN = /\b(Bearer|Basic)\s+(?=[\w.~+\/=-]*\d)[\w.~+\/-]+=*/gi;
/** An opaque token (API key, bearer, session id): a long run that is not 0x-hex (revert data, addresses stay). */
const TOKEN_PATTERN = /(?<![\w-])(?!0x)[A-Za-z0-9_-]{24,}/g;

/**
 * `text` without secrets: each URL, with a scheme or not, reduced to where it goes (`urls: "origin"`: scheme,
 * host and port, for our log) or replaced whole (`"placeholder"`: "[url]", for a client); userinfo, values named
 * as secrets (key=…, "token":"…", Bearer …) and long opaque tokens replaced by "[redacted]". Pure.
 */
export function redactSecrets(text: string, urls: "origin" | "placeholder"): string {
  const placeholder = urls === "placeholder";
  return text
    .replace(URL_PATTERN, (url) => (placeholder ? "[url]" : redactUrl(url)))
    .replace(USERINFO_PATTERN, "[redacted]@")
    .replace(HOST_PATH_PATTERN, (_url, host: string) => (placeholder ? "[url]" : `${host}/…`))
    .replace(NAMED_SECRET_PATTERN, "$1[redacted]")
    .replace(JSON_SECRET_PATTERN, '$1"[redacted]"')
    .replace(AUTH_SCHEME_PATTERN, "$1 [redacted]")
    .replace(TOKEN_PATTERN, "[redacted]");
}

/** `text` for the log: redactSecrets keeping URLs' origins, at most `maxChars` (then "…"). */
export function loggedText(text: string, maxChars = 4_000): string {
  const redacted = redactSecrets(text, "origin");
  return redacted.length > maxChars ? `${redacted.slice(0, maxChars)}…` : redacted;
}
