// Building blocks of the console's pages and the application page: routing (hash based: the server serves one page), fields with
// their errors, notices, badges, the one-time secret with its copy button, tables and key/value lists.
import type { ComponentChildren, JSX } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

/** A refusal with the fields it names (the admin API's and the public endpoints' errors). */
export interface IssueError extends Error {
  code?: string;
  issues?: readonly { field: string; message: string }[];
}

// ---- routing

function currentPath(): string {
  const hash = location.hash.replace(/^#/, "");
  return hash.startsWith("/") ? hash : "/overview";
}

/** The path after '#' ("/strategies/free"), re-rendered on every change. */
export function useRoute(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const on = () => setPath(currentPath());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return path;
}

export const href = (path: string) => `#${path}`;

/** The query part of the hash route ("#/strategies/new?project=…"). */
export function routeQuery(path: string): URLSearchParams {
  const cut = path.indexOf("?");
  return new URLSearchParams(cut < 0 ? "" : path.slice(cut + 1));
}
export const navigate = (path: string) => {
  location.hash = path;
};
export const seg = (s: string) => encodeURIComponent(s);

// ---- messages

export function Notice(props: { tone: "error" | "ok" | "warn" | "info"; title?: string; children?: ComponentChildren; innerRef?: { current: HTMLDivElement | null }; focusable?: boolean }) {
  return (
    <div class={`notice ${props.tone}`} role={props.tone === "error" ? "alert" : "status"} ref={props.innerRef} {...(props.focusable ? { tabIndex: -1 } : {})}>
      {props.title && <strong>{props.title} </strong>}
      {props.children}
    </div>
  );
}

/**
 * An API refusal as the operator should read it: the message, and each wrong field. With `focus` (a form's
 * refusal), each new refusal takes the focus, which brings it into view: on a phone the submit button is far
 * below it, and a screen reader starts reading there.
 */
export function ErrorNotice({ error, what, focus }: { error: IssueError | undefined | null; what?: string; focus?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (focus && error) ref.current?.focus();
  }, [error, focus]);
  if (!error) return null;
  const issues = error.issues ?? [];
  return (
    <Notice tone="error" title={what ? `${what}:` : undefined} innerRef={ref} focusable={focus === true}>
      {issues.length > 1 ? (
        <>
          {error.code === "INVALID_INPUT" ? "fix these fields and try again:" : error.message}
          <ul>
            {issues.map((i) => (
              <li key={i.field}>
                <code>{i.field}</code>: {i.message}
              </li>
            ))}
          </ul>
        </>
      ) : (
        error.message
      )}
    </Notice>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <div class="empty">{props.children}</div>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function Badge({ tone, children }: { tone: "ok" | "warn" | "bad" | "neutral"; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}

const STATUS_TONES: Record<string, "ok" | "warn" | "bad" | "neutral"> = {
  active: "ok",
  enabled: "ok",
  settled: "ok",
  delivered: "ok",
  approved: "ok",
  claimed: "ok",
  signed: "warn",
  reserved: "warn",
  pending: "warn",
  revoked: "bad",
  disabled: "bad",
  released: "neutral",
  rejected: "bad",
  dead: "bad",
};
export function StatusBadge({ status }: { status: string }) {
  return <Badge tone={STATUS_TONES[status] ?? "neutral"}>{status}</Badge>;
}

// ---- forms

let nextId = 0;
export function useId(prefix: string): string {
  const ref = useRef<string | undefined>(undefined);
  ref.current ??= `${prefix}-${++nextId}`;
  return ref.current;
}

/** A labelled field: its input gets the id, the hint and the error by aria-describedby. */
export function Field(props: {
  label: string;
  hint?: ComponentChildren;
  error?: string | undefined;
  children: (attrs: { id: string; "aria-describedby"?: string; "aria-invalid"?: "true" }) => JSX.Element;
}) {
  const id = useId("f");
  const described = [props.hint ? `${id}-hint` : "", props.error ? `${id}-error` : ""].filter(Boolean).join(" ");
  return (
    <div class={`field${props.error ? " invalid" : ""}`}>
      <label for={id}>{props.label}</label>
      {props.children({ id, ...(described ? { "aria-describedby": described } : {}), ...(props.error ? { "aria-invalid": "true" as const } : {}) })}
      {props.hint && (
        <div class="hint" id={`${id}-hint`}>
          {props.hint}
        </div>
      )}
      {props.error && (
        <div class="error" id={`${id}-error`}>
          {props.error}
        </div>
      )}
    </div>
  );
}

export function TextInput(props: { label: string; value: string; onInput: (v: string) => void; hint?: ComponentChildren; error?: string; type?: string; placeholder?: string; required?: boolean; autocomplete?: string; name?: string }) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error}>
      {(a) => (
        <input
          {...a}
          name={props.name}
          type={(props.type ?? "text") as "text"}
          value={props.value}
          placeholder={props.placeholder}
          required={props.required}
          autocomplete={props.autocomplete ?? "off"}
          spellcheck={false}
          onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
        />
      )}
    </Field>
  );
}

