// Overview: per network, the paymasters on chain (deposit against the alert threshold, stake, signers) and the
// settlement watcher's lag; over a chosen period, requests (ok and refused), refusals by reason, sponsorships by
// status and what they cost.
import { useState } from "preact/hooks";
import { query, useApi } from "../api.ts";
import { BarChart, BarList, Meter, ThresholdBars } from "../charts.tsx";
import { bucketLabel, ethNumber, formatEth, formatTime, short } from "../../shared/format.ts";
import { Badge, Empty, ErrorNotice, Loading, Notice, PageTitle, Select, Stat, Table } from "../../shared/ui.tsx";

/** Value, text, seconds, and the bucket the charts ask for: 12 to 30 bars, each wide enough to see. */
const PERIODS: [string, string, number, number][] = [
  ["1h", "Last hour", 3600, 300],
  ["24h", "Last 24 hours", 86_400, 3600],
  ["7d", "Last 7 days", 7 * 86_400, 21_600],
  ["30d", "Last 30 days", 30 * 86_400, 86_400],
];

export function Overview() {
  const info = useApi<{ networks: string[] }>("/info");
  const [network, setNetwork] = useState("");
  const [period, setPeriod] = useState("24h");
  const [, , seconds, bucket] = PERIODS.find((p) => p[0] === period)!;
  const [until, setUntil] = useState(() => Math.floor(Date.now() / 1000) + 1);
  const activity = useApi(`/activity${query({ since: until - seconds, until, network, bucket })}`);
  const networks = useApi<any[]>("/networks");
  const a = activity.data;
  const labels = a ? a.requests.perBucket.map((b: any) => bucketLabel(b.bucket, a.bucketSeconds)) : [];
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <form class="row" onSubmit={(e) => e.preventDefault()} aria-label="What to show">
        <div style="min-width:12rem">
          <Select label="Network" value={network} onChange={setNetwork} options={[["", "All networks"], ...(info.data?.networks ?? []).map((n) => [n, n] as [string, string])]} />
        </div>
        <div style="min-width:12rem">
          <Select label="Period" value={period} onChange={(v) => { setPeriod(v); setUntil(Math.floor(Date.now() / 1000) + 1); }} options={PERIODS.map(([v, t]) => [v, t] as [string, string])} />
        </div>
        <button type="button" onClick={() => { setUntil(Math.floor(Date.now() / 1000) + 1); activity.reload(); networks.reload(); }} style="margin-top:0.6rem">Refresh</button>
      </form>

      <h2>Requests and sponsorships</h2>
      <ErrorNotice error={activity.error} what="Could not load the activity" />
      {activity.loading && !a && <Loading what="the activity" />}
      {a && (
        <>
          <div class="stats">
            <Stat label="Requests answered" value={(a.requests.ok + a.requests.errors).toLocaleString("en-US")} />
            <Stat label="Refused" value={a.requests.errors.toLocaleString("en-US")} hint={a.requests.ok + a.requests.errors > 0 ? `${((a.requests.errors / (a.requests.ok + a.requests.errors)) * 100).toFixed(1)}% of requests` : undefined} />
            <Stat label="Sponsorships signed" value={a.sponsorships.count.toLocaleString("en-US")} />
            <Stat label="Settled on chain" value={a.sponsorships.settled.toLocaleString("en-US")} />
            <Stat label="Gas paid" value={`${formatEth(a.sponsorships.spentWei)} ETH`} hint={`$${a.sponsorships.spentUsd}`} />
          </div>
          <div class="grid">
            <BarChart
              title="Requests over time"
              labels={labels}
              series={[
                { name: "Answered", color: "var(--series-2)", values: a.requests.perBucket.map((b: any) => b.ok) },
                { name: "Refused", color: "var(--series-4)", values: a.requests.perBucket.map((b: any) => b.errors) },
              ]}
              unit="requests"
              empty="No request in this period. Requests are counted every 15 seconds; a client calling the service shows up here."
            />
            <BarChart
              title="Sponsorships over time (by their status now)"
              labels={labels}
              series={[
                { name: "Settled", color: "var(--series-2)", values: a.sponsorships.perBucket.map((b: any) => b.settled) },
                { name: "Signed, not landed yet", color: "var(--series-1)", values: a.sponsorships.perBucket.map((b: any) => b.open) },
                { name: "Released (expired or replaced)", color: "var(--series-3)", values: a.sponsorships.perBucket.map((b: any) => b.released) },
              ]}
              unit="sponsorships"
              empty="No sponsorship in this period."
            />
            <BarChart
              title="Gas paid for settled operations (ETH)"
              labels={labels}
              series={[{ name: "ETH paid", color: "var(--series-5)", values: a.sponsorships.perBucket.map((b: any) => ethNumber(b.spentWei)) }]}
              unit="ETH"
              empty="Nothing settled in this period."
            />
            <BarList title="Refusals by reason" items={a.requests.byReason.map((r: any) => ({ label: r.reason, value: r.count }))} empty="No request was refused in this period." />
          </div>
          {a.sponsorships.truncated && <Notice tone="warn">This period holds more sponsorships than one answer reads: choose a shorter period for exact sponsorship totals.</Notice>}
        </>
      )}

      <h2>Networks</h2>
      <ErrorNotice error={networks.error} what="Could not load the networks" />
      {networks.loading && !networks.data && <Loading what="the networks' state from the chain" />}
      {networks.data?.length === 0 && <Empty>No network is configured.</Empty>}
      {networks.data?.filter((n) => !network || n.network === network).map((n) => <NetworkPanel key={n.network} n={n} />)}
    </>
  );
}

