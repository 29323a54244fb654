// Project billing (a hosted operator charging the teams it serves): the projects billed with their balances, and
// one project's billing page — its balance, what its open operations hold and what is available, its plan (on or
// off, markup, fee per operation, low-balance alert), a credit by hand with a reference (the same reference twice
// credits once), and its statement for a month: the lines on screen, CSV and JSON to download.
import { useState } from "preact/hooks";
import { api, can, query, useApi } from "../api.ts";
import { RoleNote } from "../roleNote.tsx";
import { formatTime, short } from "../../shared/format.ts";
import { Badge, Empty, ErrorNotice, href, Loading, Notice, PageTitle, Select, seg, Stat, Table, TextInput, useAction } from "../../shared/ui.tsx";

/** "-1.50" -> "−$1.50" (a debit), "2.00" -> "$2.00", none -> "–". */
const usd = (text: string | null | undefined) => (text === null || text === undefined ? "–" : text.startsWith("-") ? `−$${text.slice(1)}` : `$${text}`);
const thisMonth = () => new Date().toISOString().slice(0, 7);

export function Billing() {
  const list = useApi<any[]>("/billing");
  const projects = useApi<any[]>("/projects");
  const [project, setProject] = useState("");
  const chosen = project || projects.data?.[0]?.id || "";
  return (
    <>
      <PageTitle>Billing</PageTitle>
      <p class="muted">
        For a hosted endpoint: a billed project prepays a balance in dollars; each of its operations holds its maximum cost (gas at the native price, your markup, your fee) until it lands, and
        is then billed what the chain charged. An operation the balance cannot cover is refused (PROJECT_BALANCE_EXHAUSTED). Projects without a plan are not billed.
      </p>
      <form
        class="panel row"
        style="align-items:flex-end"
        aria-label="Open a project's billing"
        onSubmit={(e) => {
          e.preventDefault();
          if (chosen) location.hash = `/billing/${seg(chosen)}`;
        }}
      >
        <div style="min-width:14rem"><Select label="Project" value={chosen} onChange={setProject} options={(projects.data ?? []).map((p) => [p.id, p.name] as [string, string])} /></div>
        <button type="submit" class="primary" style="margin-bottom:0.85rem" disabled={!chosen}>Open its billing</button>
      </form>
      <ErrorNotice error={list.error} what="Could not load the billed projects" />
      {list.loading && !list.data && <Loading what="the billed projects" />}
      {list.data?.length === 0 && <Empty>No project is billed yet. Open a project's billing above to turn its plan on and credit it.</Empty>}
      {list.data && list.data.length > 0 && (
        <Table caption="Billed projects" head={["Project", "Billing", ["Balance", "num"], ["Held", "num"], ["Available", "num"], ["Alert below", "num"]]}>
          {list.data.map((b) => (
            <tr key={b.projectId}>
              <th scope="row"><a href={href(`/billing/${seg(b.projectId)}`)}>{b.projectName}</a></th>
              <td>{b.enabled ? <Badge tone="ok">on</Badge> : <Badge tone="neutral">off</Badge>} {b.low && <Badge tone="warn">low</Badge>}</td>
              <td class="num">{usd(b.balanceUsd)}</td>
              <td class="num">{usd(b.heldUsd)}</td>
              <td class="num">{usd(b.availableUsd)}</td>
              <td class="num">{usd(b.alertBelowUsd)}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

export function ProjectBilling({ id }: { id: string }) {
  const billing = useApi<any>(`/projects/${seg(id)}/billing`);
  const b = billing.data;
  return (
    <>
      <p><a href={href("/billing")}>← Billing</a> · <a href={href(`/projects/${seg(id)}`)}>the project</a></p>
      <PageTitle>Billing of {b ? b.projectName : "the project"}</PageTitle>
      <ErrorNotice error={billing.error} what="Could not load the project's billing" />
      {!b && !billing.error && <Loading what="the project's billing" />}
      {b && (
        <>
          <div class="stats">
            <Stat label="Balance" value={usd(b.balanceUsd)} hint="credits minus what settled operations were billed" />
            <Stat label="Held" value={usd(b.heldUsd)} hint="by signed operations not landed yet" />
            <Stat label="Available" value={usd(b.availableUsd)} hint="what new operations may hold" />
          </div>
          {!b.enabled && <Notice tone="info">Billing is off for this project: its operations are sponsored without touching the balance. Turn the plan on below to bill it.</Notice>}
          {b.enabled && b.low && <Notice tone="warn">The balance is below the alert threshold ({usd(b.alertBelowUsd)}): ask the project to pay, then credit it.</Notice>}
          {b.balanceUsd.startsWith("-") && <Notice tone="warn">The balance is negative: operations whose signature had expired still landed and were billed. The project's requests are refused until it is credited.</Notice>}
          {can("POST", `/projects/${seg(id)}/billing`) && <PlanForm id={id} plan={b} reload={billing.reload} />}
          {can("POST", `/projects/${seg(id)}/billing/credit`) && <CreditForm id={id} reload={billing.reload} />}
          {!can("POST", `/projects/${seg(id)}/billing/credit`) && <RoleNote does="change the plan or credit the project" />}
          <StatementPanel id={id} />
        </>
      )}
    </>
  );
}

function PlanForm({ id, plan, reload }: { id: string; plan: any; reload: () => Promise<void> }) {
  const [enabled, setEnabled] = useState(plan.enabled ? "on" : "off");
  const [markup, setMarkup] = useState(String(plan.markupBps));
  const [fee, setFee] = useState(plan.feeUsd);
  const [alert, setAlert] = useState(plan.alertBelowUsd ?? "");
  const [saved, setSaved] = useState(false);
  const save = useAction();
  return (
    <section class="panel" aria-labelledby="billing-plan">
      <h2 id="billing-plan">Plan</h2>
      <p class="muted">Changes price new operations at once; operations already signed keep the terms they were signed with.</p>
      {saved && <Notice tone="ok">Plan saved.</Notice>}
      <ErrorNotice error={save.error} what="Plan not saved" />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void save.run(async () => {
            await api.post(`/projects/${seg(id)}/billing`, { enabled: enabled === "on", markupBps: markup.trim(), feeUsd: fee.trim(), alertBelowUsd: alert.trim() === "" ? null : alert.trim() });
            await reload();
            setSaved(true);
          });
        }}
      >
        <div class="inline-fields">
          <Select label="Billing" name="billing-enabled" value={enabled} onChange={setEnabled} options={[["on", "On: bill this project"], ["off", "Off: not billed"]]} />
          <TextInput label="Markup (basis points)" name="billing-markup" value={markup} onInput={setMarkup} hint="On the gas billed: 100 = 1 %, 1500 = 15 %." />
          <TextInput label="Fee per operation (USD)" name="billing-fee" value={fee} onInput={setFee} hint="Billed for every operation that lands, in every mode, e.g. 0.005." />
          <TextInput label="Alert below (USD)" name="billing-alert" value={alert} onInput={setAlert} hint="The balance.low webhook and the alert fire below this balance. Empty: no alert." />
        </div>
        <button type="submit" class="primary" disabled={save.busy}>Save the plan</button>
      </form>
    </section>
  );
}

function CreditForm({ id, reload }: { id: string; reload: () => Promise<void> }) {
  const [amount, setAmount] = useState("");
  const [reference, setReference] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const credit = useAction();
  return (
    <section class="panel" aria-labelledby="billing-credit">
      <h2 id="billing-credit">Credit</h2>
      {done && <Notice tone="ok">{done}</Notice>}
      <ErrorNotice error={credit.error} what="Not credited" />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setDone(null);
          void credit.run(async () => {
            const r = await api.post(`/projects/${seg(id)}/billing/credit`, { usd: amount.trim(), reference: reference.trim() });
            setAmount("");
            setReference("");
            await reload();
            setDone(r.duplicate ? `Reference ${r.reference} was credited before: nothing changed. Balance ${usd(r.balanceUsd)}.` : `Credited ${usd(r.creditedUsd)} (reference ${r.reference}). Balance now ${usd(r.balanceUsd)}.`);
          });
        }}
      >
        <div class="inline-fields">
          <TextInput label="Amount (USD)" name="billing-credit-amount" value={amount} onInput={setAmount} hint="e.g. 100 or 25.50 (at most 6 decimals)" />
          <TextInput label="Reference" name="billing-credit-reference" value={reference} onInput={setReference} hint="The invoice or payment id. The same reference twice credits once." />
        </div>
        <button type="submit" class="primary" disabled={credit.busy}>Credit the project</button>
      </form>
    </section>
  );
}

const KIND: Record<string, string> = { credit: "Credit", debit: "Operation", adjustment: "Adjustment" };

function StatementPanel({ id }: { id: string }) {
  const [month, setMonth] = useState(thisMonth());
  const valid = /^\d{4}-(0[1-9]|1[0-2])$/.test(month);
  const statement = useApi<any>(valid ? `/projects/${seg(id)}/billing/statement${query({ month })}` : null);
  const s = statement.data;
  const download = (format: "csv" | "json") => `../admin/v1/projects/${seg(id)}/billing/statement${query({ month, format })}`;
  return (
    <section class="panel" aria-labelledby="billing-statement">
      <h2 id="billing-statement">Statement</h2>
      <div class="row" style="align-items:flex-end">
        <div style="max-width:12rem"><TextInput label="Month (UTC)" name="statement-month" value={month} onInput={setMonth} type="month" error={valid ? undefined : "A month, YYYY-MM"} /></div>
        {valid && (
          <>
            <a class="button" style="margin-bottom:0.85rem" href={download("csv")} download>Download CSV</a>
            <a class="button" style="margin-bottom:0.85rem" href={download("json")} download>Download JSON</a>
          </>
        )}
      </div>
      <ErrorNotice error={statement.error} what="Could not load the statement" />
      {valid && !s && !statement.error && <Loading what="the statement" />}
      {s && (
        <>
          <p>
            Opening balance <strong>{usd(s.openingBalanceUsd)}</strong>, credits {usd(s.totals.creditsUsd)}, operations {usd(s.totals.debitsUsd)} ({s.totals.operations}), adjustments {usd(s.totals.adjustmentsUsd)}, closing balance{" "}
            <strong>{usd(s.closingBalanceUsd)}</strong>
            {s.period.closed ? "" : " (the month is not over yet)"}.
          </p>
          {s.lines.length === 0 ? (
            <Empty>Nothing happened in this month: no credit, no operation billed.</Empty>
          ) : (
            <Table caption={`Statement of ${s.period.label}`} head={["#", "Time", "What", "Operation", ["Gas (USD)", "num"], ["Markup", "num"], ["Fee", "num"], ["Amount", "num"], ["Balance", "num"]]}>
              {s.lines.map((l: any) => (
                <tr key={l.seq}>
                  <td>{l.seq}</td>
                  <td>{formatTime(Date.parse(l.time) / 1000)}</td>
                  <th scope="row">{KIND[l.kind] ?? l.kind}{l.reverses !== null && <div class="muted">reverses #{l.reverses} (reorganised)</div>}</th>
                  <td>
                    {l.userOpHash ? (
                      <a href={href(`/sponsorships/${seg(l.reference)}`)}><code title={l.userOpHash}>{short(l.userOpHash)}</code></a>
                    ) : (
                      <code>{l.reference}</code>
                    )}
                    {l.network && <div class="muted">{l.network}{l.txHash ? <> · tx <code title={l.txHash}>{short(l.txHash)}</code></> : null}</div>}
                  </td>
                  <td class="num">{usd(l.gasUsd)}</td>
                  <td class="num">{usd(l.markupUsd)}</td>
                  <td class="num">{usd(l.feeUsd)}</td>
                  <td class="num">{usd(l.amountUsd)}</td>
                  <td class="num">{usd(l.balanceUsd)}</td>
                </tr>
              ))}
            </Table>
          )}
        </>
      )}
    </section>
  );
}