export function TextArea(props: { label: string; value: string; onInput: (v: string) => void; hint?: ComponentChildren; error?: string; tall?: boolean; name?: string }) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error}>
      {(a) => <textarea {...a} name={props.name} class={props.tall ? "tall" : undefined} value={props.value} spellcheck={false} onInput={(e) => props.onInput((e.target as HTMLTextAreaElement).value)} />}
    </Field>
  );
}

export function Select(props: { label: string; value: string; onChange: (v: string) => void; options: readonly (string | [string, string])[]; hint?: ComponentChildren; error?: string; name?: string }) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error}>
      {(a) => (
        <select {...a} name={props.name} value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)}>
          {props.options.map((o) => {
            const [value, text] = typeof o === "string" ? [o, o] : o;
            return (
              <option key={value} value={value}>
                {text}
              </option>
            );
          })}
        </select>
      )}
    </Field>
  );
}

/** A busy flag and an error around an async action (a form's submit). */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<IssueError | null>(null);
  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}

// ---- secrets shown once

async function copyText(text: string, fallback: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (!fallback) return false;
    fallback.select();
    return document.execCommand("copy");
  }
}

/** A secret the service shows this once (an API key, a claim token, a webhook secret), with a copy button. */
export function SecretOnce({ label, value, children }: { label: string; value: string; children?: ComponentChildren }) {
  const [copied, setCopied] = useState<boolean | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const id = useId("secret");
  return (
    <div class="notice ok" role="status">
      <strong>{label}</strong> — shown this once: copy it now, it cannot be shown again.
      <div class="secret" style="margin-top:0.5rem">
        <label class="visually-hidden" for={id}>
          {label}
        </label>
        <input id={id} ref={input} readOnly value={value} class="mono" data-secret="true" style="flex:1 1 18rem" onFocus={(e) => (e.target as HTMLInputElement).select()} />
        <button type="button" class="primary small" onClick={async () => setCopied(await copyText(value, input.current))}>
          Copy
        </button>
        <span aria-live="polite" class="muted">
          {copied === true ? "Copied" : copied === false ? "Select the text and copy it by hand" : ""}
        </span>
      </div>
      {children}
    </div>
  );
}

// ---- tables and lists

/**
 * A table. On a narrow screen (styles.css) each row is a card and each cell shows its column's name, read from
 * `data-label`, which is set here from the head after every render: no column is ever off-screen.
 */
export function Table(props: { caption: string; head: readonly (string | [string, "num"])[]; children: ComponentChildren; captionHidden?: boolean }) {
  const ref = useRef<HTMLTableElement>(null);
  const names = props.head.map((h) => (typeof h === "string" ? h : h[0]));
  useLayoutEffect(() => {
    for (const row of ref.current?.tBodies[0]?.rows ?? []) {
      let column = 0;
      for (const cell of row.cells) {
        const name = names[column];
        if (name) cell.setAttribute("data-label", name);
        else cell.removeAttribute("data-label");
        column += cell.colSpan;
      }
    }
  });
  return (
    <div class="table-wrap">
      <table ref={ref}>
        <caption class={props.captionHidden === false ? undefined : "visually-hidden"}>{props.caption}</caption>
        <thead>
          <tr>
            {props.head.map((h) => {
              const [text, kind] = typeof h === "string" ? [h, undefined] : h;
              return (
                <th scope="col" class={kind} key={text}>
                  {text}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

export function KeyValues({ items }: { items: readonly [string, ComponentChildren][] }) {
  return (
    <dl class="kv">
      {items.map(([k, v]) => [<dt key={`${k}-t`}>{k}</dt>, <dd key={`${k}-d`}>{v}</dd>])}
    </dl>
  );
}

export function Stat({ label, value, hint }: { label: string; value: ComponentChildren; hint?: ComponentChildren }) {
  return (
    <div class="stat">
      <div class="label">{label}</div>
      <div class="value">{value}</div>
      {hint && <div class="muted" style="font-size:0.85rem">{hint}</div>}
    </div>
  );
}

/**
 * Moves focus to the page's heading when the page changes (screen readers announce it), in the render that
 * shows it: a key pressed right after the page appears already starts from the heading.
 */
export function PageTitle({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useLayoutEffect(() => {
    ref.current?.focus();
  }, []);
  return (
    <h1 tabIndex={-1} ref={ref} style="outline:none">
      {children}
    </h1>
  );
}