function NetworkPanel({ n }: { n: any }) {
  const threshold = n.thresholds.depositAlertWei;
  const lag = n.watcher.lagBlocks === null ? null : Number(n.watcher.lagBlocks);
  const warnings: string[] = n.paymasters.flatMap((p: any) => p.warnings.map((w: string) => `${p.label}: ${w}`));
  return (
    <section class="panel" aria-labelledby={`net-${n.network}`}>
      <div class="row spread">
        <h3 id={`net-${n.network}`} style="margin:0">
          {n.network} <span class="muted">(chain {n.chainId})</span>
        </h3>
        {n.ready ? <Badge tone="ok">ready</Badge> : <Badge tone="bad">not ready</Badge>}
      </div>
      {n.error && <Notice tone="error">{n.error}</Notice>}
      <div class="stats">
        <Stat label="Service signer" value={<code>{short(n.signer, 8)}</code>} />
        <Stat
          label="Settlement watcher"
          value={lag === null ? "–" : `${lag} ${lag === 1 ? "block" : "blocks"} behind`}
          hint={
            <>
              <Meter value={lag ?? 0} max={n.thresholds.watcherLagBlocks} label="Watcher lag against its alert level" />
              cursor {n.watcher.cursorBlock ?? "–"}, head {n.watcher.headBlock ?? "–"}; alert above {n.thresholds.watcherLagBlocks} (confirmations {n.watcher.confirmations})
            </>
          }
        />
      </div>
      {n.paymasters.length > 0 && (
        <ThresholdBars
          title={`Paymaster deposits in the EntryPoint (ETH)${threshold === null ? "" : ", against the alert threshold"}`}
          items={n.paymasters.map((p: any) => ({ label: p.label, value: ethNumber(p.depositWei), text: `${formatEth(p.depositWei)} ETH` }))}
          threshold={threshold === null ? null : ethNumber(threshold)}
          thresholdLabel={threshold === null ? "" : `alert below ${formatEth(threshold)} ETH`}
        />
      )}
      {warnings.length > 0 && (
        <Notice tone="warn" title="Needs attention:">
          <ul>{warnings.map((w) => <li key={w}>{w}</li>)}</ul>
        </Notice>
      )}
      <Table caption={`Paymasters on ${n.network}`} head={["Paymaster", "Address", ["Deposit (ETH)", "num"], "Stake", "Signers"]}>
        {n.paymasters.map((p: any) => {
          const own = p.serviceSigners[0];
          return (
            <tr key={p.address}>
              <th scope="row">{p.label}</th>
              <td><code title={p.address}>{short(p.address)}</code></td>
              <td class="num">{formatEth(p.depositWei)}</td>
              <td>
                {p.staked ? (p.withdrawTime === 0 ? <Badge tone="ok">staked</Badge> : <Badge tone="warn">unlocking</Badge>) : <Badge tone="bad">not staked</Badge>}{" "}
                {formatEth(p.stakeWei)} ETH, delay {Math.round(p.unstakeDelaySec / 3600)} h
                {p.withdrawTime > 0 && <div class="muted">withdrawable from {formatTime(p.withdrawTime)}</div>}
              </td>
              <td>
                {p.signerCount} {p.signerCount === 1 ? "signer" : "signers"};{" "}
                {own ? (own.accepted ? <Badge tone="ok">service signer accepted</Badge> : <Badge tone="bad">service signer NOT accepted</Badge>) : <Badge tone="neutral">no service signer</Badge>}
              </td>
            </tr>
          );
        })}
      </Table>
      <TokenAllowlist n={n} />
    </section>
  );
}

/** The configured tokens on each ERC-20 paymaster: one not allowed fails every op paying with it (the service refuses it). */
function TokenAllowlist({ n }: { n: any }) {
  const rows = n.paymasters.flatMap((p: any) => (p.token?.tokens ?? []).map((t: any) => ({ paymaster: p.label, ...t })));
  if (rows.length === 0) return null;
  return (
    <>
      <Table caption={`Tokens the ERC-20 paymasters accept on ${n.network}`} captionHidden={false} head={["Paymaster", "Token", "Allowed"]}>
        {rows.map((t: any) => (
          <tr key={`${t.paymaster}-${t.address}`}>
            <th scope="row">{t.paymaster}</th>
            <td>{t.symbol} <code title={t.address}>{short(t.address)}</code></td>
            <td>{t.supported ? <Badge tone="ok">allowed</Badge> : <Badge tone="bad">NOT allowed</Badge>}</td>
          </tr>
        ))}
      </Table>
      {rows.some((t: any) => !t.supported) && (
        <p class="muted">
          A token not allowed is refused by the service. Allow it with <code>paymaster token allow SYMBOL --network {n.network}</code> (owner key).
        </p>
      )}
    </>
  );
}
