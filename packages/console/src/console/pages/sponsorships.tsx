// Sponsorships: search by sender, userOpHash, strategy, status, network and time; each one's timeline
// (reserved -> signed -> settled or released), its maximum against its actual cost, and where it landed.
import { useState } from "preact/hooks";
import { query, useApi } from "../api.ts";
import { formatEth, formatTime, short } from "../../shared/format.ts";
import { Empty, ErrorNotice, href, KeyValues, Loading, Notice, PageTitle, routeQuery, Select, seg, StatusBadge, Table, TextInput, useRoute } from "../../shared/ui.tsx";

interface Filters {
  sender: string;
  userOpHash: string;
  strategy: string;
  status: string;
  network: string;
  since: string;
  until: string;
}

const FIELDS: (keyof Filters)[] = ["sender", "userOpHash", "strategy", "status", "network", "since", "until"];
const toIso = (local: string) => (local ? `${local}:00Z` : "");

export function Sponsorships() {
  const path = useRoute();
  const params = routeQuery(path);
  const initial = Object.fromEntries(FIELDS.map((k) => [k, params.get(k) ?? ""])) as unknown as Filters;
  const [form, setForm] = useState<Filters>(initial);
  const info = useApi<{ networks: string[] }>("/info");
  const strategies = useApi<any[]>("/strategies");
  const search = query({ ...initial, since: toIso(initial.since), until: toIso(initial.until), limit: 200 });
  const list = useApi<any[]>(`/sponsorships${search}`);
  const codeOf = (id: string | null) => (id ? (strategies.data?.find((s) => s.id === id)?.code ?? short(id)) : "–");
  const set = (k: keyof Filters) => (v: string) => setForm((f) => ({ ...f, [k]: v }));
  return (
    <>
      <PageTitle>Sponsorships</PageTitle>
      <form
        class="panel"
        aria-label="Search sponsorships"
        onSubmit={(e) => {
          e.preventDefault();
          const q = new URLSearchParams();
          for (const k of FIELDS) if (form[k].trim()) q.set(k, form[k].trim());
          const target = `/sponsorships${q.toString() ? `?${q}` : ""}`;
          // The same criteria again: the route does not change, so ask again (a signed one may have settled since).
          if (location.hash.replace(/^#/, "") === target) void list.reload();
          else location.hash = target;
        }}
      >
        <div class="inline-fields">
          <TextInput label="Sender" name="sender" value={form.sender} onInput={set("sender")} placeholder="0x…" />
          <TextInput label="userOpHash" name="userOpHash" value={form.userOpHash} onInput={set("userOpHash")} placeholder="0x…" />
          <Select label="Strategy" name="strategy" value={form.strategy} onChange={set("strategy")} options={[["", "Any"], ...(strategies.data ?? []).map((s) => [s.code, s.code] as [string, string])]} />
          <Select label="Status" name="status" value={form.status} onChange={set("status")} options={[["", "Any"], "signed", "settled", "released", "reserved"]} />
          <Select label="Network" name="network" value={form.network} onChange={set("network")} options={[["", "Any"], ...(info.data?.networks ?? []).map((n) => [n, n] as [string, string])]} />
          <TextInput label="Since (UTC)" name="since" type="datetime-local" value={form.since} onInput={set("since")} />
          <TextInput label="Until (UTC)" name="until" type="datetime-local" value={form.until} onInput={set("until")} />
        </div>
        <div class="row">
          <button type="submit" class="primary">Search</button>
          <a class="button" href={href("/sponsorships")} onClick={() => setForm(Object.fromEntries(FIELDS.map((k) => [k, ""])) as unknown as Filters)}>Clear</a>
        </div>
      </form>
      <ErrorNotice error={list.error} what="The search was refused" />
      {list.loading && !list.data && <Loading what="sponsorships" />}
      {list.data?.length === 0 && <Empty>No sponsorship matches. Sponsorships appear here once the service signs for an operation.</Empty>}
      {list.data && list.data.length > 0 && (
        <>
          <p class="muted" role="status">{list.data.length === 200 ? "The 200 newest matches:" : `${list.data.length} found, newest first:`}</p>
          <Table caption="Sponsorships" head={["Time", "Status", "Sender", "Strategy", "userOpHash", ["Max cost (ETH)", "num"], ["Actual (ETH)", "num"]]}>
            {list.data.map((s) => (
              <tr key={s.id}>
                <th scope="row"><a href={href(`/sponsorships/${seg(s.id)}`)}>{formatTime(s.createdAt)}</a></th>
                <td><StatusBadge status={s.status} /></td>
                <td><code title={s.sender}>{short(s.sender)}</code></td>
                <td>{s.mode === "sponsor" ? codeOf(s.strategyId) : <span class="muted">{s.mode === "user" ? "gas tank" : "ERC-20"}</span>}</td>
                <td><code title={s.userOpHash ?? ""}>{short(s.userOpHash)}</code></td>
                <td class="num">{formatEth(s.maxCostWei)}</td>
                <td class="num">{s.settlement ? formatEth(s.settlement.actualGasCostWei) : "–"}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </>
  );
}

const RELEASE_TEXT: Record<string, string> = {
  expired: "expired: the signature's window ended without the operation landing",
  replaced: "replaced: a newer request for the same operation (sender and nonce) took its place",
  released: "released: the reservation was given back",
};

export function Sponsorship({ id }: { id: string }) {
  const one = useApi<any>(`/sponsorships/${seg(id)}`);
  const s = one.data;
  const strategy = useApi<any[]>(s?.strategyId ? "/strategies" : null, [s?.strategyId]);
  if (one.error) return <ErrorNotice error={one.error} what="Could not load the sponsorship" />;
  if (!s) return <Loading what="the sponsorship" />;
  const t = s.timeline ?? {};
  const code = strategy.data?.find((x) => x.id === s.strategyId)?.code;
  const max = BigInt(s.maxCostWei);
  const actual = s.settlement ? BigInt(s.settlement.actualGasCostWei) : null;
  return (
    <>
      <p><a href={href("/sponsorships")}>← Sponsorships</a></p>
      <PageTitle>Sponsorship <code>{short(s.userOpHash ?? s.id, 10)}</code></PageTitle>
      <div class="grid">
        <section class="panel" aria-labelledby="timeline">
          <h2 id="timeline">Timeline</h2>
          <ol class="timeline">
            <li><strong>Reserved</strong> — {formatTime(t.reservedAt)}<div class="muted">{formatEth(s.maxCostWei)} ETH (${s.maxCostUsd}) held against the caps{s.mode === "user" ? " and the gas tank" : ""}</div></li>
            <li><strong>Signed</strong> — {formatTime(t.signedAt)}<div class="muted">valid {formatTime(s.validAfter)} to {formatTime(s.validUntil)}</div></li>
            {t.releaseReason && (
              <li class={s.status === "released" ? "off" : undefined}>
                <strong>Released</strong> {t.releasedAt ? `— ${formatTime(t.releasedAt)}` : ""}
                <div class="muted">{RELEASE_TEXT[t.releaseReason] ?? t.releaseReason}{s.status === "settled" ? "; it landed afterwards all the same, and was paid for" : ""}</div>
              </li>
            )}
            {s.settlement ? (
              <li class={s.settlement.success ? undefined : "bad"}>
                <strong>Settled</strong> — {formatTime(t.settledAt)}
                <div class="muted">
                  the operation {s.settlement.success ? "succeeded" : "reverted (its gas was paid all the same)"} in block {s.settlement.blockNumber}
                </div>
              </li>
            ) : s.status !== "released" ? (
              <li class="off"><strong>Not landed yet</strong><div class="muted">settles when the operation is seen on chain</div></li>
            ) : null}
          </ol>
        </section>
        <section class="panel" aria-labelledby="cost">
          <h2 id="cost">Cost</h2>
          <KeyValues
            items={[
              ["Maximum (reserved)", `${formatEth(s.maxCostWei)} ETH ($${s.maxCostUsd})`],
              ["Actual (charged)", s.settlement ? `${formatEth(s.settlement.actualGasCostWei)} ETH ($${s.settlement.actualCostUsd})` : "–"],
              ...(actual !== null && max > 0n ? ([["Actual / maximum", `${((Number(actual) / Number(max)) * 100).toFixed(1)}%`]] as [string, string][]) : []),
              ...(s.token ? ([["Token charged", s.settlement?.actualTokenCost ?? `at most ${s.maxTokenCost}`]] as [string, string][]) : []),
            ]}
          />
          {actual !== null && (
            <div style="margin-top:0.75rem" aria-hidden="true">
              <div class="muted" style="font-size:0.85rem">maximum</div>
              <div class="meter"><span style="width:100%;background:var(--series-1)" /></div>
              <div class="muted" style="font-size:0.85rem;margin-top:0.3rem">actual</div>
              <div class="meter"><span style={`width:${max > 0n ? Math.min(100, (Number(actual) / Number(max)) * 100) : 0}%`} /></div>
            </div>
          )}
        </section>
      </div>
      <section class="panel" aria-labelledby="details">
        <h2 id="details">Details</h2>
        <KeyValues
          items={[
            ["Status", <StatusBadge status={s.status} />],
            ["userOpHash", <code>{s.userOpHash ?? "–"}</code>],
            ["Transaction", s.settlement ? <code>{s.settlement.txHash}</code> : "–"],
            ["Sender", <a href={href(`/sponsorships?sender=${s.sender}`)}><code>{s.sender}</code></a>],
            ["Nonce", s.nonce],
            ["Mode", s.mode === "sponsor" ? <>Sponsor, strategy {code ? <a href={href(`/strategies/${seg(code)}`)}>{code}</a> : s.strategyId}</> : s.mode === "user" ? <>User Sponsor (<a href={href(`/tanks/${seg(s.network)}/${s.sender}`)}>gas tank</a>)</> : "ERC-20"],
            ["Network", `${s.network}, EntryPoint ${s.version} ${short(s.entryPoint)}`],
            ["Project", <a href={href(`/projects/${seg(s.projectId)}`)}>{s.projectId}</a>],
            ["API key", <code>{s.apiKeyId}</code>],
            ["Id", <code>{s.id}</code>],
          ]}
        />
        {s.status === "signed" && <Notice tone="info">Signed and waiting: the settlement watcher settles it when the operation lands, or releases it after its window ends.</Notice>}
      </section>
    </>
  );
}
