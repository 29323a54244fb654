// Gas tanks (User Sponsor mode): the tanks, one tank's balance, what is reserved and available, its ledger of
// credits, debits and the operations it paid for, a credit by hand with a reference, and which projects may
// draw from it (allowed by the owner's signed consent or by hand here).
import { useState } from "preact/hooks";
import { api, can, query, useApi } from "../api.ts";
import { RoleNote } from "../roleNote.tsx";
import { formatEth, formatTime, parseEth, short } from "../../shared/format.ts";
import { Empty, ErrorNotice, href, Loading, Notice, PageTitle, Select, seg, Stat, Table, TextInput, useAction } from "../../shared/ui.tsx";

export function Tanks() {
  const info = useApi<{ networks: string[] }>("/info");
  const [network, setNetwork] = useState("");
  const [lookup, setLookup] = useState({ network: "", sender: "" });
  const list = useApi<any[]>(`/tanks${query({ network })}`);
  const nets = info.data?.networks ?? [];
  // Until the networks are known there is no tank to open (an empty network would make the route the list again).
  const lookupNetwork = lookup.network || nets[0] || "";
  return (
    <>
      <PageTitle>Gas tanks</PageTitle>
      <p class="muted">In User Sponsor mode a sender's own tank pays for its operations. Deposits to the network's deposit address are credited by the settlement watcher; you can credit by hand here.</p>
      <form
        class="panel row"
        style="align-items:flex-end"
        aria-label="Open a tank"
        onSubmit={(e) => {
          e.preventDefault();
          if (lookupNetwork && lookup.sender.trim()) location.hash = `/tanks/${seg(lookupNetwork)}/${lookup.sender.trim()}`;
        }}
      >
        <div style="min-width:10rem"><Select label="Network" value={lookupNetwork} onChange={(v) => setLookup((l) => ({ ...l, network: v }))} options={nets} /></div>
        <div style="flex:1 1 20rem"><TextInput label="Sender (smart account)" name="tank-sender" value={lookup.sender} onInput={(v) => setLookup((l) => ({ ...l, sender: v }))} placeholder="0x…" /></div>
        <button type="submit" class="primary" style="margin-bottom:0.85rem" disabled={lookup.sender.trim() === "" || lookupNetwork === ""}>Open tank</button>
      </form>
      <div style="max-width:14rem"><Select label="Tanks of" value={network} onChange={setNetwork} options={[["", "All networks"], ...nets.map((n) => [n, n] as [string, string])]} /></div>
      <ErrorNotice error={list.error} what="Could not load the tanks" />
      {list.loading && !list.data && <Loading what="the tanks" />}
      {list.data?.length === 0 && <Empty>No gas tank yet. A tank appears with its first credit (a deposit or a credit by hand).</Empty>}
      {list.data && list.data.length > 0 && (
        <Table caption="Gas tanks" head={["Sender", "Network", ["Balance (ETH)", "num"], ["Reserved", "num"], ["Available", "num"], "Changed"]}>
          {list.data.map((t) => (
            <tr key={`${t.network}:${t.sender}`}>
              <th scope="row"><a href={href(`/tanks/${seg(t.network)}/${t.sender}`)}><code title={t.sender}>{short(t.sender)}</code></a></th>
              <td>{t.network}</td>
              <td class="num">{formatEth(t.balanceWei)}</td>
              <td class="num">{formatEth(t.reservedWei)}</td>
              <td class="num">{formatEth(t.availableWei)}</td>
              <td>{formatTime(t.updatedAt)}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

export function Tank({ network, sender }: { network: string; sender: string }) {
  const ledger = useApi<any>(`/tanks/${seg(network)}/${seg(sender)}/ledger`);
  const [amount, setAmount] = useState("");
  const [reference, setReference] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const credit = useAction();
  const t = ledger.data;
  const wei = parseEth(amount);
  return (
    <>
      <p><a href={href("/tanks")}>← Gas tanks</a></p>
      <PageTitle>Gas tank <code>{short(sender)}</code> on {network}</PageTitle>
      <ErrorNotice error={ledger.error} what="Could not load the tank" />
      {!t && !ledger.error && <Loading what="the tank" />}
      {t && (
        <>
          <p><code>{t.sender}</code></p>
          <div class="stats">
            <Stat label="Balance" value={`${formatEth(t.balanceWei)} ETH`} hint="credits minus what settled operations cost" />
            <Stat label="Reserved" value={`${formatEth(t.reservedWei)} ETH`} hint="held by signed operations not landed yet" />
            <Stat label="Available" value={`${formatEth(t.availableWei)} ETH`} hint="what new operations may use" />
          </div>
          {BigInt(t.balanceWei) < 0n && <Notice tone="warn">The balance is negative: operations cost more than was credited (a debt the sender's next deposit pays back).</Notice>}
          {!can("POST", `/tanks/${seg(network)}/${seg(sender)}/credit`) && <RoleNote does="credit gas tanks or change which projects draw from them" />}
          {can("POST", `/tanks/${seg(network)}/${seg(sender)}/credit`) && <section class="panel" aria-labelledby="credit">
            <h2 id="credit">Credit by hand</h2>
            {done && <Notice tone="ok">{done}</Notice>}
            <ErrorNotice error={credit.error} what="Not credited" />
            <form
              onSubmit={(e) => {
                e.preventDefault();
                void credit.run(async () => {
                  if (wei === undefined || wei === 0n) throw new Error("Amount: give a positive amount of ETH, with at most 18 decimals (e.g. 0.05).");
                  const r = await api.post(`/tanks/${seg(network)}/${seg(sender)}/credit`, { wei: wei.toString(), ...(reference.trim() ? { reference: reference.trim() } : {}) });
                  setAmount("");
                  setReference("");
                  // The message with the ledger it describes: not "balance now X" above the old balance.
                  await ledger.reload();
                  setDone(`Credited ${formatEth(r.creditedWei)} ETH (reference ${r.reference}). Balance now ${formatEth(r.balanceWei)} ETH.`);
                });
              }}
            >
              <div class="inline-fields">
                <TextInput label="Amount (ETH)" name="credit-amount" value={amount} onInput={setAmount} hint={wei !== undefined ? `${wei.toString()} wei` : "e.g. 0.05"} />
                <TextInput label="Reference" name="credit-reference" value={reference} onInput={setReference} hint="e.g. an invoice or ticket number. The same reference twice credits once. Empty: a new one is made." />
              </div>
              <button type="submit" class="primary" disabled={credit.busy}>Credit the tank</button>
            </form>
          </section>}
          <TankProjects network={network} sender={sender} />
          <h2>Ledger</h2>
          {t.entries.length === 0 ? (
            <Empty>No movement yet.</Empty>
          ) : (
            <Table caption="Credits, debits and operations paid" head={["Time", "What", ["Amount (ETH)", "num"], "Reference"]}>
              {t.entries.map((e: any) => (
                <tr key={`${e.kind}:${e.reference}`}>
                  <td>{formatTime(e.at)}</td>
                  <th scope="row">{e.kind === "credit" ? "Credit" : e.kind === "debit" ? "Debit by hand" : "Operation paid"}</th>
                  <td class="num">{e.kind === "credit" ? "+" : "−"}{formatEth(e.amountWei)}</td>
                  <td>{e.kind === "spend" ? <a href={href(`/sponsorships/${seg(e.reference)}`)}><code>{short(e.userOpHash ?? e.reference)}</code></a> : <code>{e.reference}</code>}</td>
                </tr>
              ))}
            </Table>
          )}
        </>
      )}
    </>
  );
}

/** The projects a tank allows (User Sponsor mode refuses every other), and allowing or disallowing one by hand. */
function TankProjects({ network, sender }: { network: string; sender: string }) {
  const tank = useApi<any>(`/tanks/${seg(network)}/${seg(sender)}`);
  const projects = useApi<any[]>("/projects");
  const [project, setProject] = useState("");
  const change = useAction();
  const names = new Map((projects.data ?? []).map((p) => [p.id, p.name] as [string, string]));
  const chosen = project || projects.data?.[0]?.id || "";
  const set = (allowed: boolean, projectId: string) =>
    void change.run(async () => {
      await api.post(`/tanks/${seg(network)}/${seg(sender)}/${allowed ? "allow" : "disallow"}`, { project: projectId });
      await tank.reload();
    });
  const consents: any[] = tank.data?.projects ?? [];
  const mayAllow = can("POST", `/tanks/${seg(network)}/${seg(sender)}/allow`) && can("POST", `/tanks/${seg(network)}/${seg(sender)}/disallow`);
  return (
    <section class="panel" aria-labelledby="tank-projects">
      <h2 id="tank-projects">Projects allowed to draw</h2>
      <p class="muted">The tank pays only for the projects listed as allowed: its owner allows one by signing a consent through the dapp{mayAllow ? ", or you allow it here" : ", or an admin allows it here"}.</p>
      <ErrorNotice error={tank.error ?? change.error} what="Could not change the tank's projects" />
      {consents.length === 0 ? (
        <Empty>No project may draw from this tank yet.</Empty>
      ) : (
        <Table caption="Projects of the tank" head={["Project", "Allowed", "By", "Changed", ...(mayAllow ? [""] : [])]}>
          {consents.map((c) => (
            <tr key={c.projectId}>
              <th scope="row"><a href={href(`/projects/${seg(c.projectId)}`)}>{names.get(c.projectId) ?? c.projectId}</a></th>
              <td>{c.allowed ? "yes" : "no"}</td>
              <td>{c.changedBy}</td>
              <td>{formatTime(c.updatedAt)}</td>
              {mayAllow && <td>
                <button type="button" disabled={change.busy} onClick={() => set(!c.allowed, c.projectId)}>
                  {c.allowed ? "Disallow" : "Allow again"}
                </button>
              </td>}
            </tr>
          ))}
        </Table>
      )}
      {mayAllow && <form
        class="row"
        style="align-items:flex-end"
        onSubmit={(e) => {
          e.preventDefault();
          if (chosen) set(true, chosen);
        }}
      >
        <div style="min-width:14rem"><Select label="Project to allow" value={chosen} onChange={setProject} options={(projects.data ?? []).map((p) => [p.id, p.name] as [string, string])} /></div>
        <button type="submit" class="primary" style="margin-bottom:0.85rem" disabled={change.busy || !chosen}>Allow the project</button>
      </form>}
    </section>
  );
}
