// The audit log: every change made through the CLI, the admin API or this console, newest first.
import { useState } from "preact/hooks";
import { query, useApi } from "../api.ts";
import { formatTime } from "../../shared/format.ts";
import { Empty, ErrorNotice, Loading, PageTitle, Table, TextInput } from "../../shared/ui.tsx";

export function Audit() {
  const [action, setAction] = useState("");
  const [applied, setApplied] = useState("");
  const list = useApi<any[]>(`/audit${query({ action: applied, limit: 200 })}`);
  return (
    <>
      <PageTitle>Audit log</PageTitle>
      <p class="muted">Who changed what: <code>cli:</code> the command line, <code>api:</code> the admin API, <code>console:</code> this console (by admin token name).</p>
      <form class="row" style="align-items:flex-end" onSubmit={(e) => { e.preventDefault(); setApplied(action.trim()); }}>
        <div style="min-width:16rem"><TextInput label="Action" name="audit-action" value={action} onInput={setAction} placeholder="e.g. key.revoke" /></div>
        <button type="submit" style="margin-bottom:0.85rem">Filter</button>
      </form>
      <ErrorNotice error={list.error} what="Could not load the audit log" />
      {list.loading && !list.data && <Loading what="the audit log" />}
      {list.data?.length === 0 && <Empty>Nothing recorded{applied ? ` for ${applied}` : ""}.</Empty>}
      {list.data && list.data.length > 0 && (
        <Table caption="Audit log" head={["Time", "Who", "Action", "Target", "Change"]}>
          {list.data.map((e) => (
            <tr key={e.id}>
              <td>{formatTime(e.at)}</td>
              <td><code>{e.actor}</code></td>
              <th scope="row"><code>{e.action}</code></th>
              <td><code>{e.target ?? "–"}</code></td>
              <td>
                {e.before || e.after ? (
                  <details>
                    <summary>before / after</summary>
                    <pre style="white-space:pre-wrap;font-size:0.8rem;max-width:40rem">{JSON.stringify({ before: e.before, after: e.after }, null, 2)}</pre>
                  </details>
                ) : "–"}
              </td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
