/**
 * Safe text: the one rule for every string the service accepts from outside (JSON-RPC params, the admin API and
 * the CLI's arguments and files, the public application form), and the one escaper for every string the CLI
 * prints to a terminal.
 *
 * Refused in text: the C0 controls U+0000–U+001F (NUL breaks PostgreSQL text, ESC starts terminal sequences;
 * TAB and LF are allowed in multi-line fields only), DEL and the C1 controls U+007F–U+009F (U+009B is a CSI on
 * many terminals), and the bidirectional embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069
 * (they make a stored name read differently from what it is). CR is refused everywhere: it rewrites the line.
 * Which fields are multi-line is decided here (MULTILINE_FIELDS), not at each field.
 */
import { z } from "zod";

const UNSAFE_SINGLE_LINE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;
const UNSAFE_MULTI_LINE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;
/** What the terminal escaper rewrites: everything refused above, plus TAB and LF (a table cell is one line). */
const ESCAPED = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/gu;
/** The same without LF: for whole multi-line outputs whose lines are ours. */
const ESCAPED_KEEP_LF = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/gu;

/** Free-text fields where TAB and LF are allowed (the application form's "use": a paragraph or a list). */
export const MULTILINE_FIELDS: ReadonlySet<string> = new Set(["use"]);

/** "U+001B" */
function codePoint(char: string): string {
  return `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** Why `text` is not safe text (naming the first offending character by code point, never echoing it), or undefined. */
export function unsafeTextProblem(text: string, options: { multiline?: boolean } = {}): string | undefined {
  const match = (options.multiline ? UNSAFE_MULTI_LINE : UNSAFE_SINGLE_LINE).exec(text);
  if (match === null) return undefined;
  const char = match[0];
  const what = /[\u202a-\u202e\u2066-\u2069]/u.test(char) ? "a bidirectional override" : "a control character";
  return `contains ${what} (${codePoint(char)} at position ${match.index}); ${options.multiline ? "only tab and newline are allowed here" : "control characters are not allowed"}`;
}

/** A zod string that is safe text (single-line unless `multiline`). */
/** zod's error option of a string (a message, or a function of the issue). */
type StringError = Exclude<Parameters<typeof z.string>[0], string | undefined>["error"];

export function safeText(options: { multiline?: boolean; error?: StringError } = {}) {
  return z.string(options.error === undefined ? undefined : { error: options.error }).superRefine((value, ctx) => {
    const problem = unsafeTextProblem(value, options);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });
}

/**
 * The first string in a JSON-like value (object keys included) that is not safe text: its path ("rules.caps",
 * "networks[2]") and the problem; undefined when all are safe. Strings under a MULTILINE_FIELDS key may hold TAB
 * and LF. Iterative, so a deeply nested input cannot exhaust the stack.
 */
export function findUnsafeText(value: unknown, root = ""): { field: string; message: string } | undefined {
  const stack: { value: unknown; path: string; multiline: boolean }[] = [{ value, path: root, multiline: false }];
  while (stack.length > 0) {
    const { value: node, path, multiline } = stack.pop()!;
    if (typeof node === "string") {
      const problem = unsafeTextProblem(node, { multiline });
      if (problem !== undefined) return { field: path || "(value)", message: problem };
    } else if (Array.isArray(node)) {
      node.forEach((item, index) => stack.push({ value: item, path: `${path}[${index}]`, multiline }));
    } else if (node !== null && typeof node === "object") {
      for (const [key, item] of Object.entries(node)) {
        const keyProblem = unsafeTextProblem(key);
        if (keyProblem !== undefined) return { field: path || "(value)", message: `a field name ${keyProblem}` };
        stack.push({ value: item, path: path ? `${path}.${key}` : key, multiline: MULTILINE_FIELDS.has(key) });
      }
    }
  }
  return undefined;
}

function escapeChar(char: string): string {
  if (char === "\n") return "\\n";
  if (char === "\t") return "\\t";
  if (char === "\r") return "\\r";
  const code = char.codePointAt(0)!;
  // \xNN for C0 only: from DEL up the \uNNNN form, which is also a valid JSON escape (the --json output).
  return code < 0x20 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * `text` with every character that could steer a terminal (controls, C1, bidi overrides) written as a visible
 * escape ("\x1b", "\u202e"); with `keepNewlines`, LF stays (for an output whose lines the CLI itself made).
 */
export function escapeForTerminal(text: string, options: { keepNewlines?: boolean } = {}): string {
  return text.replace(options.keepNewlines ? ESCAPED_KEEP_LF : ESCAPED, escapeChar);
}
