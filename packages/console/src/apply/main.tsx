// The public application page (served on the service's public port at /apply/): a team applies for an API
// key (POST /api/v1/applications), is told what happens next, and — once the operator approved and handed
// them a claim token — claims the key here, shown once (POST /api/v1/applications/claim). No key exists before
// the claim; the page holds nothing secret of the operator's.
import "../shared/styles.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ErrorNotice, Field, Notice, SecretOnce, TextArea, TextInput, useAction } from "../shared/ui.tsx";
import { ApiError, callJson } from "../shared/http.ts";

/** The public endpoints, relative to /apply/ (a proxy may mount the service under a prefix). */
const BASE = "..";

/**
 * POSTs to a public endpoint. Its refusals name their field at the start of the message ("contact: required"):
 * that field is given as the error's issue, so the form shows the message at the field too.
 */
async function post<T>(path: string, body: unknown): Promise<T> {
  try {
    return await callJson<T>(`${BASE}${path}`, { method: "POST", body, unreachable: "The service did not answer. Check your connection and try again." });
  } catch (error) {
    const m = error instanceof ApiError && error.issues.length === 0 ? /^([a-z]+)(?:\[\d+\])?: (.*)$/.exec(error.message) : null;
    if (m) throw new ApiError((error as ApiError).status, (error as ApiError).code, (error as ApiError).message, [{ field: m[1]!, message: m[2]! }]);
    throw error;
  }
}

function Apply({ networks }: { networks: string[] }) {
  const [contact, setContact] = useState("");
  const [project, setProject] = useState("");
  const [chosen, setChosen] = useState<string[]>([]);
  const [use, setUse] = useState("");
  const [sent, setSent] = useState<{ id: string } | null>(null);
  const action = useAction();
  const fieldError = (f: string) => action.error?.issues?.find((i) => i.field === f)?.message;
  if (sent) {
    return (
      <section aria-labelledby="thanks">
        <Notice tone="ok" title="Application received.">
          Its reference is <code>{sent.id}</code>.
        </Notice>
        <h2 id="thanks" tabIndex={-1}>What happens next</h2>
        <ol>
          <li>The paymaster's operator reviews your application.</li>
          <li>If it is approved, the operator sends a <strong>claim token</strong> (it starts with <code>pmclaim_</code>) to {contact || "your contact address"}.</li>
          <li>Come back to this page, choose <strong>I have a claim token</strong>, and paste it: your API key is shown once. Copy it then.</li>
        </ol>
        <p>If it is not approved, the operator tells you why.</p>
      </section>
    );
  }
  return (
    <form
      aria-labelledby="apply-title"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => setSent(await post<{ id: string }>("/api/v1/applications", { contact, project, networks: chosen, use })));
      }}
    >
      <h2 id="apply-title">Apply for an API key</h2>
      <ErrorNotice error={action.error} what="Not sent" />
      <TextInput label="Contact" name="contact" value={contact} onInput={setContact} error={fieldError("contact")} hint="An e-mail address or handle the operator can reach you at." autocomplete="email" />
      <TextInput label="Project name" name="project" value={project} onInput={setProject} error={fieldError("project")} />
      <Field label="Networks" error={fieldError("networks")} hint="The networks you intend to use.">
        {(a) => (
          <div {...a} role="group">
            {networks.map((n) => (
              <label class="check" key={n}>
                <input type="checkbox" name="networks" value={n} checked={chosen.includes(n)} onChange={(e) => setChosen((e.target as HTMLInputElement).checked ? [...chosen, n] : chosen.filter((x) => x !== n))} />
                {n}
              </label>
            ))}
          </div>
        )}
      </Field>
      <TextArea label="What will the paymaster pay for?" name="use" value={use} onInput={setUse} error={fieldError("use")} hint="Your app, its users, the operations you expect and how many. At most 2000 characters." />
      <button class="primary" type="submit" disabled={action.busy}>{action.busy ? "Sending…" : "Send application"}</button>
    </form>
  );
}

