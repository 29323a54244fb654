// Key applications (the spec's application process): teams apply on the public page (/apply/ on the service's
// public address); the operator approves (a project is created, and a claim token — shown once — goes to the
// applicant, who claims the key with it) or rejects with a reason.
import { useState } from "preact/hooks";
import { api, can, query, useApi } from "../api.ts";
import { RoleNote } from "../roleNote.tsx";
import { formatTime } from "../../shared/format.ts";
import { Empty, ErrorNotice, href, Loading, Notice, PageTitle, SecretOnce, seg, StatusBadge, TextArea, useAction } from "../../shared/ui.tsx";

const STATUSES = ["pending", "approved", "claimed", "rejected"] as const;

export function Applications() {
  const [status, setStatus] = useState<string>("pending");
  const list = useApi<any[]>(`/applications${query({ status })}`);
  const [approved, setApproved] = useState<{ contact: string; project: string; projectId: string; claimToken: string } | null>(null);
  return (
    <>
      <PageTitle>Key applications</PageTitle>
      <p class="muted">
        Teams apply for an API key on the public application page, <code>/apply/</code> on the service's public address. Approving creates their
        project and a claim token; they claim the key once with it, on the same page.
      </p>
      {!can("POST", "/applications/x/approve") && <RoleNote does="approve or reject applications" />}
      <div class="tabs" role="tablist" aria-label="Applications by status">
        {STATUSES.map((s) => (
          <button key={s} type="button" role="tab" aria-selected={status === s} onClick={() => setStatus(s)}>
            {s[0]!.toUpperCase() + s.slice(1)}
          </button>
        ))}
      </div>
      {approved && (
        <SecretOnce label={`Claim token for ${approved.contact}`} value={approved.claimToken}>
          <p style="margin:0.5rem 0 0">
            Send it to <strong>{approved.contact}</strong> by a channel you trust. They open the application page (<code>/apply/</code> on the public address),
            choose “I have a claim token”, and get their API key once. Project: <a href={href(`/projects/${seg(approved.projectId)}`)}>{approved.project}</a>.
          </p>
        </SecretOnce>
      )}
      <ErrorNotice error={list.error} what="Could not load the applications" />
      {list.loading && !list.data && <Loading what="the applications" />}
      {list.data?.length === 0 && <Empty>{status === "pending" ? "No application is waiting. Share the application page with teams that want a key." : `No ${status} application.`}</Empty>}
      {list.data?.map((a) => (
        <ApplicationCard
          key={a.id}
          a={a}
          onDone={async (r) => {
            if (r?.claimToken) setApproved({ contact: a.contact, project: a.projectName, projectId: r.projectId, claimToken: r.claimToken });
            await list.reload();
          }}
        />
      ))}
    </>
  );
}

function ApplicationCard({ a, onDone }: { a: any; onDone: (result: any) => Promise<void> }) {
  const [rejecting, setRejecting] = useState(false);
  const [reason, setReason] = useState("");
  const action = useAction();
  return (
    <article class="panel" aria-labelledby={`app-${a.id}`}>
      <div class="row spread">
        <h2 id={`app-${a.id}`} style="margin:0">{a.projectName}</h2>
        <StatusBadge status={a.status} />
      </div>
      <dl class="kv" style="margin-top:0.5rem">
        <dt>Contact</dt><dd>{a.contact}</dd>
        <dt>Networks</dt><dd>{a.networks.join(", ")}</dd>
        <dt>Intended use</dt><dd style="white-space:pre-wrap">{a.intendedUse}</dd>
        <dt>Applied</dt><dd>{formatTime(a.createdAt)}</dd>
        {a.decidedAt && (<><dt>Decided</dt><dd>{formatTime(a.decidedAt)} by {a.decidedBy}</dd></>)}
        {a.reason && (<><dt>Reason</dt><dd>{a.reason}</dd></>)}
        {a.projectId && (<><dt>Project</dt><dd><a href={href(`/projects/${seg(a.projectId)}`)}>{a.projectId}</a></dd></>)}
      </dl>
      <ErrorNotice error={action.error} what="Not done" />
      {a.status === "pending" && !rejecting && can("POST", `/applications/${seg(a.id)}/approve`) && can("POST", `/applications/${seg(a.id)}/reject`) && (
        <div class="row" style="margin-top:0.75rem">
          <button type="button" class="primary" disabled={action.busy} onClick={() => void action.run(async () => await onDone(await api.post(`/applications/${seg(a.id)}/approve`)))}>
            Approve
          </button>
          <button type="button" class="danger" onClick={() => setRejecting(true)}>Reject…</button>
        </div>
      )}
      {a.status === "pending" && rejecting && can("POST", `/applications/${seg(a.id)}/reject`) && (
        <form
          style="margin-top:0.75rem"
          onSubmit={(e) => {
            e.preventDefault();
            void action.run(async () => await onDone(await api.post(`/applications/${seg(a.id)}/reject`, { reason })));
          }}
        >
          <TextArea label="Reason" value={reason} onInput={setReason} hint="Required, at most 500 characters. Kept with the application and in the audit log; tell the applicant yourself." />
          <div class="row">
            <button type="submit" class="danger" disabled={action.busy}>Reject application</button>
            <button type="button" onClick={() => setRejecting(false)}>Cancel</button>
          </div>
        </form>
      )}
      {a.status === "approved" && <Notice tone="info">Waiting for the applicant to claim the key with the claim token given at approval.</Notice>}
    </article>
  );
}
