// Projects and their API keys: create a project; create a key (its plaintext shown once, with a copy button),
// revoke, rotate, and set the browser origins allowed to use it.
import { useState } from "preact/hooks";
import { api, can, useApi } from "../api.ts";
import { RoleNote } from "../roleNote.tsx";
import { formatTime, short } from "../../shared/format.ts";
import { Badge, Empty, ErrorNotice, href, KeyValues, Loading, PageTitle, SecretOnce, seg, StatusBadge, Table, TextArea, TextInput, useAction } from "../../shared/ui.tsx";

export function Projects() {
  const projects = useApi<any[]>("/projects");
  const [name, setName] = useState("");
  const create = useAction();
  return (
    <>
      <PageTitle>Projects and API keys</PageTitle>
      <p class="muted">A project holds API keys (what clients put in the endpoint URL) and strategies (what the paymaster pays for).</p>
      {!can("POST", "/projects") && <RoleNote does="create projects or change their keys" />}
      {can("POST", "/projects") && <section class="panel" aria-labelledby="new-project">
        <h2 id="new-project">New project</h2>
        <ErrorNotice error={create.error} what="The project was not created" />
        <form
          class="row"
          style="align-items:flex-end"
          onSubmit={(e) => {
            e.preventDefault();
            void create.run(async () => {
              const p = await api.post("/projects", { name });
              setName("");
              location.hash = `/projects/${seg(p.id)}`;
            });
          }}
        >
          <div style="flex:1 1 16rem">
            <TextInput label="Project name" name="project-name" value={name} onInput={setName} required />
          </div>
          <button class="primary" type="submit" disabled={create.busy} style="margin-bottom:0.85rem">
            Create project
          </button>
        </form>
      </section>}
      <ErrorNotice error={projects.error} what="Could not load the projects" />
      {projects.loading && !projects.data && <Loading what="the projects" />}
      {projects.data?.length === 0 && <Empty>No project yet: create one above, or approve a key application.</Empty>}
      {projects.data && projects.data.length > 0 && (
        <Table caption="Projects" head={["Name", "Status", "Created", "Id"]}>
          {projects.data.map((p) => (
            <tr key={p.id}>
              <th scope="row">
                <a href={href(`/projects/${seg(p.id)}`)}>{p.name}</a>
              </th>
              <td><StatusBadge status={p.status} /></td>
              <td>{formatTime(p.createdAt)}</td>
              <td><code>{p.id}</code></td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

/** One line per origin; empty = any origin (null), "none" alone = server-side only ([]). */
function originsFrom(text: string): string[] | null {
  const lines = text.split(/[\n,]/).map((l) => l.trim()).filter(Boolean);
  if (lines.length === 0) return null;
  if (lines.length === 1 && lines[0] === "none") return [];
  return lines;
}
const originsText = (origins: string[] | null) => (origins === null ? "" : origins.length === 0 ? "none" : origins.join("\n"));
const originsHint = <>One origin per line, like <code>https://app.example.com</code>. Empty: any origin. <code>none</code>: server-side only (requests from a browser page are refused).</>;

export function ProjectPage({ id }: { id: string }) {
  const project = useApi<any>(`/projects/${seg(id)}`);
  const [label, setLabel] = useState("");
  const [origins, setOrigins] = useState("");
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const action = useAction();
  const p = project.data;
  const mutate = (fn: () => Promise<any>) =>
    action.run(async () => {
      const r = await fn();
      if (r?.key) setSecret({ label: `API key ${r.prefix}…${r.revoked ? " (the old key is revoked)" : ""}`, value: r.key });
      await project.reload(); // busy until the list shows the change: no second click on a stale row
    });
  return (
    <>
      <p><a href={href("/projects")}>← Projects</a></p>
      <ErrorNotice error={project.error} what="Could not load the project" />
      {project.loading && !p && <Loading what="the project" />}
      {p && (
        <>
          <PageTitle>{p.name}</PageTitle>
          <KeyValues
            items={[
              ["Status", <><StatusBadge status={p.status} /> {p.status === "disabled" && <span class="muted">its keys are refused</span>}</>],
              ["Id", <code>{p.id}</code>],
              ["Created", formatTime(p.createdAt)],
            ]}
          />
          <div class="row" style="margin:0.75rem 0">
            {p.status === "active"
              ? can("POST", `/projects/${seg(id)}/disable`) && <button type="button" class="danger" onClick={() => void mutate(() => api.post(`/projects/${seg(id)}/disable`))}>Disable project</button>
              : can("POST", `/projects/${seg(id)}/enable`) && <button type="button" onClick={() => void mutate(() => api.post(`/projects/${seg(id)}/enable`))}>Enable project</button>}
            {can("POST", "/strategies") && <a class="button" href={href(`/strategies/new?project=${seg(id)}`)}>New strategy for this project</a>}
            <a class="button" href={href(`/webhooks?project=${seg(id)}`)}>Webhooks</a>
            <a class="button" href={href(`/billing/${seg(id)}`)}>Billing</a>
          </div>
          <ErrorNotice error={action.error} what="Not done" />
          {secret && <SecretOnce label={secret.label} value={secret.value} />}

          {!can("POST", "/keys") && <RoleNote does="change projects or their API keys" />}
          {can("POST", "/keys") && <section class="panel" aria-labelledby="new-key">
            <h2 id="new-key">New API key</h2>
            <form
              onSubmit={(e) => {
                e.preventDefault();
                void mutate(async () => {
                  const r = await api.post("/keys", { projectId: id, ...(label ? { label } : {}), origins: originsFrom(origins) });
                  setLabel("");
                  setOrigins("");
                  return r;
                });
              }}
            >
              <div class="inline-fields">
                <TextInput label="Label (optional)" name="key-label" value={label} onInput={setLabel} hint="What the key is for, e.g. web app" />
                <TextArea label="Allowed browser origins" name="key-origins" value={origins} onInput={setOrigins} hint={originsHint} />
              </div>
              <button class="primary" type="submit" disabled={action.busy}>Create key</button>
            </form>
          </section>}

          <h2>API keys</h2>
          {p.keys.length === 0 ? (
            <Empty>No key yet{can("POST", "/keys") ? ": create one above. Its plaintext is shown once, when it is created." : "."}</Empty>
          ) : (
            <Table caption="API keys" head={["Key", "Label", "Status", "Allowed origins", "Created", "Actions"]}>
              {p.keys.map((k: any) => <KeyRow key={k.id} k={k} mutate={mutate} busy={action.busy} />)}
            </Table>
          )}

          <h2>Strategies</h2>
          {p.strategies.length === 0 ? (
            <Empty>No strategy yet{can("POST", "/strategies") ? <>: <a href={href(`/strategies/new?project=${seg(id)}`)}>create one</a> so the paymaster pays for this project's operations.</> : "."}</Empty>
          ) : (
            <Table caption="Strategies" head={["Code", "Name", "Status"]}>
              {p.strategies.map((s: any) => (
                <tr key={s.id}>
                  <th scope="row"><a href={href(`/strategies/${seg(s.code)}`)}>{s.code}</a></th>
                  <td>{s.name}</td>
                  <td><StatusBadge status={s.status} /></td>
                </tr>
              ))}
            </Table>
          )}
        </>
      )}
    </>
  );
}

function KeyRow({ k, mutate, busy }: { k: any; mutate: (fn: () => Promise<any>) => Promise<void>; busy: boolean }) {
  const [editing, setEditing] = useState(false);
  const [origins, setOrigins] = useState(originsText(k.allowedOrigins));
  const active = k.status === "active";
  return (
    <tr>
      <th scope="row"><code>{k.prefix}…</code></th>
      <td>{k.label ?? <span class="muted">–</span>}</td>
      <td><StatusBadge status={k.status} />{k.revokedAt && <div class="muted">{formatTime(k.revokedAt)}</div>}</td>
      <td>
        {editing ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void mutate(() => api.post(`/keys/${seg(k.id)}/access`, { origins: originsFrom(origins) })).then(() => setEditing(false));
            }}
          >
            <TextArea label={`Allowed origins of ${k.prefix}…`} value={origins} onInput={setOrigins} hint={originsHint} />
            <div class="row">
              <button type="submit" class="primary small" disabled={busy}>Save origins</button>
              <button type="button" class="small" onClick={() => setEditing(false)}>Cancel</button>
            </div>
          </form>
        ) : k.allowedOrigins === null ? (
          <span class="muted">any</span>
        ) : k.allowedOrigins.length === 0 ? (
          <Badge tone="neutral">server-side only</Badge>
        ) : (
          k.allowedOrigins.map((o: string) => <div key={o}><code>{o}</code></div>)
        )}
      </td>
      <td>{formatTime(k.createdAt)}</td>
      <td>
        {active && (
          <div class="row">
            {!editing && can("POST", `/keys/${seg(k.id)}/access`) && <button type="button" class="small" onClick={() => setEditing(true)} aria-label={`Edit the allowed origins of key ${k.prefix}`}>Origins</button>}
            {can("POST", `/keys/${seg(k.id)}/rotate`) && <button type="button" class="small" disabled={busy} aria-label={`Rotate key ${k.prefix}`} onClick={() => confirm(`Rotate key ${k.prefix}…? A new key is made and this one is revoked at once.`) && void mutate(() => api.post(`/keys/${seg(k.id)}/rotate`))}>
              Rotate
            </button>}
            {can("POST", `/keys/${seg(k.id)}/revoke`) && <button type="button" class="small danger" disabled={busy} aria-label={`Revoke key ${k.prefix}`} onClick={() => confirm(`Revoke key ${k.prefix}…? Its next request is refused.`) && void mutate(() => api.post(`/keys/${seg(k.id)}/revoke`))}>
              Revoke
            </button>}
          </div>
        )}
        <div class="muted" style="font-size:0.8rem">{short(k.id, 8)}</div>
      </td>
    </tr>
  );
}