function Claim({ networks }: { networks: string[] }) {
  const [token, setToken] = useState("");
  const [claimed, setClaimed] = useState<{ apiKey: string; networks: string[]; strategies?: string[] } | null>(null);
  const action = useAction();
  const origin = new URL(BASE, location.href).href.replace(/\/$/, "");
  if (claimed) {
    return (
      <section>
        <SecretOnce label="Your API key" value={claimed.apiKey}>
          <p style="margin:0.5rem 0 0">Keep it like a password: anyone with it spends your sponsorship budget.</p>
        </SecretOnce>
        <h2>Use it</h2>
        <p>The paymaster's ERC-7677 endpoint for each of your networks (viem's <code>createPaymasterClient</code>, permissionless, wallets):</p>
        <ul>
          {(claimed.networks.length ? claimed.networks : networks).map((n) => (
            <li key={n}><code>{`${origin}/rpc/v1/${n}?apiKey=<your key>`}</code></li>
          ))}
        </ul>
        <h3>Name the strategy that pays</h3>
        <p>
          Every sponsored request names the operator's strategy that pays for it, its <code>strategy_code</code>: in the ERC-7677 context
          (<code>{`paymasterContext: { strategy_code: "…" }`}</code>), or in <code>pm_sponsorUserOperation</code>'s second parameter. Without one,
          the operation is paid from the sender's own gas tank, if it has one.
        </p>
        {claimed.strategies && claimed.strategies.length > 0 ? (
          <p>Your project's strategies: {claimed.strategies.map((c, i) => <span key={c}>{i > 0 && ", "}<code>{c}</code></span>)}.</p>
        ) : (
          <p data-testid="no-strategy">Your project has no strategy yet: the operator creates one and tells you its code.</p>
        )}
      </section>
    );
  }
  return (
    <form
      aria-labelledby="claim-title"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => setClaimed(await post("/api/v1/applications/claim", { claimToken: token.trim() })));
      }}
    >
      <h2 id="claim-title">Claim your API key</h2>
      <p>Paste the claim token the operator sent you. The key is shown once.</p>
      <ErrorNotice error={action.error} what="Not claimed" />
      <TextInput label="Claim token" name="claimToken" value={token} onInput={setToken} placeholder="pmclaim_…" />
      <button class="primary" type="submit" disabled={action.busy || token.trim() === ""}>{action.busy ? "Claiming…" : "Claim the key"}</button>
    </form>
  );
}

function Page() {
  const [mode, setMode] = useState<"apply" | "claim">(location.hash === "#claim" ? "claim" : "apply");
  const [networks, setNetworks] = useState<string[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    fetch(`${BASE}/health`)
      .then((r) => r.json())
      .then((h: { networks: string[] }) => setNetworks(h.networks))
      .catch(() => setProblem("The service did not answer: its networks could not be listed. Try again later."));
  }, []);
  useEffect(() => {
    const on = () => setMode(location.hash === "#claim" ? "claim" : "apply");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return (
    <main class="centered">
      <div class="panel">
        <h1>Paymaster API key</h1>
        <p class="muted">This paymaster pays the gas of ERC-4337 user operations for approved projects.</p>
        <div class="tabs" role="tablist" aria-label="What do you want to do">
          <button type="button" role="tab" aria-selected={mode === "apply"} onClick={() => { location.hash = ""; setMode("apply"); }}>Apply for a key</button>
          <button type="button" role="tab" aria-selected={mode === "claim"} onClick={() => { location.hash = "claim"; setMode("claim"); }}>I have a claim token</button>
        </div>
        {problem && <Notice tone="error">{problem}</Notice>}
        {mode === "apply" ? <Apply networks={networks} /> : <Claim networks={networks} />}
      </div>
    </main>
  );
}

render(<Page />, document.getElementById("app")!);
