// Webhooks of a project: its endpoints (add one: the signing secret is shown once; remove), and the events sent
// to them — delivered, pending, and the dead letters (attempts used up) — each of which can be sent again.
import { useLayoutEffect, useState } from "preact/hooks";
import { api, can, query, useApi } from "../api.ts";
import { RoleNote } from "../roleNote.tsx";
import { formatTime, short } from "../../shared/format.ts";
import { Empty, ErrorNotice, Loading, Notice, PageTitle, routeQuery, SecretOnce, Select, seg, StatusBadge, Table, TextInput, useAction, useRoute } from "../../shared/ui.tsx";

const EVENTS = ["sponsorship.signed", "sponsorship.settled", "sponsorship.released", "cap.reached", "deposit.low"];

export function Webhooks() {
  const path = useRoute();
  const projects = useApi<any[]>("/projects");
  const [project, setProject] = useState(routeQuery(path).get("project") ?? "");
  useLayoutEffect(() => {
    // The first project by default, unless one was chosen while the list loaded.
    const first = projects.data?.[0]?.id;
    if (first) setProject((p) => p || first);
  }, [projects.data]);
  const endpoints = useApi<any[]>(project ? `/projects/${seg(project)}/webhooks` : null, [project]);
  const [status, setStatus] = useState("");
  const deliveries = useApi<any[]>(project ? `/webhook-deliveries${query({ project, status, limit: 100 })}` : null, [project, status]);
  const [url, setUrl] = useState("");
  const [kind, setKind] = useState("events");
  const [events, setEvents] = useState<string[]>([...EVENTS]);
  const [secret, setSecret] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const action = useAction();
  const mutate = (fn: () => Promise<void>) =>
    action.run(async () => {
      setDone(null);
      await fn();
      await Promise.all([endpoints.reload(), deliveries.reload()]);
    });
  return (
    <>
      <PageTitle>Webhooks</PageTitle>
      <p class="muted">The service posts signed events to a project's endpoints (sponsorship signed, settled, released; cap reached; deposit low). An approval endpoint is asked before each signature.</p>
      {projects.data?.length === 0 && <Empty>No project yet: webhooks belong to a project.</Empty>}
      {projects.data && projects.data.length > 0 && (
        <div style="max-width:20rem">
          <Select label="Project" value={project} onChange={setProject} options={projects.data.map((p) => [p.id, p.name] as [string, string])} />
        </div>
      )}
      <ErrorNotice error={action.error} what="Not done" />
      {done && <Notice tone="ok">{done}</Notice>}
      {secret && <SecretOnce label="Signing secret of the new endpoint" value={secret}><p style="margin:0.5rem 0 0">Check each request's signature with it (docs: webhooks).</p></SecretOnce>}
      {project && (
        <>
          {!can("POST", `/projects/${seg(project)}/webhooks`) && <RoleNote does="add, remove or replay webhooks" />}
          {can("POST", `/projects/${seg(project)}/webhooks`) && <section class="panel" aria-labelledby="new-endpoint">
            <h2 id="new-endpoint">Add an endpoint</h2>
            <form
              onSubmit={(e) => {
                e.preventDefault();
                void mutate(async () => {
                  const r = await api.post(`/projects/${seg(project)}/webhooks`, { url: url.trim(), kind, ...(kind === "events" ? { events } : {}) });
                  setSecret(r.secret);
                  setUrl("");
                });
              }}
            >
              <div class="inline-fields">
                <TextInput label="URL" name="webhook-url" value={url} onInput={setUrl} placeholder="https://hooks.example.com/paymaster" />
                <Select label="Kind" name="webhook-kind" value={kind} onChange={setKind} options={[["events", "Events (notifications)"], ["approval", "Approval (asked before signing)"]]} />
              </div>
              {kind === "events" && (
                <fieldset>
                  <legend>Events</legend>
                  {EVENTS.map((ev) => (
                    <label class="check" key={ev}>
                      <input type="checkbox" checked={events.includes(ev)} onChange={(x) => setEvents((x.target as HTMLInputElement).checked ? [...events, ev] : events.filter((y) => y !== ev))} />
                      <code>{ev}</code>
                    </label>
                  ))}
                </fieldset>
              )}
              <button type="submit" class="primary" disabled={action.busy}>Add endpoint</button>
            </form>
          </section>}
          <h2>Endpoints</h2>
          <ErrorNotice error={endpoints.error} what="Could not load the endpoints" />
          {endpoints.data?.length === 0 && <Empty>No endpoint{can("POST", `/projects/${seg(project)}/webhooks`) ? ": add one above to be told about this project's sponsorships." : "."}</Empty>}
          {endpoints.data && endpoints.data.length > 0 && (
            <Table caption="Endpoints" head={["URL", "Kind", "Events", "Added", ""]}>
              {endpoints.data.map((w) => (
                <tr key={w.id}>
                  <th scope="row"><code>{w.url}</code></th>
                  <td>{w.kind}</td>
                  <td>{w.kind === "approval" ? `wait ${w.timeoutMs} ms, then ${w.defaultDecision}` : w.events.join(", ")}</td>
                  <td>{formatTime(Math.floor(w.createdAt > 1e12 ? w.createdAt / 1000 : w.createdAt))}</td>
                  <td>
                    {can("POST", `/webhooks/${seg(w.id)}/delete`) && <button type="button" class="small danger" aria-label={`Remove the endpoint ${w.url}`} onClick={() => confirm(`Remove ${w.url}? Its pending and dead events go with it.`) && void mutate(async () => void (await api.post(`/webhooks/${seg(w.id)}/delete`)))}>
                      Remove
                    </button>}
                  </td>
                </tr>
              ))}
            </Table>
          )}
          <h2>Deliveries</h2>
          <div style="max-width:16rem">
            <Select label="Show" value={status} onChange={setStatus} options={[["", "All events"], ["pending", "Pending"], ["delivered", "Delivered"], ["dead", "Dead letters (gave up)"]]} />
          </div>
          <ErrorNotice error={deliveries.error} what="Could not load the deliveries" />
          {deliveries.loading && !deliveries.data && <Loading what="the deliveries" />}
          {deliveries.data?.length === 0 && <Empty>{status === "dead" ? "No dead letter: every event was delivered or is still being tried." : "No event yet."}</Empty>}
          {deliveries.data && deliveries.data.length > 0 && (
            <Table caption="Webhook events" head={["Created", "Event", "Status", "Attempts", "Last error", ""]}>
              {deliveries.data.map((d) => (
                <tr key={d.id}>
                  <td>{formatTime(Math.floor(d.createdMs / 1000))}</td>
                  <th scope="row"><code>{d.type}</code> <span class="muted">{short(d.id)}</span></th>
                  <td><StatusBadge status={d.status} /></td>
                  <td class="num">{d.attempts}</td>
                  <td>{d.lastError ?? "–"}</td>
                  <td>
                    {d.status !== "pending" && can("POST", `/webhook-deliveries/${seg(d.id)}/replay`) && (
                      <button type="button" class="small" aria-label={`Send event ${d.id} again`} onClick={() => void mutate(async () => {
                        await api.post(`/webhook-deliveries/${seg(d.id)}/replay`);
                        setDone(`Event ${short(d.id)} is queued to be sent again.`);
                      })}>
                        Send again
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </Table>
          )}
        </>
      )}
    </>
  );
}
