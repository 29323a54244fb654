// Strategies: the list, and the editor — a form for every rule and cap (or the JSON document itself), checked
// by the service with the CLI's schema and messages, shown at each field; enable/disable; usage per day against
// the daily cap with what each cap has left; and a dry run of a pasted user operation (pm_checkPolicy).
import type { ComponentChildren } from "preact";
import { useLayoutEffect, useState } from "preact/hooks";
import { api, ApiError, can, useApi } from "../api.ts";
import { RoleNote } from "../roleNote.tsx";
import { BarChart, Meter } from "../charts.tsx";
import { formatEth } from "../../shared/format.ts";
import { emptyForm, errorsByField, fromDocument, toDocument, type CapForm, type StrategyForm } from "../strategyForm.ts";
import { Badge, Empty, ErrorNotice, Field, href, Loading, Notice, PageTitle, routeQuery, Select, seg, StatusBadge, Table, TextArea, TextInput, useAction, useRoute } from "../../shared/ui.tsx";

export function Strategies() {
  const list = useApi<any[]>("/strategies");
  const projects = useApi<any[]>("/projects");
  const projectName = (id: string) => projects.data?.find((p) => p.id === id)?.name ?? id;
  return (
    <>
      <PageTitle>Strategies</PageTitle>
      <p class="muted">A strategy says what the paymaster pays for: who may send, which calls, up to which caps. Clients name it as <code>strategy_code</code>.</p>
      {can("POST", "/strategies") ? (
        <p>
          <a class="button primary" href={href("/strategies/new")}>New strategy</a>
        </p>
      ) : (
        <RoleNote does="create or change strategies" />
      )}
      <ErrorNotice error={list.error} what="Could not load the strategies" />
      {list.loading && !list.data && <Loading what="the strategies" />}
      {list.data?.length === 0 && <Empty>No strategy yet. Create one so that requests in Sponsor mode are paid for.</Empty>}
      {list.data && list.data.length > 0 && (
        <Table caption="Strategies" head={["Code", "Name", "Project", "Status", "Networks", "Caps"]}>
          {list.data.map((s) => (
            <tr key={s.id}>
              <th scope="row"><a href={href(`/strategies/${seg(s.code)}`)}>{s.code}</a></th>
              <td>{s.name}</td>
              <td><a href={href(`/projects/${seg(s.projectId)}`)}>{projectName(s.projectId)}</a></td>
              <td><StatusBadge status={s.status} /></td>
              <td>{s.networks ? s.networks.join(", ") : <span class="muted">all</span>}</td>
              <td>{s.rules.caps ? Object.keys(s.rules.caps).join(", ") : <span class="muted">none</span>}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

export function StrategyPage({ code }: { code: string | null }) {
  const path = useRoute();
  const isNew = code === null;
  const strategy = useApi<any>(isNew ? null : `/strategies/${seg(code)}`);
  const info = useApi<{ networks: string[] }>("/info");
  const projects = useApi<any[]>("/projects");
  const [form, setForm] = useState<StrategyForm>(() => emptyForm(routeQuery(path).get("project") ?? ""));
  const [tab, setTab] = useState<"form" | "json">("form");
  const [json, setJson] = useState("");
  const [saved, setSaved] = useState<string | null>(null);
  const save = useAction();
  const status = useAction();
  // What this session may change: without it the form shows the strategy, every field disabled, and no save.
  const mayEdit = isNew ? can("POST", "/strategies") : can("PATCH", `/strategies/${seg(code)}`);

  // The stored strategy fills the form in the render that shows it (never a frame with the empty form, whose
  // JSON view or save would be the empty document).
  useLayoutEffect(() => {
    if (strategy.data) setForm(fromDocument(strategy.data));
  }, [strategy.data]);
  useLayoutEffect(() => {
    // The first project as the default, unless one is chosen already: this runs after the projects arrive, and
    // the operator may have picked one in between (the form then keeps that choice).
    const first = projects.data?.[0]?.id;
    if (isNew && first) setForm((f) => (f.project ? f : { ...f, project: first }));
  }, [projects.data]);

  const issues = save.error instanceof ApiError ? save.error.issues : [];
  const errors = errorsByField(issues);
  const showJson = () => {
    setJson(JSON.stringify(toDocument(form, isNew), null, 2));
    setTab("json");
  };
  const showForm = () => {
    try {
      setForm(fromDocument(JSON.parse(json)));
      save.setError(null);
      setTab("form");
    } catch (e) {
      save.setError(new Error(`The JSON is not valid: ${(e as Error).message}. Fix it, or discard it by reloading the page.`));
    }
  };
  const submit = () =>
    save.run(async () => {
      let doc: Record<string, unknown>;
      if (tab === "json") {
        try {
          doc = JSON.parse(json);
        } catch (e) {
          throw new Error(`The JSON is not valid: ${(e as Error).message}`);
        }
      } else doc = toDocument(form, isNew);
      setSaved(null);
      if (isNew) {
        const created = await api.post("/strategies", doc);
        location.hash = `/strategies/${seg(created.code)}`;
      } else {
        const { code: _code, project: _project, ...patch } = doc;
        const updated = await api.patch(`/strategies/${seg(code!)}`, patch);
        setForm(fromDocument(updated));
        if (tab === "json") setJson(JSON.stringify(toDocument(fromDocument(updated), false), null, 2));
        setSaved("Saved.");
        await strategy.reload();
      }
    });
  const set = (patch: Partial<StrategyForm>) => setForm((f) => ({ ...f, ...patch }));

  if (!isNew && strategy.error) return <ErrorNotice error={strategy.error} what="Could not load the strategy" />;
  if (!isNew && !strategy.data) return <Loading what="the strategy" />;
  const s = strategy.data;
  return (
    <>
      <p><a href={href("/strategies")}>← Strategies</a></p>
      <PageTitle>{isNew ? "New strategy" : <>Strategy <code>{s.code}</code></>}</PageTitle>
      {!isNew && (
        <div class="row" style="margin-bottom:1rem">
          <StatusBadge status={s.status} />
          <ErrorNotice error={status.error} what="Not done" />
          {can("POST", `/strategies/${seg(s.code)}/${s.status === "enabled" ? "disable" : "enable"}`) && <button
            type="button"
            class={s.status === "enabled" ? "danger" : "primary"}
            disabled={status.busy}
            onClick={() => void status.run(async () => {
              await api.post(`/strategies/${seg(s.code)}/${s.status === "enabled" ? "disable" : "enable"}`);
              await strategy.reload(); // busy until the status shown is the new one
            })}
          >
            {s.status === "enabled" ? "Disable strategy" : "Enable strategy"}
          </button>}
        </div>
      )}
      {!mayEdit && <RoleNote does="create or change strategies" />}
      <div class="tabs" role="tablist" aria-label="How to edit">
        <button type="button" role="tab" aria-selected={tab === "form"} onClick={() => tab === "json" && showForm()}>Form</button>
        <button type="button" role="tab" aria-selected={tab === "json"} onClick={() => tab === "form" && showJson()}>JSON</button>
      </div>
      <form
        noValidate
        aria-label="Strategy"
        onSubmit={(e) => {
          e.preventDefault();
          if (mayEdit) void submit();
        }}
      >
        {save.error && (
          <ErrorNotice error={save.error} what={issues.length ? "The service refused the strategy" : "Not saved"} focus />
        )}
        {saved && <Notice tone="ok">{saved}</Notice>}
        <fieldset class="plain" disabled={!mayEdit}>
          {tab === "json" ? (
            <TextArea label="Strategy document (JSON)" value={json} onInput={setJson} tall hint="The same document `paymaster strategy create|update -f` and the admin API take." />
          ) : (
            <StrategyFields form={form} set={set} errors={errors} isNew={isNew} networks={info.data?.networks ?? []} projects={projects.data ?? []} />
          )}
        </fieldset>
        {mayEdit && (
          <button type="submit" class="primary" disabled={save.busy}>
            {save.busy ? "Saving…" : isNew ? "Create strategy" : "Save changes"}
          </button>
        )}
      </form>
      {!isNew && (
        <>
          <Usage code={s.code} />
          {can("POST", `/strategies/${seg(s.code)}/check`) && <DryRun strategy={s} networks={info.data?.networks ?? []} />}
        </>
      )}
    </>
  );
}

function StrategyFields(props: { form: StrategyForm; set: (p: Partial<StrategyForm>) => void; errors: Record<string, string>; isNew: boolean; networks: string[]; projects: any[] }) {
  const { form: f, set, errors: e } = props;
  const capFields = (scope: "global" | "daily" | "perSender", title: string, hint: string) => (
    <fieldset>
      <legend>{title}</legend>
      <p class="muted" style="margin-top:0">{hint}</p>
      <div class="inline-fields">
        {(["maxWei", "maxUsd", "maxOps"] as const).map((k) => (
          <TextInput
            key={k}
            name={`caps.${scope}.${k}`}
            label={{ maxWei: "Max wei", maxUsd: "Max USD", maxOps: "Max operations" }[k]}
            value={f.caps[scope][k]}
            onInput={(v) => set({ caps: { ...f.caps, [scope]: { ...f.caps[scope], [k]: v } as CapForm } })}
            error={e[`rules.caps.${scope}.${k}`] ?? e[`rules.caps.${scope}`]}
            hint={{ maxWei: "decimal wei", maxUsd: 'dollars, e.g. "25.50"', maxOps: "a whole number" }[k]}
          />
        ))}
      </div>
    </fieldset>
  );
  return (
    <>
      <fieldset>
        <legend>Strategy</legend>
        <div class="inline-fields">
          {props.isNew ? (
            <TextInput label="Code" name="code" value={f.code} onInput={(v) => set({ code: v })} error={e.code} hint="What clients send as strategy_code; never changes." />
          ) : (
            <Field label="Code">{(a) => <input {...a} value={f.code} readOnly />}</Field>
          )}
          <TextInput label="Name" name="name" value={f.name} onInput={(v) => set({ name: v })} error={e.name} />
          {props.isNew ? (
            // A row of its own: project names can be long, and a cut one cannot be told from another.
            <div class="wide-field">
              <Select
                label="Project"
                name="project"
                value={f.project}
                onChange={(v) => set({ project: v })}
                options={props.projects.length ? props.projects.map((p) => [p.id, p.name] as [string, string]) : [["", "(create a project first)"]]}
                error={e.project}
              />
            </div>
          ) : null}
          <Select label="Status" name="status" value={f.status} onChange={(v) => set({ status: v as "enabled" | "disabled" })} options={["enabled", "disabled"]} error={e.status} />
          <TextInput label="Valid from (UTC)" name="validFrom" type="datetime-local" value={f.validFrom} onInput={(v) => set({ validFrom: v })} error={e.validFrom} hint="Empty: from now on" />
          <TextInput label="Valid until (UTC)" name="validUntil" type="datetime-local" value={f.validUntil} onInput={(v) => set({ validUntil: v })} error={e.validUntil} hint="Empty: no end" />
        </div>
        <fieldset>
          <legend>Networks</legend>
          {props.networks.map((n) => (
            <label class="check" key={n}>
              <input
                type="checkbox"
                checked={f.networks.includes(n)}
                onChange={(ev) => set({ networks: (ev.target as HTMLInputElement).checked ? [...f.networks, n] : f.networks.filter((x) => x !== n) })}
              />
              {n}
            </label>
          ))}
          <p class="muted">None ticked: every configured network.</p>
          {e.networks && <p class="error" style="color:var(--bad)">{e.networks}</p>}
        </fieldset>
      </fieldset>

      <fieldset>
        <legend>Who may send</legend>
        <div class="inline-fields">
          <TextArea label="Sender allowlist" name="senderAllowlist" value={f.senderAllowlist} onInput={(v) => set({ senderAllowlist: v })} error={e["rules.senderAllowlist"]} hint="One address per line. Empty: any sender." />
          <TextArea label="Sender denylist" name="senderDenylist" value={f.senderDenylist} onInput={(v) => set({ senderDenylist: v })} error={e["rules.senderDenylist"]} hint="One address per line." />
        </div>
      </fieldset>

      <fieldset>
        <legend>Allowed calls</legend>
        <p class="muted" style="margin-top:0">No target: any call. With targets, every call of the operation must go to one of them (and to one of its selectors, when given).</p>
        {e["rules.targets"] && <Notice tone="error">{e["rules.targets"]}</Notice>}
        {f.targets.map((t, i) => (
          <div class="inline-fields" key={i} role="group" aria-label={`Target ${i + 1}`}>
            <TextInput
              label={`Target ${i + 1} address`}
              value={t.address}
              onInput={(v) => set({ targets: f.targets.map((x, j) => (j === i ? { ...x, address: v } : x)) })}
              error={e[`rules.targets[${i}].address`] ?? e[`rules.targets[${i}]`]}
            />
            <TextInput
              label={`Target ${i + 1} selectors`}
              value={t.selectors}
              onInput={(v) => set({ targets: f.targets.map((x, j) => (j === i ? { ...x, selectors: v } : x)) })}
              error={e[`rules.targets[${i}].selectors`]}
              hint="4-byte selectors like 0xa9059cbb, space separated. Empty: any function."
            />
            <div>
              <button type="button" class="small danger" style="margin-top:1.7rem" onClick={() => set({ targets: f.targets.filter((_, j) => j !== i) })}>
                Remove target {i + 1}
              </button>
            </div>
          </div>
        ))}
        <button type="button" class="small" onClick={() => set({ targets: [...f.targets, { address: "", selectors: "" }] })} style="margin-bottom:0.75rem">
          Add a target
        </button>
      </fieldset>

      <h2>Caps</h2>
      <p class="muted">Each cap counts reserved (signed, not landed yet) plus spent (settled). Leave a field empty for no limit.</p>
      {e["rules.caps"] && <Notice tone="error">{e["rules.caps"]}</Notice>}
      {capFields("global", "Global cap", "Over the strategy's whole life.")}
      {capFields("daily", "Daily cap", "Per UTC day.")}
      {capFields("perSender", "Per-sender cap", "Per sender, over the strategy's whole life.")}
      <fieldset>
        <legend>Per-operation cap</legend>
        <div class="inline-fields">
          <TextInput label="Max wei per operation" name="caps.perOp.maxWei" value={f.caps.perOp.maxWei} onInput={(v) => set({ caps: { ...f.caps, perOp: { ...f.caps.perOp, maxWei: v } } })} error={e["rules.caps.perOp.maxWei"]} />
          <TextInput label="Max USD per operation" name="caps.perOp.maxUsd" value={f.caps.perOp.maxUsd} onInput={(v) => set({ caps: { ...f.caps, perOp: { ...f.caps.perOp, maxUsd: v } } })} error={e["rules.caps.perOp.maxUsd"]} />
        </div>
      </fieldset>

      <fieldset>
        <legend>Gas and fees</legend>
        <div class="inline-fields">
          {(["maxVerificationGasLimit", "maxCallGasLimit", "maxPreVerificationGas"] as const).map((k) => (
            <TextInput key={k} label={k} name={`gasLimits.${k}`} value={f.gas[k]} onInput={(v) => set({ gas: { ...f.gas, [k]: v } })} error={e[`rules.gasLimits.${k}`]} hint="gas units" />
          ))}
          <TextInput
            label="Max fee multiplier (basis points)"
            name="maxFeeMultiplierBps"
            value={f.maxFeeMultiplierBps}
            onInput={(v) => set({ maxFeeMultiplierBps: v })}
            error={e["rules.maxFeeMultiplierBps"]}
            hint="10000 = at most the market fee; 15000 = 1.5x"
          />
        </div>
      </fieldset>

      <fieldset>
        <legend>Browser clients</legend>
        <TextInput
          label="Open sponsorships per browser client"
          name="maxOutstandingPerClientIp"
          value={f.maxOutstandingPerClientIp}
          onInput={(v) => set({ maxOutstandingPerClientIp: v })}
          error={e["rules.maxOutstandingPerClientIp"]}
          hint="Per key with an origins list and client address: signed operations not landed yet. Empty: the service's setting, at most half the smallest maxOps cap."
        />
      </fieldset>

      <fieldset>
        <legend>EIP-7702 senders</legend>
        <div class="inline-fields">
          <Select
            label="EIP-7702 accounts"
            name="eip7702"
            value={f.eip7702}
            onChange={(v) => set({ eip7702: v as StrategyForm["eip7702"] })}
            options={[["", "No rule (the service's default)"], ["allow", "Allow"], ["deny", "Refuse"]]}
            error={e["rules.eip7702.allow"] ?? e["rules.eip7702"]}
          />
          <TextArea label="Allowed delegates" name="delegates" value={f.delegates} onInput={(v) => set({ delegates: v })} error={e["rules.eip7702.delegates"]} hint="One address per line. Empty: any delegate." />
        </div>
      </fieldset>
    </>
  );
}

// ---- usage

function Usage({ code }: { code: string }) {
  const history = useApi<any>(`/strategies/${seg(code)}/history?days=14`);
  const usage = useApi<any>(`/strategies/${seg(code)}/usage`);
  const h = history.data;
  const cap = h?.dailyCap ?? null;
  const unit: "USD" | "ETH" | "ops" = cap?.maxUsd ? "USD" : cap?.maxWei ? "ETH" : cap?.maxOps ? "ops" : "ETH";
  const value = (d: any, part: "spent" | "reserved") => (unit === "USD" ? Number(d[`${part}Usd`]) : unit === "ETH" ? Number(BigInt(d[`${part}Wei`])) / 1e18 : 0);
  const limit = cap ? (unit === "USD" ? { value: Number(cap.maxUsd), label: `daily cap $${cap.maxUsd}` } : unit === "ETH" ? { value: Number(BigInt(cap.maxWei)) / 1e18, label: `daily cap ${formatEth(cap.maxWei)} ETH` } : { value: cap.maxOps, label: `daily cap ${cap.maxOps} ops` }) : undefined;
  return (
    <section aria-labelledby="usage">
      <h2 id="usage">Usage</h2>
      <ErrorNotice error={history.error ?? usage.error} what="Could not load the usage" />
      {h && (
        <BarChart
          title={`Spent and reserved per day (${unit === "ops" ? "operations" : unit}), last 14 days`}
          labels={h.days.map((d: any) => d.day.slice(5))}
          series={
            unit === "ops"
              ? [{ name: "Operations", color: "var(--series-1)", values: h.days.map((d: any) => d.ops) }]
              : [
                  { name: "Spent (settled)", color: "var(--series-2)", values: h.days.map((d: any) => value(d, "spent")) },
                  { name: "Reserved (signed, not landed)", color: "var(--series-1)", values: h.days.map((d: any) => value(d, "reserved")) },
                ]
          }
          unit={unit}
          {...(limit ? { limit } : {})}
          empty="Nothing sponsored under this strategy in the last 14 days."
        />
      )}
      {usage.data && (
        <p class="muted" data-testid="strategy-totals">
          {usage.data.caps.length === 0 ? "This strategy has no cap: it pays without a budget limit. " : ""}
          Spent so far: {formatEth(usage.data.totals.spentWei)} ETH (${usage.data.totals.spentUsd}); reserved: {formatEth(usage.data.totals.reservedWei)} ETH (${usage.data.totals.reservedUsd}); {usage.data.totals.ops} operations.
        </p>
      )}
      {usage.data && usage.data.caps.length > 0 && (
        <Table caption="Remaining budget per cap" head={["Cap", "Spent", "Reserved", "Limit", "Remaining", "Used"]} captionHidden={false}>
          {usage.data.caps.flatMap((c: any) => capRows(c))}
        </Table>
      )}
    </section>
  );
}

function capRows(c: any): ComponentChildren[] {
  const rows: ComponentChildren[] = [];
  const name = `${c.cap}${c.key ? ` (${c.key})` : ""}`;
  const row = (unit: string, spent: string, reserved: string, max: string, remaining: string, used: number, limit: number) => (
    <tr key={`${c.cap}-${unit}`}>
      <th scope="row">{name} <span class="muted">{unit}</span></th>
      <td>{spent}</td>
      <td>{reserved}</td>
      <td>{max}</td>
      <td><strong>{remaining}</strong></td>
      <td style="min-width:7rem"><Meter value={used} max={limit} label={`${name} ${unit} used`} /></td>
    </tr>
  );
  if (c.maxWei !== undefined) {
    const used = Number(BigInt(c.spentWei) + BigInt(c.reservedWei));
    rows.push(row("ETH", formatEth(c.spentWei), formatEth(c.reservedWei), formatEth(c.maxWei), `${formatEth(c.remainingWei)} ETH`, used, Number(BigInt(c.maxWei))));
  }
  if (c.maxUsd !== undefined) rows.push(row("USD", `$${c.spentUsd}`, `$${c.reservedUsd}`, `$${c.maxUsd}`, `$${c.remainingUsd}`, Number(c.spentUsd) + Number(c.reservedUsd), Number(c.maxUsd)));
  if (c.maxOps !== undefined) rows.push(row("ops", String(c.ops), "", String(c.maxOps), `${c.remainingOps} ops`, c.ops, c.maxOps));
  return rows;
}

// ---- dry run

function DryRun({ strategy, networks }: { strategy: any; networks: string[] }) {
  const usable = strategy.networks ?? networks;
  const [network, setNetwork] = useState(usable[0] ?? "");
  const [version, setVersion] = useState("v0.7");
  const [op, setOp] = useState("");
  const [result, setResult] = useState<any>(null);
  const action = useAction();
  return (
    <section class="panel" aria-labelledby="dry-run" style="margin-top:1rem">
      <h2 id="dry-run">Dry run</h2>
      <p class="muted" style="margin-top:0">
        Paste a user operation as a client sends it (JSON, hex fields): the service runs <code>pm_checkPolicy</code> under this strategy and shows every rule's verdict.
        Nothing is reserved or signed.
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            setResult(null);
            let userOp: unknown;
            try {
              userOp = JSON.parse(op);
            } catch (err) {
              throw new Error(`The user operation is not valid JSON: ${(err as Error).message}`);
            }
            setResult(await api.post(`/strategies/${seg(strategy.code)}/check`, { userOp, network, version }));
          });
        }}
      >
        <div class="inline-fields">
          <Select label="Network" name="dry-network" value={network} onChange={setNetwork} options={usable} />
          <Select label="EntryPoint version" name="dry-version" value={version} onChange={setVersion} options={["v0.7", "v0.6", "v0.8"]} hint="v0.6 operations have initCode and paymasterAndData; v0.7 and v0.8 ones factory and paymaster fields." />
        </div>
        <TextArea label="User operation" name="userOp" value={op} onInput={setOp} tall hint='{"sender": "0x…", "nonce": "0x0", "callData": "0x…", "signature": "0x…", …}' />
        <button type="submit" class="primary" disabled={action.busy || op.trim() === ""}>{action.busy ? "Checking…" : "Check"}</button>
      </form>
      <ErrorNotice error={action.error} what="The check could not run" />
      {result && (
        <div style="margin-top:1rem" aria-live="polite">
          {result.wouldSponsor ? (
            <Notice tone="ok" title="Would sponsor.">Every rule passes. Maximum cost {formatEth(result.maxCostWei)} ETH (${result.maxCostUsd}).</Notice>
          ) : (
            <Notice tone="error" title="Would refuse:">
              <code>{result.rejectedBy.rule}</code> — {result.rejectedBy.message}. Maximum cost {formatEth(result.maxCostWei)} ETH (${result.maxCostUsd}).
            </Notice>
          )}
          <Table caption="Verdict of each rule" head={["Rule", "Verdict", "Limit", "Value", "Why"]} captionHidden={false}>
            {result.verdicts.map((v: any, i: number) => (
              <tr key={i}>
                <th scope="row"><code>{v.rule}</code></th>
                <td>{v.pass ? <Badge tone="ok">pass</Badge> : <Badge tone="bad">refuse</Badge>}</td>
                <td><code>{JSON.stringify(v.limit)}</code></td>
                <td><code>{JSON.stringify(v.value)}</code></td>
                <td>{v.message}</td>
              </tr>
            ))}
          </Table>
        </div>
      )}
    </section>
  );
}
