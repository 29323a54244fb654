// Charts as small hand-written SVG (no chart library: three shapes cover every chart here, and each stays
// readable without colour): stacked bars over time with an optional limit line, a horizontal bar list, and a
// meter. Every chart has a text summary for screen readers and its numbers in a table under "Show the data".
import type { ComponentChildren } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { useId } from "../shared/ui.tsx";

/**
 * The pixel width of the element `ref` points at (followed as it changes): charts draw in real pixels, so their
 * text stays readable on a phone instead of shrinking with a fixed viewBox.
 */
function useWidth<T extends Element>(initial: number) {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(initial);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(240, Math.round(el.getBoundingClientRect().width)));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return [ref, width] as const;
}

export interface Series {
  name: string;
  /** A CSS colour (the palette's var(--series-n)). */
  color: string;
  values: readonly number[];
}

const M = { top: 12, right: 10, bottom: 26, left: 56 };

/** 0, a round step, …: at most 4 ticks up to at least `max`. */
function ticks(max: number): number[] {
  if (max <= 0) return [0, 1];
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  const out: number[] = [];
  for (let v = 0; v < max + step * 0.999; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

export function compact(value: number): string {
  if (value === 0) return "0";
  const abs = Math.abs(value);
  if (abs >= 1e9) return `${(value / 1e9).toPrecision(3)}G`;
  if (abs >= 1e6) return `${(value / 1e6).toPrecision(3)}M`;
  if (abs >= 1e4) return `${(value / 1e3).toPrecision(3)}k`;
  if (abs >= 1) return String(Number(value.toPrecision(4)));
  return value.toPrecision(2);
}

export function BarChart(props: {
  title: string;
  labels: readonly string[];
  series: readonly Series[];
  /** Tick and tooltip text of a value (default: compact numbers). */
  format?: (value: number) => string;
  /** A horizontal line (a cap). */
  limit?: { value: number; label: string };
  /** What the chart shows, for those who cannot see it (added to the summary). */
  unit?: string;
  empty?: ComponentChildren;
  children?: ComponentChildren;
}) {
  const id = useId("chart");
  const [box, W] = useWidth<HTMLDivElement>(640);
  const H = W < 480 ? 180 : 220;
  const fmt = props.format ?? compact;
  const n = props.labels.length;
  const totals = props.labels.map((_, i) => props.series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const peak = Math.max(0, ...totals);
  const scaleTicks = ticks(Math.max(peak, props.limit?.value ?? 0));
  const top = scaleTicks[scaleTicks.length - 1]!;
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const y = (v: number) => M.top + plotH - (v / top) * plotH;
  const band = plotW / Math.max(1, n);
  // At least 4 px: a bucket of a long period is narrow, and one or two busy ones must still be seen.
  const barW = Math.max(4, band * 0.72);
  const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(W / 90))));
  const sum = totals.reduce((a, b) => a + b, 0);
  const peakAt = totals.indexOf(peak);
  const summary =
    sum === 0
      ? `${props.title}: nothing in this period.`
      : `${props.title}: ${fmt(sum)}${props.unit ? ` ${props.unit}` : ""} in all over ${n} intervals; the highest is ${fmt(peak)} at ${props.labels[peakAt]}.${props.limit ? ` Limit ${fmt(props.limit.value)}.` : ""}`;
  return (
    <figure class="chart" aria-labelledby={`${id}-cap`}>
      <figcaption id={`${id}-cap`}>{props.title}</figcaption>
      <div ref={box} />
      {sum === 0 && props.empty ? (
        <p class="muted">{props.empty}</p>
      ) : (
        <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-labelledby={`${id}-t ${id}-d`}>
          <title id={`${id}-t`}>{props.title}</title>
          <desc id={`${id}-d`}>{summary}</desc>
          <g class="axis">
            {scaleTicks.map((t) => (
              <g key={t}>
                <line x1={M.left} x2={W - M.right} y1={y(t)} y2={y(t)} stroke-dasharray={t === 0 ? undefined : "2 3"} />
                <text x={M.left - 6} y={y(t) + 4} text-anchor="end">
                  {fmt(t)}
                </text>
              </g>
            ))}
            {props.labels.map((label, i) =>
              i % every === 0 ? (
                <text key={i} x={M.left + band * i + band / 2} y={H - 8} text-anchor="middle">
                  {label}
                </text>
              ) : null,
            )}
          </g>
          {props.labels.map((label, i) => {
            let base = 0;
            return (
              <g key={i}>
                {props.series.map((s) => {
                  const v = s.values[i] ?? 0;
                  if (v <= 0) return null;
                  const y0 = y(base);
                  base += v;
                  const y1 = y(base);
                  return (
                    <rect key={s.name} x={M.left + band * i + (band - barW) / 2} y={y1} width={barW} height={Math.max(0.5, y0 - y1)} fill={s.color}>
                      <title>{`${label} · ${s.name}: ${fmt(v)}`}</title>
                    </rect>
                  );
                })}
              </g>
            );
          })}
          {props.limit && (
            <g>
              <line x1={M.left} x2={W - M.right} y1={y(props.limit.value)} y2={y(props.limit.value)} stroke="var(--series-4)" stroke-width="2" stroke-dasharray="6 4" />
              <text x={W - M.right - 4} y={y(props.limit.value) - 5} text-anchor="end" fill="var(--series-4)" font-size="11">
                {props.limit.label}
              </text>
            </g>
          )}
        </svg>
      )}
      <div class="legend" aria-hidden="true">
        {props.series.map((s) => (
          <span key={s.name}>
            <i style={`background:${s.color}`} />
            {s.name}
          </span>
        ))}
        {props.limit && (
          <span>
            <i style="background:var(--series-4);height:2px;vertical-align:0.2rem" />
            {props.limit.label}
          </span>
        )}
      </div>
      {props.children}
      <details>
        <summary>Show the data</summary>
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">{props.title}</caption>
            <thead>
              <tr>
                <th scope="col">Interval</th>
                {props.series.map((s) => (
                  <th scope="col" class="num" key={s.name}>
                    {s.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {props.labels.map((label, i) =>
                totals[i] === 0 ? null : (
                  <tr key={i}>
                    <th scope="row">{label}</th>
                    {props.series.map((s) => (
                      <td class="num" key={s.name}>
                        {fmt(s.values[i] ?? 0)}
                      </td>
                    ))}
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

/** Items with a value each as horizontal bars (the longest is full width), largest first. */
export function BarList({ title, items, empty }: { title: string; items: readonly { label: string; value: number }[]; empty: ComponentChildren }) {
  const id = useId("bars");
  const max = Math.max(1, ...items.map((i) => i.value));
  return (
    <figure class="chart" aria-labelledby={`${id}-cap`}>
      <figcaption id={`${id}-cap`}>{title}</figcaption>
      {items.length === 0 ? (
        <p class="muted">{empty}</p>
      ) : (
        <table>
          <caption class="visually-hidden">{title}</caption>
          <tbody>
            {items.map((item) => (
              <tr key={item.label}>
                <th scope="row" style="width:40%">
                  <code>{item.label}</code>
                </th>
                <td aria-hidden="true">
                  <div class="meter bad">
                    <span style={`width:${(item.value / max) * 100}%`} />
                  </div>
                </td>
                <td class="num" style="width:5rem">
                  {item.value.toLocaleString("en-US")}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </figure>
  );
}

/** value against max: green, amber from `warnAt` (a fraction), red from `badAt`; `invert` for "more is better". */
export function Meter({ value, max, label, warnAt = 0.8, badAt = 1, invert = false }: { value: number; max: number; label: string; warnAt?: number; badAt?: number; invert?: boolean }) {
  const fill = max > 0 ? value / max : 0;
  const tone = invert ? (fill < 1 ? "bad" : fill < 1.5 ? "warn" : "") : fill >= badAt ? "bad" : fill >= warnAt ? "warn" : "";
  return (
    <div class={`meter ${tone}`} role="meter" aria-label={label} aria-valuemin={0} aria-valuemax={max} aria-valuenow={value}>
      <span style={`width:${Math.min(100, fill * 100)}%`} />
    </div>
  );
}

/** Horizontal bars against one threshold line (paymaster deposits against depositAlertWei): below it in red. */
export function ThresholdBars(props: { title: string; items: readonly { label: string; value: number; text: string }[]; threshold: number | null; thresholdLabel: string }) {
  const id = useId("thr");
  const [box, W2] = useWidth<HTMLDivElement>(640);
  // Narrow: each label on its own line above its bar (a label column would cut long names such as
  // VerifyingPaymasterV06); wide: labels in a column to the left.
  const stacked = W2 < 480;
  const rowH = stacked ? 40 : 26;
  const labelW = stacked ? 0 : 150;
  const barY = stacked ? 17 : 5;
  const textY = stacked ? 29 : 17;
  const max = Math.max(1e-18, props.threshold ?? 0, ...props.items.map((i) => i.value)) * 1.1;
  const x = (v: number) => labelW + (v / max) * (W2 - labelW - 80);
  const height = props.items.length * rowH + 18;
  const low = props.items.filter((i) => props.threshold !== null && i.value < props.threshold);
  const summary = `${props.title}: ${props.items.map((i) => `${i.label} ${i.text}`).join("; ")}.${props.threshold !== null ? ` ${props.thresholdLabel}. ${low.length === 0 ? "None below it." : `Below it: ${low.map((i) => i.label).join(", ")}.`}` : ""}`;
  return (
    <figure class="chart" aria-labelledby={`${id}-cap`}>
      <figcaption id={`${id}-cap`}>{props.title}</figcaption>
      <div ref={box} />
      <svg viewBox={`0 0 ${W2} ${height}`} width={W2} height={height} role="img" aria-labelledby={`${id}-t ${id}-d`}>
        <title id={`${id}-t`}>{props.title}</title>
        <desc id={`${id}-d`}>{summary}</desc>
        {props.items.map((item, i) => {
          const below = props.threshold !== null && item.value < props.threshold;
          return (
            <g key={item.label} class="axis">
              {stacked ? (
                <text x={0} y={i * rowH + 12}>{item.label}</text>
              ) : (
                <text x={labelW - 8} y={i * rowH + 17} text-anchor="end">{item.label}</text>
              )}
              <rect x={labelW} y={i * rowH + barY} width={Math.max(1, x(item.value) - labelW)} height={16} fill={below ? "var(--series-4)" : "var(--series-2)"} />
              <text x={x(item.value) + 5} y={i * rowH + textY}>{item.text}</text>
            </g>
          );
        })}
        {props.threshold !== null && (
          <g>
            <line x1={x(props.threshold)} x2={x(props.threshold)} y1={0} y2={height - 14} stroke="var(--series-3)" stroke-width="2" stroke-dasharray="5 3" />
            <text x={x(props.threshold)} y={height - 2} text-anchor="middle" font-size="11" fill="var(--series-3)">{props.thresholdLabel}</text>
          </g>
        )}
      </svg>
    </figure>
  );
}
